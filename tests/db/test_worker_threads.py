"""Task threads are reused with their connection, never a broken one."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import override_settings

from awa_django.models import Job
from awa_django.tasks.worker import Worker
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
