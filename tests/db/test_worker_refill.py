"""The batch that completes finished attempts also claims the free slots."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext, override_settings

from awa_django.client.compat import task_started
from awa_django.client.paths import load_task
from awa_django.client.results import to_task_result
from awa_django.models import Job
from awa_django.store import jobs
from awa_django.worker.loop import Worker
from awa_django.worker.outcomes import Success
from tests.helpers.workers import start_in_thread
from tests.testapp import tasks

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, list[int]]]:
    """Rows returned by each claim of the claim loop and by each combined statement;
    the claim loop polls only every 60 s."""
    seen: dict[str, list[int]] = {"claim": [], "complete_and_claim": []}
    claim, complete_and_claim = jobs.claim, jobs.complete_and_claim

    def counted_claim(*args: Any) -> Any:
        rows = claim(*args)
        seen["claim"].append(len(rows))
        return rows

    def counted_complete_and_claim(*args: Any) -> Any:
        done, claimed = complete_and_claim(*args)
        seen["complete_and_claim"].append(len(claimed))
        return done, claimed

    monkeypatch.setattr(jobs, "claim", counted_claim)
    monkeypatch.setattr(jobs, "complete_and_claim", counted_complete_and_claim)
    with override_settings(AWA_POLL_INTERVAL=60.0):
        yield seen


class Watched(threading.Event):
    """An Event that tells when someone waits on it."""

    def __init__(self) -> None:
        super().__init__()
        self.waiting = threading.Event()

    def wait(self, timeout: float | None = None) -> bool:
        self.waiting.set()
        return super().wait(timeout)


def test_worker__at_concurrency_1_each_job_is_claimed_by_the_statement_completing_the_one_before(
    calls: dict[str, list[int]],
) -> None:
    first = tasks.gated.enqueue("first")
    enqueued = [tasks.backend_pid.enqueue() for _ in range(5)]
    worker = Worker(burst=True, concurrency=1)
    worker._slot_freed = slot_freed = Watched()

    thread = start_in_thread(worker)
    try:
        # The claim loop claimed the gated job and waits for a free slot: from
        # here on only the completions claim, until they find no job.
        assert slot_freed.waiting.wait(60)
    finally:
        tasks.GATE.set()
    thread.join(120)
    tasks.GATE.clear()
    assert not thread.is_alive()
    assert worker.completed == 6 and worker.claimed_total == 6
    assert Job.objects.get(id=int(first.id)).state == "completed"
    # The claim loop claims the first job, and finds none at the end; each
    # completion claims the next job (the last one finds none).
    assert calls["claim"] == [1, 0]
    assert calls["complete_and_claim"] == [1, 1, 1, 1, 1, 0]
    # The thread that stored a completion runs the attempt it claimed: one thread, one connection.
    assert len({Job.objects.get(id=int(r.id)).result for r in enqueued}) == 1


def test_worker__claims_of_the_batches_stop_at_max_tasks(calls: dict[str, list[int]]) -> None:
    for i in range(8):
        tasks.write_effect.enqueue(f"e{i}")
    worker = Worker(concurrency=2, max_tasks=5)
    worker.run()
    assert worker.claimed_total == 5 and worker.completed == 5
    assert Job.objects.filter(state="completed").count() == 5
    assert Job.objects.filter(state="available").count() == 3


def test_worker__a_stop_ends_the_claims_of_the_batches(calls: dict[str, list[int]]) -> None:
    for i in range(5):
        tasks.write_effect.enqueue(f"e{i}")
    worker = Worker(concurrency=1)
    started: list[str] = []

    def stop_at_second(sender: Any, task_result: Any, **kwargs: Any) -> None:
        started.append(task_result.id)
        if len(started) == 2:
            worker.stop()

    task_started.connect(stop_at_second)
    try:
        worker.run()
    finally:
        task_started.disconnect(stop_at_second)
    assert worker.completed == 2 and worker.abandoned == 0
    assert Job.objects.filter(state="completed").count() == 2
    assert Job.objects.filter(state="available").count() == 3  # none claimed after the stop


class Refill:
    """A stand-in for the worker's side of a batch's claim."""

    def __init__(self, free: int) -> None:
        self.free = free
        self.queues: list[str] | None = None
        self.admitted: list[tuple[list[int], int, bool]] = []
        self.handed: list[Any] = []

    def reserve(self) -> int:
        free, self.free = self.free, 0
        return free

    def admit(self, rows: list[dict[str, Any]], reserved: int, keep: bool, wake: bool = True) -> Any:
        self.admitted.append(([int(r.id) for r in rows], reserved, keep))
        return rows[-1] if keep and rows else None

    def handoff(self, attempt: Any) -> None:
        self.handed.append(attempt)


def success(worker: Worker, row: dict[str, Any], value: Any, encoded: str | None = None) -> Success:
    task = load_task(row.kind)
    result = to_task_result(row, worker.backend.alias, task)
    return Success(row, task, result, value, json.dumps(value) if encoded is None else encoded)


def test_flush__with_a_refill_completes_and_claims_in_one_statement_and_keeps_one_attempt() -> None:
    worker = Worker(concurrency=3)
    tasks.returns_value.enqueue(1)
    (row,) = worker.claim(1)
    waiting = [tasks.returns_value.enqueue(n) for n in (2, 3, 4)]
    refill = Refill(free=2)
    worker.outcomes.add(success(worker, row, 1))
    with CaptureQueriesContext(connection) as queries:
        kept = worker.outcomes.flush(refill)
    assert [q["sql"].count("awa_complete_claim_v3") for q in queries.captured_queries] == [1]
    assert worker.completed == 1 and Job.objects.get(id=row.id).state == "completed"
    claimed_ids = [int(waiting[0].id), int(waiting[1].id)]
    assert refill.admitted == [(claimed_ids, 2, True)]
    assert int(kept.id) == claimed_ids[-1] and refill.handed == []
    assert Job.objects.get(id=int(waiting[2].id)).state == "available"


def test_flush__a_batch_postgres_refuses_claims_nothing_and_gives_its_reservation_back() -> None:
    worker = Worker(concurrency=3)
    for value in (1, 2):
        tasks.returns_value.enqueue(value)
    good, bad = worker.claim(2)
    other = tasks.returns_value.enqueue(3)
    refill = Refill(free=2)
    worker.outcomes.add(success(worker, good, 1))
    worker.outcomes.add(success(worker, bad, "bad", encoded='"\\u0000"'))  # jsonb refuses \u0000
    assert worker.outcomes.flush(refill) is None
    assert refill.admitted == [([], 2, False)] or refill.admitted == [([], 2, True)]
    assert Job.objects.get(id=good.id).state == "completed"
    assert Job.objects.get(id=bad.id).state == "retryable"
    assert Job.objects.get(id=int(other.id)).state == "available"
    assert worker.completed == 1 and worker.failed == 1
