"""Execution policies (overlap, starting_deadline, jitter) as the fire statement applies them.

Slots are minutes or days in the past of the database clock, so what fires
does not depend on when the test runs.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection

from awa_django import contract
from awa_django.leader.evaluator import evaluate
from awa_django.leader.policies import jitter_offset
from awa_django.models import CronJob, Job
from awa_django.operations import history
from awa_django.operations import schedules as operations
from tests.factories import CronJobFactory, JobFactory
from tests.helpers.database import db_now
from tests.helpers.fires import CURRENT_FIRE, FIRE, fire, plan_entry
from tests.helpers.sql_schema import install_superseded

pytestmark = pytest.mark.django_db


def minute(moment: datetime, minutes_ago: int = 0) -> datetime:
    return moment.replace(second=0, microsecond=0) - timedelta(minutes=minutes_ago)


def jobs(name: str) -> list[Job]:
    return list(Job.objects.filter(metadata__cron_name=name).order_by("id"))


def unfinished(name: str, state: str = "running") -> Job:
    job: Job = JobFactory(
        state=state, metadata={"cron_name": name, "cron_fire_at": "2000-01-01T00:00:00+00:00"}
    )
    return job


def make(name: str, **fields: Any) -> CronJob:
    row: CronJob = CronJobFactory(name=name, **fields)
    return row


def outcomes(name: str) -> list[tuple[str, str]]:
    return [
        (o.slot.isoformat(), o.outcome) for o in history.slot_history(name, 500) if o.outcome != "enqueued"
    ]


@pytest.mark.parametrize("state", ["available", "scheduled", "running", "retryable"])
def test_skip__no_slot_while_a_job_is_unfinished_and_the_slot_still_advances(state: str) -> None:
    now = db_now()
    make("tidy", overlap="skip", last_enqueued_at=minute(now, 3))
    blocker = unfinished("tidy", state)
    evaluate()
    row = CronJob.objects.get(name="tidy")
    assert jobs("tidy") == [blocker]
    assert row.last_enqueued_at == minute(now)
    assert outcomes("tidy") == [(minute(now).isoformat(), "skipped_overlap")]
    assert history.slot_history("tidy")[0].blocked_by == blocker.pk
    assert history.skip_counts("tidy") == {"overlap": 1}


def test_skip__a_finished_job_does_not_block_and_catch_up_enqueues_one_slot_only() -> None:
    now = db_now()
    make("tidy", overlap="skip", missed_fire_policy="catch_up", last_enqueued_at=minute(now, 3))
    JobFactory(state="completed", metadata={"cron_name": "tidy", "cron_fire_at": "2000-01-01T00:00:00+00:00"})
    evaluate()
    fired = [j.metadata.get("cron_fire_at") for j in jobs("tidy") if j.state != "completed"]
    assert fired == [minute(now, 2).strftime("%Y-%m-%dT%H:%M:%S+00:00")]
    # The later slots of the pass see the job just enqueued: skipped, accounted for.
    assert sorted(s for s, o in outcomes("tidy") if o == "skipped_overlap") == [
        minute(now, m).isoformat() for m in (1, 0)
    ]
    assert CronJob.objects.get(name="tidy").last_enqueued_at == minute(now)


def test_allow__is_todays_behaviour() -> None:
    now = db_now()
    make("tidy", last_enqueued_at=minute(now, 3))
    unfinished("tidy")
    evaluate()
    assert len(jobs("tidy")) == 2 and history.skip_counts("tidy") == {}


def test_buffer_one__one_runs_one_waits_nothing_more() -> None:
    now = db_now()
    make("tidy", overlap="buffer_one", missed_fire_policy="catch_up", last_enqueued_at=minute(now, 4))
    running = unfinished("tidy", "running")
    evaluate()
    waiting = [j for j in jobs("tidy") if j.pk != running.pk]
    assert len(waiting) == 1 and waiting[0].state == "available"
    # Held back at claim by a concurrency key of limit 1 on the schedule (the
    # flow-control trigger renders the template into the job's column).
    key = getattr(waiting[0], "concurrency_key", None) or waiting[0].metadata["awa_flow"]["concurrency_key"]
    assert key in ("awa:overlap:tidy", "awa:overlap:{name}")
    assert [o for _, o in outcomes("tidy")] == ["skipped_overlap"] * 3
    # While one waits, no slot is enqueued, even with the running one gone.
    Job.objects.filter(pk=running.pk).update(state="completed")
    CronJob.objects.filter(name="tidy").update(last_enqueued_at=minute(now, 1))
    evaluate()
    assert len(jobs("tidy")) == 2


def test_manual_trigger__bypasses_skip_and_is_recorded() -> None:
    make("tidy", overlap="skip")
    unfinished("tidy")
    job = operations.trigger("tidy", actor="ops")
    latest = history.slot_history("tidy")[0]
    assert (latest.outcome, latest.job_id) == ("triggered", job["id"])


def test_deadline__catch_up_replays_only_the_slots_inside_it() -> None:
    now = db_now()
    make(
        "report",
        missed_fire_policy="catch_up",
        starting_deadline=timedelta(minutes=10).total_seconds(),
        last_enqueued_at=minute(now, 60),
    )
    evaluate()
    cutoff = now - timedelta(minutes=10)
    fired = [datetime.fromisoformat(j.metadata["cron_fire_at"]) for j in jobs("report")]
    assert fired and all(f >= cutoff.replace(microsecond=0) - timedelta(seconds=1) for f in fired)
    assert fired[-1] == minute(now)
    missed = [s for s, o in outcomes("report") if o == "missed_deadline"]
    counts = history.skip_counts("report")
    assert counts["deadline"] == len(missed) == 60 - len(fired)
    assert CronJob.objects.get(name="report").last_enqueued_at == minute(now)


def test_deadline__coalesce_fires_the_latest_slot_only_inside_it() -> None:
    now = db_now()
    # A daily slot ten minutes ago: the latest due slot, and outside a 60 s deadline.
    slot = (now - timedelta(minutes=10)).replace(second=0, microsecond=0)
    make(
        "daily",
        cron_expr=f"{slot.minute} {slot.hour} * * *",
        starting_deadline=60,
        last_enqueued_at=slot - timedelta(days=3),
    )
    evaluate()
    assert jobs("daily") == []
    assert outcomes("daily") == [(slot.isoformat(), "missed_deadline")]
    assert CronJob.objects.get(name="daily").last_enqueued_at == slot


def test_jitter__run_at_is_the_slot_plus_a_pure_offset_of_name_and_slot() -> None:
    now = db_now()
    make("spread", cron_expr="0 0 * * *", jitter=3000, last_enqueued_at=now - timedelta(days=3))
    evaluate()
    (job,) = jobs("spread")
    slot = datetime.fromisoformat(job.metadata["cron_fire_at"])
    assert job.run_at == slot + jitter_offset("spread", slot, 3000)
    assert timedelta(0) <= job.run_at - slot < timedelta(seconds=3000)


def test_jitter__the_sql_offset_equals_the_python_mirror_and_spreads_names() -> None:
    slot = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    offsets = []
    with connection.cursor() as cursor:
        for i in range(50):
            cursor.execute("SELECT awa_cron_jitter_v1(%s, %s, 60.5)", [f"s{i}", slot])
            (offset,) = cursor.fetchone()
            assert offset == jitter_offset(f"s{i}", slot, 60.5)
            offsets.append(offset)
    assert len(set(offsets)) > 40 and all(timedelta(0) <= o < timedelta(seconds=60.5) for o in offsets)


@pytest.fixture
def fire_v4() -> Any:
    FIRE["function"] = contract.previous_function("awa_cron_fire") or CURRENT_FIRE
    yield
    FIRE["function"] = CURRENT_FIRE


def test_jitter__a_future_run_at_is_scheduled_and_replaying_the_slot_changes_nothing(fire_v4: Any) -> None:
    make("later", jitter=50)
    row = CronJob.objects.get(name="later")
    slot = minute(db_now()) + timedelta(minutes=5)
    (job,) = fire(plan_entry(row, [slot]))
    expected = slot + jitter_offset("later", slot, 50)
    assert job["state"] == "scheduled" and job["run_at"] == expected
    # The same slot again (a stale plan of another leader): the CAS refuses it.
    assert fire(plan_entry(row, [slot])) == []


def test_fence__an_older_fire_statement_fires_nothing_for_a_schedule_with_policies() -> None:
    now = db_now()
    with_policy = make("guarded", overlap="skip", last_enqueued_at=minute(now, 3))
    plain = make("plain", last_enqueued_at=minute(now, 3))
    with connection.cursor() as cursor:
        install_superseded(cursor, "awa_cron_fire_v3")  # a runcron of a release before the policies
        for row in (with_policy, plain):
            cursor.execute(
                "SELECT count(*) FROM awa_cron_fire_v3(%s::jsonb)",
                [json.dumps([plan_entry(row, [minute(now)])])],
            )
            assert cursor.fetchone()[0] == (0 if row is with_policy else 1)
    assert CronJob.objects.get(name="guarded").last_enqueued_at == minute(now, 3)
    # Rewinding the token is no fire: allowed.
    CronJob.objects.filter(name="guarded").update(last_enqueued_at=minute(now, 30))
    assert CronJob.objects.get(name="guarded").last_enqueued_at == minute(now, 30)


def test_metrics__slots_skipped_total_counts_by_reason() -> None:
    from prometheus_client import generate_latest

    from awa_django import metrics
    from tests.helpers.metrics import parse, value

    now = db_now()
    make("tidy", overlap="skip", last_enqueued_at=minute(now, 3))
    make("late", missed_fire_policy="catch_up", starting_deadline=0.5, last_enqueued_at=minute(now, 4))
    unfinished("tidy")
    evaluate()
    samples = parse(generate_latest(metrics.REGISTRY).decode())
    assert value(samples, "awa_cron_slots_skipped_total", reason="overlap") == 1
    assert (
        value(samples, "awa_cron_slots_skipped_total", reason="deadline")
        == history.skip_totals()["deadline"]
        >= 3
    )


def test_cli__history_json_lists_slot_outcome_and_job_id() -> None:
    from io import StringIO

    from django.core.management import call_command

    now = db_now()
    make("tidy", overlap="skip", last_enqueued_at=minute(now, 3))
    blocker = unfinished("tidy")
    evaluate()
    out = StringIO()
    call_command("awa", "cron", "history", "tidy", "--json", stdout=out)
    data = json.loads(out.getvalue())
    assert data[0] == {
        "slot": minute(now).isoformat(),
        "outcome": "skipped_overlap",
        "job_id": None,
        "blocked_by": blocker.pk,
    }
    out = StringIO()
    call_command("awa", "cron", "show", "tidy", "--json", stdout=out)
    shown = json.loads(out.getvalue())
    assert (shown["overlap"], shown["starting_deadline"], shown["jitter"]) == ("skip", None, 0)
    assert shown["slots_skipped"] == {"overlap": 1}


def test_admin_detail__shows_the_policies_and_the_slot_outcomes(admin_client: Any) -> None:
    from django.urls import reverse

    now = db_now()
    make("tidy", overlap="skip", starting_deadline=90, jitter=1.5, last_enqueued_at=minute(now, 3))
    blocker = unfinished("tidy")
    evaluate()
    page = admin_client.get(reverse("admin:awa_django_cronjob_change", args=["tidy"])).content.decode()
    assert "Skip (no slot while a job is unfinished)" in page and "90.0" in page and "1.5" in page
    assert "Never enqueued: 1 for overlap, 0 for a held unique key, 0 past the starting deadline." in page
    assert f"skipped_overlap</td><td>#{blocker.pk} was unfinished" in page


def test_health__a_runcron_without_the_policies_leading_is_reported_and_unhealthy(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from awa_django import health
    from tests.helpers.health import add_runtime, by_name

    make("tidy", overlap="skip")
    add_runtime("runcron", hostname="new-host", pid=1, leader=False)
    assert by_name(health.probe())["policies"].ok
    add_runtime("runcron", hostname="old-host", pid=2, leader=True, fire_version=None)
    check = by_name(health.probe())["policies"]
    assert not check.ok
    assert (
        "1 schedule(s) with execution policies" in check.detail and "old-host pid 2 (leader)" in check.detail
    )


def test_history__trim_keeps_the_newest_per_schedule_and_forgets_removed_ones() -> None:
    now = db_now()
    make("tidy", overlap="skip", missed_fire_policy="catch_up", last_enqueued_at=minute(now, 6))
    unfinished("tidy")
    evaluate()
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO awa_cron_slot_outcomes (name, slot, outcome) VALUES ('gone', now(), 'missed_deadline')"
        )
    assert history.trim(kept=2) == 4 + 1
    assert [o for _, o in outcomes("tidy")] == ["skipped_overlap"] * 2
    assert outcomes("tidy")[0][0] == minute(now).isoformat()
    assert history.skip_counts("tidy") == {"overlap": 6}


def test_runtime_schedules__accept_store_and_change_the_policies() -> None:
    """Runtime schedules (another way to define one) take the three options,
    validated like declarations."""
    from awa_django.exceptions import InvalidSchedule
    from awa_django.operations import runtime_schedules

    runtime_schedules.create_schedule(
        "adhoc", "*/5 * * * *", "tests.testapp.tasks.record", actor="ops", overlap="skip", jitter=30
    )
    row = CronJob.objects.get(name="adhoc")
    assert (row.overlap, row.starting_deadline, row.jitter) == ("skip", None, 30)
    runtime_schedules.update_schedule("adhoc", actor="ops", overlap="allow", starting_deadline=60)
    row = CronJob.objects.get(name="adhoc")
    assert (row.overlap, row.starting_deadline, row.jitter) == ("allow", 60, 30)
    with pytest.raises(InvalidSchedule, match="jitter"):
        runtime_schedules.update_schedule("adhoc", actor="ops", jitter=300)


def test_buffer_one_with_a_concurrency_key_of_its_own_is_refused_naming_both() -> None:
    from awa_django.declarations import build_schedule
    from awa_django.exceptions import InvalidSchedule

    with pytest.raises(InvalidSchedule) as raised:
        build_schedule(
            "b1", "* * * * *", "tests.testapp.tasks.record", overlap="buffer_one", concurrency_key="exports"
        )
    assert (
        raised.value.field == "overlap"
        and "concurrency_key" in str(raised.value)
        and "'b1'" in str(raised.value)
    )
    # Each alone stays valid.
    build_schedule("b2", "* * * * *", "tests.testapp.tasks.record", overlap="buffer_one")
    build_schedule("b3", "* * * * *", "tests.testapp.tasks.record", concurrency_key="exports")
