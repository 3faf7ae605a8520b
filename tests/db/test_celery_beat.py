"""Planning the import of one django-celery-beat row, and the command without the package.

Proves: a row's args and kwargs (JSON text) become the schedule's, its queue
is kept when the task backend has it and otherwise reported, priority is kept
within awa's range, and what has no equivalent (expires, headers, exchange,
routing key) is reported on the imported row; a row whose start_time is
still ahead is imported paused, an expired one skipped; one-off, clocked and
solar rows, rows whose task is not a django.tasks task (unless
``--task-map`` names one) and names code declares or a runtime schedule has
are skipped with the reason; without django_celery_beat in INSTALLED_APPS the
command refuses, saying so, and writes nothing. A bad row is skipped alone with
its reason: a time zone no database knows, a timestamp ``datetime`` cannot hold
(``'-infinity'`` counts as past, ``'infinity'`` as future), a task path outside
the installed apps and ``AWA_TASK_MODULES`` (never imported: a sentinel module
records an import). Look-alike names (case, Unicode form, surrounding
whitespace) are one name: the first row has it, later rows and stored
schedules' look-alikes are reported; a padded name is imported stripped.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test.utils import override_settings

from awa_django.models import CronJob
from awa_django.operations.celery_beat import TakenNames, plan_row
from awa_django.operations.celery_beat_rows import FarInstant
from awa_django.operations.runtime_schedules import create_schedule

pytestmark = pytest.mark.django_db

TASK = "tests.testapp.tasks.record"


def source(name: str = "nightly", **fields: Any) -> SimpleNamespace:
    """A PeriodicTask-shaped row: an every-minute crontab unless another schedule is given."""
    values: dict[str, Any] = {
        "name": name,
        "task": TASK,
        "crontab": SimpleNamespace(
            minute="0",
            hour="3",
            day_of_month="*",
            month_of_year="*",
            day_of_week="*",
            timezone="Europe/Paris",
        ),
        "interval": None,
        "clocked": None,
        "solar": None,
        "args": "[]",
        "kwargs": "{}",
        "queue": None,
        "exchange": None,
        "routing_key": None,
        "headers": "{}",
        "priority": None,
        "expires": None,
        "expire_seconds": None,
        "one_off": False,
        "start_time": None,
        "enabled": True,
    }
    values.update(fields)
    return SimpleNamespace(**values)


def test_plan_row__crontab_with_arguments_queue_and_priority() -> None:
    row = plan_row(
        source(args=json.dumps([1, "a"]), kwargs=json.dumps({"label": "x"}), queue="reports", priority=5),
        {},
        set(),
    )
    assert (row.status, row.celery_schedule, row.cron, row.timezone, row.task, row.state) == (
        "imported",
        "crontab",
        "0 3 * * *",
        "Europe/Paris",
        TASK,
        "active",
    )
    assert row.options == {"args": [1, "a"], "kwargs": {"label": "x"}, "queue": "reports", "priority": 5}
    assert row.reasons == []


def test_plan_row__what_has_no_equivalent_is_reported_on_the_imported_row() -> None:
    when = datetime(2030, 1, 1, tzinfo=UTC)
    row = plan_row(
        source(
            enabled=False,
            start_time=datetime(2020, 1, 1, tzinfo=UTC),
            queue="nowhere",
            priority=200,
            expires=when,
            expire_seconds=60,
            headers='{"h": 1}',
            exchange="ex",
            routing_key="rk",
        ),
        {},
        set(),
    )
    assert (row.status, row.state) == ("imported", "paused")
    assert "queue" not in row.options and "priority" not in row.options
    assert row.options["starting_deadline"] == 60
    notes = "\n".join(row.notes)
    for word in (
        "queue 'nowhere'",
        "priority 200",
        "expires",
        "expire_seconds 60 became starting_deadline",
        "headers",
        "exchange",
        "routing_key",
    ):
        assert word in notes


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        (
            {"crontab": None, "interval": SimpleNamespace(every=90, period="microseconds")},
            "every 90 microseconds",
        ),
        (
            {"crontab": None, "clocked": SimpleNamespace(clocked_time=datetime(2030, 1, 1, tzinfo=UTC))},
            "one-off (clocked)",
        ),
        ({"crontab": None, "solar": SimpleNamespace(event="sunset")}, "solar schedule (sunset)"),
        ({"one_off": True}, "one_off"),
        ({"args": "not json"}, "args is not valid JSON"),
        ({"args": "[" * 100_000 + "]" * 100_000}, "args is nested deeper than 32 levels"),
        ({"kwargs": "[1]"}, "kwargs is not a JSON object"),
        ({"task": "proj.tasks.cleanup"}, "--task-map proj.tasks.cleanup=DOTTED.PATH"),
        ({"task": "tests.testapp.tasks.not_a_task"}, "is not a django.tasks Task"),
        ({"task": "celery.backend_cleanup"}, "prunes finished jobs (AWA_JOB_RETENTION)"),
    ],
)
def test_plan_row__rows_without_an_equivalent_are_skipped_with_the_reason(
    fields: dict[str, Any], reason: str
) -> None:
    row = plan_row(source(**fields), {}, set())
    assert row.status == "skipped"
    assert reason in "\n".join(row.reasons)
    assert (row.cron, row.task, row.state) == (None, None, None)


def test_plan_row__a_row_starting_later_is_imported_paused_an_expired_one_skipped() -> None:
    now = datetime(2027, 6, 1, tzinfo=UTC)
    later = plan_row(source(start_time=datetime(2027, 7, 1, tzinfo=UTC)), {}, set(), now)
    assert (later.status, later.state) == ("imported", "paused")
    assert "imported paused, resume it then" in later.notes[0]
    started = plan_row(source(start_time=datetime(2027, 5, 1, tzinfo=UTC)), {}, set(), now)
    assert (started.status, started.state, started.notes) == ("imported", "active", [])
    expired = plan_row(source(expires=datetime(2027, 5, 1, tzinfo=UTC)), {}, set(), now)
    assert expired.status == "skipped"
    assert expired.reasons == ["expired at 2027-05-01T00:00:00+00:00: celery no longer runs it"]


def test_plan_row__task_map_names_the_django_task() -> None:
    row = plan_row(source(task="proj.tasks.cleanup"), {"proj.tasks.cleanup": TASK}, set())
    assert (row.status, row.task) == ("imported", TASK)


def test_plan_row__interval_notes_the_phase() -> None:
    row = plan_row(source(crontab=None, interval=SimpleNamespace(every=10, period="minutes")), {}, set())
    assert (row.status, row.cron, row.timezone) == ("imported", "*/10 * * * *", "UTC")
    assert "phase may differ" in row.notes[0]


def test_plan_row__an_interval_no_expression_says_becomes_an_every_schedule_anchored_at_the_last_run() -> (
    None
):
    now = datetime(2027, 6, 1, tzinfo=UTC)
    last_run = datetime(2027, 5, 31, 23, 59, 10, 123456, tzinfo=UTC)
    interval = SimpleNamespace(every=90, period="seconds")
    row = plan_row(source(crontab=None, interval=interval, last_run_at=last_run), {}, set(), now)
    assert (row.status, row.cron, row.every, row.timezone) == ("imported", None, 90, "UTC")
    assert row.options["anchor"] == last_run.replace(microsecond=0)
    assert "anchored at 2027-05-31T23:59:10+00:00 (its last run)" in row.notes[0]
    fresh = plan_row(source(crontab=None, interval=SimpleNamespace(every=7, period="hours")), {}, set(), now)
    assert (fresh.every, fresh.options["anchor"]) == (7 * 3600, now)
    started = datetime(2027, 1, 1, tzinfo=UTC)
    since = plan_row(source(crontab=None, interval=interval, start_time=started), {}, set(), now)
    assert since.options["anchor"] == started and "(its start_time)" in since.notes[0]


def test_import__an_interval_row_becomes_an_interval_schedule_that_fires(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from awa_django.leader.evaluator import evaluate
    from awa_django.models import CronJob
    from awa_django.operations import celery_beat

    interval = SimpleNamespace(every=90, period="seconds")
    row = plan_row(source("feed", crontab=None, interval=interval), {}, set())
    celery_beat._write_batch([row], "ops", "default")
    stored = CronJob.objects.get(name="feed")
    assert (stored.cron_expr, stored.every_seconds) == (None, 90)
    assert stored.anchor is not None
    assert "every 90 seconds (UTC)" in "\n".join(celery_beat.ImportReport(False, [row]).render())
    evaluate()
    from awa_django.models import Job

    assert Job.objects.filter(metadata__cron_name="feed").count() == 1


@override_settings(AWA_SCHEDULES={"nightly": {"cron": "0 3 * * *", "task": TASK}})
def test_plan_row__a_name_declared_in_code_is_skipped() -> None:
    row = plan_row(source(), {}, set())
    assert row.status == "skipped"
    assert "declared in code" in row.reasons[0]


def test_plan_row__an_existing_runtime_schedule_is_skipped() -> None:
    create_schedule("nightly", "0 3 * * *", TASK, actor="ops")
    row = plan_row(source(), {}, {"nightly"})
    assert row.reasons == ["schedule 'nightly' already exists as a runtime schedule"]


def test_import_celery_beat__refused_without_the_package_in_installed_apps() -> None:
    with pytest.raises(CommandError, match="django_celery_beat is not in INSTALLED_APPS"):
        call_command("awa", "import-celery-beat", "--dry-run")
    assert not CronJob.objects.exists()


def test_import_celery_beat__malformed_task_map_is_refused() -> None:
    with pytest.raises(CommandError, match="is not CELERY_NAME=DOTTED.PATH"):
        call_command("awa", "import-celery-beat", "--task-map", "nope")


def test_plan_row__a_task_outside_the_allow_list_is_skipped_and_never_imported() -> None:
    os.environ.pop("AWA_IMPORT_SENTINEL", None)
    sys.modules.pop("tests.import_sentinel", None)
    row = plan_row(source(task="tests.import_sentinel.task"), {}, set())
    assert row.status == "skipped"
    assert (
        "'tests.import_sentinel.task': module 'tests.import_sentinel' is not in an installed app"
        in (row.reasons[0])
    )
    assert "AWA_IMPORT_SENTINEL" not in os.environ and "tests.import_sentinel" not in sys.modules


def test_plan_row__a_zone_no_database_knows_is_the_rows_reason() -> None:
    crontab = SimpleNamespace(
        minute="0", hour="3", day_of_month="*", month_of_year="*", day_of_week="*", timezone="Mars/Olympus"
    )
    row = plan_row(source(crontab=crontab), {}, set())
    assert row.status == "skipped" and row.reasons[0].startswith("timezone:")
    assert "Mars/Olympus" in row.reasons[0]


def test_plan_row__timestamps_no_datetime_holds_count_by_their_side_of_now() -> None:
    past, future = FarInstant("-infinity", future=False), FarInstant("infinity", future=True)
    expired = plan_row(source(expires=past), {}, set())
    assert expired.reasons == ["expired at -infinity: celery no longer runs it"]
    never = plan_row(source(expires=future), {}, set())
    assert never.status == "imported" and "expires infinity not imported" in never.notes[0]
    later = plan_row(source(start_time=future), {}, set())
    assert (later.status, later.state) == ("imported", "paused")
    started = plan_row(source(start_time=past), {}, set())
    assert (started.status, started.state) == ("imported", "active")
    interval = SimpleNamespace(every=90, period="seconds")
    anchored = plan_row(source(crontab=None, interval=interval, last_run_at=future), {}, set())
    assert anchored.status == "imported" and "last_run_at infinity cannot anchor" in anchored.notes[0]


def test_plan_row__look_alike_names_are_one_name_and_the_first_row_has_it() -> None:
    taken = TakenNames.load()
    rows = [
        plan_row(source(name), {}, taken) for name in ("nightly", "Nightly", " nightly ", "\ufb01le", "file")
    ]
    assert [r.status for r in rows] == ["imported", "skipped", "skipped", "imported", "skipped"]
    assert (
        rows[1].reasons
        == rows[2].reasons
        == [
            "duplicate of the row 'nightly': names differing only in case, Unicode form or surrounding "
            "whitespace are one name, and the first row (by id) has it"
        ]
    )
    assert rows[4].reasons[0].startswith("duplicate of the row '\ufb01le'")


def test_plan_row__a_look_alike_of_a_stored_schedule_is_skipped() -> None:
    create_schedule("nightly", "0 3 * * *", TASK, actor="ops")
    row = plan_row(source(" NIGHTLY"), {}, TakenNames.load())
    assert row.reasons == [
        "schedule 'nightly' already exists as a runtime schedule "
        "('NIGHTLY' differs from it only in case, Unicode form or whitespace)"
    ]


def test_plan_row__surrounding_whitespace_is_dropped_from_the_name() -> None:
    row = plan_row(source("  padded  "), {}, set())
    assert (row.status, row.name) == ("imported", "padded")
    assert "imported as 'padded': surrounding whitespace dropped from the name" in row.notes
