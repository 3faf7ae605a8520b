"""Interval schedules (``every=``): declared in code, in AWA_SCHEDULES and at
runtime; fired by the evaluator at exactly the slots anchor + k * every, once
each, with pause, trigger, catch-up and coalesce as for a cron expression;
refused with errors naming the field; described in words by the CLI.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.core.checks import run_checks
from django.core.management import CommandError, call_command
from django.db import IntegrityError, connection, transaction
from django.test.utils import override_settings

from awa_django.declarations import build_schedule
from awa_django.declarations.declaration import periodic, registry
from awa_django.declarations.sync import sync_schedules
from awa_django.exceptions import InvalidSchedule
from awa_django.leader.evaluator import evaluate
from awa_django.models import CronJob, Job
from awa_django.operations import schedules
from awa_django.operations.runtime_schedules import create_schedule, update_schedule
from awa_django.reconciliation.manifest import manifest_for
from awa_django.store.queries import query
from awa_django.store.schedule_rows import ScheduleRow
from tests.factories import CronJobFactory
from tests.helpers.database import db_now

pytestmark = pytest.mark.django_db

TASK = "tests.testapp.tasks.record"


def fired(name: str) -> list[str]:
    jobs = Job.objects.filter(metadata__cron_name=name, metadata__has_key="cron_fire_at").order_by("id")
    return [j.metadata["cron_fire_at"] for j in jobs]


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat()


def anchored(now: datetime, every: int, slots_ago: int) -> tuple[datetime, datetime]:
    """(an anchor a day back on a whole second, the slot ``slots_ago`` slots before the latest one due)."""
    anchor = (now - timedelta(days=10)).replace(microsecond=0)
    latest = anchor + timedelta(seconds=every) * ((now - anchor) // timedelta(seconds=every))
    return anchor, latest - timedelta(seconds=every * slots_ago)


def awa(*args: str) -> str:
    out = StringIO()
    call_command("awa", *args, stdout=out)
    return out.getvalue()


def test_declaration__every_as_timedelta_or_seconds_syncs_an_interval_row() -> None:
    schedule = periodic("poll-feed", every=timedelta(seconds=90), task=TASK)
    try:
        assert schedule.every == 90 and schedule.cron is None
        assert schedule.definition()["every_seconds"] == 90 and schedule.definition()["cron_expr"] is None
        sync_schedules([schedule])
        row = CronJob.objects.get(name="poll-feed")
        assert (row.cron_expr, row.every_seconds, row.anchor) == (None, 90, None)
    finally:
        registry.remove("poll-feed")
    assert build_schedule("n", None, TASK, every=90) == build_schedule(
        "n", None, TASK, every=timedelta(seconds=90)
    )


def test_cron_definitions__keep_their_manifest_without_interval_keys() -> None:
    plain = build_schedule("nightly", "0 3 * * *", TASK)
    assert "every_seconds" not in plain.definition() and "anchor" not in plain.definition()
    interval = build_schedule("nightly", None, TASK, every=60)
    assert manifest_for([plain]).desired_hash != manifest_for([interval]).desired_hash


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"cron": "* * * * *", "every": 60}, "every"),
        ({}, "cron"),
        ({"every": 0}, "every"),
        ({"every": 1.5}, "every"),
        ({"every": "60"}, "every"),
        ({"every": 60, "anchor": datetime(2026, 1, 1)}, "anchor"),
        ({"every": 60, "anchor": datetime(2026, 1, 1, 0, 0, 0, 5, tzinfo=UTC)}, "anchor"),
        ({"cron": "* * * * *", "anchor": datetime(2026, 1, 1, tzinfo=UTC)}, "anchor"),
        ({"every": 60, "jitter": 60}, "jitter"),
    ],
)
def test_invalid_timing__is_refused_naming_the_field(options: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidSchedule) as caught:
        build_schedule("bad", options.get("cron"), TASK, **{k: v for k, v in options.items() if k != "cron"})
    assert caught.value.field == field
    with pytest.raises(InvalidSchedule) as runtime:
        create_schedule("bad", task=TASK, actor="ops", **{k: v for k, v in options.items()})
    assert runtime.value.field in (field, "cron")
    assert not CronJob.objects.filter(name="bad").exists()


def test_awa_schedules__every_key_and_the_check_naming_the_field() -> None:
    with override_settings(AWA_SCHEDULES={"poll": {"every": 90, "task": TASK}}):
        assert not [m for m in run_checks() if m.id and m.id.startswith("awa_django.E0")]
    with override_settings(AWA_SCHEDULES={"poll": {"every": 90, "cron": "* * * * *", "task": TASK}}):
        errors = [m for m in run_checks() if m.id == "awa_django.E016"]
        assert len(errors) == 1 and "field 'every'" in errors[0].msg


def test_database__exactly_one_timing_per_row() -> None:
    for fields in ({"cron_expr": None}, {"every_seconds": 60}, {"cron_expr": None, "every_seconds": 0}):
        with pytest.raises(IntegrityError), transaction.atomic():
            CronJobFactory(name="x", **fields)


@pytest.mark.parametrize(("policy", "expected_slots"), [("catch_up", 3), ("coalesce", 1)])
def test_evaluator__fires_exactly_the_slots_once(policy: str, expected_slots: int) -> None:
    now = db_now()
    anchor, last = anchored(now, 3600, 3)
    CronJobFactory(
        name="tick",
        cron_expr=None,
        every_seconds=3600,
        anchor=anchor,
        missed_fire_policy=policy,
        last_enqueued_at=last,
    )
    evaluate()
    slots = [last + timedelta(hours=k) for k in (1, 2, 3)]
    assert fired("tick") == [iso(s) for s in slots[-expected_slots:]]
    row = CronJob.objects.get(name="tick")
    assert row.last_enqueued_at == slots[-1]
    evaluate()  # nothing new is due: no slot fires twice
    assert len(fired("tick")) == expected_slots
    assert schedules.upcoming_fires(row, 2, after=slots[-1]) == [
        slots[-1] + timedelta(hours=h) for h in (1, 2)
    ]


def test_evaluator__first_fire_is_the_creation_second() -> None:
    CronJobFactory(name="fresh", cron_expr=None, every_seconds=3600)
    evaluate()
    row = CronJob.objects.get(name="fresh")
    assert fired("fresh") == [iso(row.created_at.replace(microsecond=0))]
    assert row.next_fire_at == row.created_at.replace(microsecond=0) + timedelta(hours=1)


def test_pause_blocks_and_trigger_fires_an_interval_schedule() -> None:
    now = db_now()
    anchor, last = anchored(now, 60, 2)
    CronJobFactory(name="tick", cron_expr=None, every_seconds=60, anchor=anchor, last_enqueued_at=last)
    schedules.pause("tick", "ops")
    evaluate()
    assert fired("tick") == []
    job = schedules.trigger("tick", "ops")
    assert Job.objects.get(pk=job["id"]).metadata["cron_name"] == "tick"
    schedules.resume("tick", "ops")
    evaluate()
    assert len(fired("tick")) == 1


def test_runtime__create_with_every_then_an_edit_applies_from_the_edit_on() -> None:
    # Slots at the anchor, then every 90 s: the anchor is the latest slot due at
    # the first pass (a never-fired schedule fires a slot of the last minute only).
    anchor = (db_now() - timedelta(seconds=10)).replace(microsecond=0)
    schedule = create_schedule("poll", task=TASK, every=timedelta(seconds=90), anchor=anchor, actor="ops")
    assert (schedule.every, schedule.anchor) == (90, anchor)
    row = CronJob.objects.get(name="poll")
    assert (row.cron_expr, row.every_seconds, row.anchor) == (None, 90, anchor)
    evaluate()
    first = fired("poll")
    assert first == [iso(anchor)]

    result = update_schedule("poll", every=3600, actor="ops")
    assert result.changed and "every_seconds" in result.detail
    edited = db_now()
    evaluate()  # the edit moved the fire clock: no slot of the new period before the edit replays
    assert fired("poll") == first
    row = CronJob.objects.get(name="poll")
    assert row.last_enqueued_at is not None and row.last_enqueued_at >= edited - timedelta(seconds=5)
    nxt = schedules.upcoming_fires(row, 1)[0]
    assert (nxt - anchor) % timedelta(hours=1) == timedelta(0)

    update_schedule("poll", cron="0 * * * *", actor="ops")  # back to an expression
    row = CronJob.objects.get(name="poll")
    assert (row.cron_expr, row.every_seconds, row.anchor) == ("0 * * * *", None, None)


def test_cli__create_with_every_and_show_it_in_words() -> None:
    out = awa("cron", "create", "poll", "--every", "90", "--task", TASK)
    assert out.startswith("create: poll: done")
    assert CronJob.objects.get(name="poll").every_seconds == 90
    data = json.loads(awa("cron", "show", "poll", "--json"))
    assert data["every_seconds"] == 90 and data["description"] == "every 90 seconds"
    assert "every 90 seconds" in awa("cron", "list")
    with pytest.raises(CommandError, match="field 'every'"):
        awa("cron", "create", "both", "--every", "90", "--cron", "* * * * *", "--task", TASK)
    with pytest.raises(CommandError):
        awa("cron", "create", "zero", "--every", "0", "--task", TASK)
    awa("cron", "edit", "poll", "--every", "120")
    assert CronJob.objects.get(name="poll").every_seconds == 120


def test_fire_statement__refuses_a_plan_whose_interval_changed_meanwhile() -> None:
    now = db_now()
    anchor, last = anchored(now, 60, 1)
    CronJobFactory(name="tick", cron_expr=None, every_seconds=60, anchor=anchor, last_enqueued_at=last)
    from awa_django.leader import evaluator

    with connection.cursor() as cursor:
        cursor.execute(query("due_schedules_all") + " LIMIT 10", {"max_depth": 64})
        rows = [dict(zip([c.name for c in cursor.description], r, strict=True)) for r in cursor.fetchall()]
    plan = [evaluator.plan_row(ScheduleRow.from_row(rows[0]), 10)]
    CronJob.objects.filter(name="tick").update(every_seconds=30)
    with connection.cursor() as cursor:
        assert evaluator.fire_plan(cursor, plan) == []
    assert fired("tick") == []


def test_stored_definition__of_an_interval_row_equals_its_declaration() -> None:
    """What reconciliation reads back (built in SQL) is the manifest entry, so an
    interval schedule with an anchor never looks changed."""
    from awa_django.reconciliation.evidence import stored_rows

    anchor = datetime(2026, 1, 1, 6, 30, tzinfo=UTC)
    schedule = build_schedule("poll", None, TASK, every=90, anchor=anchor, jitter=5)
    plain = build_schedule("nightly", "0 3 * * *", TASK)
    sync_schedules([schedule, plain])
    stored = {row.name: row.definition for row in stored_rows("nobody", ["poll", "nightly"], "default")}
    assert stored["poll"] == json.loads(json.dumps(schedule.definition()))
    assert stored["nightly"] == json.loads(json.dumps(plain.definition()))
    assert sync_schedules([schedule, plain]) == []  # nothing differs: nothing written
