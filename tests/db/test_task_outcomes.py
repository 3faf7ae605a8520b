"""Every attempt ends with its real outcome, whatever the task or the row does."""

from __future__ import annotations

import logging
import os
import sys
from datetime import timedelta
from typing import Any

import pytest
from django.test.utils import override_settings

from awa_django.client.compat import InvalidTask, TaskResultStatus, task_finished
from awa_django.models import Job
from awa_django.store.jobs import Done
from awa_django.worker.loop import Worker
from tests.testapp import tasks
from tests.testapp.models import Effect

pytestmark = pytest.mark.django_db(transaction=True)

NO_BACKOFF = {"AWA_RETRY_BACKOFF": 0.0, "AWA_POLL_INTERVAL": 0.05}


def job(result: Any) -> Job:
    return Job.objects.get(id=int(result.id))


def run_one(result: Any) -> str | None:
    worker = Worker()
    (row,) = worker.claim(1)
    assert int(row.id) == int(result.id)
    return worker.execute(row)


@pytest.mark.parametrize(
    ("kind", "class_path", "message"),
    [
        ("system_exit", "builtins.SystemExit", "task called sys.exit"),
        ("exit", "builtins.SystemExit", "exit(1)"),
        ("keyboard_interrupt", "builtins.KeyboardInterrupt", "raised by the task, not a signal"),
        ("custom", "tests.testapp.tasks.CustomBaseException", "a custom BaseException"),
    ],
)
def test_worker__base_exception_fails_the_attempt_with_class_path_and_traceback(
    kind: str, class_path: str, message: str, caplog: pytest.LogCaptureFixture
) -> None:
    result = tasks.raises_base_exception.enqueue(kind)
    with caplog.at_level(logging.ERROR, logger="awa_django"):
        assert run_one(result) == "retryable"
    row = job(result)
    assert (row.state, row.attempt, row.heartbeat_at) == ("retryable", 1, None)
    (error,) = row.errors
    assert error["exception_class_path"] == class_path
    assert "Traceback" in error["traceback"] and "raises_base_exception" in error["traceback"]
    if kind != "exit":
        assert message in error["traceback"]
    logged = [r for r in caplog.records if r.levelno == logging.ERROR and str(row.id) in r.getMessage()]
    assert logged and class_path in logged[0].getMessage()


@override_settings(**NO_BACKOFF)
def test_worker__keeps_serving_after_tasks_raise_keyboard_interrupt_and_system_exit() -> None:
    interrupted = tasks.raises_base_exception.enqueue("keyboard_interrupt")
    exited = tasks.raises_base_exception.enqueue("system_exit")
    Job.objects.filter(id__in=[int(interrupted.id), int(exited.id)]).update(max_attempts=1)
    fine = tasks.write_effect.enqueue("after")
    worker = Worker(burst=True, concurrency=2)
    worker.run()  # returns normally: a task's KeyboardInterrupt is not a signal to the worker
    assert (job(interrupted).state, job(exited).state, job(fine).state) == ("failed", "failed", "completed")
    assert worker.completed == 1 and worker.failed == 2
    failed = tasks.raises_base_exception.get_result(interrupted.id)
    assert failed.status == TaskResultStatus.FAILED
    assert failed.errors[0].exception_class_path == "builtins.KeyboardInterrupt"


@pytest.mark.parametrize(
    ("task", "reason"),
    [
        (tasks.returns_nul, "NUL"),
        (tasks.returns_lone_surrogate, "lone surrogate"),
        (tasks.returns_unserialisable, "Unsupported type"),
    ],
)
def test_worker__result_the_database_cannot_store_fails_the_attempt(task: Any, reason: str) -> None:
    result = task.enqueue()
    assert run_one(result) == "retryable"
    row = job(result)
    assert row.state == "retryable" and row.result is None
    assert reason in row.errors[0]["traceback"]


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("tests.testapp.tasks.not_a_task", "is a function, not a @task"),
        ("tests.testapp.tasks.no_such_task", "has no attribute 'no_such_task'"),
        (".tasks.write_effect", "is not an absolute dotted path"),
        ("write_effect", "is not an absolute dotted path"),
        ("tests.testapp.broken_tasks.task", "raised RuntimeError: broken_tasks cannot be imported"),
    ],
)
def test_worker__kind_that_is_not_a_task_fails_the_job_naming_the_path(kind: str, message: str) -> None:
    bad = Job.objects.create(kind=kind, max_attempts=3, args={"args": [], "kwargs": {}})
    worker = Worker()
    (row,) = worker.claim(1)
    assert worker.execute(row) == "failed"  # at once: retrying cannot help
    row_after = Job.objects.get(id=bad.id)
    assert (row_after.state, row_after.attempt) == ("failed", 1)
    assert row_after.finished_at is not None
    (error,) = row_after.errors
    assert error["exception_class_path"] == "awa_django.client.paths.TaskNotRunnable"
    assert repr(kind) in error["traceback"] and message in error["traceback"]


@pytest.mark.parametrize(
    "args",
    [["positional"], {"args": "abc", "kwargs": {}}, {"args": [], "kwargs": ["x"]}, {"argv": []}, "text"],
)
def test_worker__args_of_the_wrong_shape_fail_the_job(args: Any) -> None:
    bad = Job.objects.create(kind="tests.testapp.tasks.write_effect", max_attempts=3, args=args)
    worker = Worker()
    (row,) = worker.claim(1)
    assert worker.execute(row) == "failed"
    assert "job args" in Job.objects.get(id=bad.id).errors[0]["traceback"]
    assert not Effect.objects.exists()


@pytest.mark.parametrize("kind", ["tests.import_sentinel.task", "this.x"])
def test_worker__never_imports_a_module_outside_installed_apps(kind: str) -> None:
    os.environ.pop("AWA_IMPORT_SENTINEL", None)
    sys.modules.pop("tests.import_sentinel", None)
    had_this = "this" in sys.modules
    foreign = Job.objects.create(kind=kind, max_attempts=1, args={"args": [], "kwargs": {}})
    worker = Worker()
    (row,) = worker.claim(1)
    assert worker.execute(row) == "available"  # handed back: maybe another deployment's task
    assert "AWA_IMPORT_SENTINEL" not in os.environ and "tests.import_sentinel" not in sys.modules
    assert ("this" in sys.modules) == had_this
    released = Job.objects.get(id=foreign.id)
    assert (released.state, released.attempt, released.worker_ids, released.errors) == (
        "available",
        0,
        [],
        [],
    )
    with pytest.raises(Exception, match="not an importable Task"):
        tasks.write_effect.get_backend().get_result(str(foreign.id))  # get_result does not import it either
    assert "AWA_IMPORT_SENTINEL" not in os.environ


@override_settings(AWA_TASK_MODULES=["tests.outside_tasks"])
def test_worker__imports_modules_listed_in_awa_task_modules() -> None:
    from tests.outside_tasks import outside

    result = outside.enqueue("allowed")
    assert run_one(result) == "completed"
    assert job(result).result == "allowed"


def test_enqueue__task_outside_installed_apps_is_refused() -> None:
    from tests.outside_tasks import outside

    with pytest.raises(InvalidTask, match="AWA_TASK_MODULES"):
        outside.enqueue("refused")
    assert not Job.objects.exists()


def test_worker__missing_module_is_handed_back_until_awa_unknown_task_timeout() -> None:
    ghost = Job.objects.create(
        kind="tests.testapp.not_deployed_here.task", max_attempts=3, args={"args": [], "kwargs": {}}
    )
    worker = Worker()
    (row,) = worker.claim(1)
    assert worker.execute(row) == "available"
    # Past the bound (the job is older than AWA_UNKNOWN_TASK_TIMEOUT) it fails.
    Job.objects.filter(id=ghost.id).update(
        run_at=ghost.created_at, created_at=ghost.created_at - timedelta(hours=2)
    )
    with override_settings(AWA_UNKNOWN_TASK_TIMEOUT=3600):
        (row,) = worker.claim(1)
        assert worker.execute(row) == "failed"
    failed = Job.objects.get(id=ghost.id)
    assert (failed.state, failed.attempt) == ("failed", 1) and failed.finished_at is not None
    assert "tests.testapp.not_deployed_here" in failed.errors[0]["traceback"]


@override_settings(AWA_UNKNOWN_TASK_TIMEOUT=0)
def test_worker__unknown_task_timeout_zero_fails_at_once() -> None:
    ghost = Job.objects.create(kind="this.x", args={"args": [], "kwargs": {}})
    worker = Worker()
    (row,) = worker.claim(1)
    assert worker.execute(row) == "failed"
    assert (
        "not in an installed app or AWA_TASK_MODULES" in Job.objects.get(id=ghost.id).errors[0]["traceback"]
    )


def test_worker__task_finished_result_has_finished_at_and_errors() -> None:
    seen: list[Any] = []

    def receiver(sender: Any, task_result: Any, **kw: Any) -> None:
        seen.append(task_result)

    ok = tasks.write_effect.enqueue("fine")
    bad = tasks.always_fails.enqueue("bad")
    Job.objects.filter(id=int(bad.id)).update(max_attempts=1)
    task_finished.connect(receiver)
    try:
        with override_settings(**NO_BACKOFF):
            Worker(burst=True).run()
    finally:
        task_finished.disconnect(receiver)
    by_id = {r.id: r for r in seen}
    done, failed = by_id[ok.id], by_id[bad.id]
    assert done.status == TaskResultStatus.SUCCESSFUL and done.return_value == "fine"
    assert done.finished_at is not None and done.errors == []
    assert failed.status == TaskResultStatus.FAILED and failed.finished_at is not None
    assert [e.exception_class_path for e in failed.errors] == ["builtins.RuntimeError"]
    assert "this task always fails" in failed.errors[0].traceback


def test_worker__completion_survives_a_terminated_connection(caplog: pytest.LogCaptureFixture) -> None:
    # The task kills the session the worker then reports on (pg_terminate_backend):
    # the report is retried on a fresh connection, the job completes once.
    result = tasks.terminates_own_connection.enqueue("kept")
    with caplog.at_level(logging.WARNING, logger="awa_django"):
        worker = Worker(burst=True)
        worker.run()
    row = job(result)
    assert (row.state, row.attempt, row.result) == ("completed", 1, "kept")
    assert Effect.objects.filter(label="kept").count() == 1
    assert worker.completed == 1
    assert any(getattr(r, "event", None) == "job.report_retry" for r in caplog.records)


def test_worker__failure_report_survives_a_terminated_connection(caplog: pytest.LogCaptureFixture) -> None:
    from django.db import connection

    result = tasks.always_fails.enqueue("lost-failure")
    worker = Worker()
    (row,) = worker.claim(1)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    from tests.helpers.database import raw_connection

    with raw_connection() as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])
    with caplog.at_level(logging.WARNING, logger="awa_django"):
        assert worker.execute(row) == "retryable"
    # The task's own query met the dead session first (its real outcome), and
    # the failure report went through on a fresh connection.
    assert job(result).errors[0]["exception_class_path"] == "django.db.utils.OperationalError"
    assert any(getattr(r, "event", None) == "job.report_retry" for r in caplog.records)


@override_settings(AWA_REPORT_RETRY_TIMEOUT=0)
def test_worker__report_abandoned_after_the_bound_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    result = tasks.terminates_own_connection.enqueue("abandoned")
    with caplog.at_level(logging.ERROR, logger="awa_django"):
        worker = Worker(burst=True)
        worker.run()
    assert job(result).state == "running"  # left for rescue, which retries it
    assert worker.completed == 0
    assert any(getattr(r, "event", None) == "job.report_abandoned" for r in caplog.records)


def test_worker__report_retry_is_idempotent_when_the_lost_try_committed() -> None:
    # A retry that finds its guard spent by its own earlier (committed) try
    # reports the state it recorded, not a stale report.
    result = tasks.write_effect.enqueue("twice")
    worker = Worker()
    (row,) = worker.claim(1)
    done = [Done(int(row.id), int(row.attempt), '"twice"')]
    assert list(worker.outcomes.store_done(done)) == [(int(row.id), int(row.attempt))]
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    from tests.helpers.database import raw_connection

    with raw_connection() as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])
    # First try hits the dead session, the retry finds the job already completed.
    assert list(worker.outcomes.store_done(done)) == [(int(row.id), int(row.attempt))]
    assert job(result).state == "completed"


def test_worker__task_started_receiver_that_raises_fails_the_attempt() -> None:
    from awa_django.client.compat import task_started

    def broken(sender: Any, task_result: Any, **kw: Any) -> None:
        raise SystemExit("receiver exits")

    result = tasks.write_effect.enqueue("never")
    task_started.connect(broken)
    try:
        assert run_one(result) == "retryable"
    finally:
        task_started.disconnect(broken)
    assert job(result).errors[0]["exception_class_path"] == "builtins.SystemExit"
    assert not Effect.objects.exists()


def test_worker__task_finished_receiver_that_raises_keeps_the_outcome(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(sender: Any, task_result: Any, **kw: Any) -> None:
        raise RuntimeError("receiver bug")

    result = tasks.write_effect.enqueue("kept")
    task_finished.connect(broken)
    try:
        assert run_one(result) == "completed"
    finally:
        task_finished.disconnect(broken)
    assert job(result).state == "completed"
    assert any("task_finished receiver raised" in r.getMessage() for r in caplog.records)


def test_worker__completion_survives_a_database_outage_through_a_tcp_proxy() -> None:
    # The fault campaign's setting: the worker reaches PostgreSQL through a proxy
    # that drops every connection and refuses new ones for a while, right when
    # the task finishes. The job must complete exactly once, on its first attempt.
    import threading

    from django.db import connection, connections

    from tests.helpers.database import tcp_address
    from tests.helpers.tcpproxy import TcpProxy

    direct = connection.settings_dict
    proxy = TcpProxy(tcp_address())
    # Connections opened from now on, i.e. the worker's threads, go through the
    # proxy; this thread keeps its open direct connection.
    options = {k: v for k, v in direct.get("OPTIONS", {}).items() if k not in ("host", "port")}
    connections.settings["default"] = {
        **direct,
        "HOST": "127.0.0.1",
        "PORT": str(proxy.port),
        "OPTIONS": options,
    }
    try:
        with override_settings(AWA_POLL_INTERVAL=0.05, AWA_HEARTBEAT_INTERVAL=0.2):
            tasks.SLEEPER_STARTED.clear()
            result = tasks.sleeps_then_returns.enqueue(1.5, "outage")
            worker = Worker(burst=True)

            def run() -> None:
                try:
                    worker.run()
                finally:
                    connections.close_all()  # this thread's connections

            runner = threading.Thread(target=run, daemon=True)
            runner.start()
            # The task's own INSERT is done (its reply read): only the outcome
            # reports can meet the outage.
            assert tasks.SLEEPER_STARTED.wait(timeout=60)
            proxy.cut(3.0)  # the task ends inside the outage: its report meets it
            runner.join(timeout=90)
            assert not runner.is_alive()
    finally:
        connections.settings["default"] = direct
        proxy.close()
    row = job(result)
    assert (row.state, row.attempt, row.result, row.errors) == ("completed", 1, "outage", [])
    assert Effect.objects.filter(label="outage").count() == 1  # ran once
    assert worker.completed == 1


def test_worker__heartbeat_report_survives_a_terminated_connection() -> None:
    from django.db import connection

    from tests.helpers.database import raw_connection

    result = tasks.write_effect.enqueue("beat")
    worker = Worker()
    (row,) = worker.claim(1)
    Job.objects.filter(id=int(result.id)).update(heartbeat_at=row.heartbeat_at - timedelta(minutes=5))
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    with raw_connection() as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])
    ids, attempts = [int(row.id)], [int(row.attempt)]
    stamped = worker.outcomes.heartbeat(list(zip(ids, attempts, strict=True)))
    assert stamped == 1
    assert job(result).heartbeat_at > row.heartbeat_at - timedelta(minutes=1)
