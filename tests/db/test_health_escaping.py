"""``awa health`` text output escapes control characters taken from the database.

Schedule names, hostnames and database error text reach the probe's detail
lines; printed raw, an ESC sequence or a carriage return in one of them would
clear or rewrite the operator's terminal, or forge a line such as ``healthy``.
JSON output is escaped by ``json.dumps`` and keeps the raw values.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.utils import timezone

from awa_django import health
from tests.factories import CronJobFactory
from tests.helpers.database import operator_context
from tests.helpers.health import add_runtime

EVIL_NAME = "nightly\x1b[2J\rok   schedules"
EVIL_HOST = "host\x1b]0;owned\x07\u202e"


def overdue_evil_schedule() -> None:
    now = timezone.now()
    with operator_context():
        CronJobFactory(name=EVIL_NAME)
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE awa_cron_jobs SET next_fire_at = %s WHERE name = %s",
            [now - timedelta(hours=1), EVIL_NAME],
        )


@pytest.mark.django_db
def test_awa_health__text_output_escapes_control_characters(capsys: Any) -> None:
    add_runtime(hostname=EVIL_HOST, leader=True, pass_ago=900)  # a stuck leader: its host is printed
    overdue_evil_schedule()
    with pytest.raises(CommandError, match="unhealthy: leader, schedules"):
        call_command("awa", "health")
    out = capsys.readouterr().out
    assert not [c for c in out if c != "\n" and not c.isprintable()], repr(out)
    assert "nightly\\x1b[2J\\rok   schedules (" in out
    assert "leader host\\x1b]0;owned\\x07\\u202e pid 100" in out
    # One line per check, then the verdict: nothing forged a line.
    assert [line.split(" ", 1)[0] for line in out.splitlines()] == [
        "ok",
        "FAIL",
        "FAIL",
        "warn",
        "ok",
        "unhealthy",
    ]


@pytest.mark.django_db
def test_awa_health__json_output_keeps_the_raw_values(capsys: Any) -> None:
    overdue_evil_schedule()
    with pytest.raises(CommandError):
        call_command("awa", "health", "--json")
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\r" not in out
    checks = {c["name"]: c for c in json.loads(out)["checks"]}
    assert EVIL_NAME in checks["schedules"]["detail"]


def test_render__escapes_multi_line_error_text() -> None:
    report = health.HealthReport(role=None, hostname="h")
    report.checks.append(health.Check("database", False, "cannot query: boom\nhealthy\x00"))
    assert health.render(report).splitlines() == [
        "FAIL database: cannot query: boom\\nhealthy\\x00",
        "unhealthy",
    ]
