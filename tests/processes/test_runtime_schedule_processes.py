"""Runtime schedules against a real ``runcron``: changes take effect without a restart.

The leader sleeps for as long as its settings allow (evaluation and leader
checks every 10 minutes), so only the NOTIFY of a change can wake it: a fire
within the wait bound proves the leader learnt of the change at once. Across
edits every slot fires at most once and, after an edit of the expression,
only slots after the edit fire.
"""

from __future__ import annotations

import signal
from datetime import datetime
from typing import Any

import pytest

from awa_django.models import CronJob, Job
from awa_django.operations.runtime_schedules import create_schedule, delete_schedule, update_schedule
from tests.helpers.processes import leader_process_pid
from tests.helpers.waiting import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

# The leader wakes by itself only every 10 minutes; wait_for gives up after one.
SLEEPY = {"AWA_EVALUATE_INTERVAL": "600", "AWA_LEADER_CHECK_INTERVAL": "600", "AWA_SYNC_INTERVAL": "600"}
TASK = "tests.testapp.tasks.record"


def jobs(label: str) -> list[Job]:
    return list(Job.objects.filter(metadata__cron_name="tick", args__kwargs__label=label).order_by("id"))


def test_runtime_schedule__created_edited_and_deleted_without_restart(runcron: Any) -> None:
    leader = runcron({}, env=SLEEPY)
    wait_for(lambda: leader_process_pid() == leader.pid, timeout=60)
    create_schedule("tick", "* * * * * *", TASK, kwargs={"label": "old"}, actor="ops")
    wait_for(lambda: jobs("old"), timeout=60)

    update_schedule("tick", actor="ops", kwargs={"label": "new"})
    wait_for(lambda: jobs("new"), timeout=60)

    # A new expression: its slots before the edit never fire.
    update_schedule("tick", actor="ops", cron="*/2 * * * * *", kwargs={"label": "even"})
    boundary = CronJob.objects.get(name="tick").last_enqueued_at
    assert boundary is not None
    even = wait_for(lambda: jobs("even"), timeout=60)
    assert all(datetime.fromisoformat(j.metadata["cron_fire_at"]) > boundary for j in even)
    assert all(int(j.metadata["cron_fire_at"][17:19]) % 2 == 0 for j in even)

    delete_schedule("tick", actor="ops")
    create_schedule("tick", "* * * * * *", TASK, kwargs={"label": "again"}, actor="ops")
    wait_for(lambda: jobs("again"), timeout=60)

    slots = [j.metadata["cron_fire_at"] for j in Job.objects.filter(metadata__cron_name="tick")]
    assert len(slots) == len(set(slots))  # no slot fired twice, across edits and re-creation
    leader.signal(signal.SIGTERM)
    assert leader.wait() == 0  # the same process throughout: no restart
