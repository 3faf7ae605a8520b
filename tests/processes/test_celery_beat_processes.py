"""``manage.py awa import-celery-beat`` on a project with the real django-celery-beat.

On a database of its own (django-celery-beat's migrations stay out of the
other tests' database), rows made with the package's own models: a dry run
reports every row (imported, or skipped with the reason) and writes nothing;
the import then creates the runtime schedules the report named, with their
expression or interval (every=, for a period no expression says), zone, arguments, queue and paused state; and an imported
every-minute schedule fires through ``runcron --once`` while the imported
disabled one, paused, does not.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from django.db import connection

from tests.helpers.database import database_url, raw_connection
from tests.helpers.processes import ROOT, Runcron, Runtasks, manage_with
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

# The "celery-beat" dependency group: installed by make test-oldest and
# make test-django52 (django-celery-beat 2.9 requires Django<6.1); CI runs it in
# its Django 5.2 tier, which leaves out the tests marked slow.
pytest.importorskip(
    "django_celery_beat",
    reason="needs django-celery-beat (pip install --group celery-beat; it requires Django<6.1)",
)

TASK = "tests.testapp.tasks.record"
# Made with django-celery-beat's models in the project's shell.
SOURCE_ROWS = """
import json
from datetime import datetime, timezone
from zoneinfo import ZoneInfo
from django_celery_beat.models import (
    ClockedSchedule, CrontabSchedule, IntervalSchedule, PeriodicTask, SolarSchedule,
)

every_minute = CrontabSchedule.objects.create(minute="*")
weekdays = CrontabSchedule.objects.create(
    minute="30", hour="7", day_of_week="mon-fri", timezone=ZoneInfo("Europe/Berlin")
)
quarter = IntervalSchedule.objects.create(every=15, period="minutes")
ninety = IntervalSchedule.objects.create(every=90, period="seconds")
new_year = ClockedSchedule.objects.create(clocked_time=datetime(2030, 1, 1, tzinfo=timezone.utc))
sunrise = SolarSchedule.objects.create(event="sunrise", latitude=52.52, longitude=13.40)
PeriodicTask.objects.create(
    name="tick", task="celery.tick", crontab=every_minute,
    args=json.dumps(["a", 1]), kwargs=json.dumps({"label": "tick"}),
)
PeriodicTask.objects.create(
    name="tick-disabled", task="TASK", crontab=every_minute, enabled=False,
    kwargs=json.dumps({"label": "disabled"}),
)
PeriodicTask.objects.create(
    name="report", task="TASK", crontab=weekdays, queue="reports", kwargs=json.dumps({"label": "r"}),
)
PeriodicTask.objects.create(name="poll", task="TASK", interval=quarter)
PeriodicTask.objects.create(name="poll-90", task="TASK", interval=ninety)
PeriodicTask.objects.create(name="new-year", task="TASK", clocked=new_year, one_off=True)
PeriodicTask.objects.create(name="sunrise", task="TASK", solar=sunrise)
PeriodicTask.objects.create(name="unknown", task="proj.tasks.cleanup", crontab=every_minute)
""".replace('"TASK"', repr(TASK))


@pytest.fixture
def beat_project() -> Iterator[dict[str, str | None]]:
    """The environment of a project with django_celery_beat installed, on a new migrated database."""
    name = f"{connection.settings_dict['NAME']}_beat"
    with raw_connection() as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    url = database_url().replace(f"/{connection.settings_dict['NAME']}", f"/{name}", 1)
    env: dict[str, str | None] = {
        "DJANGO_SETTINGS_MODULE": "tests.celery_beat_settings",
        "DATABASE_URL": url,
        "AWA_TEST_SCHEDULES": None,
    }
    try:
        ok(manage_with(env, "migrate", "-v0"))
        yield env
    finally:
        with raw_connection() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def ok(result: Any) -> str:
    assert result.returncode == 0, result.stdout + result.stderr
    return str(result.stdout)


def query(env: dict[str, str | None], sql: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(str(env["DATABASE_URL"]), autocommit=True) as conn:
        return conn.execute(sql).fetchall()


def execute(env: dict[str, str | None], *statements: str) -> None:
    with psycopg.connect(str(env["DATABASE_URL"]), autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


def test_import_celery_beat__dry_run_then_import_then_fire(beat_project: dict[str, str | None]) -> None:
    env = beat_project
    ok(manage_with(env, "shell", "-c", SOURCE_ROWS))
    task_map = ("--task-map", f"celery.tick={TASK}")

    report = json.loads(ok(manage_with(env, "awa", "import-celery-beat", "--dry-run", "--json", *task_map)))
    rows = {row["celery_name"]: row for row in report["rows"]}
    assert report["dry_run"] is True
    assert {n for n, r in rows.items() if r["status"] == "imported"} == {
        "tick",
        "tick-disabled",
        "report",
        "poll",
        "poll-90",
    }
    assert (report["imported"], report["skipped"]) == (5, 3)
    assert (rows["poll-90"]["cron"], rows["poll-90"]["every"]) == (None, 90)
    assert "interval schedule (every=) anchored at" in rows["poll-90"]["notes"][0]
    assert "one-off (clocked)" in rows["new-year"]["reasons"][0]
    assert "solar schedule (sunrise)" in rows["sunrise"]["reasons"][0]
    assert "--task-map proj.tasks.cleanup=DOTTED.PATH" in rows["unknown"]["reasons"][0]
    assert "phase may differ" in rows["poll"]["notes"][0]
    assert query(env, "SELECT count(*) FROM awa_cron_jobs") == [(0,)]  # nothing written

    text = ok(manage_with(env, "awa", "import-celery-beat", "--actor", "ops:migration", *task_map))
    assert text.startswith("import done: 5 imported, 3 skipped")
    assert (
        "imported: report [crontab] 30 7 * * mon-fri (Europe/Berlin) -> tests.testapp.tasks.record, active"
        in text
    )
    schedules = {
        r[0]: r[1:]
        for r in query(
            env,
            "SELECT name, cron_expr, timezone, kind, args::text, queue, owner_id, paused_by "
            "FROM awa_cron_jobs",
        )
    }
    assert set(schedules) == {"tick", "tick-disabled", "report", "poll", "poll-90"}
    tick = schedules["tick"]
    assert tick[:3] == ("* * * * *", "UTC", TASK)
    assert json.loads(tick[3]) == {"args": ["a", 1], "kwargs": {"label": "tick"}}
    assert (tick[5], tick[6]) == ("awa:runtime", None)
    assert schedules["tick-disabled"][6] == "ops:migration"  # paused, by the importer's actor
    assert schedules["report"][:2] == ("30 7 * * mon-fri", "Europe/Berlin")
    assert schedules["report"][4] == "reports"
    assert schedules["poll"][:2] == ("*/15 * * * *", "UTC")
    assert query(env, "SELECT cron_expr, every_seconds FROM awa_cron_jobs WHERE name = 'poll-90'") == [
        (None, 90)
    ]

    ok(manage_with(env, "runcron", "--once"))
    fired = query(
        env,
        "SELECT metadata->>'cron_name', args::text FROM awa_jobs "
        "WHERE metadata->>'cron_name' IN ('tick', 'tick-disabled')",
    )
    assert [name for name, _ in fired] == ["tick"]  # the paused one never fires
    assert json.loads(fired[0][1]) == {"args": ["a", 1], "kwargs": {"label": "tick"}}


# Rows in creation (id) order; hostile values are then written by raw SQL.
HOSTILE_ROWS = """
import json
from django_celery_beat.models import CrontabSchedule, PeriodicTask

hourly = CrontabSchedule.objects.create(minute="0")
mars = CrontabSchedule.objects.create(minute="5")
for name in ["nightly", "good", "Nightly", " nightly ", "\\ufb01le", "file", "  padded  ", "mars",
             "forever-ago", "far-future", "bad-args", "zen", "sentinel"]:
    PeriodicTask.objects.create(name=name, task="TASK", crontab=mars if name == "mars" else hourly)
""".replace('"TASK"', repr(TASK))
HOSTILE_SQL = [
    "UPDATE django_celery_beat_crontabschedule SET timezone = 'Mars/Olympus' WHERE minute = '5'",
    "UPDATE django_celery_beat_periodictask SET expires = '-infinity' WHERE name = 'forever-ago'",
    "UPDATE django_celery_beat_periodictask SET expires = 'infinity' WHERE name = 'far-future'",
    "UPDATE django_celery_beat_periodictask SET args = '[1, 2' WHERE name = 'bad-args'",
    "UPDATE django_celery_beat_periodictask SET task = 'this.x' WHERE name = 'zen'",
    "UPDATE django_celery_beat_periodictask SET task = 'tests.import_sentinel.task' WHERE name = 'sentinel'",
]
ZEN = "Beautiful is better than ugly"


def import_json(env: dict[str, str | None], *args: str) -> dict[str, Any]:
    result = manage_with(env, "awa", "import-celery-beat", "--json", "--batch-size", "4", *args)
    assert result.returncode == 0, result.stdout + result.stderr
    assert ZEN not in result.stdout and ZEN not in result.stderr
    data: dict[str, Any] = json.loads(result.stdout)  # progress lines go to stderr only
    return data


def test_import_celery_beat__bad_rows_are_reported_by_name_and_the_rest_imported(
    beat_project: dict[str, str | None],
) -> None:
    env = beat_project
    ok(manage_with(env, "shell", "-c", HOSTILE_ROWS))
    execute(env, *HOSTILE_SQL)

    dry = import_json(env, "--dry-run")
    real = import_json(env, "--actor", "ops:migration")
    assert {**dry, "dry_run": False} == real  # one decision: the dry run only does not write
    rows = {row["celery_name"]: row for row in real["rows"]}
    imported = {name for name, row in rows.items() if row["status"] == "imported"}
    assert imported == {"nightly", "good", "\ufb01le", "  padded  ", "far-future"}
    for twin, first in (("Nightly", "nightly"), (" nightly ", "nightly"), ("file", "\ufb01le")):
        assert rows[twin]["reasons"] == [
            f"duplicate of the row {first!r}: names differing only in case, Unicode form or "
            "surrounding whitespace are one name, and the first row (by id) has it"
        ]
    assert "timezone" in rows["mars"]["reasons"][0] and "Mars/Olympus" in rows["mars"]["reasons"][0]
    assert rows["forever-ago"]["reasons"] == ["expired at -infinity: celery no longer runs it"]
    assert "expires infinity not imported" in rows["far-future"]["notes"][0]
    assert rows["bad-args"]["reasons"][0].startswith("args is not valid JSON")
    for name, path in (("zen", "this.x"), ("sentinel", "tests.import_sentinel.task")):
        assert f"{path!r}: module" in rows[name]["reasons"][0]
        assert "not in an installed app or AWA_TASK_MODULES" in rows[name]["reasons"][0]
    assert rows["  padded  "]["name"] == "padded"
    assert query(env, "SELECT name FROM awa_cron_jobs ORDER BY name") == [
        ("far-future",),
        ("good",),
        ("nightly",),
        ("padded",),
        ("\ufb01le",),
    ]

    again = import_json(env, "--actor", "ops:migration")  # a rerun skips what exists
    assert {row["status"] for row in again["rows"]} == {"skipped"}
    assert rows["good"]["reasons"] == [] and {r["celery_name"]: r for r in again["rows"]}["good"][
        "reasons"
    ] == ["schedule 'good' already exists as a runtime schedule"]


FAILING_BATCH = [
    """CREATE FUNCTION refuse_row_15() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         IF NEW.name = 'row-15' THEN RAISE EXCEPTION 'refused by a trigger'; END IF;
         RETURN NEW;
       END $$""",
    "CREATE TRIGGER refuse_row_15 BEFORE INSERT ON awa_cron_jobs FOR EACH ROW EXECUTE FUNCTION refuse_row_15()",
]


def test_import_celery_beat__a_failed_batch_stops_the_import_and_keeps_the_batches_before(
    beat_project: dict[str, str | None],
) -> None:
    env = beat_project
    rows = (
        "from django_celery_beat.models import CrontabSchedule, PeriodicTask\n"
        "hourly = CrontabSchedule.objects.create(minute='0')\n"
        f"for i in range(30): PeriodicTask.objects.create(name=f'row-{{i:02}}', task={TASK!r}, crontab=hourly)\n"
    )
    ok(manage_with(env, "shell", "-c", rows))
    execute(env, *FAILING_BATCH)
    result = manage_with(env, "awa", "import-celery-beat", "--json", "--batch-size", "10")
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert "refused by a trigger" in report["stopped"] and "import stopped" in result.stderr
    # Batches are 10 rows or fewer (a slow one halves the next): the failed one holds row-15.
    stopped_at = {row["celery_name"]: row for row in report["rows"]}["row-15"]
    assert stopped_at["reasons"] == ["not written: its batch failed (see stopped)"]
    written = [row["celery_name"] for row in report["rows"] if row["status"] == "imported"]
    assert written == [f"row-{i:02}" for i in range(len(written))] and 10 <= len(written) < 16
    assert len(report["rows"]) < 30  # the rows after the failed batch were not read
    assert query(env, "SELECT name FROM awa_cron_jobs ORDER BY name") == [(name,) for name in written]

    execute(env, "DROP TRIGGER refuse_row_15 ON awa_cron_jobs")
    rerun = json.loads(ok(manage_with(env, "awa", "import-celery-beat", "--json", "--batch-size", "10")))
    assert (rerun["imported"], rerun["skipped"]) == (30 - len(written), len(written))
    assert query(env, "SELECT count(*) FROM awa_cron_jobs") == [(30,)]


LIVE_ROWS = 2000
BULK_ROWS = """
from django_celery_beat.models import CrontabSchedule, PeriodicTask
hourly = CrontabSchedule.objects.create(minute="0")
PeriodicTask.objects.bulk_create(
    PeriodicTask(name=f"bulk-{i:05}", task="TASK", crontab=hourly) for i in range(ROWS)
)
""".replace('"TASK"', repr(TASK)).replace("ROWS", str(LIVE_ROWS))


def test_import_celery_beat__batches_leave_live_processes_healthy(
    beat_project: dict[str, str | None],
    runcron: Callable[..., Runcron],
    runtasks: Callable[..., Runtasks],
) -> None:
    env = beat_project
    ok(manage_with(env, "shell", "-c", BULK_ROWS))
    # Snapshots every 0.2 s that give up after 1 s on the protocol lock: an
    # import holding it longer shows as lock timeouts in their logs.
    live = {
        "DJANGO_SETTINGS_MODULE": "tests.celery_beat_settings",
        "DATABASE_URL": str(env["DATABASE_URL"]),
        "AWA_SNAPSHOT_INTERVAL": "0.2",
        "AWA_LOCK_TIMEOUT": "1",
    }
    processes = [runcron(env=live), runtasks(env=live)]
    wait_for(lambda: manage_with(env, "awa", "health", "--role", "cron").returncode == 0, timeout=60)
    wait_for(lambda: manage_with(env, "awa", "health", "--role", "tasks").returncode == 0, timeout=60)

    environ = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.celery_beat_settings"}
    environ["DATABASE_URL"] = str(env["DATABASE_URL"])
    command = [
        sys.executable,
        "-m",
        "django",
        "awa",
        "import-celery-beat",
        "--batch-size",
        "100",
        "--actor",
        "ops",
    ]
    with tempfile.TemporaryFile("w+") as stdout, tempfile.TemporaryFile("w+") as stderr:
        importer = subprocess.Popen(command, cwd=ROOT, env=environ, stdout=stdout, stderr=stderr, text=True)
        probes = []
        while importer.poll() is None or not probes:  # at least one probe, started while it ran
            probes.append(manage_with(env, "awa", "health", "--role", "cron"))
        importer.wait(timeout=600)
        stdout.seek(0)
        stderr.seek(0)
        out, err = stdout.read(), stderr.read()
    assert importer.returncode == 0, out + err
    assert out.startswith(f"import done: {LIVE_ROWS} imported, 0 skipped")
    assert f"import-celery-beat: {LIVE_ROWS}/{LIVE_ROWS} rows read" in err  # progress, on stderr
    for probe in probes:
        assert probe.returncode == 0, probe.stdout + probe.stderr
    assert query(env, "SELECT count(*) FROM awa_cron_jobs WHERE owner_id = 'awa:runtime'") == [(LIVE_ROWS,)]
    for process in processes:
        assert process.proc.poll() is None
        assert "lock timeout" not in process.output()
