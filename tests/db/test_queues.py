"""Queue and job operations: ``awa_django.queues`` and ``manage.py awa queue|jobs``."""

from __future__ import annotations

import itertools
import json
import threading
from datetime import UTC, datetime, timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import close_old_connections, connection
from django.test import override_settings

from awa_django.cli.arguments import default_actor
from awa_django.models import Job, JobState, QueueMeta
from awa_django.operations.common import ActionResult
from awa_django.operations.queues import (
    QueueStatus,
    cancel_cron_jobs,
    is_queue_paused,
    list_queues,
    pause_queue,
    prune_jobs,
    resume_queue,
    retry_job,
)
from tests.factories import JobFactory
from tests.helpers.database import db_now, raw_connection
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
UNFINISHED = (JobState.AVAILABLE, JobState.SCHEDULED, JobState.RUNNING, JobState.RETRYABLE)
FINISHED = (JobState.COMPLETED, JobState.FAILED, JobState.CANCELLED)
CANCELLABLE = (JobState.AVAILABLE, JobState.SCHEDULED, JobState.RETRYABLE)


def awa(*args: str) -> str:
    out = StringIO()
    call_command("awa", *args, stdout=out)
    return out.getvalue()


def awa_json(*args: str) -> Any:
    return json.loads(awa(*args, "--json"))


def snapshot(job: Job) -> dict[str, Any]:
    """Every column of a job row, for 'left untouched' assertions."""
    return Job.objects.filter(id=job.id).values().get()


_fires = itertools.count()


def cron_job(name: str, state: JobState, **fields: Any) -> Job:
    """A job of schedule ``name`` (each with its own fire time: one job per fire)."""
    fire_at = T0 + timedelta(minutes=next(_fires))
    return JobFactory(
        state=state,
        metadata={"cron_name": name, "cron_fire_at": fire_at.isoformat()},
        **fields,
    )


# -- pause / resume -----------------------------------------------------------------


def test_pause_queue__records_the_actor_and_is_idempotent() -> None:
    assert is_queue_paused("mail") is False
    assert pause_queue("mail", "alice") == ActionResult("pause_queue", ["mail"])
    meta = QueueMeta.objects.get(queue="mail")
    assert meta.paused_by == "alice" and meta.paused_at is not None
    assert is_queue_paused("mail") is True
    again_result = pause_queue("mail", "bob")
    assert not again_result and again_result.detail == "already paused by alice"
    again = QueueMeta.objects.get(queue="mail")
    assert (again.paused_by, again.paused_at) == ("alice", meta.paused_at)  # first pauser kept
    assert is_queue_paused("default") is False


@pytest.mark.django_db(transaction=True)
def test_pause_queue__an_already_paused_queue_is_not_written_to_and_wakes_no_worker() -> None:
    """Pausing a paused queue only reads its row: no statement on awa_queue_meta, so
    its trigger notifies no worker. A marker notified afterwards arrives first."""
    pause_queue("mail", "alice")
    with raw_connection() as listener:
        listener.execute("LISTEN awa_jobs")
        assert not pause_queue("mail", "bob")
        with raw_connection() as other:
            other.execute("SELECT pg_notify('awa_jobs', 'marker')")
        payloads = []
        for notice in listener.notifies(timeout=30):
            payloads.append(notice.payload)
            if notice.payload == "marker":
                break
    assert payloads == ["marker"]


def test_resume_queue__clears_the_pause_and_is_idempotent() -> None:
    pause_queue("mail", "alice")
    assert resume_queue("mail", "bob").changed
    meta = QueueMeta.objects.get(queue="mail")
    assert meta.paused_at is None and meta.paused_by is None
    assert is_queue_paused("mail") is False
    assert resume_queue("mail", "bob").detail == "not paused"
    # Pausing again works after a resume, with the new actor.
    assert pause_queue("mail", "carol")
    assert QueueMeta.objects.get(queue="mail").paused_by == "carol"


def test_resume_queue__never_paused_queue_is_a_no_op() -> None:
    assert not resume_queue("ghost", "alice")
    assert not QueueMeta.objects.filter(queue="ghost").exists()


@pytest.mark.parametrize("actor", ["", "   ", None])
def test_pause_queue__blank_actor_is_refused(actor: Any) -> None:
    with pytest.raises(ValueError, match="actor"):
        pause_queue("mail", actor)
    assert not QueueMeta.objects.exists()
    pause_queue("mail", "alice")
    with pytest.raises(ValueError, match="actor"):
        resume_queue("mail", actor)
    assert is_queue_paused("mail")


def test_pause_queue__actor_is_stripped() -> None:
    pause_queue("mail", "  alice  ")
    assert QueueMeta.objects.get(queue="mail").paused_by == "alice"


def test_pause_queue__does_not_touch_jobs() -> None:
    job = JobFactory(queue="mail", state=JobState.AVAILABLE)
    before = snapshot(job)
    pause_queue("mail", "alice")
    assert snapshot(job) == before


@pytest.mark.django_db(transaction=True)
def test_pause_queue__concurrent_pauses_change_it_once() -> None:
    barrier = threading.Barrier(4)
    outcomes: list[bool] = []
    errors: list[Exception] = []

    def pause(actor: str) -> None:
        try:
            barrier.wait(timeout=60)
            outcomes.append(bool(pause_queue("mail", actor)))
        except Exception as exc:
            errors.append(exc)
        finally:
            close_old_connections()
            connection.close()

    threads = [threading.Thread(target=pause, args=(f"op{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    assert sorted(outcomes) == [False, False, False, True]
    meta = QueueMeta.objects.get(queue="mail")
    assert meta.paused_at is not None and meta.paused_by in {"op0", "op1", "op2", "op3"}


@pytest.mark.django_db(transaction=True)
def test_pause_queue__racing_pauses_of_a_resumed_queue_change_it_once(
    second_connection: Any,
) -> None:
    # The queue row exists (paused once, resumed). Hold its row lock in another
    # session so every pause reads it at the same time; only one may win.
    pause_queue("mail", "setup")
    resume_queue("mail", "setup")
    outcomes: list[bool] = []
    errors: list[Exception] = []

    def pause(actor: str) -> None:
        try:
            outcomes.append(bool(pause_queue("mail", actor)))
        except Exception as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=pause, args=(f"op{i}",)) for i in range(3)]
    with second_connection.transaction():
        second_connection.execute("SELECT 1 FROM awa_queue_meta WHERE queue = 'mail' FOR UPDATE")
        for t in threads:
            t.start()
        with raw_connection() as observer:
            wait_for(
                lambda: (
                    observer.execute(
                        "SELECT count(*) FROM pg_stat_activity "
                        "WHERE datname = current_database() AND wait_event_type = 'Lock'"
                    ).fetchone()[0]
                    == 3
                )
            )
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    assert sorted(outcomes) == [False, False, True]
    assert QueueMeta.objects.get(queue="mail").paused_by in {"op0", "op1", "op2"}


# -- list_queues ----------------------------------------------------------------------


def test_list_queues__counts_per_state_and_paused_queues_without_jobs() -> None:
    JobFactory.create_batch(2, queue="default", state=JobState.AVAILABLE)
    JobFactory(queue="default", state=JobState.FAILED)
    JobFactory(queue="mail", state=JobState.RUNNING)
    JobFactory(queue="mail", state=JobState.SCHEDULED)
    pause_queue("reports", "alice")
    pause_queue("mail", "bob")
    statuses = list_queues()
    assert [s.queue for s in statuses] == ["default", "mail", "reports"]
    default, mail, reports = statuses
    assert default == QueueStatus(
        queue="default", paused_at=None, paused_by=None, counts={"available": 2, "failed": 1}
    )
    assert mail.counts == {"running": 1, "scheduled": 1}
    assert mail.paused_by == "bob" and mail.paused_at is not None
    assert reports.counts == {} and reports.paused_by == "alice" and reports.paused_at is not None


def test_list_queues__empty() -> None:
    assert list_queues() == []


# -- cancel_cron_jobs ---------------------------------------------------------------


def test_cancel_cron_jobs__cancels_only_not_yet_running_jobs_of_that_schedule() -> None:
    mine = {state: cron_job("nightly", state) for state in JobState}
    other = cron_job("hourly", JobState.AVAILABLE)
    plain = JobFactory(state=JobState.AVAILABLE)
    lookalike = JobFactory(state=JobState.AVAILABLE, metadata={"note": "nightly"})
    untouched = [mine[s] for s in JobState if s not in CANCELLABLE] + [other, plain, lookalike]
    before = {j.id: snapshot(j) for j in untouched}

    ids = cancel_cron_jobs("nightly", "alice")

    assert ids == sorted(mine[s].id for s in CANCELLABLE)
    for state in CANCELLABLE:
        row = Job.objects.get(id=mine[state].id)
        assert row.state == JobState.CANCELLED
        assert row.finished_at is not None
        assert row.errors[-1]["exception_class_path"] == "awa_django.exceptions.JobCancelled"
        assert "alice" in row.errors[-1]["traceback"]
    assert {j.id: snapshot(j) for j in untouched} == before


def test_cancel_cron_jobs__keeps_earlier_errors_and_is_idempotent() -> None:
    earlier = {"exception_class_path": "builtins.RuntimeError", "traceback": "first attempt"}
    job = cron_job("nightly", JobState.RETRYABLE, attempt=1, errors=[earlier])
    assert cancel_cron_jobs("nightly", "alice") == [job.id]
    row = Job.objects.get(id=job.id)
    assert row.errors[0] == earlier and len(row.errors) == 2
    assert cancel_cron_jobs("nightly", "bob") == []
    assert Job.objects.get(id=job.id).errors == row.errors


def test_cancel_cron_jobs__includes_manual_triggers_of_the_schedule() -> None:
    job = JobFactory(metadata={"cron_name": "nightly", "triggered_manually": True, "triggered_by": "x"})
    assert cancel_cron_jobs("nightly", "alice") == [job.id]


def test_cancel_cron_jobs__unknown_schedule_cancels_nothing() -> None:
    job = cron_job("nightly", JobState.AVAILABLE)
    assert cancel_cron_jobs("ghost", "alice") == []
    assert Job.objects.get(id=job.id).state == JobState.AVAILABLE


def test_cancel_cron_jobs__blank_actor_is_refused() -> None:
    job = cron_job("nightly", JobState.AVAILABLE)
    with pytest.raises(ValueError, match="actor"):
        cancel_cron_jobs("nightly", " ")
    assert Job.objects.get(id=job.id).state == JobState.AVAILABLE


# -- retry_job ------------------------------------------------------------------------


def test_retry_job__failed_job_gets_one_more_attempt() -> None:
    error = {"exception_class_path": "builtins.RuntimeError", "traceback": "boom"}
    job = JobFactory(
        state=JobState.FAILED, attempt=3, max_attempts=3, finished_at=T0, run_at=T0, errors=[error]
    )
    assert retry_job(job.id, "alice") is True
    row = Job.objects.get(id=job.id)
    assert row.state == JobState.AVAILABLE
    assert row.finished_at is None
    assert row.attempt == 3 and row.max_attempts == 4
    assert row.run_at > T0 and row.run_at <= db_now()
    assert row.errors == [error]  # history is kept
    # And a worker can claim it for attempt 4.
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, attempt FROM awa_claim_v3(NULL, 10, 'w-test', NULL)")
        assert cursor.fetchall() == [(job.id, 4)]


def test_retry_job__cancelled_job_keeps_its_unspent_budget() -> None:
    job = JobFactory(state=JobState.CANCELLED, attempt=0, max_attempts=3, finished_at=T0)
    assert retry_job(job.id, "alice") is True
    row = Job.objects.get(id=job.id)
    assert (row.state, row.attempt, row.max_attempts, row.finished_at) == (
        JobState.AVAILABLE,
        0,
        3,
        None,
    )


def test_retry_job__is_not_repeatable() -> None:
    job = JobFactory(state=JobState.FAILED, attempt=1, max_attempts=1, finished_at=T0)
    assert retry_job(job.id, "alice") is True
    assert retry_job(job.id, "alice") is False
    assert Job.objects.get(id=job.id).max_attempts == 2


@pytest.mark.parametrize(
    "state",
    [
        JobState.AVAILABLE,
        JobState.SCHEDULED,
        JobState.RUNNING,
        JobState.RETRYABLE,
        JobState.COMPLETED,
    ],
)
def test_retry_job__refuses_jobs_that_are_not_failed_or_cancelled(state: JobState) -> None:
    job = JobFactory(
        state=state,
        attempt=1,
        max_attempts=1,
        finished_at=T0 if state == JobState.COMPLETED else None,
    )
    before = snapshot(job)
    assert retry_job(job.id, "alice") is False
    assert snapshot(job) == before


def test_retry_job__unknown_job() -> None:
    assert retry_job(987654321, "alice") is False


def test_retry_job__blank_actor_is_refused() -> None:
    job = JobFactory(state=JobState.FAILED, attempt=1, max_attempts=1, finished_at=T0)
    with pytest.raises(ValueError, match="actor"):
        retry_job(job.id, "")
    assert Job.objects.get(id=job.id).state == JobState.FAILED


# -- prune_jobs -----------------------------------------------------------------------


def test_prune_jobs__deletes_only_finished_jobs_older_than_the_retention() -> None:
    now = db_now()
    old = now - timedelta(hours=2)
    recent = now - timedelta(minutes=10)
    doomed = [JobFactory(state=s, finished_at=old) for s in FINISHED]
    kept = [JobFactory(state=s, finished_at=recent) for s in FINISHED]
    # Unfinished jobs are never pruned, whatever their finished_at says.
    kept += [JobFactory(state=s, finished_at=old, created_at=old) for s in UNFINISHED]
    kept += [JobFactory(state=JobState.COMPLETED, finished_at=None, created_at=old)]
    with override_settings(AWA_JOB_RETENTION=3600):
        assert prune_jobs() == 3
    remaining = set(Job.objects.values_list("id", flat=True))
    assert remaining == {j.id for j in kept}
    assert not remaining & {j.id for j in doomed}


def test_prune_jobs__argument_overrides_the_retention() -> None:
    now = db_now()
    job = JobFactory(state=JobState.COMPLETED, finished_at=now - timedelta(minutes=10))
    unfinished = JobFactory(state=JobState.RUNNING, finished_at=now - timedelta(minutes=10))
    with override_settings(AWA_JOB_RETENTION=3600):
        assert prune_jobs() == 0
        assert prune_jobs(older_than=60) == 1
    assert list(Job.objects.values_list("id", flat=True)) == [unfinished.id]
    assert not Job.objects.filter(id=job.id).exists()


def test_prune_jobs__zero_retention_prunes_everything_finished() -> None:
    JobFactory(state=JobState.FAILED, finished_at=db_now() - timedelta(seconds=1))
    keep = JobFactory(state=JobState.AVAILABLE)
    with override_settings(AWA_JOB_RETENTION=3600):
        assert prune_jobs(older_than=0) == 1
    assert list(Job.objects.values_list("id", flat=True)) == [keep.id]


def test_prune_jobs__default_retention_is_seven_days() -> None:
    now = db_now()
    JobFactory(state=JobState.COMPLETED, finished_at=now - timedelta(days=8))
    keep = JobFactory(state=JobState.COMPLETED, finished_at=now - timedelta(days=6))
    assert prune_jobs() == 1
    assert list(Job.objects.values_list("id", flat=True)) == [keep.id]


# -- CLI: awa queue -------------------------------------------------------------------


@override_settings(
    TASKS={
        "default": {
            "BACKEND": "awa_django.client.backend.AwaBackend",
            "OPTIONS": {"QUEUE_LIMITS": {"mail": {"rate": "100/m", "concurrency": 5}}},
        }
    }
)
def test_cli_queue_list__shows_queue_limits() -> None:
    JobFactory(queue="default", state=JobState.AVAILABLE)
    assert awa("queue", "list").strip().splitlines() == [
        "default: active; available=1",
        "mail: active; no jobs; limits 100/60s, 5 at once",
    ]
    assert awa_json("queue", "list")[1]["limits"] == {"rate": 100, "period": 60, "concurrency": 5}


def test_cli_queue_list__empty() -> None:
    assert awa("queue", "list").strip() == "No queues found."
    assert awa_json("queue", "list") == []


def test_cli_queue_list__text_and_json() -> None:
    JobFactory.create_batch(2, queue="default", state=JobState.AVAILABLE)
    JobFactory(queue="default", state=JobState.FAILED)
    pause_queue("reports", "alice")
    assert awa("queue", "list").strip().splitlines() == [
        "default: active; available=2, failed=1",
        "reports: paused by alice; no jobs",
    ]
    data = awa_json("queue", "list")
    paused_at = QueueMeta.objects.get(queue="reports").paused_at
    assert data == [
        {
            "queue": "default",
            "paused_at": None,
            "paused_by": None,
            "counts": {"available": 2, "failed": 1},
            "limits": {},
        },
        {
            "queue": "reports",
            "paused_at": paused_at.isoformat(),
            "paused_by": "alice",
            "counts": {},
            "limits": {},
        },
    ]


def test_cli_queue_pause_resume__actor_and_idempotence() -> None:
    assert awa("queue", "pause", "mail", "--actor", "alice").strip() == "pause: queue mail: done"
    assert QueueMeta.objects.get(queue="mail").paused_by == "alice"
    assert awa_json("queue", "pause", "mail", "--actor", "bob") == {
        "action": "pause",
        "queue": "mail",
        "changed": False,
    }
    assert awa("queue", "pause", "mail").strip() == "pause: queue mail: no change"
    assert QueueMeta.objects.get(queue="mail").paused_by == "alice"
    assert awa_json("queue", "resume", "mail", "--actor", "carol") == {
        "action": "resume",
        "queue": "mail",
        "changed": True,
    }
    assert not is_queue_paused("mail")
    assert awa("queue", "resume", "mail").strip() == "resume: queue mail: no change"


def test_cli_queue_pause__default_actor_is_the_cli_user() -> None:
    awa("queue", "pause", "mail")
    actor = QueueMeta.objects.get(queue="mail").paused_by
    assert actor == default_actor() and actor.startswith("cli")


def test_cli_queue_pause__blank_actor_is_an_error() -> None:
    with pytest.raises(CommandError, match="actor"):
        awa("queue", "pause", "mail", "--actor", " ")
    assert not QueueMeta.objects.exists()


# -- CLI: awa jobs --------------------------------------------------------------------


def test_cli_jobs_list__newest_first_with_json_shape() -> None:
    plain = JobFactory(
        kind="tests.testapp.tasks.record",
        queue="default",
        state=JobState.AVAILABLE,
        attempt=0,
        max_attempts=3,
        run_at=T0,
    )
    fire = JobFactory(
        kind="tests.testapp.tasks.send_mail",
        queue="mail",
        state=JobState.FAILED,
        attempt=2,
        max_attempts=2,
        run_at=T0 + timedelta(minutes=1),
        metadata={"cron_name": "nightly", "cron_fire_at": "2026-03-01T12:01:00+00:00"},
    )
    assert awa_json("jobs", "list") == [
        {
            "id": fire.id,
            "kind": "tests.testapp.tasks.send_mail",
            "queue": "mail",
            "state": "failed",
            "attempt": 2,
            "max_attempts": 2,
            "run_at": "2026-03-01T12:01:00+00:00",
            "cron_name": "nightly",
            "cron_fire_at": "2026-03-01T12:01:00+00:00",
            "triggered_manually": False,
            "duration_seconds": None,
            "last_error": None,
            "invalid_timestamps": None,
        },
        {
            "id": plain.id,
            "kind": "tests.testapp.tasks.record",
            "queue": "default",
            "state": "available",
            "attempt": 0,
            "max_attempts": 3,
            "run_at": "2026-03-01T12:00:00+00:00",
            "cron_name": None,
            "cron_fire_at": None,
            "triggered_manually": False,
            "duration_seconds": None,
            "last_error": None,
            "invalid_timestamps": None,
        },
    ]
    lines = awa("jobs", "list").strip().splitlines()
    assert len(lines) == 3
    assert lines[0].split() == [
        "ID",
        "STATE",
        "QUEUE",
        "ATTEMPT",
        "TASK",
        "SCHEDULE",
        "DURATION",
        "LAST",
        "ERROR",
    ]
    assert lines[1].split() == [
        str(fire.id),
        "failed",
        "mail",
        "2/2",
        "tests.testapp.tasks.send_mail",
        "nightly",
        "@",
        "2026-03-01T12:01:00+00:00",
        "-",
        "-",
    ]
    assert lines[2].split() == [
        str(plain.id),
        "available",
        "default",
        "0/3",
        "tests.testapp.tasks.record",
        "-",
        "-",
        "-",
    ]


def test_cli_jobs_list__empty() -> None:
    assert awa("jobs", "list").strip() == "No jobs found."
    assert awa_json("jobs", "list") == []


def test_cli_jobs_list__filters_and_limit() -> None:
    a = cron_job("nightly", JobState.AVAILABLE, queue="default")
    b = cron_job("nightly", JobState.FAILED, queue="mail")
    c = cron_job("hourly", JobState.AVAILABLE, queue="mail")
    d = JobFactory(state=JobState.AVAILABLE, queue="mail")

    def ids(*args: str) -> list[int]:
        return [row["id"] for row in awa_json("jobs", "list", *args)]

    assert ids() == [d.id, c.id, b.id, a.id]
    assert ids("--state", "available") == [d.id, c.id, a.id]
    assert ids("--queue", "mail") == [d.id, c.id, b.id]
    assert ids("--cron", "nightly") == [b.id, a.id]
    assert ids("--cron", "nightly", "--queue", "mail", "--state", "failed") == [b.id]
    assert ids("--state", "running") == []
    assert ids("--limit", "2") == [d.id, c.id]
    assert ids("--limit", "0") == []


def test_cli_jobs_list__unknown_state_is_a_usage_error() -> None:
    with pytest.raises(CommandError, match="invalid choice"):
        awa("jobs", "list", "--state", "exploded")


def test_cli_jobs_cancel__by_schedule_with_actor() -> None:
    waiting = cron_job("nightly", JobState.SCHEDULED)
    running = cron_job("nightly", JobState.RUNNING)
    other = cron_job("hourly", JobState.AVAILABLE)
    assert awa_json("jobs", "cancel", "--cron", "nightly", "--actor", "alice") == {
        "action": "cancel",
        "schedule": "nightly",
        "jobs": [waiting.id],
    }
    row = Job.objects.get(id=waiting.id)
    assert row.state == JobState.CANCELLED and "alice" in row.errors[-1]["traceback"]
    assert Job.objects.get(id=running.id).state == JobState.RUNNING
    assert Job.objects.get(id=other.id).state == JobState.AVAILABLE
    assert awa("jobs", "cancel", "--cron", "nightly").strip() == "cancel: 0 job(s) of nightly cancelled"


def test_cli_jobs_cancel__text_and_default_actor() -> None:
    job = cron_job("nightly", JobState.AVAILABLE)
    assert awa("jobs", "cancel", "--cron", "nightly").strip() == "cancel: 1 job(s) of nightly cancelled"
    assert default_actor() in Job.objects.get(id=job.id).errors[-1]["traceback"]


def test_cli_jobs_cancel__requires_a_schedule_or_an_id() -> None:
    job = cron_job("nightly", JobState.AVAILABLE)
    with pytest.raises(CommandError, match="--cron"):
        awa("jobs", "cancel")
    with pytest.raises(CommandError, match="one of them"):
        awa("jobs", "cancel", str(job.id), "--cron", "nightly")
    assert not Job.objects.filter(state=JobState.CANCELLED).exists()


def test_cli_jobs_cancel__one_job_by_id() -> None:
    job = JobFactory(state=JobState.SCHEDULED)
    other = JobFactory(state=JobState.AVAILABLE)
    assert awa_json("jobs", "cancel", str(job.id), "--actor", "alice") == {
        "action": "cancel",
        "job": job.id,
        "changed": True,
    }
    row = Job.objects.get(id=job.id)
    assert row.state == JobState.CANCELLED and row.finished_at is not None
    assert row.errors[-1] == {
        "exception_class_path": "awa_django.exceptions.JobCancelled",
        "traceback": "cancelled by alice",
    }
    assert Job.objects.get(id=other.id).state == JobState.AVAILABLE
    assert awa("jobs", "cancel", str(other.id)).strip() == f"cancel: job {other.id} cancelled"


@pytest.mark.parametrize("state", [JobState.RUNNING, JobState.COMPLETED, JobState.CANCELLED])
def test_cli_jobs_cancel__refuses_a_job_that_is_not_waiting(state: str) -> None:
    job = JobFactory(state=state)
    with pytest.raises(CommandError, match=f"job {job.id} is {state}; only jobs not yet running"):
        awa("jobs", "cancel", str(job.id))
    assert Job.objects.get(id=job.id).state == state


def test_cli_jobs_cancel__unknown_id() -> None:
    with pytest.raises(CommandError, match="job 424242 does not exist"):
        awa("jobs", "cancel", "424242")


def test_cli_jobs_list__manual_trigger_duration_and_last_error() -> None:
    manual = JobFactory(
        state=JobState.FAILED,
        attempt=1,
        max_attempts=1,
        attempted_at=T0,
        finished_at=T0 + timedelta(seconds=75),
        metadata={"cron_name": "nightly", "triggered_manually": True, "triggered_by": "ops"},
        errors=[
            {
                "exception_class_path": "builtins.RuntimeError",
                "traceback": "Traceback (most recent call last):\n  ...\nRuntimeError: disk full\n",
            }
        ],
    )
    (data,) = awa_json("jobs", "list")
    assert data["triggered_manually"] is True and data["duration_seconds"] == 75.0
    assert data["last_error"] == "RuntimeError: disk full"
    row = awa("jobs", "list").strip().splitlines()[1]
    assert "nightly manual" in row and "@ None" not in row
    assert "1m15s" in row and row.endswith("RuntimeError: disk full")
    assert str(manual.id) in row


def test_cli_jobs_retry__failed_job() -> None:
    job = JobFactory(state=JobState.FAILED, attempt=2, max_attempts=2, finished_at=T0)
    assert awa_json("jobs", "retry", str(job.id), "--actor", "alice") == {
        "action": "retry",
        "job": job.id,
        "changed": True,
    }
    row = Job.objects.get(id=job.id)
    assert (row.state, row.max_attempts, row.finished_at) == (JobState.AVAILABLE, 3, None)
    Job.objects.filter(id=job.id).update(state=JobState.CANCELLED, finished_at=T0)
    assert awa("jobs", "retry", str(job.id)).strip() == f"retry: job {job.id} is available again"


@pytest.mark.parametrize("state", [JobState.COMPLETED, JobState.RUNNING, JobState.AVAILABLE])
def test_cli_jobs_retry__job_that_is_not_failed_is_an_error(state: JobState) -> None:
    job = JobFactory(state=state)
    before = snapshot(job)
    with pytest.raises(CommandError, match=f"job {job.id} does not exist or is not failed/cancelled"):
        awa("jobs", "retry", str(job.id))
    assert snapshot(job) == before


def test_cli_jobs_retry__unknown_job_is_an_error() -> None:
    with pytest.raises(CommandError, match="job 424242 does not exist"):
        awa("jobs", "retry", "424242", "--json")


def test_cli_jobs_prune__retention_and_older_than() -> None:
    now = db_now()
    JobFactory(state=JobState.COMPLETED, finished_at=now - timedelta(days=2))
    JobFactory(state=JobState.CANCELLED, finished_at=now - timedelta(minutes=5))
    keep = JobFactory(state=JobState.RETRYABLE, finished_at=now - timedelta(days=9))
    with override_settings(AWA_JOB_RETENTION=24 * 3600):
        assert awa_json("jobs", "prune") == {"action": "prune", "deleted": 1}
        assert awa("jobs", "prune").strip() == "prune: 0 finished job(s) deleted"
        assert awa_json("jobs", "prune", "--older-than", "60") == {"action": "prune", "deleted": 1}
    assert list(Job.objects.values_list("id", flat=True)) == [keep.id]
