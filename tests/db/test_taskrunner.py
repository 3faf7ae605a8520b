"""tasks/runner.py: running one claimed attempt, and the task thread's loop.

test_task_outcomes.py covers what each kind of failure records through
``Worker.execute``; these call :func:`run_attempt` directly and drive a
:class:`Runner` with a stand-in :class:`~awa_django.worker.runner.Pool`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, cast

import pytest
from django.db import connection, transaction

from awa_django import jobcontext as context
from awa_django.models import Job
from awa_django.store.job_rows import JobRow
from awa_django.worker.loop import Worker
from awa_django.worker.outcomes import Success
from awa_django.worker.runner import Attempt, Runner, drop_unusable_connections, run_attempt
from tests.factories import JobFactory
from tests.testapp import tasks

pytestmark = pytest.mark.django_db(transaction=True)


def claimed(worker: Worker, job_id: Any) -> JobRow:
    (row,) = worker.claim(1)
    assert int(row.id) == int(job_id)
    return row


def state(job_id: Any) -> str:
    return str(Job.objects.get(id=int(job_id)).state)


def test_run_attempt__returns_the_value_to_complete_without_storing_it() -> None:
    result = tasks.returns_value.enqueue({"n": 1, "list": [1, "two"], "text": "é"})
    worker = Worker()
    row = claimed(worker, result.id)
    outcome = run_attempt(worker.outcomes, row)
    assert isinstance(outcome, Success)
    assert outcome.value == {"n": 1, "list": [1, "two"], "text": "é"}
    assert json.loads(outcome.encoded) == outcome.value
    assert outcome.key == (int(result.id), 1)
    assert state(result.id) == "running"  # storing it is the caller's step
    assert worker.outcomes.complete(outcome) == "completed"
    assert state(result.id) == "completed"


def test_run_attempt__context_task_gets_its_task_result() -> None:
    result = tasks.context_effect.enqueue("ctx")
    worker = Worker()
    outcome = run_attempt(worker.outcomes, claimed(worker, result.id))
    assert isinstance(outcome, Success)
    assert outcome.value == {"attempt": 1, "id": str(result.id)}


def test_run_attempt__runs_the_task_as_the_current_job_built_from_the_row(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[context.JobInfo | None] = []
    real = context.running

    @contextmanager
    def spy(info: context.JobInfo) -> Iterator[None]:
        with real(info):
            seen.append(context.current_job())
            yield

    monkeypatch.setattr(context, "running", spy)
    job = JobFactory(queue="mail", max_attempts=4, metadata={"cron_name": "nightly"})
    worker = Worker()
    outcome = run_attempt(worker.outcomes, claimed(worker, job.id))
    assert isinstance(outcome, Success)
    (info,) = seen
    assert info is not None
    assert (info.id, info.attempt, info.max_attempts, info.queue, info.kind) == (
        job.id,
        1,
        4,
        "mail",
        "tests.testapp.tasks.record",
    )
    assert info.metadata == {"cron_name": "nightly"}
    assert context.current_job() is None


@pytest.mark.parametrize(
    ("enqueue", "expected"),
    [
        (lambda: tasks.always_fails.enqueue("x"), "retryable"),  # the task raised
        (lambda: tasks.returns_nul.enqueue(), "retryable"),  # a value jsonb cannot store
        (lambda: JobFactory(kind="tests.testapp.tasks.not_a_task"), "failed"),  # can never run
        (lambda: JobFactory(args={"args": [], "kwargs": {}, "extra": 1}), "failed"),
    ],
    ids=["raises", "unstorable-result", "not-a-task", "bad-args"],
)
def test_run_attempt__a_failure_is_recorded_and_its_state_returned(enqueue: Any, expected: str) -> None:
    job = enqueue()
    worker = Worker()
    outcome = run_attempt(worker.outcomes, claimed(worker, job.id))
    assert outcome == expected
    assert state(job.id) == expected


def test_drop_unusable_connections__closes_a_connection_left_without_autocommit() -> None:
    connection.ensure_connection()
    drop_unusable_connections()
    assert connection.connection is not None  # healthy: kept for the next attempt
    transaction.set_autocommit(False)
    drop_unusable_connections()
    assert connection.connection is None
    with connection.cursor() as cursor:  # the next use reconnects, in autocommit
        cursor.execute("SELECT 1")
    assert connection.get_autocommit()


class StandInWorker:
    """A :class:`~awa_django.worker.runner.Pool` recording the calls in order."""

    def __init__(
        self, outcomes: list[Success | None], idle: bool = True, kept: list[Attempt | None] | None = None
    ) -> None:
        self.outcomes_left = outcomes
        self.kept = kept or []  # what each flush hands back to the flushing thread
        self.idle = idle
        self.calls: list[Any] = []

    def run_one(self, attempt: Attempt) -> Success | None:
        self.calls.append(("run", attempt.key))
        return self.outcomes_left.pop(0)

    def slot_freed(self) -> None:
        self.calls.append("slot_freed")

    def flush_completions(self) -> Attempt | None:
        self.calls.append("flush")
        return self.kept.pop(0) if self.kept else None

    def runner_idle(self, runner: Runner) -> bool:
        self.calls.append("idle")
        return self.idle

    def runner_retire(self, runner: Runner) -> bool:
        return True


def attempt(job_id: int) -> Attempt:
    return Attempt(JobRow(id=job_id, attempt=1))


def run_runner(worker: StandInWorker, *handoff: Attempt | None) -> None:
    runner = Runner(worker)
    for item in handoff:
        runner.handoff.put(item)
    runner.start()
    runner.join(60)
    assert not runner.is_alive()


def test_runner__a_success_is_flushed_and_its_slot_left_to_the_batch_a_failure_wakes_the_claim_loop() -> None:
    success = cast(Success, object())
    worker = StandInWorker([success, None])
    run_runner(worker, attempt(1), attempt(2), None)
    assert worker.calls == [
        ("run", (1, 1)),
        "flush",  # the batch claims for the freed slot: no wake-up of the claim loop
        "idle",
        ("run", (2, 1)),
        "idle",
        "slot_freed",  # after a failure, once idle: the claim loop refills the slot
    ]


def test_runner__runs_the_attempt_its_flush_claimed_for_it_without_going_idle() -> None:
    success = cast(Success, object())
    worker = StandInWorker([success, success, None], kept=[attempt(2), attempt(3)])
    run_runner(worker, attempt(1), None)
    assert worker.calls == [
        ("run", (1, 1)),
        "flush",
        ("run", (2, 1)),
        "flush",
        ("run", (3, 1)),
        "idle",
        "slot_freed",
    ]


def test_runner__ends_when_the_worker_has_stopped() -> None:
    worker = StandInWorker([None, None], idle=False)
    run_runner(worker, attempt(1), attempt(2))
    assert worker.calls == [("run", (1, 1)), "idle", "slot_freed"]
