"""Task threads are reused with their connection, never a broken one."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from django.db import OperationalError, connection
from django.test import override_settings

from awa_django.db import sessions
from awa_django.models import Job
from awa_django.worker import runner
from awa_django.worker.loop import Worker
from tests.helpers.waiting import wait_for
from tests.helpers.workers import start_in_thread
from tests.testapp import tasks

pytestmark = pytest.mark.django_db(transaction=True)


def results(enqueued: list[Any]) -> list[Any]:
    return [Job.objects.get(id=int(r.id)).result for r in enqueued]


@override_settings(AWA_POLL_INTERVAL=0.05)
def test_worker__consecutive_tasks_reuse_one_thread_and_its_connection() -> None:
    enqueued = [tasks.backend_pid.enqueue() for _ in range(8)]
    worker = Worker(burst=True, concurrency=1)
    worker.run()
    assert worker.completed == 8
    pids = results(enqueued)
    # A new thread per attempt opened a new connection each. At most two task
    # threads take turns: one stores the last completion while the other runs.
    assert len(set(pids)) <= 2, pids


@override_settings(AWA_POLL_INTERVAL=0.05)
def test_worker__a_connection_a_task_left_in_a_transaction_is_not_reused() -> None:
    first = tasks.leaves_a_transaction_open.enqueue()
    then = [tasks.backend_pid.enqueue() for _ in range(2)]
    worker = Worker(burst=True, concurrency=1)
    worker.run()
    assert worker.completed == 3
    left_open, *after = results([first, *then])
    # (Reuse itself is the test above; two task threads may take turns here.)
    assert left_open not in after


def _completed(result: Any) -> Job:
    """The job of ``result`` once it has completed (within the wait's deadline)."""
    return wait_for(lambda: Job.objects.filter(id=int(result.id), state="completed").first())


def _terminate(pid: int) -> None:
    """End backend ``pid`` and wait until it is gone, so its next use finds it dead."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [pid])

    def gone() -> bool:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", [pid])
            return cursor.fetchone()[0] == 0

    wait_for(gone, timeout=30)


def _drop_a_connection_elsewhere() -> None:
    """What the claim loop does when an outage breaks its connection: the
    error is caught by ``reconnect_on_error``, which drops the connection."""
    with sessions.reconnect_on_error("default", "test", logging.getLogger("tests"), "test.error"):
        raise OperationalError("server closed the connection unexpectedly")


@pytest.mark.parametrize("cause", ["sat unused", "another thread lost its connection"])
@override_settings(AWA_POLL_INTERVAL=0.05)
def test_worker__a_kept_connection_the_server_closed_is_replaced_before_the_next_attempt(
    monkeypatch: pytest.MonkeyPatch, cause: str
) -> None:
    # Either trigger alone makes the thread check its connection: the other
    # is switched off.
    if cause == "sat unused":
        monkeypatch.setattr(runner, "CHECK_KEPT_CONNECTION_AFTER", 0.0)
    else:
        monkeypatch.setattr(runner, "CHECK_KEPT_CONNECTION_AFTER", 3600.0)
    worker = Worker(concurrency=1)
    thread = start_in_thread(worker)
    try:
        first = _completed(tasks.backend_pid.enqueue())
        # The task thread's connection dies while it waits (a restart, a
        # terminated backend, an idle timeout on a proxy).
        _terminate(int(first.result))
        if cause != "sat unused":
            _drop_a_connection_elsewhere()
        second = _completed(tasks.backend_pid.enqueue())
    finally:
        worker.stop()
        thread.join(60)
    assert not thread.is_alive()
    # Run once, on a fresh connection: not failed on the dead one and retried.
    assert second.attempt == 1 and second.errors == [], second.errors
    assert second.result != first.result


def test_replace_dead_connections__a_check_that_raises_closes_the_connection_and_never_raises(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    connection.ensure_connection()

    def broken_check() -> bool:
        raise RuntimeError("a driver error outside Database.Error")

    monkeypatch.setattr(connection, "is_usable", broken_check)
    runner.replace_dead_connections()  # the attempt in hand must still run
    assert connection.connection is None
    monkeypatch.undo()
    with connection.cursor() as cursor:  # reopened on next use
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)
