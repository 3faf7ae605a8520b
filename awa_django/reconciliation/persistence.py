"""Owner-scoped reconciliation (ADR-007 "#481"): evidence, decision, retirement.

An authoritative deployment (``AWA_AUTHORITATIVE = True``) declares the
*complete* desired schedule set of its owner (``AWA_OWNER``). Every runtime
publishes that manifest with its snapshot; the leader retires owned schedules
absent from it only when every live runtime of the fleet speaks the protocol,
all live declarations of the owner agree on one manifest, nothing conflicts,
and the agreement has held for the grace period. An outage never counts as
"desired empty": with no live declaration nothing is retired.

Each entry point composes three steps: load the evidence (:mod:`.evidence`),
decide (:func:`.decision.decide`, pure), then persist the agreement and
retire (this module). All decisions use database time. Writers serialise on
the protocol lock (``awa_cron_protocol_lock()``): lock order is protocol
lock, owner row, schedule rows by name. Read-only plans use one REPEATABLE
READ snapshot and never wait for that lock.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from django.db import connections, transaction

from ..conf import conf
from ..db import sessions
from ..db.guards import bound_transaction_waits
from ..declarations.runtime import RUNTIME_OWNER, is_reserved_owner
from ..store import fleet as store
from ..store import schedule_upsert as upsert
from ..validation import validate_label
from . import evidence
from .decision import Blocker, Evidence, Plan, decide, evidence_until, retirement_revisions, single_hash
from .evidence import FRESH_FOR, UnreadableManifest
from .manifest import Manifest, build_manifest

logger = logging.getLogger("awa_django.reconciliation")

__all__ = [
    "BLOCKERS",
    "CRON_PROTOCOL_VERSION",
    "FRESH_FOR",
    "Blocker",
    "Plan",
    "ReconciliationConfig",
    "RegistrationConflict",
    "UnreadableManifest",
    "check_registration",
    "configured",
    "owners",
    "plan",
    "preview",
    "publish",
    "reconcile",
    "reconcile_all",
    "runtime_schedule_names",
    "validate_label",
]

# Must equal the SQL function awa_cron_protocol_version().
CRON_PROTOCOL_VERSION = 1

BLOCKERS = tuple(Blocker)


class RegistrationConflict(RuntimeError):
    """Desired names are owned by another owner, or unowned (adopt them first)."""


@dataclass(frozen=True)
class ReconciliationConfig:
    """This deployment's authoritative registration."""

    owner_id: str
    revision: str
    grace_ms: int


def configured() -> ReconciliationConfig | None:
    """The config from settings, or None when the deployment is additive."""
    if not conf.AUTHORITATIVE:
        return None
    grace = conf.RECONCILE_GRACE
    if grace < 0:
        raise ValueError("AWA_RECONCILE_GRACE must be >= 0 seconds")
    owner_id = validate_label(conf.OWNER, "AWA_OWNER")
    if is_reserved_owner(owner_id):
        raise ValueError(f"AWA_OWNER {owner_id!r} is reserved for runtime schedules; choose another owner id")
    return ReconciliationConfig(
        owner_id=owner_id,
        revision=validate_label(conf.REVISION, "AWA_REVISION"),
        grace_ms=int(grace * 1000),
    )


# -- evidence -------------------------------------------------------------------


def _compared(found: Evidence, cursor: Any, using: str) -> Evidence:
    """``found`` with the single live manifest and the rows it is compared with."""
    desired_hash = single_hash(found.declarations)
    if desired_hash is None:
        return found
    entries = evidence.published_manifest(cursor, found.owner_id, desired_hash)
    return _with_rows(replace(found, desired=entries), using)


def _with_rows(found: Evidence, using: str) -> Evidence:
    names = [e["name"] for e in found.desired or ()]
    return replace(found, rows=evidence.stored_rows(found.owner_id, names, using))


def _scanned(found: Evidence, cursor: Any) -> Evidence:
    """The publication path: a conflict scan only while the manifest is not certified.

    Healthy heartbeats (``synced_hash`` equals the live hash) never decode it.
    """
    desired_hash = single_hash(found.declarations)
    if desired_hash is None or found.agreement.synced_hash == desired_hash:
        return found
    return replace(found, scanned=evidence.conflict_scan(cursor, found.owner_id, desired_hash))


# -- persist and retire -----------------------------------------------------------


def persist_agreement(cursor: Any, found: Evidence, plan: Plan) -> None:
    """Write the agreement clock (and sync definitions) or reset it on any blocker.

    Caller: under the protocol lock, the owner row locked by the evidence.
    """
    state = found.agreement
    if plan.agreed:
        # Agreed means exactly one live manifest, so a desired hash.
        assert plan.desired_hash is not None
        if state.synced_hash != plan.desired_hash:
            sync_definitions(cursor, found.owner_id, plan.desired_hash)
        store.record_agreement(
            cursor, found.owner_id, plan.desired_hash, plan.agreed_since, evidence_until(found)
        )
    elif (state.agreed_hash, state.agreed_since, state.evidence_until) != (None, None, None):
        # Any blocker resets the clock: a conflict between two leader passes
        # can never let grace accumulate across it.
        store.reset_agreement(cursor, found.owner_id)
        plan.agreed_since = None


def sync_definitions(cursor: Any, owner: str, desired_hash: str) -> None:
    """Make the owned rows match the agreed manifest (manager context).

    Missing names are inserted owned; owned active rows get the desired
    definition; rows of other owners and retired rows are never touched.
    """
    with sessions.owner_context(cursor, owner):
        upsert.sync_owned(cursor, owner, desired_hash)
        store.mark_owner_synced(cursor, owner, desired_hash)


def retire_absent(cursor: Any, found: Evidence, plan: Plan, now: datetime) -> None:
    """Retire the plan's retirements when nothing blocks (operator context)."""
    if plan.blockers:
        return
    owner = found.owner_id
    if plan.retirements:
        store.lock_active_owned_schedules(cursor, owner, plan.retirements)
        with sessions.operator_context(cursor):
            store.retire_owned_schedules(cursor, owner, plan.retirements, now, retirement_revisions(found))
        logger.info(
            "owner %s: retired %s",
            owner,
            ", ".join(plan.retirements),
            extra={"event": "cron.retired", "owner": owner, "schedules": plan.retirements},
        )
    plan.applied = True


# -- entry points -----------------------------------------------------------------


def publish(
    instance_id: str, config: ReconciliationConfig, manifest: Manifest, using: str = "default"
) -> Plan:
    """Publish a declaration (caller: inside the snapshot transaction, lock held).

    Stores the manifest once per hash, upserts the declaration, inserts brand
    new names owned right away, then persists the agreement clock (and the
    definition sync) but never retires.
    """
    with connections[using].cursor() as cursor:
        _declare(cursor, instance_id, config, manifest)
        now = evidence.clock(cursor)
        found = _scanned(evidence.fleet(cursor, config.owner_id, now, lock=True), cursor)
        plan = decide(found, now)
        persist_agreement(cursor, found, plan)
    return plan


def _declare(cursor: Any, instance_id: str, config: ReconciliationConfig, manifest: Manifest) -> None:
    new_manifest = store.store_declaration(
        cursor,
        instance_id,
        config.owner_id,
        config.revision,
        config.grace_ms,
        manifest.desired_hash,
        manifest.text,
    )
    if new_manifest:
        # New names may be inserted immediately, owned.
        upsert.insert_new_names(cursor, config.owner_id, manifest.desired_hash)


def check_registration(config: ReconciliationConfig, manifest: Manifest, using: str = "default") -> None:
    """Startup check: desired names owned by another owner (or unowned) fail.

    Retired names of the same owner pass: they stay inert and show as plan
    conflicts until an operator restores them.
    """
    foreign = store.names_owned_elsewhere(manifest.names, config.owner_id, using)
    if foreign:
        raise RegistrationConflict(
            f"cron schedules {', '.join(foreign)} are owned by another manager (or unowned); "
            f"explicit adoption/transfer to {config.owner_id!r} required"
        )


def owners(using: str = "default") -> list[str]:
    """Every owner id known to the database."""
    return store.owner_ids(using)


def runtime_schedule_names(using: str = "default") -> list[str]:
    """Names of the runtime schedules (owner ``awa:runtime``, not retired): never reconciled."""
    return store.active_schedule_names_of_owner(RUNTIME_OWNER, using)


def reconcile(owner: str, using: str = "default") -> Plan:
    """Evaluate ``owner`` under the protocol lock and retire what is due."""
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        bound_transaction_waits(cursor)  # a frozen peer may hold the lock
        store.take_protocol_lock(cursor)
        now = evidence.clock(cursor)
        found = _compared(evidence.fleet(cursor, owner, now, lock=True), cursor, using)
        result = decide(found, now)
        persist_agreement(cursor, found, result)
        retire_absent(cursor, found, result, now)
    outcome = result.blockers[0] if result.blockers else "converged"
    # Every owner is reconciled every sync interval: only news is INFO.
    level = logging.INFO if result.applied and result.retirements else logging.DEBUG
    logger.log(
        level,
        "owner %s: %s",
        owner,
        outcome,
        extra={"event": "cron.reconciled", "owner": owner, "outcome": str(outcome)},
    )
    return result


def reconcile_all(using: str = "default", reported: dict[str, str] | None = None) -> list[Plan]:
    """The leader's pass: reconcile every owner; one owner's error does not stop others.

    The runtime owner is never reconciled: no deployment declares its
    schedules, so none is ever absent from a manifest. An owner whose stored
    manifest cannot be read (:class:`UnreadableManifest`) is logged as an error
    once per reason while the leader's ``reported`` holds it, then at DEBUG.
    """
    reported = {} if reported is None else reported
    plans = []
    for owner in owners(using):
        if owner == RUNTIME_OWNER:
            continue
        try:
            plans.append(reconcile(owner, using))
        except UnreadableManifest as exc:
            level = logging.DEBUG if reported.get(owner) == str(exc) else logging.ERROR
            reported[owner] = str(exc)
            logger.log(
                level,
                "reconciliation failed: %s",
                exc,
                extra={"event": "cron.error", "owner": owner, "desired_hash": exc.desired_hash},
            )
        except Exception:
            logger.exception(
                "owner %s: reconciliation failed", owner, extra={"event": "cron.error", "owner": owner}
            )
        else:
            reported.pop(owner, None)
    return plans


def plan(owner: str, using: str = "default") -> Plan:
    """Explain what reconciliation of ``owner`` would do now (writes nothing)."""
    with sessions.read_only_snapshot(using), connections[using].cursor() as cursor:
        now = evidence.clock(cursor)
        found = _compared(evidence.fleet(cursor, owner, now, lock=False), cursor, using)
        return decide(found, now)


def preview(owner: str, definitions: list[dict[str, Any]], using: str = "default") -> Plan:
    """Explain what publishing ``definitions`` for ``owner`` would change (writes nothing)."""
    validate_label(owner, "owner")
    proposed = build_manifest(definitions)
    with sessions.read_only_snapshot(using), connections[using].cursor() as cursor:
        now = evidence.clock(cursor)
        found = replace(
            evidence.fleet(cursor, owner, now, lock=False),
            desired=proposed.entries,
            proposed_hash=proposed.desired_hash,
        )
        return decide(_with_rows(found, using), now)
