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
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Sequence
from typing import Any

logger = logging.getLogger(__name__)

# Batches waiting to be announced before submit() blocks.
QUEUE_BATCHES = 8

Jobs = Sequence[dict[str, Any]]


class Announcer:
    """Run ``handle`` on each submitted batch, in order, on a daemon thread."""

    def __init__(self, handle: Callable[[Jobs], None], name: str = "awa-announcer") -> None:
        self._handle = handle
        self._queue: queue.Queue[Jobs | None] = queue.Queue(maxsize=QUEUE_BATCHES)
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, jobs: Jobs) -> None:
        """Queue a committed batch (blocks while ``QUEUE_BATCHES`` are waiting)."""
        if jobs:
            self._queue.put(jobs)

    def drain(self) -> None:
        """Wait until every batch submitted so far has been handled."""
        self._queue.join()

    def close(self, timeout: float = 10.0) -> None:
        """Handle what is queued, then stop the thread."""
        self._queue.put(None)
        self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            jobs = self._queue.get()
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
                self._queue.task_done()
