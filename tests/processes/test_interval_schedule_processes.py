"""An interval schedule (``every``) against a real ``runcron``: consecutive
slots anchor + k * every fire exactly once each, none skipped."""

from __future__ import annotations

import signal
from datetime import datetime, timedelta
from typing import Any

import pytest

from awa_django.models import CronJob, Job
from tests.helpers.waiting import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

TASK = "tests.testapp.tasks.record"


def slots() -> list[datetime]:
    jobs = Job.objects.filter(metadata__cron_name="poll", metadata__has_key="cron_fire_at")
    return sorted(datetime.fromisoformat(j.metadata["cron_fire_at"]) for j in jobs)


def test_interval_schedule__fires_consecutive_slots_exactly_once(runcron: Any) -> None:
    # catch_up: a pass late on a loaded machine still fires every slot.
    leader = runcron({"poll": {"every": 2, "task": TASK, "missed_fire_policy": "catch_up"}})
    wait_for(lambda: len(slots()) >= 3, timeout=60)
    leader.signal(signal.SIGTERM)
    assert leader.wait() == 0
    fired = slots()
    row = CronJob.objects.get(name="poll")
    assert (row.cron_expr, row.every_seconds) == (None, 2)
    anchor = row.created_at.replace(microsecond=0)
    assert len(fired) == len(set(fired))
    assert all(b - a == timedelta(seconds=2) for a, b in zip(fired, fired[1:], strict=False))
    assert all((s - anchor) % timedelta(seconds=2) == timedelta(0) for s in fired)
