"""``awa health``: probe decisions on runtime rows, and real processes probed."""

from __future__ import annotations

import json
import socket
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
from tests.factories import CronJobFactory
from tests.helpers.database import operator_context
from tests.helpers.health import HOST, add_runtime, by_name


@pytest.mark.django_db
def test_probe__live_leader_and_local_process_is_healthy() -> None:
    add_runtime(leader=True, pass_ago=1)
    report = probe("cron", hostname=HOST)
    assert report.healthy, health.render(report)
    assert [c.name for c in report.checks] == [
        "database",
        "process",
        "leader",
        "schedules",
        "declarations",
        "policies",
    ]


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
        cursor.execute(
            "UPDATE awa_runtime_instances SET started_at = clock_timestamp() - interval '5 minutes'"
        )
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
        cursor.execute(
            "UPDATE awa_cron_jobs SET next_fire_at = %s WHERE name IN ('late', 'slightly-late')",
            [now - timedelta(minutes=5)],
        )
        cursor.execute(
            "UPDATE awa_cron_jobs SET next_fire_at = %s WHERE name = 'slightly-late'",
            [now - timedelta(seconds=10)],
        )
        cursor.execute(
            "INSERT INTO awa_cron_jobs (name, cron_expr, timezone, kind, queue, args, priority, "
            "max_attempts, tags, metadata, missed_fire_policy, created_at, updated_at, next_fire_at) "
            "SELECT 'parked', cron_expr, timezone, kind, queue, args, priority, max_attempts, tags, "
            "metadata, missed_fire_policy, created_at, updated_at, '9999-12-31T00:00:00+00:00' "
            "FROM awa_cron_jobs WHERE name = 'late'"
        )
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


def test_progress__tracks_seconds_since_the_last_mark(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [100.0]
    monkeypatch.setattr(health.time, "monotonic", lambda: clock[0])
    progress = Progress()
    assert progress.seconds_since() is None
    progress.mark()
    clock[0] = 107.5
    assert progress.seconds_since() == 7.5
    progress.mark()
    assert progress.seconds_since() == 0.0
    clock[0] = 90.0  # never negative
    assert progress.seconds_since() == 0.0


@pytest.mark.django_db
def test_awa_health__json_output_and_command_error_when_unhealthy(capsys: Any) -> None:
    add_runtime(hostname=socket.gethostname(), leader=True, pass_ago=0)
    call_command("awa", "health", "--role", "cron", "--json")
    data = json.loads(capsys.readouterr().out)
    assert data["healthy"] is True and data["role"] == "cron"
    assert {c["name"]: c["ok"] for c in data["checks"]} == {
        "database": True,
        "process": True,
        "leader": True,
        "schedules": True,
        "declarations": True,
        "policies": True,
    }
    with pytest.raises(CommandError, match="unhealthy: process"):
        call_command("awa", "health", "--role", "tasks")
    assert "FAIL process: no live runtasks on" in capsys.readouterr().out
    with pytest.raises(CommandError, match="need --role"):
        call_command("awa", "health", "--local")
