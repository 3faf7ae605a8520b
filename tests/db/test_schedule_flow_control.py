"""Schedules' flow-control options: validated at declaration (a key template
that could render past a key's 500 characters is refused), rendered into each
fired job's keys (hashed, never cut, past 500 for a row written by hand); a
fire whose unique key is held inserts nothing, and its slot is recorded in the
slot history and counted."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.checks import run_checks
from django.db import connection, transaction
from django.test import override_settings

import awa_django
from awa_django.declarations.builder import build_schedule
from awa_django.declarations.declaration import declared_schedules
from awa_django.declarations.sync import sync_schedules
from awa_django.exceptions import InvalidSchedule, OperationRefused
from awa_django.leader import firing
from awa_django.models import CronJob, Job, JobState
from awa_django.operations import history
from awa_django.operations.runtime_schedules import update_schedule
from awa_django.operations.schedules import trigger
from tests.factories import CronJobFactory
from tests.helpers.fires import T0, planned

pytestmark = pytest.mark.django_db

TASK = "tests.testapp.tasks.record"


def declare(**options: Any) -> CronJob:
    sync_schedules([build_schedule("nightly", "* * * * *", TASK, **options)])
    return CronJob.objects.get(name="nightly")


def fire(row: CronJob, minutes: int) -> list[dict[str, Any]]:
    fires = [T0.replace(minute=m) for m in range(minutes)]
    with transaction.atomic(), connection.cursor() as cursor:
        return firing.fire_plan(cursor, [planned(row, fires)])


def test_schedule_keys__templates_render_over_name_and_slot() -> None:
    row = declare(unique_key="{name}:{slot}", concurrency_key="sync-{name}", concurrency_limit=2)
    jobs = fire(row, 2)
    assert [(j["unique_key"], j["concurrency_key"], j["concurrency_limit"]) for j in jobs] == [
        (f"nightly:{j['metadata']['cron_fire_at']}", "sync-nightly", 2) for j in jobs
    ]
    assert len({j["unique_key"] for j in jobs}) == 2
    assert all("awa_flow" not in j["metadata"] for j in jobs)


def test_schedule_keys__a_held_unique_key_skips_the_fire() -> None:
    row = declare(unique_key="{name}")
    assert len(fire(row, 2)) == 1  # the second slot finds the first unfinished
    with pytest.raises(OperationRefused, match="unique_key"):
        trigger("nightly", "alice")
    Job.objects.update(state=JobState.COMPLETED)
    job = trigger("nightly", "alice")
    assert Job.objects.get(id=job["id"]).unique_key == "nightly"


def test_schedule_keys__manual_trigger_slot() -> None:
    declare(unique_key="{name}:{slot}")
    job = trigger("nightly", "alice")
    assert Job.objects.get(id=job["id"]).unique_key == f"nightly:manual:{job['id']}"


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"unique_key": ""}, "unique_key"),
        ({"unique_key": 5}, "unique_key"),
        ({"unique_key": "{tenant}"}, "unique_key"),
        ({"unique_key": "a{b"}, "unique_key"),
        ({"concurrency_key": "x" * 501}, "concurrency_key"),
        ({"concurrency_limit": 2}, "concurrency_limit"),
        ({"concurrency_key": "k", "concurrency_limit": 0}, "concurrency_limit"),
        ({"metadata": {"awa_flow": {}}}, "metadata"),
    ],
)
def test_schedule_keys__bad_options_name_the_field(options: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidSchedule, match=field):
        build_schedule("nightly", "* * * * *", TASK, **options)


def test_schedule_keys__accepted_in_awa_schedules() -> None:
    declared = {
        "hourly": {
            "cron": "0 * * * *",
            "task": TASK,
            "unique_key": "{name}:{slot}",
            "concurrency_key": "sync",
            "concurrency_limit": 2,
        }
    }
    with override_settings(AWA_SCHEDULES=declared):
        (schedule,) = [s for s in declared_schedules() if s.name == "hourly"]
        assert [m.id for m in run_checks() if m.id and m.id.startswith("awa_django.E")] == []
    assert schedule.metadata == {
        "awa_flow": {"unique_key": "{name}:{slot}", "concurrency_key": "sync", "concurrency_limit": 2}
    }


def test_schedule_keys__a_hand_written_row_fires_with_bounded_keys() -> None:
    """Whatever a row written by raw SQL holds under awa_flow, its fire inserts a job:
    keys cut to 500 characters, a key that is not a string ignored, the limit bounded."""
    row = CronJobFactory(
        name="raw",
        metadata={
            "awa_flow": {"unique_key": "u" * 3000, "concurrency_key": "{name}", "concurrency_limit": 1e12}
        },
    )
    other = CronJobFactory(name="raw2", metadata={"awa_flow": {"unique_key": 7, "concurrency_key": ["x"]}})
    with transaction.atomic(), connection.cursor() as cursor:
        jobs = firing.fire_plan(cursor, [planned(row, [T0]), planned(other, [T0])])
    by_name = {j["metadata"]["cron_name"]: j for j in jobs}
    assert len(by_name["raw"]["unique_key"]) == 500
    assert (by_name["raw"]["concurrency_key"], by_name["raw"]["concurrency_limit"]) == ("raw", 1_000_000)
    assert (by_name["raw2"]["unique_key"], by_name["raw2"]["concurrency_key"]) == (None, None)


def test_schedule_keys__runtime_schedules_keep_them_across_edits() -> None:
    awa_django.create_schedule(
        "live", "* * * * *", TASK, actor="alice", unique_key="{name}", metadata={"a": 1}
    )
    assert update_schedule("live", actor="bob", priority=3).changed
    assert CronJob.objects.get(name="live").metadata == {"a": 1, "awa_flow": {"unique_key": "{name}"}}
    update_schedule("live", actor="bob", unique_key="{name}:{slot}", concurrency_key="c")
    stored = CronJob.objects.get(name="live").metadata
    assert stored["awa_flow"] == {"unique_key": "{name}:{slot}", "concurrency_key": "c"}


def test_schedule_keys__a_fire_waits_on_an_uncommitted_holder_only_up_to_the_lock_timeout(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Another session is inserting a job with the key and has not committed: the
    # fire of that schedule waits for it, bounded; the others in its batch fire.
    from tests.helpers.database import raw_connection

    keyed = declare(unique_key="{name}")
    sync_schedules(
        [
            build_schedule("free", "* * * * *", TASK),
            build_schedule("nightly", "* * * * *", TASK, unique_key="{name}"),
        ]
    )
    free = CronJob.objects.get(name="free")
    holder = raw_connection(autocommit=False)
    try:
        holder.execute(
            "INSERT INTO awa_jobs (kind, queue, args, unique_key) VALUES ('elsewhere.task', 'default', '{}', 'nightly')"
        )
        with override_settings(AWA_LOCK_TIMEOUT=0.5), transaction.atomic(), connection.cursor() as cursor:
            jobs = firing.fire_plan(cursor, [planned(keyed, [T0]), planned(free, [T0])])
        assert [j["metadata"]["cron_name"] for j in jobs] == ["free"]
        deferred = [r for r in caplog.records if r.__dict__.get("event") == "cron.fire_deferred"]
        assert [r.__dict__["schedule"] for r in deferred] == ["nightly"]
        keyed.refresh_from_db()
        assert (
            keyed.parked_at is None
            and keyed.last_enqueued_at == CronJob.objects.get(name="nightly").last_enqueued_at
        )
    finally:
        holder.rollback()
        holder.close()
    # Once the holder is gone, the same slot fires.
    with transaction.atomic(), connection.cursor() as cursor:
        jobs = firing.fire_plan(cursor, [planned(keyed, [T0])])
    assert [j["unique_key"] for j in jobs] == ["nightly"]


@pytest.mark.django_db(transaction=True)
def test_schedule_keys__outside_a_transaction_the_bound_is_set_once_and_holds_pass_after_pass(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # As the leader runs: autocommit, the connection's session keeps the bound.
    from tests.helpers.database import raw_connection

    keyed = declare(unique_key="{name}")
    holder = raw_connection(autocommit=False)
    try:
        holder.execute(
            "INSERT INTO awa_jobs (kind, queue, args, unique_key) VALUES ('elsewhere.task', 'default', '{}', 'nightly')"
        )
        with override_settings(AWA_LOCK_TIMEOUT=0.5):
            for _ in range(2):
                with connection.cursor() as cursor:
                    assert firing.fire_plan(cursor, [planned(keyed, [T0])]) == []
            with connection.cursor() as cursor:
                cursor.execute("SHOW lock_timeout")
                assert cursor.fetchone()[0] == "500ms"
        deferred = [r for r in caplog.records if r.__dict__.get("event") == "cron.fire_deferred"]
        assert len(deferred) == 2
    finally:
        holder.rollback()
        holder.close()
        with connection.cursor() as cursor:
            cursor.execute("RESET lock_timeout")
        firing._bounded.clear()  # the session no longer has the bound


LONG_NAME = "n" * 200


@pytest.mark.parametrize("option", ["unique_key", "concurrency_key"])
def test_schedule_keys__a_template_that_can_render_past_the_key_limit_is_refused(option: str) -> None:
    """{name} three times with a 200-character name renders 626 characters: cut
    to 500, the {slot} that tells slots apart would be gone."""
    with pytest.raises(InvalidSchedule) as info:
        build_schedule(LONG_NAME, "* * * * *", TASK, **{option: "{name}{name}{name}{slot}"})
    assert (info.value.schedule, info.value.field) == (LONG_NAME, option)
    assert "renders up to 626 characters" in str(info.value)
    # At the limit exactly (two names, a slot at its longest, 74 more): accepted.
    build_schedule(LONG_NAME, "* * * * *", TASK, **{option: "{name}{name}{slot}" + "x" * 74})


def test_schedule_keys__a_declared_template_past_the_limit_is_a_check_error_naming_schedule_and_option() -> (
    None
):
    declared = {LONG_NAME: {"cron": "0 * * * *", "task": TASK, "unique_key": "{name}{name}{name}{slot}"}}
    with override_settings(AWA_SCHEDULES=declared):
        errors = [m for m in run_checks() if m.id and m.id.startswith("awa_django.E")]
    assert [m.id for m in errors] == ["awa_django.E078"]
    assert "unique_key" in errors[0].msg and LONG_NAME[:40] in errors[0].msg


def test_schedule_keys__the_runtime_api_refuses_a_template_past_the_limit() -> None:
    from awa_django.operations.runtime_schedules import create_schedule

    with pytest.raises(InvalidSchedule, match="unique_key"):
        create_schedule(LONG_NAME, "* * * * *", TASK, unique_key="{name}{name}{name}{slot}", actor="alice")
    assert not CronJob.objects.filter(name=LONG_NAME).exists()


def test_schedule_keys__a_hand_written_template_past_the_limit_keeps_its_slots_apart() -> None:
    """A row written by raw SQL is not validated: its keys past 500 characters
    are hashed, not cut, so each slot still gets its own key and its own job."""
    row = CronJobFactory(name=LONG_NAME, metadata={"awa_flow": {"unique_key": "{name}{name}{name}{slot}"}})
    with transaction.atomic(), connection.cursor() as cursor:
        jobs = firing.fire_plan(cursor, [planned(row, [T0.replace(minute=m) for m in range(13)])])
    keys = [j["unique_key"] for j in jobs]
    assert len(jobs) == 13 and len(set(keys)) == 13
    assert all(len(k) == 500 and k.startswith(LONG_NAME * 2) for k in keys)


@pytest.mark.parametrize("option", ["unique_key", "concurrency_key"])
def test_schedule_keys__a_hand_written_empty_template_is_no_key_and_fails_no_batch(option: str) -> None:
    """An empty key template written by raw SQL renders no key: an empty key
    would break the length check of awa_jobs and fail the whole batch."""
    good = CronJobFactory(name="a-good")
    bad = CronJobFactory(name="b-bad")
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE awa_cron_jobs SET metadata = jsonb_build_object('awa_flow', jsonb_build_object(%s, ''))"
            " WHERE name = 'b-bad'",
            [option],
        )
    bad.refresh_from_db()
    with transaction.atomic(), connection.cursor() as cursor:
        jobs = firing.fire_plan(cursor, [planned(good, [T0]), planned(bad, [T0])])
    assert len(jobs) == 2  # the bad row was neither parked nor failed the batch
    keys = Job.objects.values_list("unique_key", "concurrency_key")
    assert list(keys) == [(None, None), (None, None)]


def test_schedule_keys__a_slot_a_held_unique_key_refuses_is_recorded_and_counted() -> None:
    from io import StringIO

    from django.core.management import call_command
    from prometheus_client import generate_latest

    from awa_django import metrics
    from awa_django.operations import history
    from tests.helpers.metrics import parse, value

    row = declare(unique_key="{name}")
    jobs = fire(row, 3)  # the first slot's job holds the key; the other two are refused
    assert len(jobs) == 1
    outcomes = [
        (o.slot, o.outcome, o.blocked_by) for o in history.slot_history("nightly") if o.job_id is None
    ]
    assert outcomes == [(T0.replace(minute=m), "skipped_unique", jobs[0]["id"]) for m in (2, 1)]
    assert history.skip_counts("nightly") == {"unique": 2}
    assert history.skip_totals()["unique"] == 2
    out = StringIO()
    call_command("awa", "cron", "history", "nightly", stdout=out)
    assert "skipped_unique" in out.getvalue() and "2 for a held unique key" in out.getvalue()
    samples = parse(generate_latest(metrics.REGISTRY).decode())
    assert value(samples, "awa_cron_slots_skipped_total", reason="unique") == 2


def test_schedule_keys__a_slot_already_in_the_ledger_is_not_a_unique_key_skip() -> None:
    """A plan sent twice (a deposed leader's, late) meets its slot's own job:
    that is the exactly-once ledger at work, not a key held by another job."""
    row = declare(unique_key="{name}:{slot}")
    assert len(fire(row, 1)) == 1
    with transaction.atomic(), connection.cursor() as cursor:
        assert firing.fire_plan(cursor, [planned(row, [T0], prev=None)]) == []
    assert history.skip_counts("nightly") == {}
