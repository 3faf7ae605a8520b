"""What every operator action shares: who did it, and what it did.

Schedule actions (:mod:`.schedules`), lifecycle verbs (:mod:`.owners`)
and queue pause/resume (:mod:`.queues`) validate their ``actor`` with
:func:`require_actor` and describe their outcome with :class:`ActionResult`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..exceptions import ScheduleNotFound
from ..validation import name_problem, text_problem

# paused_by, retired_by and triggered_by are shown in listings: like a
# schedule name, at most 200 characters that print as themselves.
MAX_ACTOR_LENGTH = 200


def require_actor(actor: Any) -> str:
    """The operator recorded for audit, stripped; blank or non-text is refused.

    So is an actor no column can store (NUL, lone surrogate) or that would not
    print as itself in a listing (control or format characters), and one
    longer than :data:`MAX_ACTOR_LENGTH`: refused before any query, so the
    caller's transaction stays usable.
    """
    if not isinstance(actor, str) or not actor.strip():
        raise ValueError("an operator action needs a non-blank actor")
    stripped: str = actor.strip()
    problem = name_problem(stripped)
    if problem is None and len(stripped) > MAX_ACTOR_LENGTH:
        problem = f"is {len(stripped)} characters long; the limit is {MAX_ACTOR_LENGTH}"
    if problem:
        raise ValueError(f"actor {stripped!r:.80} {problem}")
    return stripped


def require_schedule_name(name: Any, action: str = "an operator action") -> str:
    """``name`` as a schedule name to look up, before any query.

    Anything but a non-empty string is a caller's mistake (:class:`ValueError`);
    a string no row can hold (NUL, lone surrogate) names no schedule
    (:class:`~awa_django.exceptions.ScheduleNotFound`), instead of a database
    error that would abort the caller's transaction. Control characters are
    allowed: a row written by raw SQL may have them, and must stay reachable.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"{action} needs a schedule name (a non-empty string), got {name!r:.80}")
    if text_problem(name):
        raise ScheduleNotFound(name)
    return name


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
