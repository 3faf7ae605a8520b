"""Operator lifecycle actions on owned schedules: adopt, retire, restore.

Every action is a dry run unless ``apply=True``. A dry run reads one
REPEATABLE READ READ ONLY snapshot and takes no lock. Apply takes the protocol
lock, then locks only the selected rows ``ORDER BY name FOR UPDATE`` (lock
order: protocol lock, owner rows, schedule rows by name), writes under the
operator context, and invalidates the agreement clock and ``synced_hash`` of
the owners involved only (both sides of a transfer); unrelated owners keep
their clocks.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django.db import connections, transaction

from . import db
from .connection_guards import bound_transaction_waits
from .exceptions import OperationRefused, ScheduleNotFound
from .reconciliation import validate_label

logger = logging.getLogger(__name__)

ACTIONS = ("adopt", "retire", "restore", "retire_owner", "restore_owner")


@dataclass(frozen=True)
class ActionPlan:
    """The schedules an action selects, and whether it was applied."""

    action: str
    schedules: list[str]
    applied: bool

    def as_json(self) -> dict[str, Any]:
        return {"action": self.action, "schedules": self.schedules, "applied": self.applied}


def _select(cursor: Any, action: str, name: str | None, owner_id: str | None, lock: bool) -> list[tuple[str, str | None, Any]]:
    suffix = " ORDER BY name" + (" FOR UPDATE" if lock else "")
    if action in ("adopt", "retire", "restore"):
        cursor.execute("SELECT name, owner_id, retired_at FROM awa_cron_jobs WHERE name = %s" + suffix, [name])
        rows: list[tuple[str, str | None, Any]] = cursor.fetchall()
        if not rows:
            raise ScheduleNotFound(str(name))
        return rows
    retired = "IS NULL" if action == "retire_owner" else "IS NOT NULL"
    cursor.execute(
        f"SELECT name, owner_id, retired_at FROM awa_cron_jobs WHERE owner_id = %s AND retired_at {retired}"
        + suffix,
        [owner_id],
    )
    selected: list[tuple[str, str | None, Any]] = cursor.fetchall()
    return selected


def operate(
    action: str,
    *,
    actor: str,
    apply: bool = False,
    name: str | None = None,
    owner_id: str | None = None,
    expected_owner: str | None = None,
    using: str = "default",
) -> ActionPlan:
    """Plan or apply one lifecycle action.

    - ``adopt`` (``name``, ``owner_id``, ``expected_owner``): give ``name`` to
      ``owner_id`` if its current owner is ``expected_owner`` (None = unowned).
    - ``retire`` (``name``): tombstone it; it never fires again until restored.
    - ``restore`` (``name``): clear the tombstone; ``last_enqueued_at`` becomes
      database now, so retired time is never replayed; pause is kept.
    - ``retire_owner`` / ``restore_owner`` (``owner_id``): the same for every
      schedule of an owner; works without any live declaration.
    """
    if action not in ACTIONS:
        raise ValueError(f"unknown action {action!r}; one of {', '.join(ACTIONS)}")
    if not isinstance(actor, str) or not actor.strip():
        raise ValueError("cron operator actor must be non-empty")
    actor = actor.strip()
    if action in ("adopt", "retire_owner", "restore_owner"):
        validate_label(owner_id, "owner")
    if action in ("adopt", "retire", "restore") and not name:
        raise ValueError(f"{action} needs a schedule name")

    if not apply:
        with db.read_only_snapshot(using), connections[using].cursor() as cursor:
            rows = _select(cursor, action, name, owner_id, lock=False)
            _check(action, rows, owner_id, expected_owner)
            return ActionPlan(action, _affected(action, rows), applied=False)

    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        bound_transaction_waits(cursor)  # a frozen peer may hold the lock
        cursor.execute("SELECT awa_cron_protocol_lock()")
        # Lock order: protocol lock, owner rows, schedule rows by name. Under
        # the protocol lock no other writer can change ownership, so an
        # unlocked read tells which owner rows to lock first.
        owners_involved = {r[1] for r in _select(cursor, action, name, owner_id, lock=False) if r[1]}
        if action == "adopt":
            owners_involved.add(str(owner_id))
        cursor.execute(
            "SELECT owner_id FROM awa_cron_owners WHERE owner_id = ANY(%s) ORDER BY owner_id FOR UPDATE",
            [sorted(owners_involved)],
        )
        rows = _select(cursor, action, name, owner_id, lock=True)
        _check(action, rows, owner_id, expected_owner)
        names = _affected(action, rows)
        involved = {r[1] for r in rows if r[1] is not None}
        db.set_local(cursor, "awa.cron_admin", "on")
        if action == "adopt":
            cursor.execute("INSERT INTO awa_cron_owners (owner_id) VALUES (%s) ON CONFLICT DO NOTHING", [owner_id])
            cursor.execute(
                "UPDATE awa_cron_jobs SET owner_id = %s, updated_at = clock_timestamp() WHERE name = ANY(%s)",
                [owner_id, names],
            )
            involved.add(str(owner_id))
        elif action in ("retire", "retire_owner"):
            cursor.execute(
                "UPDATE awa_cron_jobs SET retired_at = clock_timestamp(), retired_by = %s, "
                "retired_revision = 'operator', updated_at = clock_timestamp() "
                "WHERE name = ANY(%s) AND retired_at IS NULL",
                [actor, names],
            )
        else:  # restore, restore_owner
            cursor.execute(
                "UPDATE awa_cron_jobs SET retired_at = NULL, retired_by = NULL, retired_revision = NULL, "
                "last_enqueued_at = clock_timestamp(), updated_at = clock_timestamp() "
                "WHERE name = ANY(%s) AND retired_at IS NOT NULL",
                [names],
            )
        db.set_local(cursor, "awa.cron_admin", "")
        if involved:
            cursor.execute(
                "UPDATE awa_cron_owners SET synced_hash = NULL, agreed_hash = NULL, agreed_since = NULL, "
                "evidence_until = NULL WHERE owner_id = ANY(%s)",
                [sorted(involved)],
            )
    logger.info("%s by %s: %s", action, actor, ", ".join(names) or "(nothing)",
                extra={"event": f"cron.{action}", "actor": actor, "schedules": names})
    return ActionPlan(action, names, applied=True)


def _check(action: str, rows: list[tuple[str, str | None, Any]], owner_id: str | None, expected: str | None) -> None:
    if action != "adopt":
        return
    name, current, _retired = rows[0]
    if current != expected:
        raise OperationRefused(
            f"cron ownership conflict on {name!r}: expected {expected or '<unowned>'}, "
            f"found {current or '<unowned>'}"
        )


def _affected(action: str, rows: list[tuple[str, str | None, Any]]) -> list[str]:
    if action == "retire":
        return [r[0] for r in rows if r[2] is None]
    if action == "restore":
        return [r[0] for r in rows if r[2] is not None]
    return [r[0] for r in rows]
