"""Pruning never deletes a live job, and ``awa jobs prune`` refuses nonsense."""

from __future__ import annotations

import json
import threading
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import connection, connections

from awa_django.models import Job
from awa_django.operations.queues import prune_jobs
from tests.factories import JobFactory
from tests.helpers.database import raw_connection
from tests.helpers.waiting import wait_for


def finished_long_ago(**fields: Any) -> Job:
    job: Job = JobFactory(state=fields.pop("state", "completed"), **fields)
    with connection.cursor() as cursor:
        cursor.execute("UPDATE awa_jobs SET finished_at = now() - interval '30 days' WHERE id = %s", [job.id])
    return job


@pytest.mark.django_db(transaction=True)
def test_prune__a_job_retried_while_prune_waits_is_not_deleted() -> None:
    job = finished_long_ago(state="failed")
    other = finished_long_ago()
    retry = raw_connection(autocommit=False)
    try:
        # An operator's retry holds the row (not committed yet).
        retry.execute("UPDATE awa_jobs SET state = 'available', finished_at = NULL WHERE id = %s", [job.id])
        done: list[int] = []

        def run() -> None:
            try:
                done.append(prune_jobs(older_than=3600))
            finally:
                connections.close_all()

        thread = threading.Thread(target=run)
        thread.start()
        # Prune finishes while the row is still held: it skipped it. (Had it
        # waited for the row, it would fail on AWA_LOCK_TIMEOUT: nothing in done.)
        thread.join(timeout=60)
        assert not thread.is_alive() and done == [1]
        retry.commit()
    finally:
        retry.close()
    assert Job.objects.filter(id=job.id, state="available").exists()
    assert not Job.objects.filter(id=other.id).exists()


@pytest.mark.django_db
@pytest.mark.parametrize("value", ["-1", "0", "nan", "inf", "-inf", "1e400", "abc"])
def test_cli_jobs_prune__refuses_bad_older_than(value: str) -> None:
    finished_long_ago()
    with pytest.raises(CommandError, match="older-than"):
        call_command("awa", "jobs", "prune", f"--older-than={value}")
    assert Job.objects.count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize("value", [-1.0, float("nan"), float("inf")])
def test_prune_jobs__refuses_bad_older_than(value: float) -> None:
    with pytest.raises(ValueError, match="older_than"):
        prune_jobs(older_than=value)


@pytest.mark.django_db
def test_cli_jobs_prune__dry_run_counts_without_deleting() -> None:
    finished_long_ago()
    finished_long_ago(state="cancelled")
    JobFactory(state="available")
    out = StringIO()
    call_command("awa", "jobs", "prune", "--older-than=3600", "--dry-run", "--json", stdout=out)
    data = json.loads(out.getvalue())
    assert data == {"action": "prune", "dry_run": True, "deleted": 0, "would_delete": 2}
    assert Job.objects.count() == 3
    out = StringIO()
    call_command("awa", "jobs", "prune", "--older-than=3600", stdout=out)
    assert "2 finished job(s) deleted" in out.getvalue()
    wait_for(lambda: Job.objects.count() == 1, timeout=60)
