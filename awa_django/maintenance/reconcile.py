"""Reconciling every owner: retiring what deployments no longer declare."""

from __future__ import annotations

from ..reconciliation.persistence import reconcile_all
from .service import EverySync

__all__ = ["Reconciliation"]


class Reconciliation(EverySync):
    """Reconciles every owner; one owner's error does not stop the others.

    ``reported`` (owner -> reason) is the leader's memory of unreadable
    manifests already logged, so each is logged as an error once.
    """

    name = "reconciliation"

    def __init__(self, reported: dict[str, str]) -> None:
        self.reported = reported

    def run(self, using: str) -> None:
        reconcile_all(using=using, reported=self.reported)
