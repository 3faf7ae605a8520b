"""The fleet family: owners, runtime snapshots, declarations, the protocol lock.

Every statement on ``awa_cron_owners``, ``awa_runtime_instances``,
``awa_cron_declarations`` and ``awa_cron_manifests`` (and the ownership
columns of ``awa_cron_jobs``) is a named query of ``store/sql/fleet/``, run
here. Rows cross to reconciliation, the operator verbs and the admin as the
frozen dataclasses below, each built by its ``from_row``.

The cursor parameters are ``Any``: the functions take Django's cursor wrapper
and psycopg's cursor alike, which share no declared type; ``Row`` is a row as
either returns it.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg
from django.db import connections, transaction

from ..db import jsonb
from ..db.guards import bound_transaction_waits
from .queries import query

__all__ = [
    "Agreement",
    "Declaration",
    "LiveLeader",
    "RuntimeSnapshot",
    "ScheduleOwnership",
    "StoredRow",
    "active_schedule_names_of_owner",
    "blocking_instances",
    "database_clock",
    "delete_stale_snapshots",
    "ensure_owner",
    "give_schedules_to_owner",
    "live_declarations",
    "live_leader",
    "lock_active_owned_schedules",
    "lock_owners",
    "manifest_conflict_scan",
    "mark_owner_synced",
    "names_owned_elsewhere",
    "owner_agreement",
    "owner_ids",
    "owner_schedules",
    "ping_leader_session",
    "published_manifest_text",
    "record_agreement",
    "release_leader_lock",
    "reset_agreement",
    "reset_owner_certificates",
    "restore_schedules",
    "retire_owned_schedules",
    "retire_schedules_by_operator",
    "schedule_counts_by_owner",
    "schedule_ownership",
    "store_declaration",
    "stored_rows",
    "take_protocol_lock",
    "try_leader_lock",
    "upsert_runtime_snapshot",
]

# A row as a cursor returns it (values of any column type).
Row = Sequence[Any]


@dataclass(frozen=True)
class Declaration:
    """One live runtime's declaration of the owner's manifest."""

    instance_id: str
    revision: str
    desired_hash: str
    grace_ms: int
    expires_at: datetime

    @classmethod
    def from_row(cls, row: Row) -> Declaration:
        instance_id, revision, desired_hash, grace_ms, expires_at = row
        return cls(str(instance_id), revision, desired_hash, int(grace_ms), expires_at)


@dataclass(frozen=True)
class Agreement:
    """The owner row's durable state (all None when there is no owner row)."""

    synced_hash: str | None = None
    agreed_hash: str | None = None
    agreed_since: datetime | None = None
    evidence_until: datetime | None = None

    @classmethod
    def from_row(cls, row: Row | None) -> Agreement:
        return cls() if row is None else cls(*row)


@dataclass(frozen=True)
class StoredRow:
    """A schedule row as the decision sees it: owner, tombstone, definition.

    ``definition`` is JSON (``Any`` values: whatever a schedule's args and
    metadata hold).
    """

    name: str
    owner_id: str | None
    retired: bool
    definition: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_row(cls, row: Row) -> StoredRow:
        """A row of ``stored_schedule_definitions``; its definition decoded, ``{}``
        (differs from any manifest entry, so the agreed manifest rewrites it)
        when its args or metadata cannot be decoded."""
        name, owner_id, retired, text = row
        value = jsonb.decode(text, "definition", wraps=1, size_limit=sys.maxsize)
        return cls(name, owner_id, bool(retired), value if isinstance(value, dict) else {})


@dataclass(frozen=True)
class ScheduleOwnership:
    """A schedule's name, owner and tombstone, as the operator verbs select them."""

    name: str
    owner_id: str | None
    retired: bool

    @classmethod
    def from_row(cls, row: Row) -> ScheduleOwnership:
        name, owner_id, retired = row
        return cls(name, owner_id, bool(retired))


@dataclass(frozen=True)
class LiveLeader:
    """The ``runcron`` leader whose snapshot is fresh."""

    hostname: str
    pid: int
    last_seen_at: datetime

    @classmethod
    def from_row(cls, row: Row) -> LiveLeader:
        hostname, pid, last_seen_at = row
        return cls(hostname, int(pid), last_seen_at)

    def __str__(self) -> str:
        return f"{self.hostname}:{self.pid}"


@dataclass(frozen=True)
class RuntimeSnapshot:
    """What one process writes of itself to ``awa_runtime_instances``."""

    instance_id: str
    hostname: str
    pid: int
    version: str
    role: str
    interval_ms: int
    leader: bool
    queues_json: str
    shutting_down: bool
    cron_protocol: int
    fire_version: int


# -- the leader's election (on its dedicated psycopg connection) -----------------------


def try_leader_lock(conn: psycopg.Connection[Any], key: int) -> bool:
    """Take the leader lock ``key`` on ``conn`` if it is free; True when taken."""
    row = conn.execute(query("try_leader_lock"), {"key": key}).fetchone()
    return bool(row and row[0])


def release_leader_lock(conn: psycopg.Connection[Any], key: int) -> None:
    """Release the leader lock held on ``conn``; errors propagate."""
    conn.execute(query("release_leader_lock"), {"key": key})


def ping_leader_session(conn: psycopg.Connection[Any]) -> None:
    """A round trip on ``conn``; raises when its session is gone."""
    conn.execute(query("leader_session_ping"))


# -- the protocol lock and runtime snapshots ---------------------------------------------


def take_protocol_lock(cursor: Any) -> None:
    """``awa_cron_protocol_lock()``: first, in every writer of the fleet's rows."""
    cursor.execute(query("take_protocol_lock"))


def upsert_runtime_snapshot(cursor: Any, snapshot: RuntimeSnapshot) -> None:
    """Insert or refresh this process's snapshot (caller: under the protocol lock)."""
    cursor.execute(
        query("upsert_runtime_snapshot"),
        {
            "instance_id": snapshot.instance_id,
            "hostname": snapshot.hostname,
            "pid": snapshot.pid,
            "version": snapshot.version,
            "role": snapshot.role,
            "interval_ms": snapshot.interval_ms,
            "leader": snapshot.leader,
            "queues": snapshot.queues_json,
            "shutting_down": snapshot.shutting_down,
            "cron_protocol": snapshot.cron_protocol,
            "fire_version": snapshot.fire_version,
        },
    )


def delete_stale_snapshots(using: str = "default", older_than_seconds: float = 24 * 3600) -> int:
    """Delete snapshots (and, by cascade, declarations) not seen for ``older_than_seconds``."""
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        bound_transaction_waits(cursor)  # a frozen peer may hold the lock
        # Explicitly first, like every snapshot writer: the statement trigger
        # would take it only after this DELETE locked the table (a lock-order
        # inversion against a migration's ACCESS EXCLUSIVE lock).
        take_protocol_lock(cursor)
        cursor.execute(query("delete_stale_snapshots"), {"seconds": older_than_seconds})
        return int(cursor.rowcount)


def live_leader(using: str = "default") -> LiveLeader | None:
    """The ``runcron`` leader whose snapshot is fresh, if any (one query)."""
    with connections[using].cursor() as cursor:
        cursor.execute(query("live_leader_snapshot"))
        row = cursor.fetchone()
    return None if row is None else LiveLeader.from_row(row)


# -- reconciliation's evidence ---------------------------------------------------------------


def _names(cursor: Any) -> list[str]:
    return [str(row[0]) for row in cursor.fetchall()]


def database_clock(cursor: Any) -> datetime:
    """Database time (``clock_timestamp()``)."""
    cursor.execute(query("database_clock"))
    now: datetime = cursor.fetchone()[0]
    return now


def owner_agreement(cursor: Any, owner: str, *, lock: bool) -> Agreement:
    """The owner row's agreement state (``FOR UPDATE`` when ``lock``)."""
    cursor.execute(query("owner_agreement_for_update" if lock else "owner_agreement"), {"owner": owner})
    return Agreement.from_row(cursor.fetchone())


def blocking_instances(cursor: Any, now: datetime) -> tuple[str, ...]:
    """Live runtimes of the fleet that do not speak this cron protocol."""
    cursor.execute(query("protocol_blocking_instances"), {"now": now})
    return tuple(_names(cursor))


def live_declarations(cursor: Any, owner: str, now: datetime) -> tuple[Declaration, ...]:
    """The owner's live declarations, by instance."""
    cursor.execute(query("live_declarations"), {"owner": owner, "now": now})
    return tuple(Declaration.from_row(row) for row in cursor.fetchall())


def published_manifest_text(cursor: Any, owner: str, desired_hash: str) -> str | None:
    """The stored manifest ``desired_hash`` of ``owner`` as JSON text (None if unknown)."""
    cursor.execute(query("published_manifest_text"), {"owner": owner, "desired_hash": desired_hash})
    row = cursor.fetchone()
    return None if row is None else str(row[0])


def stored_rows(owner: str, names: Sequence[str], using: str) -> tuple[StoredRow, ...]:
    """The rows ``owner`` owns or ``names`` names, with their JSON-normal definitions."""
    with connections[using].cursor() as cursor:
        cursor.execute(query("stored_schedule_definitions"), {"owner": owner, "names": list(names)})
        rows = cursor.fetchall()
    return tuple(StoredRow.from_row(row) for row in rows)


def manifest_conflict_scan(cursor: Any, owner: str, desired_hash: str) -> tuple[tuple[str, str | None], ...]:
    """(name, owner) of the manifest's names owned elsewhere (or by nobody) or retired."""
    cursor.execute(query("manifest_conflict_scan"), {"owner": owner, "desired_hash": desired_hash})
    return tuple((str(name), owner_id) for name, owner_id in cursor.fetchall())


def names_owned_elsewhere(names: Sequence[str], owner: str, using: str = "default") -> list[str]:
    """Those of ``names`` whose schedule another owner (or nobody) owns."""
    with connections[using].cursor() as cursor:
        cursor.execute(query("names_owned_elsewhere"), {"names": list(names), "owner": owner})
        return _names(cursor)


def active_schedule_names_of_owner(owner: str, using: str = "default") -> list[str]:
    """The names of ``owner``'s schedules that are not retired."""
    with connections[using].cursor() as cursor:
        cursor.execute(query("active_schedule_names_of_owner"), {"owner": owner})
        return _names(cursor)


def owner_ids(using: str = "default") -> list[str]:
    """Every owner id known to the database."""
    with connections[using].cursor() as cursor:
        cursor.execute(query("owner_ids"))
        return _names(cursor)


# -- reconciliation's writes (caller: under the protocol lock) -----------------------------------


def record_agreement(
    cursor: Any, owner: str, agreed_hash: str, agreed_since: datetime | None, evidence_until: datetime
) -> None:
    """Write the owner's agreement clock."""
    params = {"owner": owner, "agreed_hash": agreed_hash, "agreed_since": agreed_since}
    cursor.execute(query("record_agreement"), {**params, "evidence_until": evidence_until})


def reset_agreement(cursor: Any, owner: str) -> None:
    """Reset the owner's agreement clock."""
    cursor.execute(query("reset_agreement"), {"owner": owner})


def mark_owner_synced(cursor: Any, owner: str, desired_hash: str) -> None:
    """The owned rows match the manifest ``desired_hash`` now."""
    cursor.execute(query("mark_owner_synced"), {"owner": owner, "desired_hash": desired_hash})


def lock_active_owned_schedules(cursor: Any, owner: str, names: Sequence[str]) -> None:
    """Lock ``owner``'s active schedules among ``names``, in name order."""
    cursor.execute(query("lock_active_owned_schedules"), {"owner": owner, "names": list(names)})


def retire_owned_schedules(
    cursor: Any, owner: str, names: Sequence[str], now: datetime, revision: str
) -> None:
    """Retire ``owner``'s active schedules among ``names`` (operator context)."""
    params = {"owner": owner, "names": list(names), "now": now, "revision": revision}
    cursor.execute(query("retire_owned_schedules"), params)


def ensure_owner(cursor: Any, owner: str) -> None:
    """Create the owner's row when missing."""
    cursor.execute(query("ensure_owner"), {"owner": owner})


def store_declaration(
    cursor: Any,
    instance_id: str,
    owner: str,
    revision: str,
    grace_ms: int,
    desired_hash: str,
    manifest_text: str,
) -> bool:
    """Store the manifest (once per hash) and upsert this instance's declaration
    of it, the owner row first; True when the manifest is new."""
    ensure_owner(cursor, owner)
    cursor.execute(
        query("store_manifest"), {"owner": owner, "desired_hash": desired_hash, "manifest": manifest_text}
    )
    new_manifest = cursor.fetchone() is not None
    cursor.execute(
        query("upsert_declaration"),
        {
            "instance_id": instance_id,
            "owner": owner,
            "revision": revision,
            "desired_hash": desired_hash,
            "grace_ms": grace_ms,
        },
    )
    return new_manifest


# -- the operator's ownership verbs --------------------------------------------------------------


def schedule_ownership(cursor: Any, name: str, *, lock: bool) -> list[ScheduleOwnership]:
    """The schedule ``name`` (none when missing), locked when ``lock``."""
    cursor.execute(query("schedule_ownership_for_update" if lock else "schedule_ownership"), {"name": name})
    return [ScheduleOwnership.from_row(row) for row in cursor.fetchall()]


def owner_schedules(cursor: Any, owner: str, *, retired: bool, lock: bool) -> list[ScheduleOwnership]:
    """``owner``'s retired (or active) schedules in name order, locked when ``lock``."""
    name = "owner_retired_schedules" if retired else "owner_active_schedules"
    cursor.execute(query(f"{name}_for_update" if lock else name), {"owner": owner})
    return [ScheduleOwnership.from_row(row) for row in cursor.fetchall()]


def schedule_counts_by_owner(owners: Sequence[str], using: str = "default") -> dict[str, int]:
    """How many schedules (retired ones included) each of ``owners`` has; none: absent."""
    with connections[using].cursor() as cursor:
        cursor.execute(query("schedule_counts_by_owner"), {"owners": list(owners)})
        return {str(owner): int(count) for owner, count in cursor.fetchall()}


def retire_schedules_by_operator(cursor: Any, names: Sequence[str], actor: str) -> None:
    """Tombstone the active schedules among ``names`` (operator context)."""
    cursor.execute(query("retire_schedules_by_operator"), {"names": list(names), "actor": actor})


def restore_schedules(cursor: Any, names: Sequence[str]) -> None:
    """Clear the tombstones of the retired schedules among ``names`` (operator context)."""
    cursor.execute(query("restore_schedules"), {"names": list(names)})


def give_schedules_to_owner(cursor: Any, names: Sequence[str], owner: str) -> None:
    """``names`` change owner to ``owner`` (its row created when missing)."""
    ensure_owner(cursor, owner)
    cursor.execute(query("give_schedules_to_owner"), {"names": list(names), "owner": owner})


def lock_owners(cursor: Any, owners: Sequence[str]) -> None:
    """Lock the rows of ``owners``, in owner order."""
    cursor.execute(query("lock_owners"), {"owners": sorted(owners)})


def reset_owner_certificates(cursor: Any, owners: Sequence[str]) -> None:
    """``owners``' certificates and agreement clocks start over."""
    cursor.execute(query("reset_owner_certificates"), {"owners": sorted(owners)})
