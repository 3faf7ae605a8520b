"""The one upsert of schedule definitions into ``awa_cron_jobs``.

Both writers use the statement built here from :mod:`.shape`: the
additive sync of code-declared schedules (:mod:`.sync`, unowned rows only)
and an owner's reconciliation (:mod:`awa_django.reconciliation`, that owner's rows
only, under its manager context). Neither ever touches a retired row, the
fire clock (``last_enqueued_at``), pause or lifecycle columns, and an
unchanged definition is not written.

The SQL function ``awa_cron_upsert_v2`` (migration 0004) does what the
additive form does; it stays installed for binaries that call it.
"""

from __future__ import annotations

import json
from typing import Any

from .shape import COMPARED_KEYS, DEFINITION_KEYS, FIELDS, RECORDSET_COLUMNS, REQUIRED

_COLUMNS = ", ".join(DEFINITION_KEYS)
# A policy absent from a definition (at its default, or from a runtime that
# predates it) is written as its default.
_SELECTED = ", ".join(
    f"d.{f.key}" if f.default is REQUIRED else f"COALESCE(d.{f.key}, {f.sql_default})" for f in FIELDS
)
_SET = ", ".join(f"{k} = EXCLUDED.{k}" for k in COMPARED_KEYS)
_CHANGED = (
    f"({', '.join(f'c.{k}' for k in COMPARED_KEYS)}) IS DISTINCT FROM "
    f"({', '.join(f'EXCLUDED.{k}' for k in COMPARED_KEYS)})"
)


def _insert(source: str, owner: str, conflict: str) -> str:
    return f"""
        INSERT INTO awa_cron_jobs AS c ({_COLUMNS}, owner_id, created_at, updated_at)
        SELECT {_SELECTED}, {owner}, clock_timestamp(), clock_timestamp()
          FROM {source}
         ORDER BY d.name
        ON CONFLICT (name) {conflict}"""


def _update_where(owner_match: str) -> str:
    return (
        f"DO UPDATE SET {_SET}, updated_at = clock_timestamp() "
        f"WHERE {owner_match} AND c.retired_at IS NULL AND {_CHANGED}"
    )


_MANIFEST = f"""awa_cron_manifests AS m, jsonb_to_recordset(m.manifest) AS d({RECORDSET_COLUMNS})
         WHERE m.owner_id = %s AND m.desired_hash = %s"""

# New names of an owner's manifest, inserted owned; existing rows untouched.
INSERT_NEW_NAMES = _insert(_MANIFEST, "m.owner_id", "DO NOTHING")
# The owner's active rows made to match its manifest (manager context).
SYNC_OWNED = _insert(_MANIFEST, "m.owner_id", _update_where("c.owner_id = EXCLUDED.owner_id"))
# Code-declared definitions (a jsonb list): unowned rows only; owned names reported.
SYNC_ADDITIVE = f"""
    WITH d AS (SELECT * FROM jsonb_to_recordset(%s::jsonb) AS d({RECORDSET_COLUMNS})),
    owned AS (
        SELECT c.name FROM awa_cron_jobs AS c JOIN d USING (name) WHERE c.owner_id IS NOT NULL
    ), written AS ({
    _insert(
        "d WHERE d.name NOT IN (SELECT owned.name FROM owned)", "NULL", _update_where("c.owner_id IS NULL")
    )
}
        RETURNING c.name
    )
    SELECT written.name, 'written' FROM written
    UNION ALL
    SELECT owned.name, 'owned' FROM owned
"""


def sync_additive(cursor: Any, definitions: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Upsert unowned ``definitions``: (name, 'written' | 'owned') per name that is news."""
    cursor.execute(SYNC_ADDITIVE, [json.dumps(definitions)])
    rows: list[tuple[str, str]] = cursor.fetchall()
    return rows


def insert_new_names(cursor: Any, owner: str, desired_hash: str) -> None:
    """Insert the names of ``owner``'s manifest that no row has yet, owned."""
    cursor.execute(INSERT_NEW_NAMES, [owner, desired_hash])


def sync_owned(cursor: Any, owner: str, desired_hash: str) -> None:
    """Make ``owner``'s active rows match its manifest (caller: manager context)."""
    cursor.execute(SYNC_OWNED, [owner, desired_hash])
