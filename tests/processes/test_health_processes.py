"""``manage.py awa health`` as an exec probe runs it, against real ``runcron``/``runtasks``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from typing import Any

import pytest
from django.test import override_settings

from awa_django.health import probe
from tests.helpers.database import database_url, raw_connection
from tests.helpers.health import by_name
from tests.helpers.processes import ROOT
from tests.helpers.waiting import wait_for


def test_awa_health__unreachable_database_exits_1_with_a_message_not_a_traceback() -> None:
    env = dict(
        os.environ,
        DJANGO_SETTINGS_MODULE="tests.settings",
        DATABASE_URL="postgres://postgres@127.0.0.1:1/nowhere",
    )
    done = subprocess.run(
        [sys.executable, "-m", "django", "awa", "health"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "FAIL database: cannot query the database" in done.stdout
    assert "Traceback" not in done.stderr and "unhealthy: database" in done.stderr


def test_awa_health__json_writes_only_the_report_and_exits_1_when_unhealthy() -> None:
    env = dict(
        os.environ,
        DJANGO_SETTINGS_MODULE="tests.settings",
        DATABASE_URL="postgres://postgres@127.0.0.1:1/nowhere",
    )
    done = subprocess.run(
        [sys.executable, "-m", "django", "awa", "health", "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert json.loads(done.stdout)["healthy"] is False
    assert done.stderr == ""


# -- real processes ------------------------------------------------------------
FAST_HEALTH = {"AWA_SNAPSHOT_INTERVAL": "0.5", "AWA_HEALTH_MAX_PASS_AGE": "2"}


def health_exit_code(*args: str) -> tuple[int, str]:
    """Run ``manage.py awa health`` as an exec probe would; (exit status, stdout)."""
    env = dict(
        os.environ, DJANGO_SETTINGS_MODULE="tests.settings", DATABASE_URL=database_url(), **FAST_HEALTH
    )
    done = subprocess.run(
        [sys.executable, "-m", "django", "awa", "health", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.returncode, done.stdout


def probe_ok(role: str) -> bool:
    return probe(role).healthy


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@override_settings(AWA_HEALTH_MAX_PASS_AGE=2)
def test_awa_health__real_runcron_is_healthy_then_fails_while_its_pass_is_blocked(runcron: Any) -> None:
    schedules = {"probe-tick": {"cron": "* * * * * *", "task": "tests.testapp.tasks.record"}}
    proc = runcron(schedules, env=FAST_HEALTH)
    wait_for(lambda: probe_ok("cron"), timeout=60, interval=0.2)
    # The probe's own start-up may outlast a pass on a loaded machine: ask again until it passes.
    wait_for(lambda: health_exit_code("--role", "cron")[0] == 0, timeout=60, interval=0.2)
    # Block the fire statement's job insert (a locked schedule row would only
    # be skipped): the leader's pass hangs while its snapshot thread keeps the
    # runtime row fresh. EXCLUSIVE still lets the probe read.
    blocker = raw_connection(autocommit=False)
    try:
        blocker.execute("LOCK TABLE awa_jobs IN EXCLUSIVE MODE")
        wait_for(lambda: not probe_ok("cron"), timeout=60, interval=0.2)
        checks = by_name(probe("cron"))
        assert not checks["leader"].ok and "last pass" in checks["leader"].detail
        assert checks["database"].ok
        code, out = health_exit_code("--role", "cron", "--json")
        assert code == 1 and json.loads(out)["healthy"] is False
    finally:
        blocker.rollback()
        blocker.close()
    wait_for(lambda: probe_ok("cron"), timeout=60, interval=0.2)
    proc.signal(signal.SIGTERM)
    assert proc.wait() == 0


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@override_settings(AWA_HEALTH_MAX_PASS_AGE=2)
def test_awa_health__frozen_runtasks_fails_its_liveness_probe(runtasks: Any) -> None:
    proc = runtasks(env=FAST_HEALTH)
    wait_for(lambda: probe_ok("tasks"), timeout=60, interval=0.2)
    # The probe's own start-up may outlast a pass on a loaded machine: ask again until it passes.
    wait_for(lambda: health_exit_code("--role", "tasks", "--local")[0] == 0, timeout=60, interval=0.2)
    proc.signal(signal.SIGSTOP)  # the whole process, snapshot thread included
    try:
        wait_for(lambda: not probe_ok("tasks"), timeout=60, interval=0.2)
        code, out = health_exit_code("--role", "tasks", "--local")
        assert code == 1 and "FAIL process" in out
    finally:
        proc.signal(signal.SIGCONT)
    wait_for(lambda: probe_ok("tasks"), timeout=60, interval=0.2)
    proc.signal(signal.SIGTERM)
    assert proc.wait() == 0


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_runtime__a_new_leader_is_reported_at_once_not_at_the_next_snapshot(runcron: Any) -> None:
    # A 30 s snapshot interval: only the leadership-change write can make the
    # leader visible within the wait below.
    proc = runcron({}, env={"AWA_SNAPSHOT_INTERVAL": "30"})
    wait_for(lambda: by_name(probe(None))["leader"].ok, timeout=60, interval=0.2)
    proc.signal(signal.SIGTERM)
    assert proc.wait() == 0
    assert not by_name(probe(None))["leader"].ok  # the last snapshot says shutting down
