"""Trimming the slot history: the newest outcomes of each schedule are kept."""

from __future__ import annotations

from ..store import maintenance as store
from .service import EverySync

__all__ = ["SlotHistoryTrim"]


class SlotHistoryTrim(EverySync):
    """Keeps the newest ``HISTORY_KEPT`` outcomes per schedule, forgets removed schedules'."""

    name = "slot history trim"

    def run(self, using: str) -> None:
        store.trim_slot_history(store.HISTORY_KEPT, using=using)
