"""The fleet's and maintenance's typed rows: each built from a row in one place."""

from __future__ import annotations

from datetime import UTC, datetime

from awa_django.store import fleet, maintenance

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_declaration__from_row() -> None:
    row = fleet.Declaration.from_row(("i-1", "rev", "h" * 64, 5000, NOW))
    assert row == fleet.Declaration("i-1", "rev", "h" * 64, 5000, NOW)


def test_agreement__from_row_and_from_no_row() -> None:
    assert fleet.Agreement.from_row(None) == fleet.Agreement()
    assert fleet.Agreement.from_row(("a", "b", NOW, NOW)).agreed_since == NOW


def test_stored_row__from_row_decodes_the_definition_or_reads_it_as_empty() -> None:
    row = fleet.StoredRow.from_row(("n", "team", False, '{"name": "n", "args": []}'))
    assert row == fleet.StoredRow("n", "team", False, {"name": "n", "args": []})
    too_deep = "[" * 200 + "]" * 200
    assert fleet.StoredRow.from_row(("n", None, True, '{"args": ' + too_deep + "}")).definition == {}


def test_schedule_ownership_and_live_leader__from_row() -> None:
    assert fleet.ScheduleOwnership.from_row(("n", None, 1)) == fleet.ScheduleOwnership("n", None, True)
    leader = fleet.LiveLeader.from_row(("host", 42, NOW))
    assert str(leader) == "host:42" and leader.last_seen_at == NOW


def test_maintenance_rows__from_row() -> None:
    assert maintenance.TupleCounts.from_row(None) == maintenance.TupleCounts(0, 0, 0)
    assert maintenance.TupleCounts.from_row((10, None, 2)) == maintenance.TupleCounts(10, 0, 2)
    holder = maintenance.TransactionHolder.from_row((7, "app", None, "idle in transaction", NOW, 61.5))
    assert holder.application == "" and holder.open_seconds == 61.5
    index = maintenance.IndexDefinition.from_row(("awa_jobs_ready", 8192, None, ["queue", "id"]))
    assert index.keys == ("queue", "id") and index.predicate is None
