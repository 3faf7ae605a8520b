"""``manage.py`` commands run in a real shell: exit codes and messages as a user meets them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime

import pytest

import awa_django
from awa_django.models import CronJob, Job, JobState
from tests.factories import CronJobFactory, JobFactory
from tests.helpers.database import database_url
from tests.helpers.processes import ROOT, manage

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
BAD_SCHEDULES = {"bad": {"cron": "nope", "task": "tests.testapp.tasks.record"}}


def run(*args: str) -> subprocess.CompletedProcess[str]:
    """``manage.py ARGS`` on the test database, as a shell user runs it."""
    return manage(*args, DATABASE_URL=database_url())


@pytest.mark.django_db(transaction=True)
def test_awa_command__exit_codes_in_a_real_shell() -> None:
    CronJobFactory(name="real")
    ok = run("awa", "cron", "pause", "real", "--actor", "eve")
    assert ok.returncode == 0 and ok.stdout.strip() == "pause: real: done"
    missing = run("awa", "cron", "show", "ghost")
    assert missing.returncode == 1 and "no cron schedule named 'ghost'" in missing.stderr
    usage = run("awa", "cron", "explode")
    assert usage.returncode == 2 and "invalid choice" in usage.stderr


def test_awa_command__version_is_awa_djangos() -> None:
    done = manage("awa", "--version")
    assert done.returncode == 0 and done.stdout.strip() == awa_django.__version__


@pytest.mark.django_db(transaction=True)
def test_cli_jobs__exit_codes_in_a_real_shell() -> None:
    done = JobFactory(state=JobState.COMPLETED, finished_at=T0)
    failed = JobFactory(state=JobState.FAILED, attempt=1, max_attempts=1, finished_at=T0)
    refused = run("awa", "jobs", "retry", str(done.id))
    assert refused.returncode == 1
    assert f"job {done.id} does not exist or is not failed/cancelled" in refused.stderr
    assert Job.objects.get(id=done.id).state == JobState.COMPLETED
    ok = run("awa", "jobs", "retry", str(failed.id), "--actor", "eve", "--json")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout) == {"action": "retry", "job": failed.id, "changed": True}
    assert Job.objects.get(id=failed.id).state == JobState.AVAILABLE
    usage = run("awa", "jobs", "retry", "not-a-number")
    assert usage.returncode == 2 and "invalid int value" in usage.stderr


def test_check_database__e022_not_postgresql() -> None:
    # A non-PostgreSQL database cannot be swapped into the running process
    # (connections are configured once), so use a real subprocess on SQLite.
    env = dict(os.environ)
    env.pop("AWA_TEST_SCHEDULES", None)
    env.update({"DJANGO_SETTINGS_MODULE": "tests.settings", "DATABASE_URL": "sqlite://:memory:"})

    proc = subprocess.run(
        [sys.executable, "-m", "django", "check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert proc.returncode != 0
    assert "(awa_django.E022) database 'default' is not PostgreSQL" in proc.stderr
    assert "HINT: awa_django needs a PostgreSQL database." in proc.stderr


def subprocess_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("AWA_TEST_SCHEDULES", None)
    env.update({"DJANGO_SETTINGS_MODULE": "tests.settings", "PYTHONUNBUFFERED": "1"})
    env.update(extra)
    return env


def run_python(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.django_db(transaction=True)
def test_runcron__subprocess_with_invalid_settings_schedule_exits_non_zero_and_writes_nothing() -> None:
    env = subprocess_env(DATABASE_URL=database_url(), AWA_TEST_SCHEDULES=json.dumps(BAD_SCHEDULES))

    proc = run_python(["-m", "django", "runcron", "--once"], env)

    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert "'bad'" in proc.stderr
    assert "'cron'" in proc.stderr
    assert "awa_django.E003" in proc.stderr
    assert not CronJob.objects.exists()
    assert not Job.objects.exists()


SETUP_SCRIPT = """
import json, sys
import django
from awa_django import InvalidSchedule
django.setup()
from awa_django.declarations.declaration import declared_schedules
try:
    declared_schedules()
except InvalidSchedule as exc:
    print(json.dumps({"schedule": exc.schedule, "field": exc.field, "message": str(exc)}))
    sys.exit(3)
print("setup ok")
"""


def test_cron_py__invalid_declaration_is_raised_by_declared_schedules() -> None:
    # Django starts (the system checks report the declaration); what reads the
    # declarations gets the InvalidSchedule.
    proc = run_python(["-c", SETUP_SCRIPT], subprocess_env(DJANGO_SETTINGS_MODULE="tests.badapp.settings"))

    assert proc.returncode == 3, proc.stdout + proc.stderr
    error = json.loads(proc.stdout)
    assert error["schedule"] == "broken"
    assert error["field"] == "cron"
    assert error["message"].startswith("schedule 'broken': field 'cron': ")


def test_cron_py__setup_succeeds_without_the_invalid_app() -> None:
    # Control: the same script with the normal settings runs to the end.
    proc = run_python(["-c", SETUP_SCRIPT], subprocess_env())

    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == "setup ok"


def test_cron_py__invalid_declaration_fails_manage_py_check() -> None:
    proc = run_python(
        ["-m", "django", "check"], subprocess_env(DJANGO_SETTINGS_MODULE="tests.badapp.settings")
    )

    assert proc.returncode != 0
    assert "tests/badapp/cron.py:5: (awa_django.E003) schedule 'broken': field 'cron'" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert "System check identified no issues" not in proc.stdout
