"""awa_django.outcomes: finished attempts completed in batches (a group commit)."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext

from awa_django.client.compat import TaskResultStatus, task_finished
from awa_django.client.paths import load_task
from awa_django.client.results import to_task_result
from awa_django.models import Job
from awa_django.store import jobs
from awa_django.worker.loop import Worker
from awa_django.worker.outcomes import Success
from tests.testapp import tasks

pytestmark = pytest.mark.django_db


@pytest.fixture
def finished() -> Iterator[list[Any]]:
    results: list[Any] = []

    def receiver(sender: Any, task_result: Any, **kwargs: Any) -> None:
        results.append(task_result)

    task_finished.connect(receiver)
    yield results
    task_finished.disconnect(receiver)


def successes(worker: Worker, values: list[Any], encoded: list[str] | None = None) -> list[Success]:
    for value in values:
        tasks.returns_value.enqueue(value)
    rows = worker.claim(len(values))
    out = []
    for i, row in enumerate(rows):
        task = load_task(row.kind)
        result = to_task_result(row, worker.backend.alias, task)
        text = encoded[i] if encoded else json.dumps(values[i])
        out.append(Success(row, task, result, values[i], text))
    return out


def test_flush__completes_every_waiting_attempt_in_one_statement(finished: list[Any]) -> None:
    worker = Worker(concurrency=3)
    batch = successes(worker, [1, "two", {"three": 3}])
    for success in batch:
        worker.outcomes.add(success)
    assert sorted(worker.outcomes.unreported()) == sorted(s.key for s in batch)
    with CaptureQueriesContext(connection) as queries:
        worker.outcomes.flush()
    assert [q["sql"].count("awa_complete_many_v1") for q in queries.captured_queries] == [1]
    assert worker.outcomes.unreported() == [] and worker.completed == 3
    assert {j.id: j.result for j in Job.objects.all()} == {s.key[0]: s.value for s in batch}
    assert all(r.status == TaskResultStatus.SUCCESSFUL and r.finished_at is not None for r in finished)
    assert sorted((r.id, json.dumps(r.return_value)) for r in finished) == sorted(
        (str(s.key[0]), s.encoded) for s in batch
    )


@pytest.mark.django_db(transaction=True)
def test_flush__a_thread_arriving_during_a_batch_leaves_its_attempt_to_that_batch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    worker = Worker(concurrency=2)
    first, second = successes(worker, [1, 2])
    entered, release = threading.Event(), threading.Event()
    store = worker.outcomes.store_done
    calls: list[int] = []

    def slow_store(done: Any) -> Any:
        calls.append(len(done))
        if len(calls) == 1:
            entered.set()
            assert release.wait(60)
        return store(done)

    def flush_first() -> None:
        try:
            worker.outcomes.add(first)
            worker.outcomes.flush()
        finally:
            connections.close_all()

    monkeypatch.setattr(worker.outcomes, "store_done", slow_store)
    flusher = threading.Thread(target=flush_first)
    flusher.start()
    assert entered.wait(60)
    worker.outcomes.add(second)
    worker.outcomes.flush()  # returns at once: a batch is in flight
    assert second.key in worker.outcomes.unreported()
    release.set()
    flusher.join(60)
    assert calls == [1, 1] and worker.completed == 2 and worker.outcomes.wait_idle(60)


@pytest.mark.django_db(transaction=True)  # the worker reports in autocommit, as here
def test_batch__a_value_postgres_refuses_fails_only_its_attempt() -> None:
    worker = Worker(concurrency=3)
    # jsonb refuses the \u0000 escape: the batch statement fails, each is retried alone.
    batch = successes(worker, [1, "bad", 3], encoded=["1", '"\\u0000"', "3"])
    for success in batch:
        worker.outcomes.add(success)
    worker.outcomes.flush()
    states = {j.id: (j.state, j.result) for j in Job.objects.all()}
    assert states[batch[0].key[0]] == ("completed", 1) and states[batch[2].key[0]] == ("completed", 3)
    bad = Job.objects.get(id=batch[1].key[0])
    assert bad.state == "retryable"
    assert bad.errors[-1]["exception_class_path"] == "awa_django.exceptions.UnstorableResult"
    assert worker.completed == 2 and worker.failed == 1


def test_batch__a_rescued_attempt_is_not_completed_and_not_counted(caplog: pytest.LogCaptureFixture) -> None:
    worker = Worker(concurrency=2)
    stale, fine = successes(worker, [1, 2])
    Job.objects.filter(id=stale.key[0]).update(heartbeat_at=stale.row.heartbeat_at - timedelta(hours=1))
    with connection.cursor() as cursor:
        jobs.rescue(cursor, timedelta(minutes=5))
    with caplog.at_level(logging.WARNING, logger="awa_django"):
        worker.outcomes.add(stale)
        worker.outcomes.add(fine)
        worker.outcomes.flush()
    assert Job.objects.get(id=stale.key[0]).state == "retryable"
    assert Job.objects.get(id=fine.key[0]).state == "completed" and worker.completed == 1
    assert any(getattr(r, "event", None) == "job.stale_report" for r in caplog.records)
