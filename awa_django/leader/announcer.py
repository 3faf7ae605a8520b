"""Announcing committed fires on a thread of their own, so the next batch never waits.

After a fire statement commits, each of its jobs is announced
(``task_enqueued``, which builds a task result per job) and counted in the
metrics: tens of microseconds a job, as much as planning and firing it. The
leader hands each committed batch to an :class:`Announcer`, which does that
work in order on its own thread while the leader's thread reads, plans and
fires the next batch (mostly waiting on the database, the GIL released).
The queue is bounded, so a slow announcer slows the leader down instead of
holding every job of a large burst; :meth:`Announcer.drain` waits until
everything handed over so far is announced (the leader calls it at the end
of each pass, so a pass is announced when it returns).

A ``task_enqueued`` receiver is user code and may raise or hang.
:meth:`Announcer.send` calls the receivers one by one: one that raises is
logged by name and the others still run. Once one batch has been in hand for
``stuck_after`` seconds the announcer counts as stuck and says which receiver
it is in: ``drain`` stops waiting for it, and batches that find the queue full
are dropped with an error (their jobs are committed; only the signal and the
metrics miss them), so the leader goes on firing. Every wait here is bounded.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from asgiref.sync import async_to_sync
from django.dispatch import Signal

logger = logging.getLogger("awa_django.announcer")

# Batches waiting to be announced before submit() blocks.
QUEUE_BATCHES = 8
# Seconds one batch may be in hand before the announcer counts as stuck.
STUCK_AFTER = 10.0
# How often a blocked submit()/drain() looks again whether the announcer is stuck.
_RECHECK = 0.25

Jobs = Sequence[dict[str, Any]]

# task_enqueued receivers known never to read a task result's arguments:
# Django's own log line (and the django-tasks backport's).
ARGUMENT_BLIND_RECEIVERS = frozenset(
    {"django.tasks.signals.log_task_enqueued", "django_tasks.signals.log_task_enqueued"}
)


def receiver_name(receiver: Callable[..., Any]) -> str:
    """``module.qualname`` of a signal receiver (its repr for other callables)."""
    target = getattr(receiver, "__func__", receiver)
    qualname = getattr(target, "__qualname__", None)
    if qualname is None:
        return repr(receiver)
    return f"{getattr(target, '__module__', '?')}.{qualname}"


def reads_arguments(signal: Signal) -> bool:
    """Whether a receiver of ``signal`` (any sender) may read the arguments it is sent.

    Decoding a fired job's args for ``task_enqueued`` holds the GIL for the
    whole parse (a quarter of a second for a megabyte), which the firing
    thread then waits for: not worth it when only receivers that never look at
    them (:data:`ARGUMENT_BLIND_RECEIVERS`) listen."""
    for entry in list(signal.receivers):
        reference = entry[1]
        receiver = reference() if isinstance(reference, weakref.ReferenceType) else reference
        if receiver is not None and receiver_name(receiver) not in ARGUMENT_BLIND_RECEIVERS:
            return True
    return False


class Announcer:
    """Run ``handle`` on each submitted batch, in order, on a daemon thread."""

    def __init__(
        self, handle: Callable[[Jobs], None], name: str = "awa-announcer", stuck_after: float | None = None
    ) -> None:
        self._handle = handle
        self._stuck_after = STUCK_AFTER if stuck_after is None else stuck_after
        self._queue: queue.Queue[Jobs | None] = queue.Queue(maxsize=QUEUE_BATCHES)
        self._busy_since: float | None = None  # when the batch in hand was taken
        self.receiver: str | None = None  # the receiver send() is in, by name
        self._stuck_reported = False
        self.dropped = 0  # jobs never announced because the announcer was stuck
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, jobs: Jobs) -> None:
        """Queue a committed batch (blocks while ``QUEUE_BATCHES`` wait, unless stuck)."""
        if jobs and not self._put(jobs):
            self.dropped += len(jobs)
            logger.error(
                "dropped the announcement of %d committed fires: a task_enqueued receiver has "
                "not returned for over %.0f s (the jobs are enqueued; %d dropped so far)",
                len(jobs),
                self._stuck_after,
                self.dropped,
                extra={"event": "cron.announce_dropped"},
            )

    def send(self, signal: Signal, sender: Any, **named: Any) -> None:
        """Call each live receiver of ``signal`` in turn, naming the one in hand.

        For the handler, on the announcer's thread: a receiver that raises is
        logged by name (``cron.announce_failed``) and the next one still runs;
        one that hangs is named by the stuck report.
        """
        if not signal.receivers:
            return
        sync_receivers, async_receivers = signal._live_receivers(sender)
        receivers = [*sync_receivers, *(async_to_sync(r) for r in async_receivers)]
        for receiver, original in zip(receivers, [*sync_receivers, *async_receivers], strict=True):
            self.receiver = receiver_name(original)
            try:
                receiver(signal=signal, sender=sender, **named)
            except Exception as exc:  # one receiver must not stop the others, nor the leader
                logger.error(
                    "task_enqueued receiver %s raised: %s",
                    self.receiver,
                    exc,
                    extra={"event": "cron.announce_failed", "receiver": self.receiver},
                )
            finally:
                self.receiver = None

    def drain(self) -> bool:
        """Wait until every batch submitted so far is handled; False if stuck instead."""
        done = self._queue.all_tasks_done
        with done:
            while self._queue.unfinished_tasks:
                if self.stuck():
                    self._report_stuck()
                    return False
                done.wait(_RECHECK)
        return True

    def close(self, timeout: float = 10.0) -> None:
        """Handle what is queued, then stop the thread (a stuck thread is left behind
        at once: a stopping leader does not wait on a hung receiver)."""
        if not self._put(None):
            return
        deadline = time.monotonic() + timeout
        while self._thread.is_alive() and time.monotonic() < deadline:
            if self.stuck():
                self._report_stuck()
                return
            self._thread.join(min(_RECHECK, max(0.0, deadline - time.monotonic())))

    def stuck(self) -> bool:
        """True while one batch has been in hand for over ``stuck_after`` seconds."""
        since = self._busy_since
        return since is not None and time.monotonic() - since > self._stuck_after

    def _put(self, item: Jobs | None) -> bool:
        while True:
            if self.stuck():
                # No wait for room that a stuck thread will not make.
                try:
                    self._queue.put_nowait(item)
                    return True
                except queue.Full:
                    self._report_stuck()
                    return False
            try:
                self._queue.put(item, timeout=_RECHECK)
                return True
            except queue.Full:
                continue

    def _report_stuck(self) -> None:
        if not self._stuck_reported:
            self._stuck_reported = True
            receiver = self.receiver
            logger.error(
                "announcing is stuck: %s has not returned for over %.0f s; "
                "the leader goes on firing without waiting for it",
                f"the task_enqueued receiver {receiver}" if receiver else "the batch in hand (no receiver)",
                self._stuck_after,
                extra={"event": "cron.announce_stuck", "receiver": receiver},
            )

    def _run(self) -> None:
        while True:
            jobs = self._queue.get()
            self._busy_since = time.monotonic()
            try:
                if jobs is None:
                    return
                self._handle(jobs)
            except Exception as exc:  # announcing must never stop the leader
                logger.error(
                    "cannot announce %d fires: %s",
                    len(jobs or ()),
                    exc,
                    extra={"event": "cron.announce_failed"},
                )
            finally:
                self._busy_since = None
                self._stuck_reported = False
                self._queue.task_done()
