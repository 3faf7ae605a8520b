"""Flow control: ``awa_django.enqueue`` (unique and concurrency keys) and the
claim's queue limits (``awa_claim_v3``), at the database tier."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.core.checks import run_checks
from django.db import close_old_connections, connection
from django.test import override_settings
from django.utils import timezone

import awa_django
from awa_django.client.compat import IMMEDIATE_BACKEND, TaskResult, TaskResultStatus
from awa_django.models import Job, JobState
from awa_django.store import jobs
from tests.helpers.database import raw_connection
from tests.testapp.tasks import record, send_mail

pytestmark = pytest.mark.django_db

LIMITS = {"mail": {"concurrency": 2}}


@pytest.fixture
def cursor() -> Iterator[Any]:
    with connection.cursor() as cur:
        yield cur


def claim_ids(cursor: Any, limit: int = 10, limits: dict[str, Any] | None = None) -> list[int]:
    return [r.id for r in jobs.claim(cursor, None, limit, "w-1", limits)]


def finish(job_id: int) -> None:
    Job.objects.filter(id=job_id).update(state=JobState.COMPLETED, finished_at=timezone.now())


# -- the API ------------------------------------------------------------------
def test_enqueue__returns_the_task_result_and_stores_the_keys() -> None:
    result = awa_django.enqueue(record, args=["a"], kwargs={"x": 1}, unique_key="u", concurrency_key="c",
                                concurrency_limit=3)  # fmt: skip
    assert isinstance(result, TaskResult)
    assert result.status == TaskResultStatus.READY and result.args == ["a"] and result.kwargs == {"x": 1}
    job = Job.objects.get(id=int(result.id))
    assert (job.unique_key, job.concurrency_key, job.concurrency_limit) == ("u", "c", 3)
    assert record.get_backend().get_result(result.id).id == result.id


def test_enqueue__keeps_the_using_overrides() -> None:
    task = send_mail.using(queue_name="reports", priority=-7)
    result = awa_django.enqueue(task, kwargs={"to": "x"}, concurrency_key="c")
    job = Job.objects.get(id=int(result.id))
    assert (job.queue, job.priority) == ("reports", -7)
    assert (result.task.queue_name, result.task.priority) == ("reports", -7)


def test_enqueue__without_keys_is_a_plain_enqueue() -> None:
    result = awa_django.enqueue(record, args=["a"])
    job = Job.objects.get(id=int(result.id))
    assert (job.unique_key, job.concurrency_key, job.concurrency_limit) == (None, None, None)


@pytest.mark.parametrize(
    ("options", "error", "names"),
    [
        ({"unique_key": ""}, ValueError, "unique_key"),
        ({"unique_key": "   "}, ValueError, "unique_key"),
        ({"unique_key": 5}, TypeError, "unique_key"),
        ({"unique_key": "a\x00b"}, ValueError, "unique_key"),
        ({"unique_key": "x" * 501}, ValueError, "unique_key"),
        ({"concurrency_key": ""}, ValueError, "concurrency_key"),
        ({"concurrency_key": b"k"}, TypeError, "concurrency_key"),
        ({"concurrency_key": "k", "concurrency_limit": 0}, ValueError, "concurrency_limit"),
        ({"concurrency_key": "k", "concurrency_limit": -1}, ValueError, "concurrency_limit"),
        ({"concurrency_key": "k", "concurrency_limit": 1.5}, TypeError, "concurrency_limit"),
        ({"concurrency_key": "k", "concurrency_limit": True}, TypeError, "concurrency_limit"),
        ({"concurrency_limit": 2}, ValueError, "concurrency_limit"),
    ],
)
def test_enqueue__bad_input_is_an_error_naming_the_argument(
    options: dict[str, Any], error: type[Exception], names: str
) -> None:
    with pytest.raises(error, match=names):
        awa_django.enqueue(record, **options)
    assert not Job.objects.exists()


def test_enqueue__refuses_what_is_not_a_task() -> None:
    with pytest.raises(TypeError, match="task"):
        awa_django.enqueue(print, unique_key="k")  # type: ignore[arg-type]


# -- unique keys --------------------------------------------------------------
def test_unique_key__returns_the_unfinished_job_until_it_finishes() -> None:
    first = awa_django.enqueue(record, args=["a"], unique_key="k")
    again = awa_django.enqueue(record, args=["b"], unique_key="k")
    assert again.id == first.id and again.args == ["a"]
    assert Job.objects.count() == 1
    for state in (JobState.RUNNING, JobState.RETRYABLE, JobState.SCHEDULED):
        Job.objects.filter(id=int(first.id)).update(state=state)
        assert awa_django.enqueue(record, unique_key="k").id == first.id
    finish(int(first.id))
    fresh = awa_django.enqueue(record, args=["c"], unique_key="k")
    assert fresh.id != first.id and Job.objects.count() == 2


def test_unique_key__is_one_key_space_across_tasks() -> None:
    first = awa_django.enqueue(record, unique_key="k")
    other = awa_django.enqueue(send_mail, unique_key="k")
    assert other.id == first.id and other.task.module_path == record.module_path


@pytest.mark.django_db(transaction=True)
def test_unique_key__concurrent_enqueues_create_one_job() -> None:
    barrier = threading.Barrier(50)
    ids: list[str] = []
    errors: list[Exception] = []

    def enqueue(n: int) -> None:
        try:
            barrier.wait(timeout=60)
            ids.append(awa_django.enqueue(record, args=[n], unique_key="one").id)
        except Exception as exc:
            errors.append(exc)
        finally:
            close_old_connections()
            connection.close()

    threads = [threading.Thread(target=enqueue, args=(n,)) for n in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    assert len(ids) == 50 and len(set(ids)) == 1
    assert Job.objects.filter(unique_key="one").count() == 1


# -- concurrency keys ---------------------------------------------------------
def test_concurrency_key__a_held_back_job_does_not_block_the_jobs_behind_it(cursor: Any) -> None:
    a1 = int(awa_django.enqueue(record, concurrency_key="k").id)
    a2 = int(awa_django.enqueue(record, concurrency_key="k").id)
    free = int(awa_django.enqueue(record).id)
    b1 = int(awa_django.enqueue(record, concurrency_key="other").id)
    assert claim_ids(cursor) == [a1, free, b1]
    assert claim_ids(cursor) == []  # a2 waits for a1
    finish(a1)
    assert claim_ids(cursor) == [a2]


def test_concurrency_key__limit_counts_running_jobs(cursor: Any) -> None:
    ids = [int(awa_django.enqueue(record, concurrency_key="k", concurrency_limit=2).id) for _ in range(5)]
    assert claim_ids(cursor, 1) == ids[:1]
    assert claim_ids(cursor) == ids[1:2]
    assert claim_ids(cursor) == []
    finish(ids[0])
    finish(ids[1])
    assert claim_ids(cursor) == ids[2:4]


def test_concurrency_key__claims_keep_start_order(cursor: Any) -> None:
    low = int(awa_django.enqueue(record.using(priority=-5), concurrency_key="a").id)
    high = int(awa_django.enqueue(record.using(priority=5), concurrency_key="b").id)
    mid = int(awa_django.enqueue(record, concurrency_key="c").id)
    assert claim_ids(cursor) == [high, mid, low]


def test_concurrency_key__rescue_releases_the_key(cursor: Any) -> None:
    first = int(awa_django.enqueue(record, concurrency_key="k").id)
    second = int(awa_django.enqueue(record, concurrency_key="k").id)
    assert claim_ids(cursor) == [first]
    Job.objects.filter(id=first).update(heartbeat_at=timezone.now() - timedelta(hours=1))
    assert [r.id for r in jobs.rescue(cursor, timedelta(minutes=1))] == [first]
    # The key is free again: one of its jobs (the rescued one waits for its run_at) runs.
    Job.objects.filter(id=first).update(run_at=timezone.now() - timedelta(minutes=1))
    assert claim_ids(cursor) == [first]
    assert claim_ids(cursor) == []
    assert Job.objects.get(id=second).state == JobState.AVAILABLE


def test_concurrency_key__complete_and_claim_frees_the_slot_in_the_same_statement(cursor: Any) -> None:
    first = int(awa_django.enqueue(record, concurrency_key="k").id)
    second = int(awa_django.enqueue(record, concurrency_key="k").id)
    (row,) = jobs.claim(cursor, None, 5, "w-1")
    done, claimed = jobs.complete_and_claim(cursor, [jobs.Done(first, row.attempt, "null")], None, 5, "w-1")
    assert [r.id for r in done] == [first] and [r.id for r in claimed] == [second]


@pytest.mark.django_db(transaction=True)
def test_concurrency_key__a_key_another_claim_is_counting_is_passed_over() -> None:
    """The claim waits only for its first key's lock; a later key another claim
    holds is passed over this time, and the jobs behind it are claimed."""
    first = int(awa_django.enqueue(record, concurrency_key="a").id)
    keyed = int(awa_django.enqueue(record, concurrency_key="k").id)
    free = int(awa_django.enqueue(record).id)
    with raw_connection(autocommit=False) as other:
        other.execute("SELECT pg_advisory_xact_lock(7274310, hashtext('k'))")
        with connection.cursor() as cur:
            assert claim_ids(cur) == [first, free]
        other.rollback()
    with connection.cursor() as cur:
        assert claim_ids(cur) == [keyed]


# -- queue limits -------------------------------------------------------------
def test_queue_concurrency__limits_running_jobs_of_the_queue(cursor: Any) -> None:
    mail = [int(awa_django.enqueue(send_mail).id) for _ in range(4)]
    other = int(awa_django.enqueue(record).id)
    assert claim_ids(cursor, limits=LIMITS) == [*mail[:2], other]
    assert claim_ids(cursor, limits=LIMITS) == []
    finish(mail[0])
    assert claim_ids(cursor, limits=LIMITS) == [mail[2]]


def test_queue_rate__counts_starts_in_the_sliding_window(cursor: Any) -> None:
    limits = {"mail": {"rate": 3, "period": 60}}
    mail = [int(awa_django.enqueue(send_mail).id) for _ in range(6)]
    assert claim_ids(cursor, limits=limits) == mail[:3]
    for job_id in mail[:3]:
        finish(job_id)
    assert claim_ids(cursor, limits=limits) == []  # finished, but started within the minute
    Job.objects.filter(id=mail[0]).update(attempted_at=timezone.now() - timedelta(seconds=61))
    assert claim_ids(cursor, limits=limits) == [mail[3]]


def test_queue_limits__a_full_queue_does_not_block_other_queues(cursor: Any) -> None:
    mail = [int(awa_django.enqueue(send_mail.using(priority=50)).id) for _ in range(300)]
    other = int(awa_django.enqueue(record).id)
    assert claim_ids(cursor, 5, {"mail": {"concurrency": 1}}) == [mail[0], other]


# -- QUEUE_LIMITS setting -----------------------------------------------------
def backend_with(limits: Any) -> dict[str, Any]:
    return {"default": {"BACKEND": "awa_django.client.backend.AwaBackend", "QUEUES": [],
                        "OPTIONS": {"QUEUE_LIMITS": limits}}}  # fmt: skip


@pytest.mark.parametrize(
    "limits",
    [
        [],
        {"mail": {"rate": "100"}},
        {"mail": {"rate": "0/m"}},
        {"mail": {"rate": "100/w"}},
        {"mail": {"concurrency": 0}},
        {"mail": {"concurrency": "5"}},
        {"mail": {"burst": 5}},
        {"mail": {}},
        {"": {"rate": "1/s"}},
    ],
)
def test_queue_limits_check__e032_names_the_bad_value(limits: Any) -> None:
    with override_settings(TASKS=backend_with(limits)):
        messages = [m for m in run_checks() if m.id == "awa_django.E032"]
    assert messages and all("QUEUE_LIMITS" in m.msg for m in messages)


def test_queue_limits_check__good_limits_pass() -> None:
    with override_settings(
        TASKS=backend_with({"mail": {"rate": "100/m", "concurrency": 5}, "x": {"rate": "1/30s"}})
    ):
        assert [m for m in run_checks() if m.id == "awa_django.E032"] == []


def test_claims__update_only_the_claimed_jobs_rows(cursor: Any) -> None:
    """No counter row: keyed and rate-limited claims write nothing but the jobs they claim
    (the per-key and per-queue serialisation is an advisory lock, held in memory)."""
    for i in range(20):
        awa_django.enqueue(send_mail if i % 2 else record, concurrency_key=f"k{i % 5}")
    cursor.execute("SELECT relname, n_tup_upd + n_tup_ins + n_tup_del FROM pg_stat_xact_user_tables")
    before = dict(cursor.fetchall())
    claimed = claim_ids(cursor, 20, {"mail": {"rate": 100, "period": 60, "concurrency": 3}})
    cursor.execute("SELECT relname, n_tup_upd + n_tup_ins + n_tup_del FROM pg_stat_xact_user_tables")
    changed = {name: n - before.get(name, 0) for name, n in cursor.fetchall() if n != before.get(name, 0)}
    assert changed == {"awa_jobs": len(claimed)} and len(claimed) == 5


def test_held_back__ready_jobs_waiting_only_for_flow_control(cursor: Any) -> None:
    """What keeps a burst worker waiting: keyed ready jobs, or ready jobs of a limited queue."""
    assert not jobs.held_back(cursor, None, [])
    awa_django.enqueue(record)
    assert not jobs.held_back(cursor, None, [])
    awa_django.enqueue(send_mail)
    assert jobs.held_back(cursor, None, ["mail"]) and not jobs.held_back(cursor, ["default"], ["mail"])
    awa_django.enqueue(record, concurrency_key="k")
    assert jobs.held_back(cursor, ["default"], [])


def test_enqueue__keys_need_an_awa_backend() -> None:
    with override_settings(TASKS={"default": {"BACKEND": IMMEDIATE_BACKEND}}):
        result = awa_django.enqueue(record, args=["now"])  # no keys: any backend, as task.enqueue()
        assert result.status == TaskResultStatus.SUCCESSFUL
        with pytest.raises(TypeError, match="AwaBackend"):
            awa_django.enqueue(record, unique_key="k")
    assert not Job.objects.exists()


def test_retry__a_failed_job_whose_unique_key_is_held_again_is_refused_naming_the_holder() -> None:
    from awa_django import operations as queues
    from awa_django.exceptions import OperationRefused

    old = awa_django.enqueue(record, args=["a"], unique_key="k")
    Job.objects.filter(id=int(old.id)).update(state=JobState.FAILED, finished_at=timezone.now())
    new = awa_django.enqueue(record, args=["b"], unique_key="k")
    with pytest.raises(OperationRefused, match=f"job {new.id} holds its unique key 'k'"):
        queues.retry_job(int(old.id), "ops")
    assert Job.objects.get(id=int(old.id)).state == JobState.FAILED  # nothing written
    finish(int(new.id))
    assert queues.retry_job(int(old.id), "ops") is True  # the key is free again
    assert Job.objects.get(id=int(old.id)).state == JobState.AVAILABLE
    # A job that is not failed or cancelled stays a plain False, whoever holds its key.
    assert queues.retry_job(int(new.id), "ops") is False


def test_retry__finds_the_key_holder_through_the_unique_key_index() -> None:
    # awa_jobs may hold millions of finished jobs: a retry must not read them all.
    from django.test.utils import CaptureQueriesContext

    from awa_django import operations as queues

    old = awa_django.enqueue(record, args=["a"], unique_key="k")
    Job.objects.filter(id=int(old.id)).update(state=JobState.FAILED, finished_at=timezone.now())
    awa_django.enqueue(record, args=["b"], unique_key="k")
    with CaptureQueriesContext(connection) as queries, pytest.raises(Exception, match="holds its unique key"):
        queues.retry_job(int(old.id), "ops")
    statements = [q["sql"] for q in queries if "awa_jobs AS h" in q["sql"]]
    assert len(statements) == 2  # the retry, then the holder named
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        for sql in statements:
            cursor.execute(f"EXPLAIN {sql}")
            plan = "\n".join(r[0] for r in cursor.fetchall())
            assert "awa_jobs_unique_key" in plan, plan
