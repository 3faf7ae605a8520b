"""``manage.py awa cron ...`` as a shell user meets it."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from awa_django.models import CronJob, Job
from tests.factories import CronJobFactory, JobFactory

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def awa(*args: str) -> str:
    out = StringIO()
    call_command("awa", *args, stdout=out)
    return out.getvalue()


def test_cron_list__empty_and_populated() -> None:
    assert awa("cron", "list").strip() == "No cron schedules found."
    CronJobFactory(name="alpha", cron_expr="0 9 * * *", timezone="Europe/Berlin")
    CronJobFactory(name="beta", paused_at=T0, paused_by="ops")
    text = awa("cron", "list")
    lines = text.splitlines()
    assert lines[0].split()[:4] == ["NAME", "CRON", "DESCRIPTION", "TIMEZONE"]
    assert lines[1].startswith("alpha") and "Europe/Berlin" in lines[1] and "active" in lines[1]
    assert lines[2].startswith("beta") and "paused" in lines[2]
    assert lines[-1] == "2 schedule(s)."


def test_cron_list__json() -> None:
    CronJobFactory(name="alpha", last_enqueued_at=T0)
    data = json.loads(awa("cron", "list", "--json"))
    assert [d["name"] for d in data] == ["alpha"]
    assert data[0]["state"] == "active"
    assert data[0]["last_enqueued_at"] == "2026-03-01T12:00:00+00:00"


def test_cron_show__upcoming_fires_in_utc() -> None:
    CronJobFactory(name="daily", cron_expr="30 2 * * *", timezone="UTC")
    data = json.loads(awa("cron", "show", "daily", "--json", "--next", "3"))
    assert len(data["upcoming_fires"]) == 3
    assert all(f.endswith("T02:30:00+00:00") for f in data["upcoming_fires"])


def test_cron_pause_resume__record_the_actor_and_are_idempotent() -> None:
    CronJobFactory(name="noisy")
    assert awa("cron", "pause", "noisy", "--actor", "alice").strip() == "pause: noisy: done"
    row = CronJob.objects.get(name="noisy")
    assert row.paused_by == "alice" and row.paused_at is not None
    again = json.loads(awa("cron", "pause", "noisy", "--actor", "bob", "--json"))
    assert again == {
        "action": "pause",
        "schedule": "noisy",
        "changed": False,
        "detail": "already paused by alice",
    }
    assert CronJob.objects.get(name="noisy").paused_by == "alice"  # first pauser kept
    assert awa("cron", "resume", "noisy", "--actor", "alice").strip() == "resume: noisy: done"
    assert CronJob.objects.get(name="noisy").paused_at is None


def test_cron_trigger__enqueues_even_when_paused() -> None:
    CronJobFactory(name="report", paused_at=T0, paused_by="ops", queue="reports")
    data = json.loads(awa("cron", "trigger", "report", "--actor", "carol", "--json"))
    job = Job.objects.get(id=data["id"])
    assert job.metadata == {"cron_name": "report", "triggered_manually": True, "triggered_by": "carol"}
    assert job.queue == "reports"
    assert CronJob.objects.get(name="report").last_enqueued_at is None


def test_cron_remove__deletes_the_row_not_its_jobs() -> None:
    CronJobFactory(name="old")
    JobFactory(metadata={"cron_name": "old", "cron_fire_at": "2026-03-01T12:00:00+00:00"})
    awa("cron", "remove", "old", "--actor", "dave")
    assert not CronJob.objects.filter(name="old").exists()
    assert Job.objects.filter(metadata__cron_name="old").count() == 1


@pytest.mark.parametrize("verb", ["show", "pause", "resume", "trigger", "remove"])
def test_cron_verbs__unknown_schedule_is_an_error(verb: str) -> None:
    with pytest.raises(CommandError, match="no cron schedule named 'ghost'"):
        awa("cron", verb, "ghost")


@pytest.mark.parametrize("verb", ["pause", "resume", "trigger", "remove"])
def test_cron_verbs__retired_schedule_is_refused(verb: str) -> None:
    CronJobFactory(name="tomb", retired_at=T0, retired_by="ops")
    with pytest.raises(CommandError, match="retired"):
        awa("cron", verb, "tomb")
    assert Job.objects.count() == 0


def test_cron_verbs__blank_actor_is_refused() -> None:
    CronJobFactory(name="x")
    with pytest.raises(CommandError, match="actor"):
        awa("cron", "pause", "x", "--actor", "  ")


def test_cron_list__a_parked_unevaluable_row_still_lists() -> None:
    from awa_django.leader.evaluator import evaluate

    CronJobFactory(name="broken", cron_expr="not a cron")
    evaluate()  # parks it far in the future
    assert CronJob.objects.get(name="broken").next_fire_at.year == 9999
    assert "broken" in awa("cron", "list")
    assert json.loads(awa("cron", "show", "broken", "--json"))["upcoming_fires"] == []
    awa("cron", "remove", "broken", "--actor", "ops")
