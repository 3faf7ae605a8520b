"""Fires planned before their slot (prefire.py): never early, never twice,
and nothing a pause, a change or a stale plan forbids."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.utils import timezone

from awa_django.leader import prefire
from awa_django.models import CronJob, Job
from tests.factories import CronJobFactory
from tests.helpers.database import operator_context
from tests.helpers.fires import prepared_for, set_slot

pytestmark = pytest.mark.django_db

EVERY_SECOND = "* * * * * *"


def jobs(name: str) -> list[Job]:
    return list(Job.objects.filter(metadata__cron_name=name).order_by("id"))


def test_prepare__nothing_when_the_next_slot_is_further_than_ahead() -> None:
    CronJobFactory(name="far", cron_expr=EVERY_SECOND)
    set_slot(["far"], 30)
    assert prefire.prepare(ahead=5) is None


def test_prepare__reads_only_active_rows_of_the_earliest_slot_in_batches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    names = [f"s{i}" for i in range(5)]
    for name in [*names, "paused", "later"]:
        CronJobFactory(name=name, cron_expr=EVERY_SECOND)
    with operator_context():
        CronJob.objects.filter(name="paused").update(paused_at=timezone.now())
    monkeypatch.setattr("awa_django.leader.evaluator.FIRE_BATCH_SIZE", 2)
    set_slot(["later"], 20)
    prepared = prepared_for([*names, "paused"], rows_limit=4)
    assert prepared.evaluated == 4
    assert [[e.name for e in batch] for batch in prepared.batches] == [["s0", "s1"], ["s2", "s3"]]
    assert all(e.fires == (prepared.slot.isoformat(),) for batch in prepared.batches for e in batch)


def test_batch_size__a_lane_per_hundred_rows_up_to_the_lanes_then_batches_of_the_batch_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(prefire, "FIRE_LANES", 4)
    monkeypatch.setattr(prefire, "LANE_ROWS", 100)
    monkeypatch.setattr("awa_django.leader.evaluator.FIRE_BATCH_SIZE", 500)
    assert prefire.batch_size(1) == 1
    assert prefire.batch_size(100) == 100  # one lane
    assert prefire.batch_size(150) == 75  # two lanes
    assert prefire.batch_size(1000) == 250  # four lanes
    assert prefire.batch_size(2000) == 500  # four lanes, batches capped
    assert prefire.batch_size(3000) == 500  # more batches than lanes


def test_prepare__batches_carry_their_json_made_before_the_slot() -> None:
    import json

    from awa_django.leader.firing import SerializedPlan

    CronJobFactory(name="ahead", cron_expr=EVERY_SECOND)
    prepared = prepared_for(["ahead"])
    (batch,) = prepared.batches
    assert isinstance(batch, SerializedPlan)
    assert json.loads(batch.text) == [entry.as_json() for entry in batch] == batch.entries


def test_fire_prepared__never_before_the_slot_and_once() -> None:
    CronJobFactory(name="tick", cron_expr=EVERY_SECOND)
    prepared = prepared_for(["tick"])
    result = prefire.fire_prepared(prepared)
    assert result is not None and result.fired == 1
    (job,) = jobs("tick")
    assert job.metadata["cron_fire_at"] == prepared.slot.strftime("%Y-%m-%dT%H:%M:%S+00:00")
    assert job.created_at >= prepared.slot and job.run_at >= prepared.slot
    row = CronJob.objects.get(name="tick")
    assert row.last_enqueued_at == prepared.slot and row.next_fire_at > prepared.slot
    # The same plan again (a retry, a deposed leader): its CAS is lost.
    again = prefire.fire_prepared(prepared)
    assert again is not None and again.fired == 0
    assert len(jobs("tick")) == 1


def test_fire_prepared__a_row_paused_or_changed_since_is_not_fired() -> None:
    CronJobFactory(name="paused", cron_expr=EVERY_SECOND)
    CronJobFactory(name="changed", cron_expr=EVERY_SECOND)
    CronJobFactory(name="kept", cron_expr=EVERY_SECOND)
    prepared = prepared_for(["paused", "changed", "kept"])
    with operator_context():
        CronJob.objects.filter(name="paused").update(paused_at=timezone.now())
    CronJob.objects.filter(name="changed").update(cron_expr="*/2 * * * * *")
    result = prefire.fire_prepared(prepared)
    assert result is not None and result.fired == 1
    assert jobs("paused") == [] and jobs("changed") == [] and len(jobs("kept")) == 1
    assert CronJob.objects.get(name="changed").next_fire_at is None  # re-evaluated by the next pass


def test_fire_prepared__drops_a_stale_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    CronJobFactory(name="late", cron_expr=EVERY_SECOND)
    prepared = prepared_for(["late"])
    # Any delay at all now counts as stale: the plan must be dropped unsent.
    monkeypatch.setattr(prefire, "STALE_AFTER", -3600.0)
    assert prefire.fire_prepared(prepared) is None
    assert jobs("late") == []
    assert CronJob.objects.get(name="late").next_fire_at == prepared.slot


def test_fire_prepared__a_stop_before_the_slot_sends_nothing() -> None:
    CronJobFactory(name="stopped", cron_expr=EVERY_SECOND)
    prepared = prepared_for(["stopped"])
    stop = threading.Event()
    stop.set()
    assert prefire.fire_prepared(prepared, stop=stop) is None
    assert jobs("stopped") == []
    assert CronJob.objects.get(name="stopped").next_fire_at == prepared.slot


def test_fire_prepared__a_row_the_statement_rejects_is_parked_and_the_rest_fire_at_the_slot() -> None:
    from django.db import connection

    for name in ("a", "rejected", "z"):
        CronJobFactory(name=name, cron_expr=EVERY_SECOND, queue="mail" if name == "rejected" else "default")
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE awa_jobs ADD CONSTRAINT no_mail CHECK (queue <> 'mail')")
    prepared = prepared_for(["a", "rejected", "z"])
    result = prefire.fire_prepared(prepared)
    assert result is not None and result.fired == 2
    fired = list(Job.objects.order_by("id"))
    assert sorted(j.metadata["cron_name"] for j in fired) == ["a", "z"]
    assert all(j.created_at >= prepared.slot for j in fired)  # row by row, still not before the slot
    assert CronJob.objects.get(name="rejected").parked_at is not None


def test_fire_prepared__a_stale_plan_whose_statement_fails_fires_nothing_row_by_row(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from django.db import connection

    for name in ("a", "rejected"):
        CronJobFactory(name=name, cron_expr=EVERY_SECOND, queue="mail" if name == "rejected" else "default")
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE awa_jobs ADD CONSTRAINT no_mail CHECK (queue <> 'mail')")
    prepared = prepared_for(["a", "rejected"])
    # The set statement fails before its freshness check can drop the plan
    # (a fault of the statement itself): the row-by-row retry checks again.
    from awa_django.store import fires

    def failing(cursor: Any, plan_text: str, slot: Any, stale: float) -> Any:
        cursor.execute("SELECT 1/0 WHERE %s IS NOT NULL", [slot])

    monkeypatch.setattr(fires, "fire_at_slot", failing)
    monkeypatch.setattr(prefire, "STALE_AFTER", -3600.0)
    assert prefire.fire_prepared(prepared) is None
    assert not Job.objects.exists()
    assert CronJob.objects.get(name="rejected").parked_at is None
