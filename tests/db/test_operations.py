"""operations.py: operator actions on one schedule (pause, resume, trigger, remove) and reads."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from awa_django.exceptions import OperationRefused, ScheduleNotFound
from awa_django.models import CronJob, Job
from awa_django.operations import schedules
from tests.factories import CronJobFactory
from tests.helpers.database import operator_context

pytestmark = pytest.mark.django_db


def test_pause_and_resume__idempotent_and_audited() -> None:
    CronJobFactory(name="nightly")
    assert schedules.pause("nightly", " alice ") == schedules.ActionResult("pause", ["nightly"], True)
    again = schedules.pause("nightly", "bob")
    assert not again.changed and again.detail == "already paused by alice"
    assert CronJob.objects.get(name="nightly").paused_by == "alice"  # the first pauser is kept
    assert schedules.resume("nightly", "bob").changed
    assert schedules.resume("nightly", "bob") == schedules.ActionResult(
        "resume", [], name="nightly", detail="not paused"
    )
    assert CronJob.objects.get(name="nightly").paused_at is None


@pytest.mark.parametrize("actor", ["", "   ", None])
def test_actions__need_a_non_blank_actor(actor: str) -> None:
    CronJobFactory(name="nightly")
    for action in (schedules.pause, schedules.resume, schedules.trigger, schedules.remove):
        with pytest.raises(ValueError, match="non-blank actor"):
            action("nightly", actor)


def test_actions__unknown_schedule() -> None:
    for action in (schedules.pause, schedules.resume, schedules.trigger, schedules.remove):
        with pytest.raises(ScheduleNotFound):
            action("ghost", "ops")


def test_trigger__enqueues_one_job_even_while_paused_and_keeps_the_schedule_clock() -> None:
    CronJobFactory(name="nightly", last_enqueued_at=datetime(2026, 1, 1, tzinfo=UTC))
    schedules.pause("nightly", "ops")
    job = schedules.trigger("nightly", "alice")
    row = Job.objects.get(id=job["id"])
    assert row.metadata["cron_name"] == "nightly" and row.metadata["triggered_by"] == "alice"
    assert CronJob.objects.get(name="nightly").last_enqueued_at == datetime(2026, 1, 1, tzinfo=UTC)


def test_retired_and_owned_rows_refuse() -> None:
    CronJobFactory(name="tomb")
    CronJobFactory(name="owned", owner_id="billing")
    with operator_context():
        CronJob.objects.filter(name="tomb").update(retired_at=datetime(2026, 1, 1, tzinfo=UTC))
    for action in (schedules.pause, schedules.resume, schedules.trigger, schedules.remove):
        with pytest.raises(OperationRefused, match="retired"):
            action("tomb", "ops")
    with pytest.raises(OperationRefused, match="owned by 'billing'; retire it instead"):
        schedules.remove("owned", "ops")


def test_remove__deletes_the_row_not_its_jobs() -> None:
    CronJobFactory(name="gone")
    job = schedules.trigger("gone", "ops")
    assert schedules.remove("gone", "ops").changed
    assert not CronJob.objects.filter(name="gone").exists() and Job.objects.filter(id=job["id"]).exists()


def test_reads__schedules_upcoming_fires_and_database_now() -> None:
    CronJobFactory(name="b")
    CronJobFactory(name="a", cron_expr="0 3 * * *", timezone="UTC")
    assert [s.name for s in schedules.list_schedules()] == ["a", "b"]
    row = schedules.get_schedule("a")
    after = datetime(2026, 3, 1, 12, tzinfo=UTC)
    assert schedules.upcoming_fires(row, 2, after=after) == [
        datetime(2026, 3, 2, 3, tzinfo=UTC),
        datetime(2026, 3, 3, 3, tzinfo=UTC),
    ]
    now = schedules.database_now()
    assert now.tzinfo is not None
