"""Loading the evidence of one owner's reconciliation (through the store, no decision).

Every function reads inside the caller's transaction: a REPEATABLE READ
snapshot for plans and previews, the protocol lock for publication and
reconciliation (then the owner row is read ``FOR UPDATE``).
"""

from __future__ import annotations

import sys
from datetime import datetime
from typing import Any

from ..db import jsonb
from ..store import fleet as store
from .decision import Agreement, Declaration, Evidence, StoredRow

# Freshness: a runtime row counts for max(30 s, 3 x its snapshot interval).
# The fleet's queries spell it out; this is what the docs and logs show.
FRESH_FOR = "make_interval(secs => GREATEST(30.0, r.snapshot_interval_ms * 0.003))"

# The cursor parameters are ``Any``: Django's cursor wrapper (see store.fleet).


def clock(cursor: Any) -> datetime:
    """Database time: every reconciliation decision uses it."""
    return store.database_clock(cursor)


def agreement(cursor: Any, owner: str, *, lock: bool) -> Agreement:
    """The owner row's agreement state (``FOR UPDATE`` under the protocol lock)."""
    return store.owner_agreement(cursor, owner, lock=lock)


def blocking_instances(cursor: Any, now: datetime) -> tuple[str, ...]:
    """Live runtimes of the fleet that do not speak this cron protocol."""
    return store.blocking_instances(cursor, now)


def declarations(cursor: Any, owner: str, now: datetime) -> tuple[Declaration, ...]:
    """The owner's live declarations, by instance."""
    return store.live_declarations(cursor, owner, now)


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
    text = store.published_manifest_text(cursor, owner, desired_hash)
    if text is None:
        return ()
    value = jsonb.decode(text, "manifest", wraps=jsonb.MANIFEST_WRAPS, size_limit=sys.maxsize)
    if isinstance(value, jsonb.Undecodable):
        raise UnreadableManifest(owner, desired_hash, value.reason)
    if not isinstance(value, list) or not all(
        isinstance(e, dict) and isinstance(e.get("name"), str) for e in value
    ):
        raise UnreadableManifest(
            owner, desired_hash, f"is {jsonb.type_name(value)}, not a list of schedule definitions"
        )
    return tuple(value)


def stored_rows(owner: str, names: list[str], using: str) -> tuple[StoredRow, ...]:
    """The rows ``owner`` owns or ``names`` names, with their JSON-normal definitions."""
    return store.stored_rows(owner, names, using)


def conflict_scan(cursor: Any, owner: str, desired_hash: str) -> tuple[tuple[str, str | None], ...]:
    """Names of the manifest owned by another owner (or nobody) or retired, without decoding it in Python."""
    return store.manifest_conflict_scan(cursor, owner, desired_hash)
