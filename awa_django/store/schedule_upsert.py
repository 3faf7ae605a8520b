"""The one upsert of schedule definitions into ``awa_cron_jobs``.

Both writers run the statements of ``sql/schedules/upsert.sql``: the additive
sync of code-declared schedules (unowned rows only) and an owner's
reconciliation (that owner's rows only, under its manager context). Neither
ever touches a retired row, the fire clock (``last_enqueued_at``), pause or
lifecycle columns, and an unchanged definition is not written. Their column
lists are the definition fields of ``schedules/shape.py`` written out (a unit
test compares them). ``cursor`` is ``Any``: Django's cursor wrapper has no
shared stub type.
"""

from __future__ import annotations

import json
from typing import Any

from .queries import query

__all__ = ["insert_new_names", "sync_additive", "sync_owned"]


def sync_additive(cursor: Any, definitions: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Upsert unowned ``definitions``: (name, 'written' | 'owned') per name that is news.

    ``Any``: a definition's JSON values."""
    cursor.execute(query("sync_declared_schedules"), [json.dumps(definitions)])
    rows: list[tuple[str, str]] = cursor.fetchall()
    return rows


def insert_new_names(cursor: Any, owner: str, desired_hash: str) -> None:
    """Insert the names of ``owner``'s manifest that no row has yet, owned."""
    cursor.execute(query("insert_new_manifest_names"), [owner, desired_hash])


def sync_owned(cursor: Any, owner: str, desired_hash: str) -> None:
    """Make ``owner``'s active rows match its manifest (caller: manager context)."""
    cursor.execute(query("sync_owned_schedules"), [owner, desired_hash])
