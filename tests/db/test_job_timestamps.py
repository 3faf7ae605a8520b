"""Job rows holding timestamps no job can have ('-infinity', a year before 1 or
after 9999): the check of migration 0024 refuses them on an unfinished job and
the migration fails those already stored; a worker that claims one beside
healthy jobs fails it alone, naming the row and the column, and runs the others
at their first attempt; the database checks W110/W111 report a missing check
and the rows it would refuse."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.management import call_command
from django.db import IntegrityError, connection, transaction

from awa_django.checks import database as checks
from awa_django.client.compat import TaskResultStatus, default_task_backend
from awa_django.db.sqlfiles import read_sql
from awa_django.models import Job
from awa_django.store import jobs
from awa_django.validation import RUN_AFTER_MAX, RUN_AFTER_MIN
from awa_django.worker.loop import Worker
from tests.helpers.jobrows import (
    IMPOSSIBLE_TIMESTAMPS,
    TIMESTAMP_CHECK,
    insert_job,
    sql,
    without_timestamp_check,
)
from tests.testapp import tasks

COLUMNS = ("run_at", "created_at", "attempted_at", "started_at", "heartbeat_at", "finished_at")


def last_error(job_id: int) -> dict[str, Any]:
    errors = Job.objects.filter(id=job_id).values_list("errors", flat=True).get()
    assert isinstance(errors, list) and errors
    entry: dict[str, Any] = errors[-1]
    return entry


@pytest.mark.django_db
@pytest.mark.parametrize("column", COLUMNS)
@pytest.mark.parametrize("value", sorted(IMPOSSIBLE_TIMESTAMPS))
@pytest.mark.parametrize("state", ["available", "scheduled", "running", "retryable"])
def test_job_timestamps_check__refuses_an_impossible_timestamp_on_an_unfinished_job(
    column: str, value: str, state: str
) -> None:
    with pytest.raises(IntegrityError, match=TIMESTAMP_CHECK), transaction.atomic():
        insert_job(state, **{column: IMPOSSIBLE_TIMESTAMPS[value]})
    healthy = tasks.record.enqueue()
    with pytest.raises(IntegrityError, match=TIMESTAMP_CHECK), transaction.atomic():
        sql(f"UPDATE awa_jobs SET {column} = {IMPOSSIBLE_TIMESTAMPS[value]} WHERE id = %s", [int(healthy.id)])


@pytest.mark.django_db
@pytest.mark.parametrize("state", ["completed", "failed", "cancelled"])
def test_job_timestamps_check__a_finished_job_keeps_what_it_holds(state: str) -> None:
    job_id = insert_job(
        state, run_at="'-infinity'", created_at="'infinity'", finished_at="'10000-01-01 00:00+00'"
    )
    assert sql("SELECT run_at::text FROM awa_jobs WHERE id = %s", [job_id]) == [("-infinity",)]


@pytest.mark.django_db
def test_job_timestamps_check__accepts_every_run_after_enqueue_accepts() -> None:
    early = tasks.record.using(run_after=RUN_AFTER_MIN).enqueue()
    late = tasks.record.using(run_after=RUN_AFTER_MAX).enqueue()
    assert Job.objects.get(id=int(early.id)).run_at == RUN_AFTER_MIN
    assert Job.objects.get(id=int(late.id)).run_at == RUN_AFTER_MAX


@pytest.mark.django_db
def test_job_timestamps_check__a_retry_of_a_job_whose_only_bad_column_was_run_at_succeeds() -> None:
    job_id = insert_job("failed", run_at="'-infinity'")
    assert jobs.retry(connection.cursor(), job_id)
    assert Job.objects.get(id=job_id).state == "available"


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("value", ["minus_infinity", "year_1_bc", "year_10000", "infinity"])
def test_worker__fails_a_row_with_an_impossible_timestamp_alone(value: str) -> None:
    healthy = [tasks.record.using(priority=-1).enqueue(f"healthy {i}") for i in range(3)]
    with without_timestamp_check():
        # run_at '-infinity' sorts first: claimed in the same batch as the others.
        bad = insert_job("available", run_at="'-infinity'", created_at=IMPOSSIBLE_TIMESTAMPS[value])
        worker = Worker(burst=True, concurrency=4)
        worker.run()
        for result in healthy:
            row = Job.objects.filter(id=int(result.id)).values("state", "attempt").get()
            assert row == {"state": "completed", "attempt": 1}
        assert Job.objects.filter(id=bad).values_list("state", flat=True).get() == "failed"
        error = last_error(bad)
        assert error["exception_class_path"] == "awa_django.exceptions.InvalidJobRow"
        assert (
            f"job {bad} holds a timestamp no job can have (run_at -infinity, created_at "
            in error["traceback"]
        )
        assert worker.failed == 1 and worker.completed == 3


@pytest.mark.django_db(transaction=True)
def test_complete_and_claim__flags_a_claimed_row_it_cannot_load() -> None:
    done = tasks.record.enqueue("done")
    with without_timestamp_check():
        with connection.cursor() as cursor:
            (claimed,) = jobs.claim(cursor, None, 1, "w")
            assert claimed.invalid_timestamps is None
            bad = insert_job("available", run_at="'infinity'", created_at="'-infinity'")
            sql("UPDATE awa_jobs SET run_at = now() - interval '1 hour' WHERE id = %s", [bad])
            completed, rows = jobs.complete_and_claim(
                cursor, [jobs.Done(int(done.id), 1, "null")], None, 1, "w"
            )
        assert [r.id for r in completed] == [int(done.id)]
        assert [r.id for r in rows] == [bad]
        assert rows[0].created_at is None and rows[0].run_at is not None
        assert rows[0].invalid_timestamps == "created_at -infinity"
        sql("UPDATE awa_jobs SET state = 'failed' WHERE id = %s", [bad])


@pytest.mark.django_db(transaction=True)
def test_migration_0024__fails_the_stored_unfinished_rows_it_refuses_and_validates() -> None:
    call_command("migrate", "awa_django", "0023", verbosity=0)
    try:
        healthy = insert_job("available", run_at="now() + interval '1 day'")
        waiting = insert_job("scheduled", run_at="'infinity'")
        running = insert_job("running", attempt="1", attempted_at="'-infinity'", heartbeat_at="now()")
        done = insert_job("completed", finished_at="'0001-01-01 00:00+00 BC'")
    finally:
        call_command("migrate", "awa_django", verbosity=0)
    states = dict(Job.objects.values_list("id", "state"))
    assert states == {healthy: "available", waiting: "failed", running: "failed", done: "completed"}
    assert "run_at infinity" in last_error(waiting)["traceback"]
    assert (
        f"job {running} holds a timestamp no job can have (attempted_at -infinity)"
        in (last_error(running)["traceback"])
    )
    assert sql("SELECT finished_at::text FROM awa_jobs WHERE id = %s", [done]) == [
        ("0001-01-01 00:00:00+00 BC",)
    ]
    assert sql("SELECT convalidated FROM pg_constraint WHERE conname = %s", [TIMESTAMP_CHECK]) == [(True,)]


@pytest.mark.django_db
def test_check_job_timestamps__w110_w111_report_a_missing_check_and_the_rows_it_would_refuse() -> None:
    assert checks.check_job_timestamps(databases=["default"]) == []
    with without_timestamp_check():
        insert_job("available", run_at="'-infinity'")
        insert_job("running", attempt="1", heartbeat_at="'10000-01-01 00:00+00'")
        insert_job("failed", created_at="'infinity'")
        insert_job("scheduled", run_at="'9999-12-30 23:59:59+00'")
        messages = checks.check_job_timestamps(databases=["default"])
        assert [(m.id, m.msg, m.hint) for m in messages] == [
            (
                "awa_django.W110",
                f"database 'default': the check {TIMESTAMP_CHECK} on awa_jobs is missing",
                "Fail the jobs W111 counts, then add and validate the check (see docs).",
            ),
            (
                "awa_django.W111",
                "database 'default': 2 unfinished job(s) hold a timestamp no datetime holds",
                "Each fails when a worker claims it; to fail them all now, see docs.",
            ),
        ]
        sql(read_sql("0024_job_timestamps_fail"))
        sql(read_sql("0024_job_timestamps"))
        messages = checks.check_job_timestamps(databases=["default"])
        assert [(m.id, m.msg) for m in messages] == [
            (
                "awa_django.W110",
                f"database 'default': the check {TIMESTAMP_CHECK} on awa_jobs is not validated",
            )
        ]
        sql(f"ALTER TABLE awa_jobs DROP CONSTRAINT {TIMESTAMP_CHECK}")
    assert checks.check_job_timestamps(databases=["default"]) == []


@pytest.mark.django_db(transaction=True)
def test_get_result__a_job_failed_for_an_impossible_timestamp_reads_as_failed() -> None:
    with without_timestamp_check():
        bad = insert_job("available", run_at="'-infinity'", created_at="'infinity'")
        Worker(burst=True).run()
        result = default_task_backend.get_result(str(bad))
    assert result.status == TaskResultStatus.FAILED
    assert result.enqueued_at is None
    assert [e.exception_class_path for e in result.errors] == ["awa_django.exceptions.InvalidJobRow"]
