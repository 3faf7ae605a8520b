"""Cleaning up runtime snapshots of processes gone for a day."""

from __future__ import annotations

from ..store import fleet
from .service import EverySync

__all__ = ["SnapshotCleanup"]


class SnapshotCleanup(EverySync):
    """Deletes the snapshots (and their declarations) not seen for a day."""

    name = "snapshot cleanup"

    def run(self, using: str) -> None:
        fleet.delete_stale_snapshots(using=using)
