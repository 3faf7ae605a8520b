"""awa_django.jobs: one function per job SQL operation, each fenced by its attempt."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import fields
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from awa_django.models import Job, QueueMeta
from awa_django.store import jobs
from awa_django.store.job_rows import JobRow

pytestmark = pytest.mark.django_db

ERROR = {"exception_class_path": "builtins.ValueError", "traceback": "boom"}


@pytest.fixture
def cursor() -> Iterator[Any]:
    with connection.cursor() as cur:
        yield cur


def new_job(**fields: Any) -> Job:
    values: dict[str, Any] = {"kind": "tests.testapp.tasks.echo", "args": {"args": [], "kwargs": {}}}
    values.update(fields)
    return Job.objects.create(**values)


def claimed(cursor: Any, job: Job) -> dict[str, Any]:
    (row,) = jobs.claim(cursor, None, 1, "w-1")
    assert row.id == job.id
    return row


def test_claim__takes_up_to_the_limit_in_priority_order_with_a_new_attempt(cursor: Any) -> None:
    low, high, mid = new_job(priority=-5), new_job(priority=5), new_job(priority=0)
    rows = jobs.claim(cursor, None, 2, "w-1")
    assert [r.id for r in rows] == [high.id, mid.id]
    assert all(r.state == "running" and r.attempt == 1 and r.worker_ids == ["w-1"] for r in rows)
    assert isinstance(rows[0].args, dict)  # JSON columns decoded
    assert [r.id for r in jobs.claim(cursor, None, 5, "w-2")] == [low.id]


def expected_start_order(rows: list[Job]) -> list[int]:
    """Highest priority first, then earliest run_at, then id."""
    return [j.id for j in sorted(rows, key=lambda j: (-j.priority, j.run_at, j.id))]


def many_ready_jobs() -> list[Job]:
    """Ready jobs stored in the reverse of their start order, with ties on
    priority (broken by run_at) and on priority and run_at (broken by id)."""
    now = Job.objects.values_list("run_at", flat=True).first() or timezone.now()
    start = now - timedelta(hours=1)
    made = [new_job(priority=n // 8, run_at=start + timedelta(seconds=(40 - n) // 3)) for n in range(40)]
    Job.objects.bulk_create(Job(kind="tests.testapp.tasks.echo", state="completed") for _ in range(400))
    return made


@pytest.fixture
def hash_joins(cursor: Any) -> None:
    """Plans that join by hashing: the claim's order must not depend on the plan."""
    cursor.execute("ANALYZE awa_jobs")
    cursor.execute("SET LOCAL enable_nestloop = off")
    cursor.execute("SET LOCAL enable_mergejoin = off")


def test_claim__returns_the_jobs_in_the_order_they_start(cursor: Any, hash_joins: None) -> None:
    made = many_ready_jobs()
    rows = jobs.claim(cursor, None, len(made), "w-1")
    assert [r.id for r in rows] == expected_start_order(made)


def test_complete_and_claim__returns_the_claimed_jobs_in_the_order_they_start(
    cursor: Any, hash_joins: None
) -> None:
    running = new_job(priority=100)
    row = claimed(cursor, running)
    made = many_ready_jobs()
    done, got = jobs.complete_and_claim(
        cursor, [jobs.Done(row.id, row.attempt, '"ok"')], None, len(made), "w-2"
    )
    assert [r.id for r in done] == [running.id]
    assert [r.id for r in got] == expected_start_order(made)


def test_claim__skips_paused_queues_and_other_queues(cursor: Any) -> None:
    new_job(queue="paused")
    other = new_job(queue="other")
    QueueMeta.objects.create(queue="paused", paused_at="2020-01-01T00:00:00Z", paused_by="op")
    assert jobs.claim(cursor, ["default"], 5, "w-1") == []
    assert [r.id for r in jobs.claim(cursor, None, 5, "w-1")] == [other.id]


def test_complete__a_batch_in_one_statement_returns_the_stored_rows(cursor: Any) -> None:
    a, b = new_job(), new_job()
    rows = jobs.claim(cursor, None, 2, "w-1")
    done = [jobs.Done(r.id, r.attempt, f'{{"n": {r.id}}}') for r in rows]
    stored = jobs.complete(cursor, done)
    assert sorted(r.id for r in stored) == sorted([a.id, b.id])
    assert all(r.state == "completed" and r.finished_at is not None for r in stored)
    assert all(r.result == {"n": r.id} for r in stored)
    assert jobs.complete(cursor, []) == []


def test_complete__is_fenced_by_the_attempt_so_a_late_report_changes_nothing(cursor: Any) -> None:
    # Attempt 1 is rescued (worker presumed dead), attempt 2 is running: a late
    # report of attempt 1 in the same batch as a good one completes only the good one.
    rescued, fine = new_job(), new_job()
    first = {r.id: r for r in jobs.claim(cursor, None, 2, "w-1")}
    Job.objects.filter(id=rescued.id).update(heartbeat_at=first[rescued.id].heartbeat_at - timedelta(hours=1))
    assert [r.id for r in jobs.rescue(cursor, timedelta(minutes=5))] == [rescued.id]
    (second,) = jobs.claim(cursor, None, 1, "w-2")
    assert (second.id, second.attempt) == (rescued.id, 2)
    stored = jobs.complete(cursor, [jobs.Done(rescued.id, 1, '"late"'), jobs.Done(fine.id, 1, '"ok"')])
    assert [r.id for r in stored] == [fine.id]
    row = Job.objects.get(id=rescued.id)
    assert (row.state, row.attempt, row.result) == ("running", 2, None)
    # Reporting the same attempt twice completes it once.
    assert jobs.complete(cursor, [jobs.Done(fine.id, 1, '"again"')]) == []
    assert Job.objects.get(id=fine.id).result == "ok"


def test_completed__finds_only_the_attempts_completed_as_named(cursor: Any) -> None:
    job = new_job()
    row = claimed(cursor, job)
    assert jobs.completed(cursor, [jobs.Done(job.id, 1, "null")]) == []
    jobs.complete(cursor, [jobs.Done(job.id, row.attempt, "1")])
    assert [r.id for r in jobs.completed(cursor, [jobs.Done(job.id, 1, "null")])] == [job.id]
    assert jobs.completed(cursor, [jobs.Done(job.id, 2, "null")]) == []


def test_fail__retryable_while_attempts_remain_then_failed(cursor: Any) -> None:
    job = new_job(max_attempts=2)
    row = claimed(cursor, job)
    assert jobs.fail(cursor, job.id, row.attempt, ERROR, timedelta(0)) == "retryable"
    assert jobs.fail(cursor, job.id, row.attempt, ERROR, timedelta(0)) is None  # stale now
    row = claimed(cursor, job)
    assert jobs.fail(cursor, job.id, row.attempt, ERROR, timedelta(0)) == "failed"
    stored = Job.objects.get(id=job.id)
    assert stored.finished_at is not None and len(stored.errors) == 2


def test_fail_job__fails_for_good_whatever_attempts_remain(cursor: Any) -> None:
    job = new_job(max_attempts=5)
    row = claimed(cursor, job)
    assert jobs.fail_job(cursor, job.id, row.attempt + 1, ERROR) is None
    assert jobs.fail_job(cursor, job.id, row.attempt, ERROR) == "failed"
    assert jobs.state_of(cursor, job.id, 1) == "failed"


def test_release__hands_the_attempt_back_uncounted_or_fails_an_old_job(cursor: Any) -> None:
    job = new_job()
    row = claimed(cursor, job)
    assert jobs.release(cursor, job.id, row.attempt, timedelta(0), timedelta(hours=1), ERROR) == "available"
    stored = Job.objects.get(id=job.id)
    assert (stored.attempt, stored.worker_ids, stored.errors) == (0, [], [])
    row = claimed(cursor, job)
    assert jobs.release(cursor, job.id, row.attempt, timedelta(0), timedelta(0), ERROR) == "failed"
    assert Job.objects.get(id=job.id).errors == [ERROR]


def test_state_of_and_fetch__name_the_attempt_and_the_row(cursor: Any) -> None:
    job = new_job()
    assert jobs.state_of(cursor, job.id, 1) is None
    claimed(cursor, job)
    assert jobs.state_of(cursor, job.id, 1) == "running"
    fetched = jobs.fetch(cursor, job.id)
    assert fetched is not None and fetched.id == job.id and fetched.args == {"args": [], "kwargs": {}}
    assert jobs.fetch(cursor, job.id + 1000) is None


def test_heartbeat__stamps_only_running_attempts_as_named(cursor: Any) -> None:
    job, idle = new_job(), new_job()
    row = claimed(cursor, job)
    Job.objects.filter(id=job.id).update(heartbeat_at=row.heartbeat_at - timedelta(hours=1))
    assert jobs.heartbeat(cursor, [(job.id, 2), (idle.id, 1)]) == 0
    assert jobs.heartbeat(cursor, [(job.id, 1)]) == 1
    assert jobs.heartbeat(cursor, []) == 0
    assert Job.objects.get(id=job.id).heartbeat_at > row.heartbeat_at - timedelta(minutes=1)


def test_rescue__returns_stale_attempts_to_the_queue_or_fails_the_last(cursor: Any) -> None:
    again, last = new_job(max_attempts=3), new_job(max_attempts=1)
    jobs.claim(cursor, None, 2, "w-1")
    assert jobs.rescue(cursor, timedelta(minutes=5)) == []  # fresh heartbeats
    Job.objects.update(heartbeat_at="2000-01-01T00:00:00Z")
    states = {r.id: r.state for r in jobs.rescue(cursor, timedelta(minutes=5))}
    assert states == {again.id: "retryable", last.id: "failed"}


def test_cancel__by_ids_or_schedule_leaves_running_jobs_alone(cursor: Any) -> None:
    waiting, running = new_job(), new_job(priority=50)
    fired = new_job(metadata={"cron_name": "nightly"})
    claimed(cursor, running)
    assert jobs.cancel(cursor, "op", ids=[running.id, waiting.id, 99999]) == [waiting.id]
    assert jobs.cancel(cursor, "op", cron_name="nightly") == [fired.id]
    stored = Job.objects.get(id=waiting.id)
    assert stored.state == "cancelled" and stored.errors[-1]["traceback"] == "cancelled by op"
    assert Job.objects.get(id=running.id).state == "running"
    with pytest.raises(ValueError):
        jobs.cancel(cursor, "op")


def test_retry__gives_a_failed_or_cancelled_job_one_more_attempt(cursor: Any) -> None:
    job = new_job(max_attempts=1)
    assert jobs.retry(cursor, job.id) is False  # not finished
    row = claimed(cursor, job)
    jobs.fail(cursor, job.id, row.attempt, ERROR, timedelta(0))
    assert jobs.retry(cursor, job.id) is True
    stored = Job.objects.get(id=job.id)
    assert (stored.state, stored.max_attempts, stored.finished_at) == ("available", 2, None)


def test_prune__counts_and_deletes_only_finished_jobs_older_than_the_age(cursor: Any) -> None:
    old, recent, waiting = new_job(), new_job(), new_job()
    Job.objects.filter(id=old.id).update(state="completed", finished_at="2000-01-01T00:00:00Z")
    Job.objects.filter(id=recent.id).update(state="failed", finished_at="2999-01-01T00:00:00Z")
    age = timedelta(days=1)
    assert jobs.count_prunable(cursor, age) == 1
    assert jobs.prune_batch(cursor, age, 10) == 1
    assert sorted(Job.objects.values_list("id", flat=True)) == [recent.id, waiting.id]


def test_complete_and_claim__completes_the_batch_then_claims_in_order_in_one_statement(cursor: Any) -> None:
    running = new_job()
    row = claimed(cursor, running)
    low, high = new_job(priority=-5), new_job(priority=5)
    new_job(queue="other")
    done, got = jobs.complete_and_claim(
        cursor, [jobs.Done(row.id, row.attempt, '"ok"')], ["default"], 5, "w-2"
    )
    # A completed row holds only what its completion changed.
    assert done == [
        JobRow(id=r.id, attempt=r.attempt, state=r.state, finished_at=r.finished_at) for r in done
    ]
    assert all(r.finished_at is not None for r in done)
    assert [(r.id, r.attempt, r.state) for r in done] == [(running.id, 1, "completed")]
    stored = Job.objects.get(id=running.id)
    assert (stored.state, stored.result, stored.finished_at) == ("completed", "ok", done[0].finished_at)
    assert [r.id for r in got] == [high.id, low.id]  # the other queue is not listed
    assert all(r.state == "running" and r.attempt == 1 and r.worker_ids == ["w-2"] for r in got)
    assert isinstance(got[0].args, dict)  # JSON columns decoded


def test_complete_and_claim__claims_nothing_at_limit_zero_nor_from_a_paused_queue(cursor: Any) -> None:
    waiting = new_job(queue="paused")
    QueueMeta.objects.create(queue="paused", paused_at="2020-01-01T00:00:00Z", paused_by="op")
    assert jobs.complete_and_claim(cursor, [], None, 0, "w-1") == ([], [])
    assert jobs.complete_and_claim(cursor, [], None, 5, "w-1") == ([], [])
    assert Job.objects.get(id=waiting.id).state == "available"


def test_complete_and_claim__is_fenced_by_the_attempt_so_a_late_report_changes_nothing(cursor: Any) -> None:
    # Attempt 1 is rescued and attempt 2 runs: a late report of attempt 1
    # completes nothing, and the claim in the same statement still happens.
    rescued = new_job()
    first = claimed(cursor, rescued)
    Job.objects.filter(id=rescued.id).update(heartbeat_at=first.heartbeat_at - timedelta(hours=1))
    assert [r.id for r in jobs.rescue(cursor, timedelta(minutes=5))] == [rescued.id]
    done, got = jobs.complete_and_claim(cursor, [jobs.Done(rescued.id, 1, '"late"')], None, 1, "w-2")
    assert done == [] and [(r.id, r.attempt) for r in got] == [(rescued.id, 2)]
    done, got = jobs.complete_and_claim(cursor, [jobs.Done(rescued.id, 1, '"late"')], None, 1, "w-2")
    assert done == [] and got == []
    row = Job.objects.get(id=rescued.id)
    assert (row.state, row.attempt, row.result, row.worker_ids) == ("running", 2, None, ["w-1", "w-2"])


def test_complete_and_claim__a_claimed_row_has_every_column_as_from_claim(cursor: Any) -> None:
    # The combined statement lists its columns (jobs.CLAIMED_ONLY): a column
    # added to awa_jobs must be added there too.
    first, second = new_job(), new_job()
    (row,) = jobs.claim(cursor, None, 1, "w-1")
    _, (got,) = jobs.complete_and_claim(cursor, [], None, 1, "w-1")
    assert (row.id, got.id) == (first.id, second.id)
    columns = [f.column for f in Job._meta.concrete_fields]
    assert sorted(jobs.COMPLETE_AND_CLAIM_COLUMNS) == sorted([*columns, jobs.INVALID])
    assert sorted(f.name for f in fields(JobRow)) == sorted([*columns, jobs.INVALID])
    assert (got.kind, got.args, got.metadata, got.queue) == (row.kind, row.args, row.metadata, row.queue)
    assert None not in (got.run_at, got.created_at, got.attempted_at, got.started_at, got.heartbeat_at)
