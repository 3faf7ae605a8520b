"""The leader's own maintenance services: its sync and the re-evaluation of parked rows.

They run with the other services of :mod:`awa_django.maintenance` (same
protocol, same loop), but belong to the leader: the sync upserts what this
process declares, and parked rows are the evaluator's.
"""

from __future__ import annotations

from typing import Protocol

from ..maintenance.service import EverySync
from .evaluator import reevaluate_parked

__all__ = ["ParkedReevaluation", "ScheduleSync"]


class _Syncs(Protocol):
    def sync(self) -> None: ...


class ScheduleSync(EverySync):
    """Upserts the leader's declared schedules (additive mode): its ``sync()``,
    looked up at each run."""

    name = "sync"

    def __init__(self, leader: _Syncs) -> None:
        self.leader = leader

    def run(self, using: str) -> None:
        self.leader.sync()


class ParkedReevaluation(EverySync):
    """Evaluates again the rows parked by a pass that could not plan them."""

    name = "re-evaluation of parked rows"

    def run(self, using: str) -> None:
        reevaluate_parked(using=using)
