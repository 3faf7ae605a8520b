"""decide(evidence, now): every blocker and outcome, without a database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from awa_django.reconciliation.decision import (
    Agreement,
    Blocker,
    Declaration,
    Evidence,
    StoredRow,
    decide,
    evidence_until,
    retirement_revisions,
    single_hash,
)
from tests.helpers.reconcile import PLAN_KEYS

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
LATER = NOW + timedelta(seconds=30)


def declaration(
    instance: str = "i1",
    desired: str = "h1",
    grace_ms: int = 0,
    revision: str = "r1",
    expires_at: datetime = LATER,
) -> Declaration:
    return Declaration(instance, revision, desired, grace_ms, expires_at)


def entry(name: str, **changes: Any) -> dict[str, Any]:
    return {"name": name, "cron_expr": "0 * * * *", **changes}


def row(name: str, owner: str | None = "billing", retired: bool = False, **changes: Any) -> StoredRow:
    return StoredRow(name, owner, retired, entry(name, **changes))


def evidence(*declarations: Declaration, **fields: Any) -> Evidence:
    return Evidence("billing", declarations=declarations, **fields)


def test_blocker_values_are_the_stable_strings() -> None:
    assert [str(b) for b in Blocker] == [
        "unsupported_runtime_protocol",
        "zero_live_declarations",
        "mixed_desired_manifests",
        "ownership_or_retirement_conflict",
        "grace_period",
        "manifest_not_published",
    ]


def test_zero_live_declarations_blocks_and_never_means_desired_empty() -> None:
    plan = decide(evidence(rows=(row("invoice"),)), NOW)
    assert plan.blockers == [Blocker.ZERO_LIVE_DECLARATIONS]
    assert plan.desired_hash is None and plan.retirements == [] and plan.agreed_since is None
    assert not plan.agreed and plan.evaluated_at == NOW


def test_mixed_manifests_block() -> None:
    plan = decide(evidence(declaration("i1", "h1"), declaration("i2", "h2")), NOW)
    assert plan.blockers == [Blocker.MIXED_DESIRED_MANIFESTS] and plan.desired_hash is None


def test_an_old_runtime_blocks_even_with_one_manifest() -> None:
    plan = decide(evidence(declaration(), blocking_instances=("old",), desired=()), NOW)
    assert plan.blockers == [Blocker.UNSUPPORTED_RUNTIME_PROTOCOL]
    assert plan.blocking_instances == ["old"] and plan.desired_hash == "h1"


def test_converged_without_grace_retires_absent_owned_rows_only() -> None:
    rows = (row("keep"), row("gone"), row("old", retired=True), row("foreign", owner="mail"))
    plan = decide(evidence(declaration(), desired=(entry("keep"),), rows=rows), NOW)
    assert plan.blockers == [] and plan.agreed
    assert plan.retirements == ["gone"] and plan.additions == [] and plan.updates == []
    assert plan.agreed_since == NOW and plan.grace_remaining_ms == 0


def test_additions_updates_and_conflicts_are_described() -> None:
    desired = (
        entry("new"),
        entry("changed", cron_expr="5 * * * *"),
        entry("taken"),
        entry("tomb"),
        entry("orphan"),
        entry("same"),
    )
    rows = (
        row("changed"),
        row("taken", owner="mail"),
        row("tomb", retired=True),
        row("orphan", owner=None),
        row("same"),
    )
    plan = decide(evidence(declaration(), desired=desired, rows=rows), NOW)
    assert plan.additions == ["new"] and plan.updates == ["changed"]
    assert plan.conflicts == [
        "orphan: owned by <unowned>; explicit adoption/transfer required",
        "taken: owned by mail; explicit adoption/transfer required",
        "tomb: retired; explicit restore required",
    ]
    assert plan.blockers == [Blocker.OWNERSHIP_OR_RETIREMENT_CONFLICT] and not plan.agreed


def test_the_publication_scan_reports_conflicts_without_the_manifest() -> None:
    plan = decide(evidence(declaration(), scanned=(("taken", "mail"), ("tomb", "billing"))), NOW)
    assert plan.conflicts == [
        "taken: owned by mail; explicit adoption/transfer required",
        "tomb: retired; explicit restore required",
    ]
    assert plan.blockers == [Blocker.OWNERSHIP_OR_RETIREMENT_CONFLICT]


def test_grace_starts_now_for_a_new_agreement() -> None:
    plan = decide(evidence(declaration(grace_ms=60_000), declaration("i2", grace_ms=10_000), desired=()), NOW)
    assert plan.blockers == [Blocker.GRACE_PERIOD] and plan.agreed
    assert plan.agreed_since == NOW and plan.grace_remaining_ms == 60_000


@pytest.mark.parametrize(
    ("state", "since", "remaining"),
    [
        # Same hash, unbroken evidence: the clock continues.
        (
            Agreement(agreed_hash="h1", agreed_since=NOW - timedelta(seconds=45), evidence_until=LATER),
            NOW - timedelta(seconds=45),
            15_000,
        ),
        # Evidence lapsed (a missed window): the clock restarts.
        (
            Agreement(agreed_hash="h1", agreed_since=NOW - timedelta(seconds=45), evidence_until=NOW),
            NOW,
            60_000,
        ),
        # Another hash was agreed: the clock restarts.
        (
            Agreement(agreed_hash="h0", agreed_since=NOW - timedelta(seconds=45), evidence_until=LATER),
            NOW,
            60_000,
        ),
    ],
)
def test_grace_continues_only_for_the_same_hash_and_unbroken_evidence(
    state: Agreement, since: datetime, remaining: int
) -> None:
    plan = decide(evidence(declaration(grace_ms=60_000), agreement=state, desired=()), NOW)
    assert plan.agreed_since == since and plan.grace_remaining_ms == remaining
    assert plan.blockers == [Blocker.GRACE_PERIOD]


def test_grace_elapsed_converges() -> None:
    state = Agreement(agreed_hash="h1", agreed_since=NOW - timedelta(minutes=5), evidence_until=LATER)
    plan = decide(evidence(declaration(grace_ms=60_000), agreement=state, desired=()), NOW)
    assert plan.blockers == [] and plan.grace_remaining_ms == 0


def test_a_blocker_keeps_the_recorded_agreement_only_for_the_same_hash() -> None:
    state = Agreement(agreed_hash="h1", agreed_since=NOW - timedelta(seconds=5), evidence_until=LATER)
    kept = decide(evidence(declaration(), agreement=state, blocking_instances=("old",)), NOW)
    assert kept.agreed_since == NOW - timedelta(seconds=5) and kept.grace_remaining_ms is None
    dropped = decide(evidence(declaration("i1", "h1"), declaration("i2", "h2"), agreement=state), NOW)
    assert dropped.agreed_since is None


def test_preview_of_an_unpublished_manifest() -> None:
    plan = decide(evidence(declaration(), desired=(entry("new"),), proposed_hash="h9"), NOW)
    assert plan.blockers == [Blocker.MANIFEST_NOT_PUBLISHED] and plan.desired_hash == "h9"
    assert plan.additions == ["new"]
    published = decide(evidence(declaration(desired="h9"), desired=(), proposed_hash="h9"), NOW)
    assert published.blockers == []
    nobody = decide(evidence(desired=(), proposed_hash="h9"), NOW)
    assert nobody.blockers == [Blocker.ZERO_LIVE_DECLARATIONS, Blocker.MANIFEST_NOT_PUBLISHED]


def test_blockers_are_listed_in_a_fixed_order() -> None:
    plan = decide(
        evidence(
            declaration("i1", "h1"),
            declaration("i2", "h2"),
            blocking_instances=("old",),
            scanned=(("taken", "mail"),),
            proposed_hash="h3",
        ),
        NOW,
    )
    assert plan.blockers == [
        Blocker.UNSUPPORTED_RUNTIME_PROTOCOL,
        Blocker.MIXED_DESIRED_MANIFESTS,
        Blocker.MANIFEST_NOT_PUBLISHED,
        Blocker.OWNERSHIP_OR_RETIREMENT_CONFLICT,
    ]


def test_as_json_is_the_plan_shape_with_plain_strings() -> None:
    data = decide(evidence(declaration(grace_ms=1000), desired=()), NOW).as_json()
    assert data["blockers"] == ["grace_period"] and type(data["blockers"][0]) is str
    assert data["declarations"] == [
        {
            "instance_id": "i1",
            "revision": "r1",
            "desired_hash": "h1",
            "grace_ms": 1000,
            "expires_at": LATER.isoformat(),
        }
    ]
    assert data["agreed_since"] == NOW.isoformat() and data["evaluated_at"] == NOW.isoformat()
    assert set(data) == PLAN_KEYS


def test_helpers() -> None:
    a, b = (
        declaration("i1", revision="r2", expires_at=LATER),
        declaration("i2", revision="r1", expires_at=NOW),
    )
    found = evidence(a, b)
    assert evidence_until(found) == NOW and retirement_revisions(found) == "r1, r2"
    assert single_hash((a, b)) == "h1" and single_hash(()) is None
    assert single_hash((a, declaration("i3", "h2"))) is None
