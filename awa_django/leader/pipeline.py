"""Fire statements on a second connection, while the next batch is read and planned.

A pass over a large due set alternates two kinds of work: reading and
planning a batch (Python, on the leader's thread) and running its fire
statement (mostly the database). Done in turn, each waits for the other. A
:class:`FirePipeline` runs the fire statements on a thread of its own, with
its own connection, one batch at a time and in order, while the leader's
thread reads and plans the next batch (the next read only touches rows
after the batches already handed over: the keyset of the query ``due_schedules_batch``).

Every batch is still its own statement, committed on its own (autocommit),
with the same compare-and-swap; at most one batch waits while another is
fired, so memory stays bounded. An error in the fire thread (the database
went away) is raised on the leader's thread by the next :meth:`submit` or by
:meth:`finish`, so the pass fails as it would have without the pipeline.

While the leader leads it keeps connections for its pipelines
(:func:`kept_connection`, one per lane; a pass's pipeline uses the first, a
prepared slot's fires are dealt out over several, see :mod:`.prefire`): a
connection opened for every slot with a large due set (every second under
1,000 every-second schedules) cost the server a new session each time. A failed fire closes it; the next pipeline
opens a new one.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper

from ..store.schedule_rows import PlannedFire

Plan = list[PlannedFire]
Fire = Callable[[Any, Plan], list[dict[str, Any]]]
OnFired = Callable[[list[dict[str, Any]]], None]


# The connections kept by the thread that leads (see kept_connection): by
# alias, one per lane.
_kept = threading.local()


@contextmanager
def kept_connection(using: str, lanes: int = 1) -> Iterator[None]:
    """While inside, the pipelines this thread starts keep ``lanes`` connections to ``using``.

    A pipeline on lane ``k`` uses the ``k``-th connection; each is opened by
    the first pipeline on its lane, used by one pipeline at a time (each on
    its own thread, hence the thread sharing) and closed on exit.
    """
    wrappers = [connections.create_connection(using) for _ in range(max(1, lanes))]
    for wrapper in wrappers:
        wrapper.inc_thread_sharing()
    kept = getattr(_kept, "wrappers", {})
    _kept.wrappers = {**kept, using: wrappers}
    try:
        yield
    finally:
        _kept.wrappers = kept
        for wrapper in wrappers:
            wrapper.close()
            wrapper.dec_thread_sharing()


def kept_lanes(using: str) -> int:
    """How many connections this thread keeps for ``using`` (0 outside kept_connection)."""
    return len(getattr(_kept, "wrappers", {}).get(using, ()))


class FirePipeline:
    """Run ``fire(cursor, plan)`` for each submitted plan, in order, on its own thread."""

    def __init__(self, using: str, fire: Fire, on_fired: OnFired, lane: int = 0) -> None:
        self.using = using
        self._fire = fire
        self._on_fired = on_fired
        self._queue: queue.Queue[Plan | None] = queue.Queue(maxsize=1)
        self._error: BaseException | None = None
        self.fired = 0
        lanes = getattr(_kept, "wrappers", {}).get(using, [])
        self._kept: BaseDatabaseWrapper | None = lanes[lane] if lane < len(lanes) else None
        self._thread = threading.Thread(target=self._run, name="awa-fire", daemon=True)
        self._thread.start()

    def submit(self, plan: Plan) -> None:
        """Hand over a batch's plan (blocks while one batch already waits)."""
        self._raise_error()
        self._queue.put(plan)

    def finish(self) -> int:
        """Wait for every submitted batch; return how many jobs they fired."""
        self._queue.put(None)
        self._thread.join()
        self._raise_error()
        return self.fired

    def _raise_error(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def _run(self) -> None:
        connection = self._kept if self._kept is not None else connections[self.using]
        try:
            # A kept connection may have died while idle (server restart,
            # idle_session_timeout): ping it here, before the first batch
            # arrives, rather than fail the batch.
            if connection is self._kept and connection.connection is not None and not connection.is_usable():
                connection.close()
            with connection.cursor() as cursor:
                while (plan := self._queue.get()) is not None:
                    jobs = self._fire(cursor, plan)
                    self.fired += len(jobs)
                    self._on_fired(jobs)
        except BaseException as exc:  # handed to the leader's thread
            self._error = exc
            connection.close()  # maybe broken: the next pipeline connects anew
            while self._queue.get() is not None:  # let submit()/finish() return
                pass
        finally:
            connections[self.using].close()  # this thread's own connection, if it opened one


def finish_all(pipelines: list[FirePipeline]) -> None:
    """Finish every pipeline, even after one has raised (the others' threads
    would otherwise wait for their end marker for good); then raise the first
    error."""
    first: BaseException | None = None
    for each in pipelines:
        try:
            each.finish()
        except BaseException as exc:  # raised below, once every thread has ended
            first = first or exc
    if first is not None:
        raise first
