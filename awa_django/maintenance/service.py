"""What a maintenance service is, and the loop that runs a list of them.

A service has a ``name`` (what the logs call it), an ``interval`` (seconds
between the end of one run and the next) and ``run(using)``. The leader's
maintenance thread hands its services to :func:`run_services` at each round
and :class:`Rounds` says which are due: a service that fails is logged and
the others still run.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Sequence
from typing import Protocol

from ..conf import conf
from ..db import sessions

# The leader runs the services: they log as the leader does.
logger = logging.getLogger("awa_django.leader")

__all__ = ["EverySync", "MaintenanceService", "Rounds", "run_services"]


class MaintenanceService(Protocol):
    """One piece of the leader's periodic work besides firing."""

    @property
    def name(self) -> str:
        """What the logs call it (``"pruning"``)."""

    @property
    def interval(self) -> float:
        """Seconds from the end of one run to the next."""

    def run(self, using: str) -> None:
        """One run on the database alias ``using``; database errors propagate."""


class EverySync:
    """A service that runs at election and every ``AWA_SYNC_INTERVAL`` (read on access)."""

    @property
    def interval(self) -> float:
        return float(conf.SYNC_INTERVAL)


def run_services(
    services: Sequence[MaintenanceService],
    using: str,
    stop: threading.Event | None = None,
    log: logging.Logger = logger,
) -> None:
    """Run each of ``services`` once, in order, timing each.

    Each runs even when an earlier one failed (a sync error must not stop
    pruning): its database error is logged on ``log`` and the first one is
    re-raised at the end. Once ``stop`` is set no further service starts, and
    errors (cancelled statements) are expected. Inside a caller's transaction
    the error propagates at once (it is aborted anyway); otherwise the next
    service gets a fresh connection.
    """
    first_error: BaseException | None = None
    for service in services:
        if stop is not None and stop.is_set():
            break
        started = time.monotonic()
        what = f"maintenance step {service.name}"
        with sessions.reconnect_on_error(using, what, log, "cron.error", stopping=stop) as guard:
            service.run(using)
        seconds = time.monotonic() - started
        logger.debug(
            "%s took %.3f s",
            what,
            seconds,
            extra={"event": "maintenance.ran", "service": service.name, "seconds": round(seconds, 3)},
        )
        first_error = first_error or guard.error
    if first_error is not None:
        raise first_error


class Rounds:
    """When each service is next due: all at first, then ``interval`` seconds
    after the end of the round that ran it."""

    def __init__(self, services: Sequence[MaintenanceService]) -> None:
        self.services = list(services)
        self._next: dict[int, float] = {}  # by position in ``services``

    def due(self, now: float) -> list[MaintenanceService]:
        """The services due at ``now`` (``time.monotonic()``), in order."""
        return [s for n, s in enumerate(self.services) if self._next.get(n, -math.inf) <= now]

    def ran(self, services: Sequence[MaintenanceService], finished: float) -> None:
        """``services`` ran in a round that ended at ``finished``."""
        for n, service in enumerate(self.services):
            if any(service is s for s in services):
                self._next[n] = finished + service.interval

    def wait(self, now: float) -> float:
        """Seconds from ``now`` until the next service is due (0 when one is)."""
        nexts = [self._next.get(n, -math.inf) for n in range(len(self.services))]
        return max(0.0, min(nexts, default=now + float(conf.SYNC_INTERVAL)) - now)
