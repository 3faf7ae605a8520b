"""``awa health``: probe decisions on runtime rows, and real processes probed."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test import override_settings
from django.utils import timezone

from awa_django import health
from awa_django.health import Progress, probe
from tests.conftest import ROOT, database_url, operator_context, raw_connection, wait_for
from tests.factories import CronJobFactory

HOST = "probe-host"


def add_runtime(role: str = "runcron", *, hostname: str = HOST, pid: int = 100, leader: bool = False,
                seen_ago: float = 0.0, pass_ago: float | None = 0.0, started_ago: float = 60.0,
                interval_ms: int = 10_000, shutting_down: bool = False) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO awa_runtime_instances
                (instance_id, hostname, pid, version, role, started_at, last_seen_at,
                 snapshot_interval_ms, leader, queues, shutting_down, cron_protocol, last_pass_at)
            VALUES (%s, %s, %s, 'test', %s,
                    clock_timestamp() - make_interval(secs => %s),
                    clock_timestamp() - make_interval(secs => %s),
                    %s, %s, '[]'::jsonb, %s, 1,
                    clock_timestamp() - make_interval(secs => %s))
            """,
            [str(uuid.uuid4()), hostname, pid, role, started_ago, seen_ago, interval_ms, leader,
             shutting_down, pass_ago],
        )


def by_name(report: health.HealthReport) -> dict[str, health.Check]:
    return {c.name: c for c in report.checks}


@pytest.mark.django_db
def test_probe__live_leader_and_local_process_is_healthy() -> None:
    add_runtime(leader=True, pass_ago=1)
    report = probe("cron", hostname=HOST)
    assert report.healthy, health.render(report)
    assert [c.name for c in report.checks] == ["database", "process", "leader", "schedules"]


@pytest.mark.django_db
def test_probe__no_runtime_at_all_fails_process_and_leader() -> None:
    checks = by_name(probe("cron", hostname=HOST))
    assert not checks["process"].ok and "no live runcron on probe-host" in checks["process"].detail
    assert not checks["leader"].ok and checks["schedules"].ok


@pytest.mark.django_db
def test_probe__leader_whose_loop_is_stuck_fails_while_its_snapshots_are_fresh() -> None:
    add_runtime(leader=True, pass_ago=120)
    checks = by_name(probe("cron", hostname=HOST))
    assert not checks["leader"].ok and "last pass 120s ago (limit 60s)" in checks["leader"].detail
    assert not checks["process"].ok and "not making progress" in checks["process"].detail


@pytest.mark.django_db
def test_probe__pass_age_limit_is_at_least_three_snapshot_intervals() -> None:
    add_runtime(leader=True, pass_ago=80, interval_ms=30_000)  # limit max(60, 90) = 90 s
    assert probe("cron", hostname=HOST).healthy


@pytest.mark.django_db
def test_probe__a_dead_process_row_does_not_fail_its_successor_on_the_same_host() -> None:
    # The predecessor died 30 s ago with a stuck pass: its snapshot is no longer alive.
    add_runtime(pid=7, leader=True, seen_ago=30, pass_ago=200, interval_ms=1000)
    add_runtime(pid=8, leader=True, pass_ago=0.5, started_ago=5, interval_ms=1000)
    report = probe("cron", hostname=HOST)
    assert report.healthy, health.render(report)
    assert "pid 8" in by_name(report)["process"].detail


@pytest.mark.django_db
def test_probe__shutting_down_and_other_hosts_do_not_count_as_this_process() -> None:
    add_runtime(shutting_down=True)
    add_runtime(hostname="elsewhere", leader=True)
    checks = by_name(probe("cron", hostname=HOST))
    assert not checks["process"].ok
    assert checks["leader"].ok  # a leader on another host serves the cluster


@pytest.mark.django_db
def test_probe__a_process_that_never_passed_is_starting_until_the_limit() -> None:
    add_runtime(leader=True, pass_ago=None, started_ago=2)
    checks = by_name(probe("cron", hostname=HOST))
    assert checks["leader"].ok and "starting" in checks["leader"].detail
    with connection.cursor() as cursor:
        cursor.execute("UPDATE awa_runtime_instances SET started_at = clock_timestamp() - interval '5 minutes'")
    assert not probe("cron", hostname=HOST).healthy


@pytest.mark.django_db
def test_probe__overdue_schedule_fails_but_paused_and_parked_ones_do_not() -> None:
    add_runtime(leader=True)
    now = timezone.now()
    with operator_context():
        CronJobFactory(name="late", next_fire_at=now - timedelta(minutes=5))
        CronJobFactory(name="paused-late", next_fire_at=now - timedelta(minutes=5), paused_at=now)
        CronJobFactory(name="slightly-late", next_fire_at=now - timedelta(seconds=10))
    with connection.cursor() as cursor:
        cursor.execute("UPDATE awa_cron_jobs SET next_fire_at = %s WHERE name IN ('late', 'slightly-late')",
                       [now - timedelta(minutes=5)])
        cursor.execute("UPDATE awa_cron_jobs SET next_fire_at = %s WHERE name = 'slightly-late'",
                       [now - timedelta(seconds=10)])
        cursor.execute("INSERT INTO awa_cron_jobs (name, cron_expr, timezone, kind, queue, args, priority, "
                       "max_attempts, tags, metadata, missed_fire_policy, created_at, updated_at, next_fire_at) "
                       "SELECT 'parked', cron_expr, timezone, kind, queue, args, priority, max_attempts, tags, "
                       "metadata, missed_fire_policy, created_at, updated_at, '9999-12-31T00:00:00+00:00' "
                       "FROM awa_cron_jobs WHERE name = 'late'")
    checks = by_name(probe(None))
    assert not checks["schedules"].ok
    assert checks["schedules"].detail.startswith("overdue by more than 60s: late (")
    assert "paused-late" not in checks["schedules"].detail and "parked" not in checks["schedules"].detail
    with override_settings(AWA_HEALTH_OVERDUE_AFTER=600):
        assert by_name(probe(None))["schedules"].ok


@pytest.mark.django_db
def test_probe__tasks_role_checks_only_the_worker_process() -> None:
    add_runtime("runtasks", pass_ago=0.2)
    report = probe("tasks", hostname=HOST)
    assert report.healthy and [c.name for c in report.checks] == ["database", "process"]
    add_runtime("runtasks", pid=101, pass_ago=300)
    assert "pid 101: last pass 300s ago" in by_name(probe("tasks", hostname=HOST))["process"].detail
    assert by_name(probe("tasks", hostname=HOST, pid=100))["process"].ok


@pytest.mark.django_db
def test_probe__local_only_skips_the_cluster_checks() -> None:
    add_runtime(leader=False)
    report = probe("cron", local_only=True, hostname=HOST)
    assert report.healthy and [c.name for c in report.checks] == ["database", "process"]


def test_awa_health__unreachable_database_exits_1_with_a_message_not_a_traceback() -> None:
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="tests.settings",
               DATABASE_URL="postgres://postgres@127.0.0.1:1/nowhere")
    done = subprocess.run([sys.executable, "-m", "django", "awa", "health"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "FAIL database: cannot query the database" in done.stdout
    assert "Traceback" not in done.stderr and "unhealthy: database" in done.stderr


def test_progress__tracks_seconds_since_the_last_mark() -> None:
    progress = Progress()
    assert progress.seconds_since() is None
    progress.mark()
    seconds = progress.seconds_since()
    assert seconds is not None and 0 <= seconds < 5


@pytest.mark.django_db
def test_awa_health__json_output_and_command_error_when_unhealthy(capsys: Any) -> None:
    add_runtime(hostname=socket.gethostname(), leader=True, pass_ago=0)
    call_command("awa", "health", "--role", "cron", "--json")
    data = json.loads(capsys.readouterr().out)
    assert data["healthy"] is True and data["role"] == "cron"
    assert {c["name"]: c["ok"] for c in data["checks"]} == {
        "database": True, "process": True, "leader": True, "schedules": True,
    }
    with pytest.raises(CommandError, match="unhealthy: process"):
        call_command("awa", "health", "--role", "tasks")
    assert "FAIL process: no live runtasks on" in capsys.readouterr().out
    with pytest.raises(CommandError, match="need --role"):
        call_command("awa", "health", "--local")


# -- real processes ------------------------------------------------------------
FAST_HEALTH = {"AWA_SNAPSHOT_INTERVAL": "0.5", "AWA_HEALTH_MAX_PASS_AGE": "2"}


def health_exit_code(*args: str) -> tuple[int, str]:
    """Run ``manage.py awa health`` as an exec probe would; (exit status, stdout)."""
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="tests.settings", DATABASE_URL=database_url(), **FAST_HEALTH)
    done = subprocess.run([sys.executable, "-m", "django", "awa", "health", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
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
    code, out = health_exit_code("--role", "cron")
    assert code == 0, out
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
    assert proc.wait(timeout=30) == 0


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@override_settings(AWA_HEALTH_MAX_PASS_AGE=2)
def test_awa_health__frozen_runtasks_fails_its_liveness_probe(runtasks: Any) -> None:
    proc = runtasks(env=FAST_HEALTH)
    wait_for(lambda: probe_ok("tasks"), timeout=60, interval=0.2)
    code, _ = health_exit_code("--role", "tasks", "--local")
    assert code == 0
    proc.signal(signal.SIGSTOP)  # the whole process, snapshot thread included
    try:
        wait_for(lambda: not probe_ok("tasks"), timeout=60, interval=0.2)
        code, out = health_exit_code("--role", "tasks", "--local")
        assert code == 1 and "FAIL process" in out
    finally:
        proc.signal(signal.SIGCONT)
    wait_for(lambda: probe_ok("tasks"), timeout=60, interval=0.2)
    proc.signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_runtime__a_new_leader_is_reported_at_once_not_at_the_next_snapshot(runcron: Any) -> None:
    # A 30 s snapshot interval: only the leadership-change write can make the
    # leader visible within the wait below.
    proc = runcron({}, env={"AWA_SNAPSHOT_INTERVAL": "30"})
    wait_for(lambda: by_name(probe(None))["leader"].ok, timeout=20, interval=0.2)
    proc.signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0
    assert not by_name(probe(None))["leader"].ok  # the last snapshot says shutting down
