"""The django.tasks contract in the backend and the worker, under hostile failures.

Failures that are hard to store or print (NUL, lone surrogates, an exception whose
``str()`` raises, a module whose import raises them or ``KeyboardInterrupt``) end the
job FAILED and never stop the worker; ``run_after``, queue names and result ids outside
what the backend can store or find raise the contract's exceptions.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.db import connection, transaction
from django.test import override_settings

from awa_django.client import compat
from awa_django.client.compat import InvalidTask, TaskResultDoesNotExist, TaskResultStatus, task_backends
from awa_django.models import Job
from awa_django.worker.loop import Worker
from tests.testapp import audit_tasks
from tests.testapp.audit_tasks import UNSTORABLE_MESSAGES
from tests.testapp.tasks import record

pytestmark = pytest.mark.django_db(transaction=True)

NO_BACKOFF = {"AWA_RETRY_BACKOFF": 0.0, "AWA_POLL_INTERVAL": 0.05}
AWA = "awa_django.client.backend.AwaBackend"
NOT_RUNNABLE = "awa_django.client.paths.TaskNotRunnable"
SANITISED = {
    "nul": "before\\x00after",
    "surrogate": "half \\ud800 pair",
    "both": "nul \\x00 and \\udfff too",
}


def job(result_or_id: Any) -> Job:
    return Job.objects.get(id=int(getattr(result_or_id, "id", result_or_id)))


def only_once(result: Any) -> None:
    """No retry: the first failed attempt fails the job."""
    Job.objects.filter(id=int(result.id)).update(max_attempts=1)


def execute_next(worker: Worker | None = None) -> str | None:
    worker = worker or Worker()
    (row,) = worker.claim(1)
    return worker.execute(row)


def bad_kind(module: str) -> Job:
    return Job.objects.create(
        kind=f"tests.testapp.{module}.task", max_attempts=3, args={"args": [], "kwargs": {}}
    )


def assert_storable(text: str) -> None:
    assert "\x00" not in text
    text.encode("utf-8")  # no lone surrogate


@pytest.fixture
def sigint_handled() -> Iterator[None]:
    """SIGINT routed to a handler, as ``runtasks`` routes it (a Ctrl-C never raises)."""
    previous = signal.signal(signal.SIGINT, lambda signum, frame: None)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.fixture
def sigint_default() -> Iterator[None]:
    """Python's own SIGINT handler: a Ctrl-C raises KeyboardInterrupt in the main thread."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


# -- 1. an exception message PostgreSQL cannot store ---------------------------------


@pytest.mark.parametrize("kind", sorted(UNSTORABLE_MESSAGES))
def test_worker__error_message_with_nul_or_lone_surrogate_is_stored_sanitised(kind: str) -> None:
    result = audit_tasks.raises_unstorable_message.enqueue(kind)
    only_once(result)
    assert execute_next() == "failed"
    (error,) = job(result).errors
    assert error["exception_class_path"] == "builtins.ValueError"
    assert SANITISED[kind] in error["traceback"]
    assert_storable(error["traceback"])
    failed = audit_tasks.raises_unstorable_message.get_result(result.id)
    assert failed.status == TaskResultStatus.FAILED
    assert failed.errors[0].exception_class is ValueError


@override_settings(**NO_BACKOFF)
def test_worker__error_message_with_nul_is_retried_like_any_failure() -> None:
    result = audit_tasks.raises_unstorable_message.enqueue("nul")
    assert execute_next() == "retryable"
    assert SANITISED["nul"] in job(result).errors[0]["traceback"]


@override_settings(**NO_BACKOFF)
def test_worker__keeps_running_other_jobs_after_unstorable_error_messages() -> None:
    bad = [audit_tasks.raises_unstorable_message.enqueue(kind) for kind in sorted(UNSTORABLE_MESSAGES)]
    for result in bad:
        only_once(result)
    fine = audit_tasks.succeeds.enqueue("after")
    worker = Worker(burst=True, concurrency=2)
    worker.run()
    assert [job(r).state for r in bad] == ["failed"] * len(bad)
    assert job(fine).state == "completed"
    assert (worker.failed, worker.completed) == (len(bad), 1)


# -- 2. an exception whose str() raises ------------------------------------------------


@pytest.mark.parametrize(
    ("task", "class_path"),
    [
        (audit_tasks.raises_unprintable, "tests.testapp.audit_tasks.UnprintableError"),
        (audit_tasks.raises_unprintable_base, "tests.testapp.audit_tasks.UnprintableBaseError"),
    ],
)
def test_worker__unprintable_exception_fails_with_its_class_name(
    task: Any, class_path: str, caplog: pytest.LogCaptureFixture
) -> None:
    result = task.enqueue()
    only_once(result)
    with caplog.at_level(logging.WARNING, logger="awa_django"):
        assert execute_next() == "failed"
    (error,) = job(result).errors
    assert error["exception_class_path"] == class_path
    assert class_path.rpartition(".")[2] in error["traceback"]
    assert task.get_result(result.id).status == TaskResultStatus.FAILED
    logged = [r.getMessage() for r in caplog.records if getattr(r, "job_id", None) == int(result.id)]
    assert logged and class_path.rpartition(".")[2] in logged[0]


@override_settings(**NO_BACKOFF)
def test_worker__keeps_running_other_jobs_after_an_unprintable_exception() -> None:
    bad = audit_tasks.raises_unprintable.enqueue()
    only_once(bad)
    fine = audit_tasks.succeeds.enqueue("after")
    worker = Worker(burst=True)
    worker.run()
    assert (job(bad).state, job(fine).state) == ("failed", "completed")


# -- 3. importing the task's module raises something unstorable or unprintable ---------


def test_worker__import_error_with_nul_and_surrogate_fails_the_job_sanitised() -> None:
    bad = bad_kind("audit_import_nul")
    assert execute_next() == "failed"
    (error,) = job(bad.id).errors
    assert error["exception_class_path"] == NOT_RUNNABLE
    assert "cannot load \\x00 this \\ud800 module" in error["traceback"]
    assert_storable(error["traceback"])


def test_worker__unprintable_import_error_fails_the_job_naming_its_class(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bad = bad_kind("audit_import_unprintable")
    with caplog.at_level(logging.WARNING, logger="awa_django"):
        assert execute_next() == "failed"
    (error,) = job(bad.id).errors
    assert error["exception_class_path"] == NOT_RUNNABLE
    assert "raised ImportTimeError" in error["traceback"]


@override_settings(**NO_BACKOFF)
def test_worker__keeps_running_other_jobs_after_unstorable_import_errors() -> None:
    bad = [bad_kind("audit_import_nul"), bad_kind("audit_import_unprintable")]
    fine = audit_tasks.succeeds.enqueue("after")
    worker = Worker(burst=True, concurrency=2)
    worker.run()
    assert [job(b.id).state for b in bad] == ["failed", "failed"]
    assert job(fine).state == "completed"


# -- 4. KeyboardInterrupt while importing the task's module ------------------------------


@override_settings(**NO_BACKOFF)
def test_worker__keyboard_interrupt_raised_by_an_import_fails_the_job_not_the_worker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    escaped: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: escaped.append(args.exc_value))
    bad = bad_kind("audit_import_interrupt")
    fine = audit_tasks.succeeds.enqueue("after")
    worker = Worker(burst=True)
    worker.run()  # returns: the task thread's KeyboardInterrupt was module code, not a signal
    assert escaped == []  # no task thread died of it
    failed = job(bad.id)
    assert (failed.state, failed.attempt) == ("failed", 1)
    (error,) = failed.errors
    assert error["exception_class_path"] == NOT_RUNNABLE
    assert "raised KeyboardInterrupt: raised by module-level code" in error["traceback"]
    assert job(fine).state == "completed"
    assert (worker.failed, worker.completed) == (1, 1)


@pytest.mark.usefixtures("sigint_handled")
def test_worker__keyboard_interrupt_of_an_import_in_the_main_thread_with_a_sigint_handler() -> None:
    # runtasks routes SIGINT to its handler: a KeyboardInterrupt can only come from code.
    bad = bad_kind("audit_import_interrupt")
    try:
        state = execute_next()
    except KeyboardInterrupt:  # pytest would take it for the user's Ctrl-C
        pytest.fail("the KeyboardInterrupt raised by the import escaped the worker")
    assert state == "failed"
    assert "KeyboardInterrupt" in job(bad.id).errors[0]["traceback"]


@pytest.mark.usefixtures("sigint_default")
def test_worker__keyboard_interrupt_of_an_import_may_be_ctrl_c_under_pythons_default_handler() -> None:
    # Main thread, Python's default SIGINT handler (a shell): it may be a real
    # Ctrl-C, which must interrupt, not fail the job for good.
    bad = bad_kind("audit_import_interrupt")
    worker = Worker()
    (row,) = worker.claim(1)
    with pytest.raises(KeyboardInterrupt):
        worker.execute(row)
    assert job(bad.id).state == "running"  # left to rescue, not failed for good


@pytest.mark.usefixtures("sigint_default")
def test_get_result__keyboard_interrupt_of_an_import_in_another_thread_is_not_raised() -> None:
    bad = bad_kind("audit_import_interrupt")
    raised: list[BaseException] = []

    def read() -> None:
        try:
            task_backends["default"].get_result(str(bad.id))
        except BaseException as exc:  # the test records whatever escaped
            raised.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=read)
    thread.start()
    thread.join()
    assert [type(e) for e in raised] == [TaskResultDoesNotExist]


# -- 5. run_after outside what can be stored and read back -------------------------------


def tz(hours: int) -> timezone:
    return timezone(timedelta(hours=hours))


@pytest.mark.parametrize(
    "run_after",
    [
        datetime(1, 1, 1, tzinfo=UTC),
        datetime.min.replace(tzinfo=UTC),
        datetime(1, 1, 1, 12, tzinfo=tz(14)),  # before year 1 in UTC
        datetime(1, 1, 1, 23, tzinfo=UTC),  # shown in a zone west of UTC: before year 1
        datetime(9999, 12, 31, 23, tzinfo=tz(-14)),  # after year 9999 in UTC
        datetime(9999, 12, 31, 23, tzinfo=tz(14)),  # shown in a zone east of UTC: after 9999
        datetime.max.replace(tzinfo=UTC),
    ],
    ids=str,
)
def test_enqueue__run_after_outside_the_storable_range_is_invalid_task(run_after: datetime) -> None:
    with pytest.raises(InvalidTask, match="run_after"):
        record.using(run_after=run_after).enqueue()
    assert not Job.objects.exists()


def test_enqueue_many__run_after_outside_the_range_raises_before_inserting_anything() -> None:
    backend = task_backends["default"]
    task = record.using(run_after=datetime(2030, 1, 1, tzinfo=UTC))
    object.__setattr__(task, "run_after", datetime(1, 1, 1, tzinfo=tz(14)))  # past using()'s check
    with transaction.atomic():
        with pytest.raises(InvalidTask, match="run_after"):
            backend.enqueue_many([(record, (), {}), (task, (), {})])
        assert record.enqueue().status == TaskResultStatus.READY  # the transaction is still usable
    assert Job.objects.count() == 1


@pytest.mark.parametrize("run_after", [date(2030, 1, 1), "2030-01-01T00:00:00+00:00", 1893456000])
def test_enqueue__run_after_that_is_not_a_datetime_is_invalid_task(run_after: Any) -> None:
    with pytest.raises(InvalidTask, match="run_after"):
        record.using(run_after=run_after)


@pytest.mark.parametrize(
    "run_after",
    [datetime(1, 1, 2, tzinfo=UTC), datetime(9999, 12, 30, 23, 59, tzinfo=UTC)],
    ids=str,
)
def test_enqueue__run_after_at_the_ends_of_the_range_round_trips(run_after: datetime) -> None:
    result = record.using(run_after=run_after).enqueue()
    assert job(result).run_at == run_after
    assert record.get_result(result.id).task.run_after == run_after


# -- 6. queue names when QUEUES is [] ----------------------------------------------------


def tasks_setting(queues: list[str]) -> dict[str, Any]:
    return {
        "default": {"BACKEND": AWA, "QUEUES": queues},
        "dummy": {"BACKEND": compat.DUMMY_BACKEND, "QUEUES": queues},
        "immediate": {"BACKEND": compat.IMMEDIATE_BACKEND, "QUEUES": queues},
    }


@pytest.mark.parametrize("queue", ["queue-2", "anything at all", "é" * 200])
def test_enqueue__empty_queues_allows_any_storable_name_as_django_does(queue: str) -> None:
    with override_settings(TASKS=tasks_setting([])):
        for alias in ("dummy", "immediate"):  # Django's own reading of QUEUES = []
            assert record.using(backend=alias, queue_name=queue).queue_name == queue
        result = record.using(queue_name=queue).enqueue()
        assert job(result).queue == queue
        assert record.get_result(result.id).task.queue_name == queue


@pytest.mark.parametrize("queue", ["a\x00b", "\ud800", "", "x" * 201, "tab\there", "\u202eevil", 123])
@pytest.mark.parametrize("queues", [[], ["default"]], ids=["QUEUES=[]", "QUEUES=[default]"])
def test_enqueue__queue_name_the_backend_cannot_store_is_invalid_task(queue: Any, queues: list[str]) -> None:
    with override_settings(TASKS=tasks_setting(queues)), pytest.raises(InvalidTask, match="[Qq]ueue"):
        record.using(queue_name=queue).enqueue()
    assert not Job.objects.exists()


def test_enqueue__queue_listed_in_queues_but_unstorable_is_invalid_task() -> None:
    with override_settings(TASKS=tasks_setting(["default", "a\x00b"])):
        with pytest.raises(InvalidTask, match="queue_name"):
            record.using(queue_name="a\x00b")
        assert record.enqueue().status == TaskResultStatus.READY


# -- 7. get_result with ids of the wrong shape -------------------------------------------


WRONG_IDS: list[Callable[[int], Any]] = [
    lambda i: float(i),
    lambda i: True,
    lambda i: str(i).encode(),
    lambda i: [str(i)],
    lambda i: None,
    lambda i: f" {i}",
    lambda i: f"{i}\n",
    lambda i: f"+{i}",
    lambda i: f"0{i}",
    lambda i: f"{i}\x00",
    lambda i: "\x00",
    lambda i: "\ud800",
    lambda i: "".join(chr(0x0660 + int(d)) for d in str(i)),  # Arabic-Indic digits
    lambda i: f"{str(i)[:1]}_{str(i)[1:] or 0}",
    lambda i: "0",
    lambda i: "9223372036854775808",  # past bigint
    lambda i: 9223372036854775808,
    lambda i: -i,
    lambda i: "9" * 5000,
    lambda i: "1" * 1_000_000,
    lambda i: "0b1",
    lambda i: "not-a-uuid",
    lambda i: "123e4567-e89b-12d3-a456-426614174000",
]


@pytest.mark.parametrize("make_id", WRONG_IDS, ids=range(len(WRONG_IDS)))
def test_get_result__wrong_shaped_id_does_not_exist(make_id: Callable[[int], Any]) -> None:
    result = record.enqueue("x")
    backend = task_backends["default"]
    assert backend.get_result(result.id).id == result.id
    wrong = make_id(int(result.id))
    with pytest.raises(TaskResultDoesNotExist):
        backend.get_result(wrong)
    with pytest.raises(TaskResultDoesNotExist):
        record.get_result(wrong)
    with pytest.raises(TaskResultDoesNotExist):
        async_to_sync(backend.aget_result)(wrong)


# -- runtasks --queue takes only names awa_jobs can hold ------------------------------


@pytest.mark.parametrize("queue", ["a\x00b", "", "x" * 201, "tab\there", "\u202eevil"])
def test_runtasks__unstorable_queue_name_is_a_usage_error(queue: str) -> None:
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError, match="queue name"):
        call_command("runtasks", "--burst", "--queue", queue)
