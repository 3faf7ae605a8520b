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
from ..schedules.validation import validate_label
from .common import ActionResult, require_actor, require_schedule_name

logger = logging.getLogger("awa_django.ownership")

# name, owner_id, retired: a flag computed in SQL, so a retired_at no Python
# datetime holds ('infinity' written by raw SQL) cannot fail a verb.
Row = tuple[str, str | None, bool]


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
        cursor.execute(
            "SELECT name, owner_id, retired_at IS NOT NULL FROM awa_cron_jobs WHERE name = %s ORDER BY name"
            + (" FOR UPDATE" if lock else ""),
            [name],
        )
        rows: list[Row] = cursor.fetchall()
        if not rows:
            raise ScheduleNotFound(name)
        return rows

    return select


def _of_owner(owner_id: str, *, retired: bool) -> Callable[[Any, bool], list[Row]]:
    def select(cursor: Any, lock: bool) -> list[Row]:
        cursor.execute(
            "SELECT name, owner_id, retired_at IS NOT NULL FROM awa_cron_jobs WHERE owner_id = %s AND retired_at "
            + ("IS NOT NULL" if retired else "IS NULL")
            + " ORDER BY name"
            + (" FOR UPDATE" if lock else ""),
            [owner_id],
        )
        rows: list[Row] = cursor.fetchall()
        return rows

    return select


def _all(rows: list[Row]) -> list[str]:
    return [r[0] for r in rows]


def _active(rows: list[Row]) -> list[str]:
    return [r[0] for r in rows if not r[2]]


def _retired(rows: list[Row]) -> list[str]:
    return [r[0] for r in rows if r[2]]


def _retire_rows(actor: str) -> Callable[[Any, list[str]], None]:
    def write(cursor: Any, names: list[str]) -> None:
        cursor.execute(
            "UPDATE awa_cron_jobs SET retired_at = clock_timestamp(), retired_by = %s, "
            "retired_revision = 'operator', updated_at = clock_timestamp() "
            "WHERE name = ANY(%s) AND retired_at IS NULL",
            [actor, names],
        )

    return write


def _restore_rows(cursor: Any, names: list[str]) -> None:
    # The fire clock restarts at database now: retired time is never replayed.
    cursor.execute(
        "UPDATE awa_cron_jobs SET retired_at = NULL, retired_by = NULL, retired_revision = NULL, "
        "last_enqueued_at = clock_timestamp(), updated_at = clock_timestamp() "
        "WHERE name = ANY(%s) AND retired_at IS NOT NULL",
        [names],
    )


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
        if rows[0][1] != expected_owner:
            raise OperationRefused(
                f"cron ownership conflict on {name!r}: expected {expected_owner or '<unowned>'}, "
                f"found {rows[0][1] or '<unowned>'}"
            )

    def write(cursor: Any, names: list[str]) -> None:
        cursor.execute(
            "INSERT INTO awa_cron_owners (owner_id) VALUES (%s) ON CONFLICT DO NOTHING", [owner_id]
        )
        cursor.execute(
            "UPDATE awa_cron_jobs SET owner_id = %s, updated_at = clock_timestamp() WHERE name = ANY(%s)",
            [owner_id, names],
        )

    def changing(rows: list[Row]) -> list[str]:
        # Adopting a row its owner already holds changes nothing: no write,
        # and no owner's agreement clock restarts.
        return [r[0] for r in rows if r[1] != owner_id]

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
        cursor.execute("SELECT awa_cron_protocol_lock()")
        # Lock order: protocol lock, owner rows, schedule rows by name. Under
        # the protocol lock no other writer can change ownership, so an
        # unlocked read tells which owner rows to lock first.
        owners_involved = {r[1] for r in verb.select(cursor, False) if r[1]}
        if verb.new_owner is not None:
            owners_involved.add(verb.new_owner)
        cursor.execute(
            "SELECT owner_id FROM awa_cron_owners WHERE owner_id = ANY(%s) ORDER BY owner_id FOR UPDATE",
            [sorted(owners_involved)],
        )
        rows = verb.select(cursor, True)
        verb.check(rows)
        names = verb.affected(rows)
        # Only owners of rows that change are affected: a no-op (retire of a
        # retired row, restore of an active one) keeps every owner's
        # certificate and agreement clock, or repeating it would restart grace.
        changing = set(names)
        involved = {r[1] for r in rows if r[1] is not None and r[0] in changing}
        if verb.new_owner is not None and names:
            involved.add(verb.new_owner)
        if names:
            with sessions.operator_context(cursor):
                verb.write(cursor, names)
        if involved:
            cursor.execute(
                "UPDATE awa_cron_owners SET synced_hash = NULL, agreed_hash = NULL, agreed_since = NULL, "
                "evidence_until = NULL WHERE owner_id = ANY(%s)",
                [sorted(involved)],
            )
    logger.info(
        "%s by %s: %s",
        verb.action,
        actor,
        ", ".join(names) or "(nothing)",
        extra={"event": f"cron.{verb.action}", "actor": actor, "schedules": names},
    )
    return ActionResult(verb.action, names, applied=True, name=target)
