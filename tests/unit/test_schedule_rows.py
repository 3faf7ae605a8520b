"""The typed rows of the schedules family: each built in one place, from a row."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

from awa_django.store.schedule_rows import NEVER, PlannedFire, ScheduleRow
from awa_django.store.slot_history import SlotOutcome

CREATED = datetime(2026, 1, 1, tzinfo=UTC)
LAST = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def due_row(**changes: object) -> dict[str, object]:
    """A row as the due queries return it (every column they select)."""
    row: dict[str, object] = {
        "name": "nightly",
        "cron_expr": "0 3 * * *",
        "every_seconds": None,
        "timezone": "Europe/Berlin",
        "missed_fire_policy": "catch_up",
        "kind": "tests.testapp.tasks.record",
        "parked_reason": None,
        "starting_deadline": 30.0,
        "jitter": 0.0,
        "last_enqueued_at": LAST,
        "prev_text": "2026-03-01 12:00:00+00",
        "created_at": CREATED,
        "created_text": "2026-01-01 00:00:00+00",
        "anchor": None,
        "anchor_text": None,
        "args_type": "object",
        "args_args_type": "array",
        "args_kwargs_type": "object",
        "args_keys": ["args", "kwargs"],
        "args_bytes": 30,
        "metadata_type": "object",
        "metadata_bytes": 2,
        "args_depth": 2,
        "metadata_depth": 1,
        "now": LAST,
    }
    row.update(changes)
    return row


def test_schedule_row__from_row_keeps_every_column_of_the_due_queries() -> None:
    row = due_row()
    typed = ScheduleRow.from_row(row)
    assert {f.name for f in dataclasses.fields(ScheduleRow)} == set(row)
    assert {**dataclasses.asdict(typed), "args_keys": list(typed.args_keys or ())} == row


def test_schedule_row__from_row_ignores_columns_it_does_not_plan_with() -> None:
    typed = ScheduleRow.from_row(due_row(slot=LAST, slot_in=0.4))
    assert typed == ScheduleRow.from_row(due_row())


def test_schedule_row__at_slot_plans_as_of_the_slot() -> None:
    slot = datetime(2026, 3, 1, 12, 1, tzinfo=UTC)
    assert ScheduleRow.from_row(due_row()).at_slot(slot).now == slot


def test_planned_fire__from_row_carries_the_cas_values_and_plans_nothing() -> None:
    entry = PlannedFire.from_row(ScheduleRow.from_row(due_row(anchor_text="2026-01-01 00:00:00+00")))
    assert entry.as_json() == {
        "name": "nightly",
        "prev": LAST.isoformat(),
        "created_at": CREATED.isoformat(),
        "prev_text": "2026-03-01 12:00:00+00",
        "created_text": "2026-01-01 00:00:00+00",
        "cron_expr": "0 3 * * *",
        "every_seconds": None,
        "anchor": "2026-01-01 00:00:00+00",
        "timezone": "Europe/Berlin",
        "missed_fire_policy": "catch_up",
        "starting_deadline": 30.0,
        "fires": [],
        "missed": [],
        "missed_count": 0,
        "advance": None,
        "next_fire_at": NEVER,
        "park": None,
    }


def test_planned_fire__as_json_round_trips_through_its_fields() -> None:
    entry = dataclasses.replace(
        PlannedFire.from_row(ScheduleRow.from_row(due_row())),
        fires=("2026-03-01T13:00:00+00:00",),
        advance="2026-03-01T13:00:00+00:00",
        next_fire_at="2026-03-02T02:00:00+00:00",
    )
    data = entry.as_json()
    rebuilt = PlannedFire(**{**data, "fires": tuple(data["fires"]), "missed": tuple(data["missed"])})
    assert rebuilt == entry


def test_planned_fire__a_row_without_cas_values_sends_nulls() -> None:
    row = ScheduleRow.from_row(due_row(last_enqueued_at=None, prev_text=None, created_at=None))
    entry = PlannedFire.from_row(row).as_json()
    assert entry["prev"] is None and entry["created_at"] is None


def test_slot_outcome__from_row_reads_a_tuple_or_a_mapping() -> None:
    row = (LAST, "skipped_overlap", None, 7)
    assert SlotOutcome.from_row(row) == SlotOutcome(LAST, "skipped_overlap", None, 7)
    mapping = {"slot": LAST, "outcome": "skipped_overlap", "job_id": None, "blocked_by": 7}
    assert SlotOutcome.from_row(mapping) == SlotOutcome.from_row(row)
    assert SlotOutcome.from_row(row).as_json()["slot"] == LAST.isoformat()
