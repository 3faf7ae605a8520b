"""What every operator action shares: who did it, and what it did.

Schedule actions (:mod:`.operations`), lifecycle verbs (:mod:`.ownership`)
and queue pause/resume (:mod:`.queues`) validate their ``actor`` with
:func:`require_actor` and describe their outcome with :class:`ActionResult`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


def require_actor(actor: Any) -> str:
    """The operator recorded for audit, stripped; blank or non-text is refused."""
    if not isinstance(actor, str) or not actor.strip():
        raise ValueError("an operator action needs a non-blank actor")
    return actor.strip()


@dataclass(frozen=True)
class ActionResult:
    """The outcome of one operator action.

    ``schedules`` are the names the action changed (``applied``) or would
    change (a dry run, ``applied=False``): schedules, or for a queue action
    the queue; ``name`` is the target the operator gave (a schedule, an owner
    or a queue), and ``detail`` says why nothing changed when nothing did.
    A result is true when it changed something, so ``if pause_queue(...)``
    reads as it did when queue actions returned a bool.
    """

    action: str
    schedules: list[str]
    applied: bool = True
    name: str = field(default="", compare=False)
    detail: str = field(default="", compare=False)

    @property
    def changed(self) -> bool:
        """True when the action was applied and changed at least one row."""
        return self.applied and bool(self.schedules)

    def __bool__(self) -> bool:
        return self.changed

    def as_json(self) -> dict[str, Any]:
        """The ``--json`` shape of the lifecycle verbs (``awa cron retire ...``)."""
        return {"action": self.action, "schedules": self.schedules, "applied": self.applied}
