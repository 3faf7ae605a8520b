"""Task threads are reused with their connection, never a broken one."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.db import connection
from django.test import override_settings

from awa_django.db import sessions
from awa_django.models import Job
from awa_django.tasks import runner
from awa_django.tasks.worker import Worker
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


def _wait_completed(result: Any, deadline: float = 60.0) -> Job:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        job = Job.objects.get(id=int(result.id))
        if job.state == "completed":
            return job
        time.sleep(0.05)
    raise AssertionError(f"job {result.id} not completed within {deadline} s: {job.state}, {job.errors}")


def _terminate(pid: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
        # Wait until the backend is gone, so the next attempt finds it dead.
        end = time.monotonic() + 30
        while time.monotonic() < end:
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", [pid])
            if cursor.fetchone()[0] == 0:
                return
            time.sleep(0.05)
    raise AssertionError(f"backend {pid} still there")


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
        first = _wait_completed(tasks.backend_pid.enqueue())
        # The task thread's connection dies while it waits (a restart, a
        # terminated backend, an idle timeout on a proxy).
        _terminate(int(first.result))
        if cause != "sat unused":
            sessions._count_drop()  # as the claim loop does when an outage breaks its own
        second = _wait_completed(tasks.backend_pid.enqueue())
    finally:
        worker.stop()
        thread.join(60)
    assert not thread.is_alive()
    # Run once, on a fresh connection: not failed on the dead one and retried.
    assert second.attempt == 1 and second.errors == [], second.errors
    assert second.result != first.result
