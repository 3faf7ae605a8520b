"""Owner-scoped reconciliation (ADR-007 "#481"): evidence, decision, retirement.

An authoritative deployment (``AWA_AUTHORITATIVE = True``) declares the
*complete* desired schedule set of its owner (``AWA_OWNER``). Every runtime
publishes that manifest with its snapshot; the leader retires owned schedules
absent from it only when every live runtime of the fleet speaks the protocol,
all live declarations of the owner agree on one manifest, nothing conflicts,
and the agreement has held for the grace period. An outage never counts as
"desired empty": with no live declaration nothing is retired.

All decisions use database time. Writers serialise on the protocol lock
(``awa_cron_protocol_lock()``): lock order is protocol lock, owner row,
schedule rows by name. Read-only plans use one REPEATABLE READ snapshot and
never wait for that lock.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from django.db import connections, transaction

from . import db
from .conf import conf
from .connection_guards import bound_transaction_waits
from .manifest import DEFINITION_KEYS, Manifest, build_manifest
from .models import CronJob

logger = logging.getLogger(__name__)

# Must equal the SQL function awa_cron_protocol_version().
CRON_PROTOCOL_VERSION = 1

# Freshness: a runtime row counts for max(30 s, 3 x its snapshot interval).
FRESH_FOR = "make_interval(secs => GREATEST(30.0, r.snapshot_interval_ms * 0.003))"

BLOCKERS = (
    "unsupported_runtime_protocol",
    "zero_live_declarations",
    "mixed_desired_manifests",
    "ownership_or_retirement_conflict",
    "grace_period",
    "manifest_not_published",
)


class RegistrationConflict(RuntimeError):
    """Desired names are owned by another owner, or unowned (adopt them first)."""


@dataclass(frozen=True)
class ReconciliationConfig:
    """This deployment's authoritative registration."""

    owner_id: str
    revision: str
    grace_ms: int


def validate_label(value: Any, what: str) -> str:
    """Owner ids and revisions: non-blank, at most 200 bytes, no NUL."""
    if not isinstance(value, str) or not value.strip() or len(value.encode()) > 200 or "\x00" in value:
        raise ValueError(f"{what} must be a non-blank string of at most 200 bytes without NUL, got {value!r}")
    return value


def configured() -> ReconciliationConfig | None:
    """The config from settings, or None when the deployment is additive."""
    if not conf.AUTHORITATIVE:
        return None
    grace = conf.RECONCILE_GRACE
    if grace < 0:
        raise ValueError("AWA_RECONCILE_GRACE must be >= 0 seconds")
    return ReconciliationConfig(
        owner_id=validate_label(conf.OWNER, "AWA_OWNER"),
        revision=validate_label(conf.REVISION, "AWA_REVISION"),
        grace_ms=int(grace * 1000),
    )


@dataclass
class Plan:
    """What reconciliation of one owner would do (or did), and why not."""

    owner_id: str
    desired_hash: str | None = None
    declarations: list[dict[str, Any]] = field(default_factory=list)
    blocking_instances: list[str] = field(default_factory=list)
    blockers: list[str] = field(default_factory=list)
    additions: list[str] = field(default_factory=list)
    updates: list[str] = field(default_factory=list)
    retirements: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    agreed_since: datetime | None = None
    grace_remaining_ms: int | None = None
    evaluated_at: datetime | None = None
    applied: bool = False

    def as_json(self) -> dict[str, Any]:
        """JSON-ready dict (the ``--json`` shape of ``awa cron plan``)."""
        data = asdict(self)
        for key in ("agreed_since", "evaluated_at"):
            data[key] = data[key].isoformat() if data[key] else None
        for decl in data["declarations"]:
            decl["expires_at"] = decl["expires_at"].isoformat()
        return data


def _fetch(cursor: Any, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
    cursor.execute(sql, params)
    return list(cursor.fetchall())


def _definition(row: CronJob) -> dict[str, Any]:
    return {k: getattr(row, k) if k != "tags" else list(row.tags or []) for k in DEFINITION_KEYS}


def describe_changes(owner: str, entries: tuple[dict[str, Any], ...], plan: Plan, using: str) -> None:
    """Fill additions, updates, retirements and conflicts of ``plan``."""
    desired = {e["name"]: e for e in entries}
    rows = {
        r.name: r
        for r in CronJob.objects.using(using).filter(owner_id=owner)
        | CronJob.objects.using(using).filter(name__in=list(desired))
    }
    for name, entry in sorted(desired.items()):
        row = rows.get(name)
        if row is None:
            plan.additions.append(name)
        elif row.owner_id != owner:
            plan.conflicts.append(
                f"{name}: owned by {row.owner_id or '<unowned>'}; explicit adoption/transfer required"
            )
        elif row.retired_at is not None:
            plan.conflicts.append(f"{name}: retired; explicit restore required")
        elif json.loads(json.dumps(_definition(row))) != entry:
            plan.updates.append(name)
    plan.retirements = sorted(
        name for name, row in rows.items()
        if row.owner_id == owner and row.retired_at is None and name not in desired
    )


def _load_manifest(cursor: Any, owner: str, desired_hash: str) -> tuple[dict[str, Any], ...]:
    rows = _fetch(
        cursor,
        "SELECT manifest::text FROM awa_cron_manifests WHERE owner_id = %s AND desired_hash = %s",
        [owner, desired_hash],
    )
    return tuple(json.loads(rows[0][0])) if rows else ()


INSERT_FROM_MANIFEST = """
    INSERT INTO awa_cron_jobs AS c
        (name, cron_expr, timezone, kind, queue, args, priority, max_attempts, tags,
         metadata, missed_fire_policy, owner_id, created_at, updated_at)
    SELECT d.name, d.cron_expr, d.timezone, d.kind, d.queue, d.args, d.priority,
           d.max_attempts, d.tags, d.metadata, d.missed_fire_policy, m.owner_id,
           clock_timestamp(), clock_timestamp()
      FROM awa_cron_manifests AS m,
           jsonb_to_recordset(m.manifest) AS d(
               name text, cron_expr text, timezone text, kind text, queue text, args jsonb,
               priority integer, max_attempts integer, tags text[], metadata jsonb,
               missed_fire_policy text)
     WHERE m.owner_id = %s AND m.desired_hash = %s
     ORDER BY d.name
"""


def sync_definitions(cursor: Any, owner: str, desired_hash: str) -> None:
    """Make the owned rows match the agreed manifest (manager context).

    Missing names are inserted owned; owned active rows get the desired
    definition; rows of other owners and retired rows are never touched.
    """
    db.set_local(cursor, "awa.cron_owner", owner)
    cursor.execute(
        INSERT_FROM_MANIFEST
        + """
        ON CONFLICT (name) DO UPDATE
           SET cron_expr = EXCLUDED.cron_expr, timezone = EXCLUDED.timezone,
               kind = EXCLUDED.kind, queue = EXCLUDED.queue, args = EXCLUDED.args,
               priority = EXCLUDED.priority, max_attempts = EXCLUDED.max_attempts,
               tags = EXCLUDED.tags, metadata = EXCLUDED.metadata,
               missed_fire_policy = EXCLUDED.missed_fire_policy, updated_at = clock_timestamp()
         WHERE c.owner_id = EXCLUDED.owner_id AND c.retired_at IS NULL
           AND (c.cron_expr, c.timezone, c.kind, c.queue, c.args, c.priority, c.max_attempts,
                c.tags, c.metadata, c.missed_fire_policy)
               IS DISTINCT FROM
               (EXCLUDED.cron_expr, EXCLUDED.timezone, EXCLUDED.kind, EXCLUDED.queue,
                EXCLUDED.args, EXCLUDED.priority, EXCLUDED.max_attempts, EXCLUDED.tags,
                EXCLUDED.metadata, EXCLUDED.missed_fire_policy)
        """,
        [owner, desired_hash],
    )
    cursor.execute("UPDATE awa_cron_owners SET synced_hash = %s WHERE owner_id = %s", [desired_hash, owner])
    db.set_local(cursor, "awa.cron_owner", "")


def evaluate_locked(
    owner: str,
    *,
    persist: bool,
    apply: bool,
    proposed: Manifest | None = None,
    using: str = "default",
) -> Plan:
    """Decide for ``owner`` inside the caller's transaction.

    ``persist``: the caller holds the protocol lock; agreement, definitions and
    (with ``apply``) retirements are written. Otherwise nothing is written.
    ``proposed``: preview a manifest that may not be published yet.
    """
    with connections[using].cursor() as cursor:
        now = _fetch(cursor, "SELECT clock_timestamp()")[0][0]
        plan = Plan(owner_id=owner, evaluated_at=now)
        state = _fetch(
            cursor,
            "SELECT synced_hash, agreed_hash, agreed_since, evidence_until FROM awa_cron_owners "
            "WHERE owner_id = %s" + (" FOR UPDATE" if persist else ""),
            [owner],
        )
        synced_hash, agreed_hash, agreed_since, evidence_until = state[0] if state else (None,) * 4
        plan.blocking_instances = [
            str(r[0])
            for r in _fetch(
                cursor,
                f"SELECT r.instance_id FROM awa_runtime_instances AS r "
                f"WHERE r.last_seen_at + {FRESH_FOR} > %s "
                f"AND r.cron_protocol IS DISTINCT FROM awa_cron_protocol_version() ORDER BY 1",
                [now],
            )
        ]
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
        ):
            plan.declarations.append(
                {"instance_id": str(instance_id), "revision": revision, "desired_hash": desired,
                 "grace_ms": int(grace_ms), "expires_at": expires_at}
            )
        if plan.blocking_instances:
            plan.blockers.append("unsupported_runtime_protocol")
        hashes = {d["desired_hash"] for d in plan.declarations}
        if not hashes:
            plan.blockers.append("zero_live_declarations")
        elif len(hashes) > 1:
            plan.blockers.append("mixed_desired_manifests")
        else:
            plan.desired_hash = hashes.pop()

        if proposed is not None:
            if plan.desired_hash != proposed.desired_hash:
                plan.blockers.append("manifest_not_published")
            plan.desired_hash = proposed.desired_hash
            describe_changes(owner, proposed.entries, plan, using)
        elif plan.desired_hash is not None:
            if not persist or apply:
                describe_changes(owner, _load_manifest(cursor, owner, plan.desired_hash), plan, using)
            elif synced_hash != plan.desired_hash:
                # Publication path: only a conflict scan, and only while the
                # manifest is not certified by synced_hash (healthy heartbeats
                # never decode the manifest).
                plan.conflicts = [
                    f"{name}: owned by {owner_id or '<unowned>'}; explicit adoption/transfer required"
                    if owner_id != owner
                    else f"{name}: retired; explicit restore required"
                    for name, owner_id in _fetch(
                        cursor,
                        """SELECT c.name, c.owner_id
                             FROM awa_cron_manifests AS m,
                                  jsonb_to_recordset(m.manifest) AS d(name text)
                             JOIN awa_cron_jobs AS c ON c.name = d.name
                            WHERE m.owner_id = %s AND m.desired_hash = %s
                              AND (c.owner_id IS DISTINCT FROM %s OR c.retired_at IS NOT NULL)
                            ORDER BY c.name""",
                        [owner, plan.desired_hash, owner],
                    )
                ]
        if plan.conflicts:
            plan.blockers.append("ownership_or_retirement_conflict")

        if not plan.blockers:
            grace = max(d["grace_ms"] for d in plan.declarations)
            # Agreement continues only for the same hash and unbroken evidence.
            continuing = agreed_hash == plan.desired_hash and evidence_until is not None and evidence_until > now
            since = agreed_since if continuing and agreed_since is not None else now
            plan.agreed_since = since
            plan.grace_remaining_ms = max(0, grace - int((now - since).total_seconds() * 1000))
            if persist:
                # No blockers means exactly one live manifest, so a desired hash.
                assert plan.desired_hash is not None
                if synced_hash != plan.desired_hash:
                    sync_definitions(cursor, owner, plan.desired_hash)
                cursor.execute(
                    "UPDATE awa_cron_owners SET agreed_hash = %s, agreed_since = %s, evidence_until = %s "
                    "WHERE owner_id = %s",
                    [plan.desired_hash, since, min(d["expires_at"] for d in plan.declarations), owner],
                )
            if plan.grace_remaining_ms > 0:
                plan.blockers.append("grace_period")
        else:
            plan.agreed_since = agreed_since if agreed_hash == plan.desired_hash else None
            if persist and state and (agreed_hash, agreed_since, evidence_until) != (None, None, None):
                # Any blocker resets the clock: a conflict between two leader
                # passes can never let grace accumulate across it.
                cursor.execute(
                    "UPDATE awa_cron_owners SET agreed_hash = NULL, agreed_since = NULL, "
                    "evidence_until = NULL WHERE owner_id = %s",
                    [owner],
                )
                plan.agreed_since = None

        if apply and persist and not plan.blockers:
            revisions = ", ".join(sorted({d["revision"] for d in plan.declarations}))
            if plan.retirements:
                _fetch(
                    cursor,
                    "SELECT name FROM awa_cron_jobs WHERE owner_id = %s AND retired_at IS NULL "
                    "AND name = ANY(%s) ORDER BY name FOR UPDATE",
                    [owner, plan.retirements],
                )
                db.set_local(cursor, "awa.cron_admin", "on")
                cursor.execute(
                    "UPDATE awa_cron_jobs SET retired_at = %s, retired_by = %s, retired_revision = %s, "
                    "updated_at = %s WHERE owner_id = %s AND retired_at IS NULL AND name = ANY(%s)",
                    [now, owner, revisions, now, owner, plan.retirements],
                )
                db.set_local(cursor, "awa.cron_admin", "")
                logger.info("owner %s: retired %s", owner, ", ".join(plan.retirements),
                            extra={"event": "cron.retired", "owner": owner, "schedules": plan.retirements})
            plan.applied = True
    return plan


def publish(instance_id: str, config: ReconciliationConfig, manifest: Manifest, using: str = "default") -> Plan:
    """Publish a declaration (caller: inside the snapshot transaction, lock held).

    Stores the manifest once per hash, upserts the declaration, inserts brand
    new names owned right away, then evaluates with persist (agreement clock
    and definition sync) but never retires.
    """
    with connections[using].cursor() as cursor:
        cursor.execute(
            "INSERT INTO awa_cron_owners (owner_id) VALUES (%s) ON CONFLICT DO NOTHING", [config.owner_id]
        )
        cursor.execute(
            "INSERT INTO awa_cron_manifests (owner_id, desired_hash, manifest) VALUES (%s, %s, %s::jsonb) "
            "ON CONFLICT DO NOTHING RETURNING 1",
            [config.owner_id, manifest.desired_hash, manifest.text],
        )
        new_manifest = cursor.fetchone() is not None
        cursor.execute(
            """INSERT INTO awa_cron_declarations
                   (instance_id, owner_id, revision, desired_hash, grace_ms, last_seen_at)
               VALUES (%s, %s, %s, %s, %s, clock_timestamp())
               ON CONFLICT (instance_id) DO UPDATE
                  SET owner_id = EXCLUDED.owner_id, revision = EXCLUDED.revision,
                      desired_hash = EXCLUDED.desired_hash, grace_ms = EXCLUDED.grace_ms,
                      last_seen_at = EXCLUDED.last_seen_at""",
            [instance_id, config.owner_id, config.revision, manifest.desired_hash, config.grace_ms],
        )
        if new_manifest:
            # New names may be inserted immediately, owned.
            cursor.execute(INSERT_FROM_MANIFEST + " ON CONFLICT (name) DO NOTHING",
                           [config.owner_id, manifest.desired_hash])
    return evaluate_locked(config.owner_id, persist=True, apply=False, using=using)


def check_registration(config: ReconciliationConfig, manifest: Manifest, using: str = "default") -> None:
    """Startup check: desired names owned by another owner (or unowned) fail.

    Retired names of the same owner pass: they stay inert and show as plan
    conflicts until an operator restores them.
    """
    foreign = list(
        CronJob.objects.using(using)
        .filter(name__in=manifest.names)
        .exclude(owner_id=config.owner_id)
        .order_by("name")
        .values_list("name", flat=True)
    )
    if foreign:
        raise RegistrationConflict(
            f"cron schedules {', '.join(foreign)} are owned by another manager (or unowned); "
            f"explicit adoption/transfer to {config.owner_id!r} required"
        )


def owners(using: str = "default") -> list[str]:
    """Every owner id known to the database."""
    with connections[using].cursor() as cursor:
        return [r[0] for r in _fetch(cursor, "SELECT owner_id FROM awa_cron_owners ORDER BY owner_id")]


def reconcile(owner: str, using: str = "default") -> Plan:
    """Evaluate ``owner`` under the protocol lock and retire what is due."""
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        bound_transaction_waits(cursor)  # a frozen peer may hold the lock
        cursor.execute("SELECT awa_cron_protocol_lock()")
        plan = evaluate_locked(owner, persist=True, apply=True, using=using)
    outcome = plan.blockers[0] if plan.blockers else "converged"
    # Every owner is reconciled every sync interval: only news is INFO.
    level = logging.INFO if plan.applied and plan.retirements else logging.DEBUG
    logger.log(level, "owner %s: %s", owner, outcome,
               extra={"event": "cron.reconciled", "owner": owner, "outcome": outcome})
    return plan


def reconcile_all(using: str = "default") -> list[Plan]:
    """The leader's pass: reconcile every owner; one owner's error does not stop others."""
    plans = []
    for owner in owners(using):
        try:
            plans.append(reconcile(owner, using))
        except Exception:
            logger.exception("owner %s: reconciliation failed", owner, extra={"event": "cron.error", "owner": owner})
    return plans


def plan(owner: str, using: str = "default") -> Plan:
    """Explain what reconciliation of ``owner`` would do now (writes nothing)."""
    with db.read_only_snapshot(using):
        return evaluate_locked(owner, persist=False, apply=False, using=using)


def preview(owner: str, definitions: list[dict[str, Any]], using: str = "default") -> Plan:
    """Explain what publishing ``definitions`` for ``owner`` would change (writes nothing)."""
    validate_label(owner, "owner")
    proposed = build_manifest(definitions)
    with db.read_only_snapshot(using):
        return evaluate_locked(owner, persist=False, apply=False, proposed=proposed, using=using)
