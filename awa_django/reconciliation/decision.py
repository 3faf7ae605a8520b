"""The reconciliation decision: evidence in, :class:`Plan` out.

Pure: no database, no clock. :mod:`.persistence` loads the
:class:`Evidence` (database time included), calls :func:`decide`, then
persists the agreement and retires what the plan allows. Everything ADR-007
says about *when* an owner may retire lives here, so it is tested without a
database (``tests/unit/test_decision.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

# The rows the evidence is made of, as the store reads them (named here too).
from ..store.fleet import Agreement as Agreement
from ..store.fleet import Declaration as Declaration
from ..store.fleet import StoredRow as StoredRow


class Blocker(StrEnum):
    """Why an owner's absent schedules are not retired now (values are stable API)."""

    UNSUPPORTED_RUNTIME_PROTOCOL = "unsupported_runtime_protocol"
    ZERO_LIVE_DECLARATIONS = "zero_live_declarations"
    MIXED_DESIRED_MANIFESTS = "mixed_desired_manifests"
    OWNERSHIP_OR_RETIREMENT_CONFLICT = "ownership_or_retirement_conflict"
    GRACE_PERIOD = "grace_period"
    MANIFEST_NOT_PUBLISHED = "manifest_not_published"


@dataclass(frozen=True)
class Evidence:
    """Everything :func:`decide` needs about one owner.

    ``desired`` is the compared manifest's entries (None: not loaded, as on a
    heartbeat whose manifest is certified); ``rows`` the rows the owner owns
    or the manifest names. ``scanned`` is the publication path's conflict scan
    (name, owner) when the full manifest is not decoded. ``proposed_hash`` is
    set by a preview of a manifest that may not be published yet.
    """

    owner_id: str
    agreement: Agreement = Agreement()
    blocking_instances: tuple[str, ...] = ()
    declarations: tuple[Declaration, ...] = ()
    desired: tuple[Mapping[str, Any], ...] | None = None
    rows: tuple[StoredRow, ...] = ()
    scanned: tuple[tuple[str, str | None], ...] = ()
    proposed_hash: str | None = None


@dataclass
class Plan:
    """What reconciliation of one owner would do (or did), and why not."""

    owner_id: str
    desired_hash: str | None = None
    declarations: list[dict[str, Any]] = field(default_factory=list)
    blocking_instances: list[str] = field(default_factory=list)
    blockers: list[Blocker] = field(default_factory=list)
    additions: list[str] = field(default_factory=list)
    updates: list[str] = field(default_factory=list)
    retirements: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    agreed_since: datetime | None = None
    grace_remaining_ms: int | None = None
    evaluated_at: datetime | None = None
    applied: bool = False

    @property
    def agreed(self) -> bool:
        """One live manifest, no conflict: the agreement clock runs (grace may remain)."""
        return all(b == Blocker.GRACE_PERIOD for b in self.blockers)

    def as_json(self) -> dict[str, Any]:
        """JSON-ready dict (the ``--json`` shape of ``awa cron plan``)."""
        data = asdict(self)
        data["blockers"] = [str(b) for b in self.blockers]
        for key in ("agreed_since", "evaluated_at"):
            data[key] = data[key].isoformat() if data[key] else None
        for decl in data["declarations"]:
            decl["expires_at"] = decl["expires_at"].isoformat()
        return data


def single_hash(declarations: tuple[Declaration, ...]) -> str | None:
    """The desired hash when every live declaration names the same one."""
    hashes = {d.desired_hash for d in declarations}
    return hashes.pop() if len(hashes) == 1 else None


def owned_elsewhere(name: str, owner_id: str | None) -> str:
    return f"{name}: owned by {owner_id or '<unowned>'}; explicit adoption/transfer required"


def retired_conflict(name: str) -> str:
    return f"{name}: retired; explicit restore required"


def describe_changes(plan: Plan, desired: tuple[Mapping[str, Any], ...], rows: tuple[StoredRow, ...]) -> None:
    """Fill additions, updates, retirements and conflicts of ``plan``."""
    wanted = {e["name"]: e for e in desired}
    by_name = {r.name: r for r in rows}
    for name, entry in sorted(wanted.items()):
        row = by_name.get(name)
        if row is None:
            plan.additions.append(name)
        elif row.owner_id != plan.owner_id:
            plan.conflicts.append(owned_elsewhere(name, row.owner_id))
        elif row.retired:
            plan.conflicts.append(retired_conflict(name))
        elif dict(row.definition) != dict(entry):
            plan.updates.append(name)
    plan.retirements = sorted(
        r.name for r in rows if r.owner_id == plan.owner_id and not r.retired and r.name not in wanted
    )


def _manifest_blockers(plan: Plan, evidence: Evidence) -> None:
    if evidence.blocking_instances:
        plan.blockers.append(Blocker.UNSUPPORTED_RUNTIME_PROTOCOL)
    hashes = {d.desired_hash for d in evidence.declarations}
    if not hashes:
        plan.blockers.append(Blocker.ZERO_LIVE_DECLARATIONS)
    elif len(hashes) > 1:
        plan.blockers.append(Blocker.MIXED_DESIRED_MANIFESTS)
    else:
        plan.desired_hash = hashes.pop()
    if evidence.proposed_hash is not None:
        if plan.desired_hash != evidence.proposed_hash:
            plan.blockers.append(Blocker.MANIFEST_NOT_PUBLISHED)
        plan.desired_hash = evidence.proposed_hash


def _agreement(plan: Plan, evidence: Evidence, now: datetime) -> None:
    state = evidence.agreement
    if plan.blockers:
        plan.agreed_since = state.agreed_since if state.agreed_hash == plan.desired_hash else None
        return
    grace = max(d.grace_ms for d in evidence.declarations)
    # Agreement continues only for the same hash and unbroken evidence.
    continuing = (
        state.agreed_hash == plan.desired_hash
        and state.evidence_until is not None
        and state.evidence_until > now
    )
    since = state.agreed_since if continuing and state.agreed_since is not None else now
    plan.agreed_since = since
    plan.grace_remaining_ms = max(0, grace - int((now - since).total_seconds() * 1000))
    if plan.grace_remaining_ms > 0:
        plan.blockers.append(Blocker.GRACE_PERIOD)


def decide(evidence: Evidence, now: datetime) -> Plan:
    """What reconciliation of ``evidence.owner_id`` may do at database time ``now``."""
    plan = Plan(
        owner_id=evidence.owner_id,
        evaluated_at=now,
        declarations=[asdict(d) for d in evidence.declarations],
        blocking_instances=list(evidence.blocking_instances),
    )
    _manifest_blockers(plan, evidence)
    if evidence.desired is not None:
        describe_changes(plan, evidence.desired, evidence.rows)
    plan.conflicts.extend(
        owned_elsewhere(name, owner) if owner != evidence.owner_id else retired_conflict(name)
        for name, owner in evidence.scanned
    )
    if plan.conflicts:
        plan.blockers.append(Blocker.OWNERSHIP_OR_RETIREMENT_CONFLICT)
    _agreement(plan, evidence, now)
    return plan


def evidence_until(evidence: Evidence) -> datetime:
    """Until when the live declarations vouch for the agreement (the first expiry)."""
    return min(d.expires_at for d in evidence.declarations)


def retirement_revisions(evidence: Evidence) -> str:
    """The revisions recorded on rows this reconciliation retires."""
    return ", ".join(sorted({d.revision for d in evidence.declarations}))
