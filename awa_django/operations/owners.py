"""Operator lifecycle verbs on owned schedules: adopt, retire, restore.

One function per verb: :func:`adopt`, :func:`retire`, :func:`restore`,
:func:`retire_owner`, :func:`restore_owner`. Every verb is a dry run unless
``apply=True``. A dry run reads one REPEATABLE READ READ ONLY snapshot and
takes no lock. Apply takes the protocol lock, then locks only the selected
rows ``ORDER BY name FOR UPDATE`` (lock order: protocol lock, owner rows,
schedule rows by name), writes under the operator context, and invalidates
the agreement clock and ``synced_hash`` of the owners whose rows change only
(both sides of a transfer); unrelated owners, and every owner of a verb that
changes no row, keep their clocks.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import connections, transaction

from ..db import sessions
from ..db.guards import bound_transaction_waits
from ..exceptions import OperationRefused, ScheduleNotFound
from ..store import fleet as store
from ..validation import validate_label
from .common import ActionResult, require_actor, require_schedule_name

logger = logging.getLogger("awa_django.ownership")

# A schedule's name, owner and tombstone (the flag computed in SQL, so a
# retired_at no Python datetime holds cannot fail a verb).
Row = store.ScheduleOwnership


@dataclass(frozen=True)
class _Verb:
    """How one verb selects, checks and writes its rows."""

    action: str
    select: Callable[[Any, bool], list[Row]]  # (cursor, lock) -> rows
    affected: Callable[[list[Row]], list[str]]
    write: Callable[[Any, list[str]], None]  # (cursor, names), in the operator context
    check: Callable[[list[Row]], None] = lambda rows: None
    new_owner: str | None = None  # adopt: the owner that gains the rows


def _by_name(name: str) -> Callable[[Any, bool], list[Row]]:
    def select(cursor: Any, lock: bool) -> list[Row]:
        rows = store.schedule_ownership(cursor, name, lock=lock)
        if not rows:
            raise ScheduleNotFound(name)
        return rows

    return select


def _of_owner(owner_id: str, *, retired: bool) -> Callable[[Any, bool], list[Row]]:
    def select(cursor: Any, lock: bool) -> list[Row]:
        return store.owner_schedules(cursor, owner_id, retired=retired, lock=lock)

    return select


def _all(rows: list[Row]) -> list[str]:
    return [r.name for r in rows]


def _active(rows: list[Row]) -> list[str]:
    return [r.name for r in rows if not r.retired]


def _retired(rows: list[Row]) -> list[str]:
    return [r.name for r in rows if r.retired]


def _retire_rows(actor: str) -> Callable[[Any, list[str]], None]:
    def write(cursor: Any, names: list[str]) -> None:
        store.retire_schedules_by_operator(cursor, names, actor)

    return write


def _restore_rows(cursor: Any, names: list[str]) -> None:
    # The fire clock restarts at database now: retired time is never replayed.
    store.restore_schedules(cursor, names)


def adopt(
    name: str,
    owner_id: str,
    *,
    actor: str,
    expected_owner: str | None = None,
    apply: bool = False,
    using: str = "default",
) -> ActionResult:
    """Give ``name`` to ``owner_id`` if its current owner is ``expected_owner`` (None = unowned)."""
    actor = require_actor(actor)
    validate_label(owner_id, "owner")
    name = require_schedule_name(name, "adopt")

    def check(rows: list[Row]) -> None:
        if rows[0].owner_id != expected_owner:
            raise OperationRefused(
                f"cron ownership conflict on {name!r}: expected {expected_owner or '<unowned>'}, "
                f"found {rows[0].owner_id or '<unowned>'}"
            )

    def write(cursor: Any, names: list[str]) -> None:
        store.give_schedules_to_owner(cursor, names, owner_id)

    def changing(rows: list[Row]) -> list[str]:
        # Adopting a row its owner already holds changes nothing: no write,
        # and no owner's agreement clock restarts.
        return [r.name for r in rows if r.owner_id != owner_id]

    verb = _Verb("adopt", _by_name(name), changing, write, check, new_owner=owner_id)
    return _run(verb, actor, apply, name, using)


def retire(name: str, *, actor: str, apply: bool = False, using: str = "default") -> ActionResult:
    """Tombstone ``name``: it never fires again until restored."""
    actor = require_actor(actor)
    name = require_schedule_name(name, "retire")
    return _run(_Verb("retire", _by_name(name), _active, _retire_rows(actor)), actor, apply, name, using)


def restore(name: str, *, actor: str, apply: bool = False, using: str = "default") -> ActionResult:
    """Clear the tombstone of ``name``; ``last_enqueued_at`` becomes database now; pause is kept."""
    actor = require_actor(actor)
    name = require_schedule_name(name, "restore")
    return _run(_Verb("restore", _by_name(name), _retired, _restore_rows), actor, apply, name, using)


def retire_owner(owner_id: str, *, actor: str, apply: bool = False, using: str = "default") -> ActionResult:
    """Retire every active schedule of ``owner_id``; works without any live declaration."""
    actor = require_actor(actor)
    validate_label(owner_id, "owner")
    verb = _Verb("retire_owner", _of_owner(owner_id, retired=False), _all, _retire_rows(actor))
    return _run(verb, actor, apply, owner_id, using)


def restore_owner(owner_id: str, *, actor: str, apply: bool = False, using: str = "default") -> ActionResult:
    """Restore every retired schedule of ``owner_id`` from now on."""
    actor = require_actor(actor)
    validate_label(owner_id, "owner")
    verb = _Verb("restore_owner", _of_owner(owner_id, retired=True), _all, _restore_rows)
    return _run(verb, actor, apply, owner_id, using)


def _run(verb: _Verb, actor: str, apply: bool, target: str, using: str) -> ActionResult:
    if not apply:
        with sessions.read_only_snapshot(using), connections[using].cursor() as cursor:
            rows = verb.select(cursor, False)
            verb.check(rows)
            return ActionResult(verb.action, verb.affected(rows), applied=False, name=target)
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        bound_transaction_waits(cursor)  # a frozen peer may hold the lock
        store.take_protocol_lock(cursor)
        # Lock order: protocol lock, owner rows, schedule rows by name. Under
        # the protocol lock no other writer can change ownership, so an
        # unlocked read tells which owner rows to lock first.
        owners_involved = {r.owner_id for r in verb.select(cursor, False) if r.owner_id}
        if verb.new_owner is not None:
            owners_involved.add(verb.new_owner)
        store.lock_owners(cursor, sorted(owners_involved))
        rows = verb.select(cursor, True)
        verb.check(rows)
        names = verb.affected(rows)
        # Only owners of rows that change are affected: a no-op (retire of a
        # retired row, restore of an active one) keeps every owner's
        # certificate and agreement clock, or repeating it would restart grace.
        changing = set(names)
        involved = {r.owner_id for r in rows if r.owner_id is not None and r.name in changing}
        if verb.new_owner is not None and names:
            involved.add(verb.new_owner)
        if names:
            with sessions.operator_context(cursor):
                verb.write(cursor, names)
        if involved:
            store.reset_owner_certificates(cursor, sorted(involved))
    logger.info(
        "%s by %s: %s",
        verb.action,
        actor,
        ", ".join(names) or "(nothing)",
        extra={"event": f"cron.{verb.action}", "actor": actor, "schedules": names},
    )
    return ActionResult(verb.action, names, applied=True, name=target)
