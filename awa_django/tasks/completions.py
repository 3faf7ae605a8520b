"""Successful attempts, completed in batches (a group commit) by the ``runtasks`` worker.

The task thread that finds no batch in flight stores every finished attempt
waiting so far in one statement, while the others go back to running tasks.
With a :class:`Refill` (the worker), the same statement also claims the slots
that are free by then (``awa_complete_claim_v2``): one round trip and one
transaction both ends an attempt and starts the next, and the flushing thread
keeps one of the new attempts to run itself. ``task_finished`` is sent once
the batch is stored, after the new attempts were handed out.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from django.db import DataError
from django.tasks import Task
from django.tasks.base import TaskResult, TaskResultStatus

from .. import metrics
from ..exceptions import UnstorableResult
from . import jobs

if TYPE_CHECKING:
    from .backend import AwaBackend

logger = logging.getLogger("awa_django.worker")
T = TypeVar("T")
Row = dict[str, Any]
Key = tuple[int, int]


class ReportAbandoned(Exception):
    """A report could not reach the database within ``AWA_REPORT_RETRY_TIMEOUT`` (logged)."""


@dataclass(slots=True)
class Success:
    """An attempt whose task returned: what is left is to store its value."""

    row: Row
    task: Task[Any, Any]
    result: TaskResult[Any, Any]
    value: Any
    encoded: str  # the value as JSON

    @property
    def key(self) -> Key:
        return (int(self.row["id"]), int(self.row["attempt"]))

    @property
    def done(self) -> jobs.Done:
        return jobs.Done(int(self.row["id"]), int(self.row["attempt"]), self.encoded)


class Refill(Protocol):
    """What a flush needs to claim the slots it frees (the worker)."""

    queues: list[str] | None

    def reserve(self) -> int:
        """How many attempts to claim now (reserved until :meth:`admit`)."""

    def admit(self, rows: list[Row], reserved: int, keep: bool, wake: bool = True) -> Any:
        """Start the attempts ``rows`` claimed for ``reserved`` slots; with
        ``keep``, one of them is returned for the calling thread to run."""

    def handoff(self, attempt: Any) -> None:
        """Run an admitted attempt in another task thread."""


class Completions:
    """The batch half of :class:`~awa_django.outcomes.Outcomes`."""

    if TYPE_CHECKING:
        backend: AwaBackend
        worker_id: str
        completed: int
        _lock: threading.Lock
        _idle: threading.Condition
        _waiting: list[Success]
        _in_flight: list[Success]

        def report(self, what: str, label: Any, op: Callable[[Any, bool], T]) -> T: ...
        def fail(self, row: Row, exc: BaseException, result: TaskResult[Any, Any] | None) -> str | None: ...
        def send_finished(self, result: TaskResult[Any, Any]) -> None: ...

    def store_done(self, done: Sequence[jobs.Done]) -> dict[Key, Row]:
        """Complete ``done`` in one statement; the stored rows by (id, attempt)."""
        return self.store_and_claim(done, None, None)[0]

    def store_and_claim(
        self, done: Sequence[jobs.Done], queues: list[str] | None, limit: int | None
    ) -> tuple[dict[Key, Row], list[Row]]:
        """Complete ``done`` and claim up to ``limit`` jobs in one statement;
        (the stored rows by (id, attempt), the claimed rows). ``limit`` None:
        complete only (``awa_complete_many_v1``).

        A retry (the connection broke) completes only: whatever the lost try
        claimed, if it committed, is rescued once its heartbeat is stale, like
        a claim whose connection breaks.
        """

        def op(cursor: Any, retried: bool) -> tuple[list[Row], list[Row]]:
            claimed: list[Row] = []
            if limit is None:
                rows = jobs.complete(cursor, done)
            else:
                claim = 0 if retried else limit
                rows, claimed = jobs.complete_and_claim(cursor, done, queues, claim, self.worker_id)
            if retried:  # what our lost try committed is completed already
                got = {int(r["id"]) for r in rows}
                rows += jobs.completed(cursor, [d for d in done if d.id not in got])
            return rows, claimed

        label = ",".join(str(d.id) for d in done)
        rows, claimed = self.report("complete", label, op)
        return {(int(r["id"]), int(r["attempt"])): r for r in rows}, claimed

    def complete(self, success: Success) -> str | None:
        """Complete one attempt now; its new state ('completed', or 'retryable'/'failed'
        when PostgreSQL refuses its value), None when stale."""
        return self._complete_batch([success])[success.key]

    def add(self, success: Success, release: Callable[[], None] | None = None) -> None:
        """Queue ``success`` for the next batch; :meth:`flush` stores it.

        ``release`` (giving its slot back) runs under the same lock: a batch
        that takes ``success`` reserves after its slot is free.
        """
        with self._lock:
            self._waiting.append(success)
            if release is not None:
                release()

    def flush(self, refill: Refill | None = None) -> Any:
        """Store the waiting completions, batch after batch, unless a batch is in
        flight already (its thread takes the waiting ones next).

        With ``refill``, each batch also claims the free slots; the attempt
        kept for this thread is returned (None: none, or no flush here).
        """
        with self._lock:
            if self._in_flight or not self._waiting:
                return None
            self._in_flight, self._waiting = self._waiting, []
        kept: Any = None
        while True:
            batch = self._in_flight
            reserved = refill.reserve() if refill is not None else 0
            limit = None if refill is None else reserved
            stored, claimed = self._store_batch(batch, refill.queues if refill else None, limit)
            if refill is not None:
                with self._lock:
                    last = not self._waiting
                kept = refill.admit(claimed, reserved, keep=last)
            self._finish_batch(batch, stored)
            with self._lock:
                self._in_flight, self._waiting = self._waiting, []
                if not self._in_flight:
                    self._idle.notify_all()
                    return kept
            if kept is not None and refill is not None:
                refill.handoff(kept)  # more to store first: another thread runs it
                kept = None

    def _store_batch(
        self, batch: Sequence[Success], queues: list[str] | None, limit: int | None
    ) -> tuple[dict[Key, Row] | bool, list[Row]]:
        """Store ``batch`` (claiming up to ``limit``): (the stored rows, the claimed rows).

        Instead of the rows: True when each attempt must be stored alone (a
        value PostgreSQL refused), False when nothing could be stored (logged).
        """
        done = [s.done for s in batch]
        try:
            return (self.store_done(done), []) if limit is None else self.store_and_claim(done, queues, limit)
        except DataError:  # a value jsonb refuses that we did not foresee: find it
            return True, []
        except ReportAbandoned:
            return False, []  # logged; rescue decides these attempts' fate
        except Exception:  # never lose the batch on a bug in reporting
            logger.exception("unexpected error completing a batch", extra={"event": "worker.error"})
            return False, []

    def _finish_batch(self, batch: Sequence[Success], stored: dict[Key, Row] | bool) -> None:
        """Count, log and announce (``task_finished``) the attempts of a stored batch."""
        if stored is True:
            for success in batch:
                try:
                    self._complete_batch([success])
                except ReportAbandoned:
                    pass  # logged; rescue decides this attempt's fate
                except Exception:  # never lose the rest of the batch on a bug in reporting
                    logger.exception(
                        "unexpected error completing an attempt", extra={"event": "worker.error"}
                    )
            return
        if stored is False:
            return
        for success in batch:
            row = stored.get(success.key)
            if row is None:
                logger.warning(
                    "job %s attempt %s finished after it was rescued; ignored",
                    *success.key,
                    extra={"event": "job.stale_report", "job_id": success.key[0]},
                )
                continue
            self._completed(success, row)

    def unreported(self) -> list[Key]:
        """Attempts finished but not yet completed (they still need heartbeats)."""
        with self._lock:
            return [s.key for s in self._waiting + self._in_flight]

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no completion is waiting or in flight; False on timeout."""
        with self._lock:
            return self._idle.wait_for(lambda: not self._waiting and not self._in_flight, timeout)

    def _complete_batch(self, batch: Sequence[Success]) -> dict[Key, str | None]:
        """Complete ``batch``; each attempt's new state (None: stale, e.g. rescued meanwhile)."""
        try:
            stored = self.store_done([s.done for s in batch])
        except DataError as exc:  # a value jsonb refuses that we did not foresee: find it
            if len(batch) > 1:
                return {k: v for success in batch for k, v in self._complete_batch([success]).items()}
            state = self.fail(
                batch[0].row, UnstorableResult(f"PostgreSQL refused the return value: {exc}"), batch[0].result
            )
            return {batch[0].key: state}
        self._finish_batch(batch, stored)
        return {success.key: "completed" if success.key in stored else None for success in batch}

    def _completed(self, success: Success, stored: Row) -> None:
        with self._lock:
            self.completed += 1
        job_id = success.key[0]
        metrics.observe_finished(success.row, "completed")
        if logger.isEnabledFor(logging.INFO):
            logger.info(
                "job %s (%s) completed",
                job_id,
                success.row["kind"],
                extra={"event": "job.completed", "job_id": job_id},
            )
        # The result task_started was sent with, finished (as Django's
        # ImmediateBackend does): the completion changed no other column.
        finished = success.result
        object.__setattr__(finished, "status", TaskResultStatus.SUCCESSFUL)
        object.__setattr__(finished, "finished_at", stored["finished_at"])
        object.__setattr__(finished, "_return_value", success.value)
        self.send_finished(finished)
