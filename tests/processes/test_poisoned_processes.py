"""Real ``runcron`` processes next to poisoned rows: the healthy schedule keeps
firing, the process never exits, and the bad rows are parked with a reason."""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any

import pytest

from awa_django.models import Job
from tests.factories import CronJobFactory
from tests.helpers.rows import POISONS, parked, poison
from tests.helpers.waiting import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

RECORD = "tests.testapp.tasks.record"
HEALTHY = {"healthy": {"cron": "* * * * * *", "task": RECORD}}


def healthy_fires() -> int:
    return Job.objects.filter(metadata__cron_name="healthy").count()


def run_next_to(cases: list[str], runcron: Callable[..., Any]) -> None:
    for case in cases:
        column, value = POISONS[case]
        CronJobFactory(name=case, cron_expr="* * * * * *")
        poison(case, column, value)
    proc = runcron(HEALTHY)
    wait_for(lambda: healthy_fires() >= 3, timeout=60)
    assert proc.proc.poll() is None, proc.output()
    for case in cases:
        is_parked, reason = parked(case)
        assert is_parked and reason, case
        assert Job.objects.filter(metadata__cron_name=case).count() == 0
    proc.signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 0, proc.output()
    assert "Traceback" not in proc.output()


# One process next to every poison at once asserts, for each poisoned row, what
# a process next to that row alone would (parked with a reason, never fired),
# so one start serves them all; tests/db/test_poisoned_rows.py parks each alone.
def test_runcron__healthy_schedule_keeps_firing_next_to_every_poisoned_row(
    runcron: Callable[..., Any],
) -> None:
    run_next_to(sorted(POISONS), runcron)
