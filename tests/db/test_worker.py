"""The Worker class driven in-process against the real database."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import override_settings

from awa_django.client.compat import TaskResultStatus, task_finished, task_started
from awa_django.leader.evaluator import evaluate
from awa_django.models import CronJob, Job
from awa_django.operations import queues
from awa_django.worker.loop import Worker, retry_delay
from tests.factories import CronJobFactory
from tests.testapp import tasks
from tests.testapp.models import Effect

pytestmark = pytest.mark.django_db(transaction=True)

NO_BACKOFF = {"AWA_RETRY_BACKOFF": 0.0, "AWA_POLL_INTERVAL": 0.05}


def burst(**kwargs: Any) -> Worker:
    worker = Worker(burst=True, **kwargs)
    worker.run()
    return worker


def job(result: Any) -> Job:
    return Job.objects.get(id=int(result.id))


def test_worker__runs_a_task_and_stores_its_return_value() -> None:
    result = tasks.write_effect.enqueue("hello")
    worker = burst()
    assert worker.completed == 1
    row = job(result)
    assert (row.state, row.attempt, row.result) == ("completed", 1, "hello")
    assert row.worker_ids == [worker.worker_id]
    refreshed = tasks.write_effect.get_result(result.id)
    assert refreshed.status == TaskResultStatus.SUCCESSFUL and refreshed.return_value == "hello"
    assert refreshed.attempts == 1
    effect = Effect.objects.get()
    assert (effect.label, effect.job_id, effect.attempt) == ("hello", row.id, 1)


def test_worker__claims_in_priority_then_run_at_order() -> None:
    low = tasks.write_effect.using(priority=-5).enqueue("low")
    first = tasks.write_effect.enqueue("first")
    second = tasks.write_effect.enqueue("second")
    high = tasks.write_effect.using(priority=50).enqueue("high")
    worker = Worker()
    order = [int(worker.claim(1)[0].id) for _ in range(4)]
    assert order == [int(r.id) for r in (high, first, second, low)]


def test_worker__never_claims_from_a_paused_queue() -> None:
    queues.pause_queue("mail", "ops")
    mail = tasks.send_mail.enqueue("a@example.com")
    other = tasks.write_effect.enqueue("default-queue")
    worker = Worker()
    assert [int(r.id) for r in worker.claim(10)] == [int(other.id)]
    assert job(mail).state == "available"  # enqueue was not refused
    queues.resume_queue("mail", "ops")
    assert [int(r.id) for r in worker.claim(10)] == [int(mail.id)]


def test_worker__only_claims_listed_queues() -> None:
    mail = tasks.send_mail.enqueue("x@example.com")
    tasks.write_effect.enqueue("default")
    assert [int(r.id) for r in Worker(queues=["mail"]).claim(10)] == [int(mail.id)]


def test_worker__deferred_job_waits_for_run_after() -> None:
    from django.utils import timezone

    later = tasks.write_effect.using(run_after=timezone.now() + timedelta(hours=1)).enqueue("later")
    assert job(later).state == "scheduled"
    assert Worker().claim(10) == []
    Job.objects.filter(id=int(later.id)).update(run_at=timezone.now() - timedelta(seconds=1))
    assert [int(r.id) for r in Worker().claim(10)] == [int(later.id)]


@override_settings(**NO_BACKOFF)
def test_worker__retries_then_fails_with_every_error_recorded() -> None:
    result = tasks.always_fails.enqueue("boom")
    worker = Worker(burst=True)
    for expected in ("retryable", "retryable", "failed"):
        (row,) = worker.claim(1)
        assert worker.execute(row) == expected
    row = job(result)
    assert (row.state, row.attempt) == ("failed", 3)
    assert [e["attempt"] for e in row.errors] == [1, 2, 3]
    assert all("this task always fails" in e["traceback"] for e in row.errors)
    failed = tasks.always_fails.get_result(result.id)
    assert failed.status == TaskResultStatus.FAILED
    assert [e.exception_class_path for e in failed.errors] == ["builtins.RuntimeError"] * 3
    assert Effect.objects.filter(phase="attempted").count() == 3


def test_worker__retry_waits_for_its_backoff() -> None:
    result = tasks.always_fails.enqueue("later")
    worker = Worker()
    (row,) = worker.claim(1)
    with override_settings(AWA_RETRY_BACKOFF=3600):
        assert worker.execute(row) == "retryable"
    assert worker.claim(1) == []  # not before run_at
    retry_at = job(result).run_at
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement_timestamp()")
        now = cursor.fetchone()[0]
    assert timedelta(minutes=40) < retry_at - now < timedelta(minutes=80)


@override_settings(AWA_RETRY_BACKOFF=2.0, AWA_RETRY_BACKOFF_MAX=60.0)
def test_retry_delay__exponential_with_jitter_and_a_cap() -> None:
    for attempt, nominal in ((1, 2.0), (2, 4.0), (3, 8.0), (4, 16.0), (10, 60.0)):
        delays = {retry_delay(attempt) for _ in range(50)}
        assert all(0.75 * nominal <= d <= 1.25 * nominal for d in delays)
        assert len(delays) > 1  # jittered


@override_settings(AWA_RESCUE_AFTER=0.5)
def test_worker__late_report_from_a_rescued_attempt_is_ignored() -> None:
    result = tasks.write_effect.enqueue("twice")
    dead = Worker()
    (first,) = dead.claim(1)
    Job.objects.filter(id=int(result.id)).update(heartbeat_at=first.heartbeat_at - timedelta(seconds=5))
    rescuer = Worker()
    rescuer.rescue()
    row = job(result)
    assert (row.state, row.attempt) == ("retryable", 1)
    assert row.errors[-1]["exception_class_path"] == "awa_django.exceptions.WorkerLost"
    (second,) = rescuer.claim(1)
    assert second.attempt == 2
    assert dead.execute(first) is None  # the dead attempt reports late: ignored
    assert job(result).state == "running"
    assert rescuer.execute(second) == "completed"
    row = job(result)
    assert (row.state, row.attempt, len(row.worker_ids)) == ("completed", 2, 2)


@override_settings(AWA_RESCUE_AFTER=0.5)
def test_worker__rescue_of_the_last_attempt_fails_the_job() -> None:
    result = tasks.write_effect.enqueue("last")
    Job.objects.filter(id=int(result.id)).update(max_attempts=1)
    (row,) = Worker().claim(1)
    Job.objects.filter(id=int(result.id)).update(heartbeat_at=row.heartbeat_at - timedelta(seconds=5))
    Worker().rescue()
    assert job(result).state == "failed"


def test_worker__heartbeat_keeps_running_attempts_fresh() -> None:
    result = tasks.write_effect.enqueue("beat")
    worker = Worker()
    (row,) = worker.claim(1)
    old = row.heartbeat_at - timedelta(minutes=5)
    Job.objects.filter(id=int(result.id)).update(heartbeat_at=old)
    with connection.cursor() as cursor:
        cursor.execute("SELECT awa_heartbeat_v1(%s::bigint[], %s::integer[])", [[row.id], [row.attempt]])
        assert cursor.fetchone()[0] == 1
        # A heartbeat for a stale attempt number changes nothing.
        cursor.execute("SELECT awa_heartbeat_v1(%s::bigint[], %s::integer[])", [[row.id], [row.attempt + 1]])
        assert cursor.fetchone()[0] == 0
    assert job(result).heartbeat_at > old


def test_worker__runs_async_tasks_and_passes_context() -> None:
    a = tasks.async_effect.enqueue("a")
    c = tasks.context_effect.enqueue("c")
    burst()
    assert job(a).result == "async:a"
    assert job(c).result == {"attempt": 1, "id": c.id}
    assert set(Effect.objects.values_list("label", flat=True)) == {"a", "c"}


def test_worker__unserialisable_return_value_fails_the_attempt() -> None:
    bad_return = tasks.returns_unserialisable.enqueue()
    Job.objects.filter(id=int(bad_return.id)).update(max_attempts=1)
    burst()
    row = job(bad_return)
    assert row.state == "failed" and row.errors[0]["exception_class_path"] == "builtins.TypeError"


def test_worker__task_it_cannot_import_is_released_without_using_an_attempt() -> None:
    # Another deployment's task on a shared queue: hand it back, do not kill it.
    ghost = Job.objects.create(
        kind="tests.testapp.not_deployed_here.task", max_attempts=1, args={"args": [], "kwargs": {}}
    )
    worker = Worker()
    (row,) = worker.claim(1)
    assert worker.execute(row) == "available"
    released = Job.objects.get(id=ghost.id)
    assert (released.state, released.attempt, released.worker_ids, released.errors) == (
        "available",
        0,
        [],
        [],
    )
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement_timestamp()")
        now = cursor.fetchone()[0]
    assert released.run_at - now > timedelta(seconds=30)  # not before another worker had a chance
    assert worker.claim(1) == []


def test_worker__sends_started_and_finished_signals() -> None:
    seen: list[tuple[str, str]] = []

    def started(sender: Any, task_result: Any, **kw: Any) -> None:
        seen.append(("started", task_result.status))

    def finished(sender: Any, task_result: Any, **kw: Any) -> None:
        seen.append(("finished", task_result.status))

    task_started.connect(started)
    task_finished.connect(finished)
    try:
        tasks.write_effect.enqueue("signals")
        burst()
    finally:
        task_started.disconnect(started)
        task_finished.disconnect(finished)
    assert seen == [("started", TaskResultStatus.RUNNING), ("finished", TaskResultStatus.SUCCESSFUL)]


def test_cron_fire__runs_with_the_schedule_args_and_knows_its_fire_time() -> None:
    CronJobFactory(
        name="fx",
        cron_expr="* * * * *",
        kind="tests.testapp.tasks.write_effect",
        queue="mail",
        priority=9,
        max_attempts=7,
        args={"args": ["from-cron"], "kwargs": {}},
    )
    fired = evaluate().jobs
    assert len(fired) == 1
    row = Job.objects.get()
    assert (row.queue, row.priority, row.max_attempts) == ("mail", 9, 7)
    burst()
    effect = Effect.objects.get()
    assert effect.label == "from-cron" and effect.schedule == "fx"
    assert effect.fire_at.isoformat() == row.metadata["cron_fire_at"]


def test_cron_fire__into_a_paused_queue_is_enqueued_and_runs_after_resume() -> None:
    queues.pause_queue("mail", "ops")
    CronJobFactory(name="held", cron_expr="* * * * *", kind="tests.testapp.tasks.write_effect", queue="mail")
    evaluate()
    assert CronJob.objects.get(name="held").last_enqueued_at is not None  # the fire advanced
    burst()
    assert Job.objects.get().state == "available" and not Effect.objects.exists()
    queues.resume_queue("mail", "ops")
    burst()
    assert Job.objects.get().state == "completed" and Effect.objects.count() == 1


def test_schedule_pause__does_not_touch_queued_jobs() -> None:
    from awa_django.operations import schedules

    CronJobFactory(name="queued", cron_expr="* * * * *", kind="tests.testapp.tasks.write_effect")
    evaluate()
    schedules.pause("queued", "ops")
    burst()
    assert Job.objects.get().state == "completed"


def test_cron_fire__sends_task_enqueued_after_commit() -> None:
    from awa_django.client.compat import task_enqueued
    from awa_django.declarations.declaration import build_schedule
    from awa_django.leader.loop import Leader

    seen: list[Any] = []

    def receiver(sender: Any, task_result: Any, **kw: Any) -> None:
        # Sent after the fire committed: another session already sees the row.
        from tests.helpers.database import raw_connection

        with raw_connection() as other:
            visible = other.execute(
                "SELECT count(*) FROM awa_jobs WHERE id = %s", [int(task_result.id)]
            ).fetchone()[0]
        seen.append((task_result.task.name, task_result.kwargs, visible))

    task_enqueued.connect(receiver)
    try:
        schedule = build_schedule("announced", "* * * * *", tasks.write_effect, kwargs={"label": "x"})
        Leader(schedules=[schedule]).run_once()
    finally:
        task_enqueued.disconnect(receiver)
    assert seen == [("write_effect", {"label": "x"}, 1)]


def test_enqueue__nul_in_arguments_is_a_clean_error_that_keeps_the_transaction() -> None:
    from django.db import transaction

    with transaction.atomic():
        with pytest.raises(ValueError, match="NUL"):
            tasks.write_effect.enqueue("a\x00b")
        ok = tasks.write_effect.enqueue("a\\u0000b")  # a literal backslash sequence is fine
    assert [j.id for j in Job.objects.all()] == [int(ok.id)]


def test_backend_check__max_attempts_option_is_validated() -> None:
    from awa_django.client.compat import task_backends

    with override_settings(
        TASKS={
            "default": {
                "BACKEND": "awa_django.client.backend.AwaBackend",
                "QUEUES": ["default"],
                "OPTIONS": {"MAX_ATTEMPTS": 0},
            }
        }
    ):
        ids = [m.id for m in task_backends["default"].check()]
    assert ids == ["awa_django.E031"]


def test_manual_trigger__sends_task_enqueued_after_commit() -> None:
    from awa_django.client.compat import task_enqueued
    from awa_django.operations import schedules

    CronJobFactory(
        name="by-hand", kind="tests.testapp.tasks.write_effect", args={"args": ["manual"], "kwargs": {}}
    )
    seen: list[Any] = []

    def receiver(sender: Any, task_result: Any, **kw: Any) -> None:
        seen.append((task_result.task.name, task_result.args))

    task_enqueued.connect(receiver)
    try:
        schedules.trigger("by-hand", "ops")
    finally:
        task_enqueued.disconnect(receiver)
    assert seen == [("write_effect", ["manual"])]
