"""Real ``runcron --once`` and ``runtasks --burst`` next to rows nested 2,000
levels deep (raw SQL): the process finishes cleanly, the healthy rows fire and
run, the deep ones are parked or failed with their reason."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection

from awa_django.models import CronJob, Job
from tests.factories import CronJobFactory
from tests.testapp import tasks

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

DEEP = "('{\"args\": [' || repeat('[', 2000) || repeat(']', 2000) || '], \"kwargs\": {}}')::jsonb"


def test_runcron_once__parks_a_deep_row_and_fires_the_others(runcron: Callable[..., Any]) -> None:
    CronJobFactory(name="healthy", cron_expr="* * * * * *")
    CronJobFactory(name="deep", cron_expr="* * * * * *")
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE awa_cron_jobs SET args = {DEEP} WHERE name = 'deep'")
    proc = runcron({}, "--once")
    assert proc.wait(timeout=120) == 0, proc.output()
    assert "Traceback" not in proc.output()
    assert Job.objects.filter(metadata__cron_name="healthy").count() == 1
    assert Job.objects.filter(metadata__cron_name="deep").count() == 0
    assert "nested deeper than 32 levels" in (CronJob.objects.get(name="deep").parked_reason or "")


def test_runtasks__fails_a_deep_job_and_runs_the_others(runtasks: Callable[..., Any]) -> None:
    healthy = tasks.record.enqueue("fine")
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO awa_jobs (kind, queue, args, state, run_at, max_attempts) "
            f"VALUES ('tests.testapp.tasks.record', 'default', {DEEP}, 'available', now(), 3) RETURNING id"
        )
        deep = cursor.fetchone()[0]
        # A stale attempt of the same shape: start-up rescue returns its args.
        cursor.execute(
            "INSERT INTO awa_jobs (kind, queue, args, state, run_at, max_attempts, attempt, heartbeat_at) "
            f"VALUES ('tests.testapp.tasks.record', 'default', {DEEP}, 'running', now(), 3, 1,"
            " now() - interval '1 hour')"
        )
    proc = runtasks("--burst")
    assert proc.wait(timeout=120) == 0, proc.output()
    assert "Traceback" not in proc.output()
    assert Job.objects.get(id=int(healthy.id)).state == "completed"
    assert Job.objects.filter(id=deep).values_list("state", flat=True).get() == "failed"
