"""``AwaBackend``: the django.tasks backend API over ``awa_jobs``."""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.core.checks import run_checks
from django.db import DatabaseError, connection, transaction
from django.test import override_settings

from awa_django.client.backend import AwaBackend
from awa_django.client.compat import (
    InvalidTask,
    TaskError,
    TaskResult,
    TaskResultDoesNotExist,
    TaskResultMismatch,
    TaskResultStatus,
    default_task_backend,
    task,
    task_backends,
    task_enqueued,
)
from awa_django.exceptions import JobCancelled, WorkerLost
from awa_django.models import Job, JobState
from awa_django.operations.queues import cancel_cron_jobs
from tests.factories import JobFactory
from tests.helpers.database import db_now
from tests.testapp import backend_tasks
from tests.testapp.backend_tasks import async_echo, echo, report
from tests.testapp.tasks import record, send_mail

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
ECHO = "tests.testapp.backend_tasks.echo"
BACKEND = "awa_django.client.backend.AwaBackend"
QUEUES = ["default", "mail", "reports"]


@pytest.fixture
def enqueued() -> Iterator[list[tuple[Any, TaskResult]]]:
    """Every ``task_enqueued`` signal sent during the test, as (sender, result)."""
    received: list[tuple[Any, TaskResult]] = []

    def receiver(sender: Any, task_result: TaskResult, **kwargs: Any) -> None:
        received.append((sender, task_result))

    task_enqueued.connect(receiver, weak=False, dispatch_uid="test_backend.enqueued")
    try:
        yield received
    finally:
        task_enqueued.disconnect(dispatch_uid="test_backend.enqueued")


# -- the backend and its features -------------------------------------------------


def test_backend__is_configured_with_every_feature() -> None:
    backend = task_backends["default"]
    assert isinstance(backend, AwaBackend)
    assert backend.supports_defer is True
    assert backend.supports_priority is True
    assert backend.supports_get_result is True
    assert backend.supports_async_task is True
    assert backend.queues == set(QUEUES)
    assert backend.database == "default"


# -- enqueue ------------------------------------------------------------------------


def test_enqueue__inserts_an_available_job_and_returns_its_result() -> None:
    before = db_now()
    result = echo.enqueue(1, "two", [3], k={"nested": [True, None, 1.5]})
    job = Job.objects.get()
    assert result.id == str(job.id)
    assert result.task == echo
    assert result.backend == "default"
    assert result.status == TaskResultStatus.READY
    assert result.args == [1, "two", [3]]
    assert result.kwargs == {"k": {"nested": [True, None, 1.5]}}
    assert result.enqueued_at == job.created_at
    assert result.started_at is None and result.finished_at is None and result.last_attempted_at is None
    assert result.errors == [] and result.worker_ids == [] and result.attempts == 0
    assert job.kind == ECHO
    assert job.queue == "default"
    assert job.priority == 0
    assert job.state == JobState.AVAILABLE
    assert job.attempt == 0
    assert job.args == {"args": [1, "two", [3]], "kwargs": {"k": {"nested": [True, None, 1.5]}}}
    assert job.metadata == {}
    # run_at is the database's now: immediately claimable.
    assert job.run_at <= db_now()
    assert job.run_at >= before - timedelta(minutes=5)


def test_enqueue__uses_the_task_queue_and_priority() -> None:
    send_mail.enqueue(to="a@example.com")
    report.using(priority=100).enqueue()
    report.using(priority=-100, queue_name="default").enqueue()
    rows = list(Job.objects.order_by("id").values_list("kind", "queue", "priority"))
    assert rows == [
        ("tests.testapp.tasks.send_mail", "mail", 5),
        ("tests.testapp.backend_tasks.report", "reports", 100),
        ("tests.testapp.backend_tasks.report", "default", -100),
    ]


def test_enqueue__run_after_in_the_future_schedules_the_job() -> None:
    run_after = db_now() + timedelta(hours=3)
    result = echo.using(run_after=run_after).enqueue("later")
    job = Job.objects.get(id=result.id)
    assert job.state == JobState.SCHEDULED
    assert job.run_at == run_after
    assert result.status == TaskResultStatus.READY
    assert echo.get_result(result.id).status == TaskResultStatus.READY


def test_enqueue__run_after_in_the_past_is_available_at_that_time() -> None:
    run_after = db_now() - timedelta(hours=1)
    result = echo.using(run_after=run_after).enqueue()
    job = Job.objects.get(id=result.id)
    assert job.state == JobState.AVAILABLE
    assert job.run_at == run_after


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        pytest.param((), {}, id="nothing"),
        pytest.param(("é", 0, -1, 2**53, 0.25, False, None), {}, id="scalars"),
        pytest.param((), {"a": {"b": [{"c": "d"}]}, "e": []}, id="nested-kwargs"),
        pytest.param(([1, [2, [3]]], {"x": None}), {"y": "z"}, id="mixed"),
    ],
)
def test_enqueue__args_and_kwargs_round_trip(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    result = echo.enqueue(*args, **kwargs)
    fetched = echo.get_result(result.id)
    assert fetched.args == list(args) == result.args
    assert fetched.kwargs == kwargs == result.kwargs


def test_enqueue__tuples_are_stored_as_lists() -> None:
    result = echo.enqueue((1, 2), pair=("a", ("b",)))
    assert Job.objects.get(id=result.id).args == {
        "args": [[1, 2]],
        "kwargs": {"pair": ["a", ["b"]]},
    }
    assert echo.get_result(result.id).args == [[1, 2]]


@pytest.mark.parametrize(
    ("args", "kwargs", "error"),
    [
        pytest.param((object(),), {}, TypeError, id="object"),
        pytest.param((), {"when": T0}, TypeError, id="datetime-kwarg"),
        pytest.param(({1, 2},), {}, TypeError, id="set"),
        pytest.param(([1, {"deep": object()}],), {}, TypeError, id="nested-object"),
        pytest.param((math.nan,), {}, ValueError, id="nan"),
        pytest.param((), {"x": math.inf}, ValueError, id="infinity"),
        pytest.param((b"\xff\xfe",), {}, ValueError, id="non-utf8-bytes"),
    ],
)
def test_enqueue__non_json_arguments_are_rejected_without_a_row(
    args: tuple[Any, ...], kwargs: dict[str, Any], error: type[Exception], enqueued: list[Any]
) -> None:
    with pytest.raises(error):
        echo.enqueue(*args, **kwargs)
    assert not Job.objects.exists()
    assert enqueued == []


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        pytest.param(("a\x00b",), {}, id="nul-in-value"),
        pytest.param(({"k\x00": 1},), {}, id="nul-in-key"),
    ],
)
def test_enqueue__strings_postgresql_jsonb_cannot_store_are_rejected(
    args: tuple[Any, ...], kwargs: dict[str, Any], enqueued: list[Any]
) -> None:
    # Valid JSON, but jsonb has no NUL character: refused at enqueue, never half-written.
    with pytest.raises((ValueError, DatabaseError)):
        echo.enqueue(*args, **kwargs)
    assert not Job.objects.exists()
    assert enqueued == []


def test_enqueue__max_attempts_defaults_to_awa_max_attempts() -> None:
    echo.enqueue()
    with override_settings(AWA_MAX_ATTEMPTS=7):
        echo.enqueue()
    assert list(Job.objects.order_by("id").values_list("max_attempts", flat=True)) == [3, 7]


def test_enqueue__max_attempts_from_backend_options_wins() -> None:
    tasks = {"default": {"BACKEND": BACKEND, "QUEUES": QUEUES, "OPTIONS": {"MAX_ATTEMPTS": 2}}}
    with override_settings(TASKS=tasks, AWA_MAX_ATTEMPTS=7):
        assert default_task_backend.max_attempts == 2
        result = echo.enqueue()
    assert Job.objects.get(id=result.id).max_attempts == 2


def test_enqueue__async_task_is_accepted() -> None:
    result = async_echo.enqueue("a", 1)
    job = Job.objects.get(id=result.id)
    assert job.kind == "tests.testapp.backend_tasks.async_echo"
    assert job.args == {"args": ["a", 1], "kwargs": {}}
    assert async_echo.get_result(result.id).task == async_echo


def test_aenqueue__inserts_a_job_like_enqueue() -> None:
    result = async_to_sync(echo.aenqueue)("a", k=1)
    job = Job.objects.get(id=result.id)
    assert job.kind == ECHO and job.state == JobState.AVAILABLE
    assert job.args == {"args": ["a"], "kwargs": {"k": 1}}
    assert result.status == TaskResultStatus.READY


# -- validate_task ------------------------------------------------------------------


def test_validate_task__queue_not_in_queues() -> None:
    with pytest.raises(InvalidTask, match="Queue 'nope' is not valid"):
        echo.using(queue_name="nope")
    with pytest.raises(InvalidTask):
        task(queue_name="nope")(backend_tasks.without_context)


@pytest.mark.parametrize("priority", [101, -101, 1000])
def test_validate_task__priority_out_of_range(priority: int) -> None:
    with pytest.raises(InvalidTask, match="priority"):
        echo.using(priority=priority)


def test_validate_task__priority_bounds_are_accepted() -> None:
    assert echo.using(priority=100).priority == 100
    assert echo.using(priority=-100).priority == -100


def test_validate_task__function_not_at_module_level() -> None:
    def local_function() -> None:
        pass

    with pytest.raises(InvalidTask, match="module level"):
        task(local_function)


def test_validate_task__takes_context_needs_a_context_first_argument() -> None:
    with pytest.raises(InvalidTask, match="context"):
        task(takes_context=True)(backend_tasks.without_context)
    accepted = task(takes_context=True)(backend_tasks.with_context)
    assert accepted.takes_context is True


def test_validate_task__naive_run_after() -> None:
    with pytest.raises(InvalidTask, match="aware"):
        echo.using(run_after=datetime(2026, 3, 1, 12, 0))


def test_enqueue__revalidates_the_task_against_the_current_backend() -> None:
    # A task built for a wider backend is refused by this one at enqueue time.
    tasks = {"default": {"BACKEND": BACKEND, "QUEUES": ["default"]}}
    with override_settings(TASKS=tasks), pytest.raises(InvalidTask):
        send_mail.enqueue()
    assert not Job.objects.exists()


# -- task_enqueued and transactions -----------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_enqueue__in_autocommit_sends_task_enqueued_at_once(enqueued: list[Any]) -> None:
    result = echo.enqueue("now")
    assert Job.objects.filter(id=result.id).exists()
    assert len(enqueued) == 1
    sender, sent = enqueued[0]
    assert sender is AwaBackend
    assert sent.id == result.id
    assert sent.task == echo
    assert sent.status == TaskResultStatus.READY
    assert sent.args == ["now"]


@pytest.mark.django_db(transaction=True)
def test_enqueue__committed_transaction_keeps_the_row_and_signals_after_commit(
    enqueued: list[Any],
) -> None:
    with transaction.atomic():
        result = echo.enqueue("x")
        assert enqueued == []  # not before commit
    assert list(Job.objects.values_list("id", flat=True)) == [int(result.id)]
    assert [(s, r.id) for s, r in enqueued] == [(AwaBackend, result.id)]


@pytest.mark.django_db(transaction=True)
def test_enqueue__rolled_back_transaction_leaves_no_row_and_no_signal(enqueued: list[Any]) -> None:
    class Boom(Exception):
        pass

    with pytest.raises(Boom), transaction.atomic():
        result = echo.enqueue("x")
        assert Job.objects.filter(id=result.id).exists()
        raise Boom
    assert not Job.objects.exists()
    assert enqueued == []


@pytest.mark.django_db(transaction=True)
def test_enqueue__rolled_back_savepoint_only_drops_its_own_jobs(enqueued: list[Any]) -> None:
    class Boom(Exception):
        pass

    with transaction.atomic():
        kept = echo.enqueue("kept")
        with pytest.raises(Boom), transaction.atomic():
            echo.enqueue("dropped")
            raise Boom
    assert list(Job.objects.values_list("id", flat=True)) == [int(kept.id)]
    assert [r.id for _, r in enqueued] == [kept.id]


@pytest.mark.django_db(transaction=True)
def test_enqueue__the_job_is_invisible_to_others_until_commit(
    enqueued: list[Any], second_connection: Any
) -> None:
    with transaction.atomic():
        result = echo.enqueue("x")
        seen = second_connection.execute("SELECT count(*) FROM awa_jobs WHERE id = %s", [int(result.id)])
        assert seen.fetchone()[0] == 0
    seen = second_connection.execute("SELECT kind FROM awa_jobs WHERE id = %s", [int(result.id)])
    assert seen.fetchone()[0] == ECHO


# -- get_result ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("state", "status"),
    [
        (JobState.AVAILABLE, TaskResultStatus.READY),
        (JobState.SCHEDULED, TaskResultStatus.READY),
        (JobState.RETRYABLE, TaskResultStatus.READY),
        (JobState.RUNNING, TaskResultStatus.RUNNING),
        (JobState.COMPLETED, TaskResultStatus.SUCCESSFUL),
        (JobState.FAILED, TaskResultStatus.FAILED),
        (JobState.CANCELLED, TaskResultStatus.FAILED),
    ],
)
def test_get_result__maps_every_job_state(state: JobState, status: TaskResultStatus) -> None:
    job = JobFactory(kind=ECHO, state=state, result={"done": [1, 2]} if state == JobState.COMPLETED else None)
    result = default_task_backend.get_result(str(job.id))
    assert result.status == status
    assert result.is_finished is (status in (TaskResultStatus.SUCCESSFUL, TaskResultStatus.FAILED))
    if status == TaskResultStatus.SUCCESSFUL:
        assert result.return_value == {"done": [1, 2]}
    else:
        with pytest.raises(ValueError):
            result.return_value  # noqa: B018


def test_get_result__completed_with_none_and_scalar_results() -> None:
    none_job = JobFactory(kind=ECHO, state=JobState.COMPLETED, result=None)
    str_job = JobFactory(kind=ECHO, state=JobState.COMPLETED, result="ok")
    assert echo.get_result(str(none_job.id)).return_value is None
    assert echo.get_result(str(str_job.id)).return_value == "ok"


def test_get_result__fills_times_workers_and_errors_from_the_row() -> None:
    job = JobFactory(
        kind=ECHO,
        state=JobState.FAILED,
        attempt=2,
        max_attempts=2,
        created_at=T0,
        attempted_at=T0 + timedelta(minutes=5),
        finished_at=T0 + timedelta(minutes=6),
        worker_ids=["host-a:1", "host-b:2"],
        errors=[
            {
                "exception_class_path": "builtins.RuntimeError",
                "traceback": "Traceback: one",
                "attempt": 1,
            },
            "not a dict: ignored",
            {
                "exception_class_path": "builtins.KeyError",
                "traceback": "Traceback: two",
                "attempt": 2,
            },
        ],
        args={"args": [1], "kwargs": {"a": "b"}},
    )
    result = echo.get_result(str(job.id))
    assert result.id == str(job.id)
    assert result.status == TaskResultStatus.FAILED
    assert result.enqueued_at == T0
    assert result.last_attempted_at == T0 + timedelta(minutes=5)
    assert result.finished_at == T0 + timedelta(minutes=6)
    assert result.worker_ids == ["host-a:1", "host-b:2"]
    assert result.attempts == 2
    assert result.errors == [
        TaskError(exception_class_path="builtins.RuntimeError", traceback="Traceback: one"),
        TaskError(exception_class_path="builtins.KeyError", traceback="Traceback: two"),
    ]
    assert result.errors[0].exception_class is RuntimeError
    assert result.args == [1] and result.kwargs == {"a": "b"}
    assert result.backend == "default"


def test_get_result__running_job_has_attempt_data_and_no_finish() -> None:
    job = JobFactory(kind=ECHO, state=JobState.RUNNING, attempt=1, attempted_at=T0, worker_ids=["w1"])
    result = echo.get_result(str(job.id))
    assert result.status == TaskResultStatus.RUNNING
    assert result.last_attempted_at == T0
    assert result.finished_at is None
    assert result.attempts == 1 and result.worker_ids == ["w1"]
    assert result.errors == []


def test_get_result__errors_written_by_awa_resolve_to_exception_classes() -> None:
    """Error entries awa_django writes itself (cancel, rescue) must name real classes."""
    cancelled = JobFactory(kind=ECHO, state=JobState.AVAILABLE, metadata={"cron_name": "nightly"})
    cancel_cron_jobs("nightly", "alice")
    rescued = JobFactory(
        kind=ECHO,
        state=JobState.RUNNING,
        attempt=1,
        max_attempts=1,
        worker_ids=["w1"],
        heartbeat_at=T0,
        attempted_at=T0,
    )
    with connection.cursor() as cursor:
        cursor.execute("SELECT id FROM awa_rescue_v1(interval '1 second')")
        assert [r[0] for r in cursor.fetchall()] == [rescued.id]
    for job, exception_class in ((cancelled, JobCancelled), (rescued, WorkerLost)):
        result = echo.get_result(str(job.id))
        assert result.status == TaskResultStatus.FAILED
        assert result.errors[-1].exception_class is exception_class


def test_get_result__accepts_an_int_job_id() -> None:
    # TaskResult.id is a string; an int job id (job.id) is taken as well.
    job = JobFactory(kind=ECHO)
    assert default_task_backend.get_result(str(job.id)).id == str(job.id)
    assert default_task_backend.get_result(job.id).id == str(job.id)
    with pytest.raises(TaskResultDoesNotExist):
        default_task_backend.get_result(True)


@pytest.mark.parametrize("result_id", ["999999999", "abc", "", "1.5", "-1", "99999999999999999999", None])
def test_get_result__unknown_or_malformed_id_does_not_exist(result_id: Any) -> None:
    JobFactory(kind=ECHO)
    with pytest.raises(TaskResultDoesNotExist):
        default_task_backend.get_result(result_id)
    with pytest.raises(TaskResultDoesNotExist):
        echo.get_result(result_id)


def test_get_result__job_of_a_task_that_no_longer_exists() -> None:
    job = JobFactory(kind="tests.testapp.backend_tasks.removed_long_ago")
    with pytest.raises(TaskResultDoesNotExist):
        default_task_backend.get_result(str(job.id))


def test_get_result__of_another_task_is_a_mismatch() -> None:
    result = echo.enqueue()
    with pytest.raises(TaskResultMismatch):
        record.get_result(result.id)
    with pytest.raises(TaskResultMismatch):
        async_to_sync(send_mail.aget_result)(result.id)
    assert echo.get_result(result.id).id == result.id


def test_aget_result__reads_the_row() -> None:
    job = JobFactory(kind=ECHO, state=JobState.COMPLETED, result=[1, "x"])
    result = async_to_sync(echo.aget_result)(str(job.id))
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == [1, "x"]
    with pytest.raises(TaskResultDoesNotExist):
        async_to_sync(default_task_backend.aget_result)("0")


def test_result_refresh__follows_the_row() -> None:
    result = echo.enqueue("x")
    Job.objects.filter(id=result.id).update(
        state=JobState.RUNNING, attempt=1, attempted_at=T0, worker_ids=["w9"]
    )
    result.refresh()
    assert result.status == TaskResultStatus.RUNNING
    assert result.worker_ids == ["w9"] and result.attempts == 1
    Job.objects.filter(id=result.id).update(
        state=JobState.COMPLETED, finished_at=T0 + timedelta(seconds=3), result={"ok": True}
    )
    async_to_sync(result.arefresh)()
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.finished_at == T0 + timedelta(seconds=3)
    assert result.return_value == {"ok": True}


# -- checks -------------------------------------------------------------------------


def test_check__database_not_in_databases() -> None:
    tasks = {"default": {"BACKEND": BACKEND, "QUEUES": QUEUES, "OPTIONS": {"DATABASE": "missing"}}}
    with override_settings(TASKS=tasks):
        messages = task_backends["default"].check()
        assert [m.id for m in messages] == ["awa_django.E030"]
        assert "'missing'" in messages[0].msg
        assert "awa_django.E030" in {m.id for m in run_checks()}


def test_check__valid_test_settings_report_nothing_from_awa_django() -> None:
    assert task_backends["default"].check() == []
    assert [m for m in run_checks() if (m.id or "").startswith("awa_django.")] == []
