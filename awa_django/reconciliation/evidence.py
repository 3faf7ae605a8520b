"""Loading the evidence of one owner's reconciliation (SQL only, no decision).

Every function reads inside the caller's transaction: a REPEATABLE READ
snapshot for plans and previews, the protocol lock for publication and
reconciliation (then the owner row is read ``FOR UPDATE``).
"""

from __future__ import annotations

import sys
from datetime import datetime
from typing import Any

from django.db import connections

from ..db import jsonb
from ..schedules.shape import POLICY_DEFAULTS, REQUIRED_KEYS
from .decision import Agreement, Declaration, Evidence, StoredRow

# Freshness: a runtime row counts for max(30 s, 3 x its snapshot interval).
FRESH_FOR = "make_interval(secs => GREATEST(30.0, r.snapshot_interval_ms * 0.003))"


def _fetch(cursor: Any, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
    cursor.execute(sql, params)
    return list(cursor.fetchall())


def clock(cursor: Any) -> datetime:
    """Database time: every reconciliation decision uses it."""
    now: datetime = _fetch(cursor, "SELECT clock_timestamp()")[0][0]
    return now


def agreement(cursor: Any, owner: str, *, lock: bool) -> Agreement:
    """The owner row's agreement state (``FOR UPDATE`` under the protocol lock)."""
    rows = _fetch(
        cursor,
        "SELECT synced_hash, agreed_hash, agreed_since, evidence_until FROM awa_cron_owners "
        "WHERE owner_id = %s" + (" FOR UPDATE" if lock else ""),
        [owner],
    )
    return Agreement(*rows[0]) if rows else Agreement()


def blocking_instances(cursor: Any, now: datetime) -> tuple[str, ...]:
    """Live runtimes of the fleet that do not speak this cron protocol."""
    return tuple(
        str(r[0])
        for r in _fetch(
            cursor,
            f"SELECT r.instance_id FROM awa_runtime_instances AS r "
            f"WHERE r.last_seen_at + {FRESH_FOR} > %s "
            f"AND r.cron_protocol IS DISTINCT FROM awa_cron_protocol_version() ORDER BY 1",
            [now],
        )
    )


def declarations(cursor: Any, owner: str, now: datetime) -> tuple[Declaration, ...]:
    """The owner's live declarations, by instance."""
    return tuple(
        Declaration(str(instance_id), revision, desired, int(grace_ms), expires_at)
        for instance_id, revision, desired, grace_ms, expires_at in _fetch(
            cursor,
            f"""SELECT d.instance_id, d.revision, d.desired_hash, d.grace_ms,
                       LEAST(d.last_seen_at, r.last_seen_at) + {FRESH_FOR} AS expires_at
                  FROM awa_cron_declarations AS d
                  JOIN awa_runtime_instances AS r USING (instance_id)
                 WHERE d.owner_id = %s AND NOT r.shutting_down
                   AND LEAST(d.last_seen_at, r.last_seen_at) + {FRESH_FOR} > %s
                 ORDER BY d.instance_id""",
            [owner, now],
        )
    )


def fleet(cursor: Any, owner: str, now: datetime, *, lock: bool) -> Evidence:
    """The owner's agreement state, the fleet's protocol and the live declarations."""
    state = agreement(cursor, owner, lock=lock)
    return Evidence(owner, state, blocking_instances(cursor, now), declarations(cursor, owner, now))


class UnreadableManifest(ValueError):
    """A stored manifest that cannot be decoded or is not a list of definitions.

    Raw SQL (or a damaged row) wrote it: the owner's reconciliation fails,
    named, and every other owner reconciles.
    """

    def __init__(self, owner: str, desired_hash: str, reason: str) -> None:
        self.owner = owner
        self.desired_hash = desired_hash
        self.reason = reason
        super().__init__(
            f"owner {owner!r}: stored manifest {desired_hash[:12]!r} cannot be read: "
            f"awa_cron_manifests.manifest {reason}"
        )


def published_manifest(cursor: Any, owner: str, desired_hash: str) -> tuple[dict[str, Any], ...]:
    """The entries of the manifest ``desired_hash`` of ``owner`` (empty if unknown).

    Raises :class:`UnreadableManifest` for a manifest too deep to decode or
    not shaped as one (a list of objects, each with a string ``name``).
    """
    rows = _fetch(
        cursor,
        "SELECT manifest::text FROM awa_cron_manifests WHERE owner_id = %s AND desired_hash = %s",
        [owner, desired_hash],
    )
    if not rows:
        return ()
    value = jsonb.decode(rows[0][0], "manifest", wraps=jsonb.MANIFEST_WRAPS, size_limit=sys.maxsize)
    if isinstance(value, jsonb.Undecodable):
        raise UnreadableManifest(owner, desired_hash, value.reason)
    if not isinstance(value, list) or not all(
        isinstance(e, dict) and isinstance(e.get("name"), str) for e in value
    ):
        raise UnreadableManifest(
            owner, desired_hash, f"is {jsonb.type_name(value)}, not a list of schedule definitions"
        )
    return tuple(value)


# The definition of a stored row as one JSON object, built in SQL: only text,
# integer and jsonb columns, so a timestamp no Python datetime holds (a raw
# 'infinity') cannot fail the read of the owner's rows (every owner's
# reconciliation would fail on it), and the JSON comes back JSON-normal.
# Execution policies at their default are left out, as in a manifest.
_DEFINITION = "(jsonb_build_object({}) || jsonb_strip_nulls(jsonb_build_object({})))::text".format(
    ", ".join(f"'{k}', {'COALESCE(tags, ARRAY[]::text[])' if k == 'tags' else k}" for k in REQUIRED_KEYS),
    ", ".join(
        f"'{k}', {k}" if default is None else f"'{k}', NULLIF({k}, {default!r})"
        for k, default in POLICY_DEFAULTS.items()
    ),
)


def stored_rows(owner: str, names: list[str], using: str) -> tuple[StoredRow, ...]:
    """The rows ``owner`` owns or ``names`` names, with their JSON-normal definitions."""
    with connections[using].cursor() as cursor:
        rows = _fetch(
            cursor,
            f"SELECT name, owner_id, retired_at IS NOT NULL, {_DEFINITION} FROM awa_cron_jobs "
            "WHERE owner_id = %s OR name = ANY(%s) ORDER BY name",
            [owner, list(names)],
        )
    return tuple(
        StoredRow(name, owner_id, retired, _stored_definition(definition))
        for name, owner_id, retired, definition in rows
    )


def _stored_definition(text: str) -> dict[str, Any]:
    """A row's definition decoded; ``{}`` (differs from any manifest entry, so the
    agreed manifest rewrites it) when its args or metadata cannot be decoded."""
    value = jsonb.decode(text, "definition", wraps=1, size_limit=sys.maxsize)
    return value if isinstance(value, dict) else {}


def conflict_scan(cursor: Any, owner: str, desired_hash: str) -> tuple[tuple[str, str | None], ...]:
    """Names of the manifest owned by another owner (or nobody) or retired, without decoding it in Python."""
    return tuple(
        (name, owner_id)
        for name, owner_id in _fetch(
            cursor,
            """SELECT c.name, c.owner_id
                 FROM awa_cron_manifests AS m,
                      jsonb_to_recordset(m.manifest) AS d(name text)
                 JOIN awa_cron_jobs AS c ON c.name = d.name
                WHERE m.owner_id = %s AND m.desired_hash = %s
                  AND (c.owner_id IS DISTINCT FROM %s OR c.retired_at IS NOT NULL)
                ORDER BY c.name""",
            [owner, desired_hash, owner],
        )
    )
