"""A job's errors stay readable whatever an attempt raised or raw SQL stored,
and one bad row never fails the report, rescue, cancel or completion of another.

Appending an attempt's error goes through ``awa_errors_append_v1``: the
errors stay within AWA_MAX_ARGS_BYTES (oldest entries dropped, with a note)
and AWA_MAX_JSON_DEPTH (a hand-written deep value replaced by a note naming
why), so the job's next attempt runs. The server's ``max_stack_depth`` bounds
how deep a jsonb value it can copy; the hostile rows here are nested 5,000
levels deep and the tests lower the limit for their transaction so that
appending to such a value directly (as the previous function versions did)
exceeds it, as it does on servers with a smaller stack.
"""

from __future__ import annotations

import json
import logging
from datetime import timedelta
from typing import Any

import pytest
from django.db import OperationalError, connection, transaction
from django.test import override_settings

from awa_django.db.jsonb import Undecodable
from awa_django.models import Job
from awa_django.store import jobs
from awa_django.worker.loop import Worker
from awa_django.worker.outcomes import ReportAbandoned, error_entry, repeats_on_retry
from awa_django.worker.runner import run_attempt
from tests.testapp import tasks

pytestmark = pytest.mark.django_db

DEEP_ERRORS = "('[' || repeat('{\"a\":', 5000) || '1' || repeat('}', 5000) || ']')::jsonb"
HUGE_ERRORS = (
    "jsonb_build_array(jsonb_build_object('exception_class_path', 'myapp.Huge',"
    " 'traceback', repeat('y', 10 * 1024 * 1024)))"
)
ARGS = {"args": ["fine"], "kwargs": {}}


def hand_written(errors_sql: str, state: str = "running") -> int:
    """A job row written by raw SQL with ``errors_sql``; a running one stopped heartbeating an hour ago."""
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO awa_jobs (kind, queue, args, state, attempt, max_attempts, run_at, attempted_at,"
            " heartbeat_at, worker_ids, errors) VALUES ('tests.testapp.tasks.record', 'default', %s::jsonb,"
            " %s, CASE WHEN %s = 'running' THEN 1 ELSE 0 END, 3, now(), now(), now() - interval '1 hour',"
            f" '{{lost-worker}}', {errors_sql}) RETURNING id",
            [json.dumps(ARGS), state, state],
        )
        return int(cursor.fetchone()[0])


def small_stack() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL max_stack_depth = '250kB'")


def stored_errors(job_id: int) -> tuple[Any, int]:
    """The job's errors as every reader decodes them, and their size as JSON text."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT octet_length(errors::text) FROM awa_jobs WHERE id = %s", [job_id])
        size = int(cursor.fetchone()[0])
        row = jobs.fetch(cursor, job_id)
    assert row is not None
    assert not isinstance(row.args, Undecodable), row.args
    return row.errors, size


def classes(errors: list[dict[str, Any]]) -> list[str]:
    return [e["exception_class_path"] for e in errors]


def test_rescue__rescues_the_stale_row_beside_a_deep_one_and_names_the_deep_one(
    caplog: pytest.LogCaptureFixture,
) -> None:
    deep = hand_written(DEEP_ERRORS)
    innocent = hand_written("'[]'")
    small_stack()
    with caplog.at_level(logging.WARNING, logger="awa_django.worker"):
        Worker().rescue()
    assert dict(Job.objects.filter(id__in=[deep, innocent]).values_list("id", "state")) == {
        deep: "retryable",
        innocent: "retryable",
    }
    errors, _ = stored_errors(innocent)
    assert classes(errors) == ["awa_django.exceptions.WorkerLost"]
    errors, _ = stored_errors(deep)
    assert classes(errors) == ["awa_django.exceptions.ErrorsDropped", "awa_django.exceptions.WorkerLost"]
    assert "nested deeper than 32 levels (AWA_MAX_JSON_DEPTH=32)" in errors[0]["traceback"]
    named = [r.getMessage() for r in caplog.records if r.getMessage().startswith(f"job {deep} ")]
    assert named and "nested deeper than 32 levels" in named[0], caplog.text


def test_rescue__a_10_mb_errors_row_is_trimmed_and_its_next_attempt_runs() -> None:
    huge = hand_written(HUGE_ERRORS)
    innocent = hand_written("'[]'")
    rescued = {row.id for row in jobs.rescue(connection.cursor(), timedelta(seconds=1))}
    assert rescued == {huge, innocent}
    errors, size = stored_errors(huge)
    assert size <= 1024 * 1024
    assert classes(errors) == ["awa_django.exceptions.ErrorsDropped", "awa_django.exceptions.WorkerLost"]
    assert "1 earlier error entries" in errors[0]["traceback"]
    claimed = jobs.claim(connection.cursor(), None, 10, "next-worker")
    assert {row.id: row.args for row in claimed} == {huge: ARGS, innocent: ARGS}


def test_fail_job__a_deep_errors_row_fails_alone_within_the_stack() -> None:
    deep = hand_written(DEEP_ERRORS)
    small_stack()
    entry = error_entry(ValueError("bad args"), 1, "w")
    assert jobs.fail_job(connection.cursor(), deep, 1, entry) == "failed"
    errors, _ = stored_errors(deep)
    assert classes(errors) == ["awa_django.exceptions.ErrorsDropped", "builtins.ValueError"]


def test_fail__a_deep_errors_row_retries_alone_within_the_stack() -> None:
    deep = hand_written(DEEP_ERRORS)
    small_stack()
    entry = error_entry(ValueError("boom"), 1, "w")
    assert jobs.fail(connection.cursor(), deep, 1, entry, timedelta(seconds=0)) == "retryable"
    assert classes(stored_errors(deep)[0]) == ["awa_django.exceptions.ErrorsDropped", "builtins.ValueError"]


def test_cancel__a_deep_errors_row_is_cancelled_within_the_stack() -> None:
    deep = hand_written(DEEP_ERRORS, state="available")
    small_stack()
    assert jobs.cancel(connection.cursor(), "alice", ids=[deep]) == [deep]
    errors, _ = stored_errors(deep)
    assert classes(errors) == ["awa_django.exceptions.ErrorsDropped", "awa_django.exceptions.JobCancelled"]


@override_settings(AWA_MAX_ARGS_BYTES=50_000)
def test_fail__the_oldest_errors_are_dropped_to_stay_within_the_args_limit() -> None:
    old = [{"exception_class_path": "myapp.Old", "traceback": f"old {i} " + "o" * 3000} for i in range(20)]
    job = hand_written(f"'{json.dumps(old)}'::jsonb")
    entry = error_entry(ValueError("n" * 100_000), 1, "w")
    assert len(entry["traceback"]) < 50_000 // 8 + 100  # the cut in effect: an eighth of the limit
    assert jobs.fail(connection.cursor(), job, 1, entry, timedelta(seconds=0)) == "retryable"
    errors, size = stored_errors(job)
    assert size <= 50_000
    assert errors[0]["exception_class_path"] == "awa_django.exceptions.ErrorsDropped"
    assert (
        "were dropped to keep the errors of this job within AWA_MAX_ARGS_BYTES=50000"
        in errors[0]["traceback"]
    )
    assert errors[-1] == entry
    kept = [e["traceback"].split(" ")[1] for e in errors[1:-1]]
    assert kept == [str(i) for i in range(20 - len(kept), 20)] and kept  # the newest, in order


def test_run_attempt__a_10_mb_message_is_stored_cut_and_the_next_attempt_runs() -> None:
    result = tasks.raises_huge_message.enqueue(10)
    worker = Worker()
    (row,) = worker.claim(1)
    assert run_attempt(worker.outcomes, row) == "retryable"
    job = Job.objects.get(id=int(result.id))
    (entry,) = job.errors
    assert len(entry["traceback"]) < 20_000 + 100
    assert entry["traceback"].rstrip().endswith("END-OF-HUGE-MESSAGE")
    Job.objects.filter(id=job.id).update(run_at=job.created_at)
    (again,) = worker.claim(1)
    assert again.attempt == 2 and again.args == {"args": [10], "kwargs": {}}


def test_complete__a_batch_completes_beside_rows_with_deep_and_huge_errors() -> None:
    deep = hand_written(DEEP_ERRORS)
    huge = hand_written(HUGE_ERRORS)
    tasks.record.enqueue("innocent")
    worker = Worker()
    (innocent,) = worker.claim(1)
    small_stack()
    done = [jobs.Done(deep, 1, '"d"'), jobs.Done(huge, 1, '"h"'), jobs.Done(int(innocent.id), 1, '"i"')]
    stored = worker.outcomes.store_done(done)
    assert sorted(stored) == sorted((d.id, 1) for d in done)
    assert set(Job.objects.filter(id__in=[d.id for d in done]).values_list("state", flat=True)) == {
        "completed"
    }


def test_repeats_on_retry__a_statement_over_the_stack_limit_is_not_retried() -> None:
    with pytest.raises(OperationalError) as raised, transaction.atomic(), connection.cursor() as cursor:
        small_stack()
        cursor.execute(f"SELECT {DEEP_ERRORS} || '[1]'::jsonb")
    assert repeats_on_retry(raised.value)


@pytest.mark.django_db(transaction=True)
@override_settings(AWA_REPORT_RETRY_TIMEOUT=5)
def test_report__abandons_at_once_an_error_every_retry_would_meet() -> None:
    calls: list[bool] = []

    def op(cursor: Any, retried: bool) -> None:
        calls.append(retried)
        cursor.execute("SET max_stack_depth = '250kB'")
        cursor.execute(f"SELECT {DEEP_ERRORS} || '[1]'::jsonb")

    with pytest.raises(ReportAbandoned):
        Worker().outcomes.report("fail", "1 attempt 1", op)
    assert calls == [False]


def test_release__an_expired_deep_errors_row_fails_alone_within_the_stack() -> None:
    deep = hand_written(DEEP_ERRORS)
    small_stack()
    entry = error_entry(ValueError("no such module here"), 1, "w")
    state = jobs.release(connection.cursor(), deep, 1, timedelta(seconds=60), timedelta(0), entry)
    assert state == "failed"
    assert classes(stored_errors(deep)[0]) == ["awa_django.exceptions.ErrorsDropped", "builtins.ValueError"]


def test_migration__the_previous_versions_stay_installed_for_workers_not_yet_upgraded() -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT proname FROM pg_proc WHERE proname = ANY (%s)",
            [["awa_fail_v1", "awa_fail_job_v1", "awa_release_v2", "awa_rescue_v1"]],
        )
        assert sorted(r[0] for r in cursor.fetchall()) == [
            "awa_fail_job_v1",
            "awa_fail_v1",
            "awa_release_v2",
            "awa_rescue_v1",
        ]
    job = hand_written("'[]'")
    with connection.cursor() as cursor:  # an older worker's rescue still works beside the new one
        cursor.execute("SELECT id FROM awa_rescue_v1(interval '1 second')")
        assert [r[0] for r in cursor.fetchall()] == [job]
