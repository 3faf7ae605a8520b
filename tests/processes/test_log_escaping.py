"""Escape sequences in data never reach a log raw: real runcron, runtasks and awa.

A schedule name written by raw SQL and a task's exception message carry a
clipboard write (OSC 52), a screen clear, a carriage return, a newline
followed by a forged record, and U+2028. The plain-text logs of the processes
must hold none of those characters raw and no forged line; JSON logs stay one
record per line even for ``str.splitlines``.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Callable
from typing import Any

import pytest

from awa_django.models import CronJob, Job
from tests.factories import CronJobFactory
from tests.helpers.database import database_url
from tests.helpers.processes import manage
from tests.helpers.waiting import wait_for
from tests.testapp import tasks

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

FORGED = "2026-01-01 00:00:00,000 1 awa_django.leader ERROR forged"
HOSTILE = f"evil\x1b]52;c;ZXZpbA==\x07\x1b[2J\rhidden\n{FORGED}\u2028{FORGED}"
RAW = ("\x1b", "\x07", "\r", "\u2028")


def assert_clean(output: str) -> None:
    for char in RAW:
        assert char not in output, f"{char!r} in the log:\n{output!r}"
    assert not any(line.startswith(FORGED) for line in output.splitlines()), output


def test_runcron__names_from_raw_rows_are_logged_escaped(runcron: Callable[..., Any]) -> None:
    CronJobFactory(name=HOSTILE, cron_expr="* * * * * *", kind="tests.testapp.tasks.record")
    CronJobFactory(name=HOSTILE + "-parked", cron_expr="not a cron")
    proc = runcron({})
    wait_for(lambda: Job.objects.filter(metadata__cron_name=HOSTILE).exists(), timeout=60)
    wait_for(lambda: CronJob.objects.get(name=HOSTILE + "-parked").parked_at is not None, timeout=60)
    wait_for(lambda: "fired for" in proc.output(), timeout=60)
    proc.signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 0, proc.output()
    output = proc.output()
    assert "evil\\x1b]52;c;ZXZpbA==\\x07\\x1b[2J\\rhidden\\n" in output
    assert "parked" in output
    assert_clean(output)


def test_runtasks__exception_messages_are_logged_escaped(runtasks: Callable[..., Any]) -> None:
    tasks.always_fails.using(priority=0).enqueue(HOSTILE)
    proc = runtasks("--burst")
    assert proc.wait(timeout=120) == 0, proc.output()
    output = proc.output()
    assert "failed" in output and "evil\\x1b]52;" in output
    assert_clean(output)


def test_runtasks__json_logs_escape_line_separators(runtasks: Callable[..., Any]) -> None:
    tasks.always_fails.enqueue(HOSTILE)
    proc = runtasks("--burst", env={"AWA_JSON_LOGS": "1"})
    assert proc.wait(timeout=120) == 0, proc.output()
    output = proc.output()
    assert "\u2028" not in output and "\x85" not in output
    records = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    assert any("evil" in r["message"] for r in records), output


def test_awa__operator_actions_log_names_escaped() -> None:
    CronJobFactory(name=HOSTILE)
    done = manage("awa", "cron", "pause", HOSTILE, AWA_LOG_LEVEL="INFO", DATABASE_URL=database_url())
    assert done.returncode == 0, done.stderr
    assert "paused" in done.stderr + done.stdout
    assert_clean(done.stdout + done.stderr)
