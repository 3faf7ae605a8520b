"""``manage.py awa`` in a real shell against a database that is not there or not
migrated: every verb ends with a message and a non-zero status, never a
traceback or a SQL excerpt.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator

import psycopg
import pytest
from django.db import connection

from tests.helpers.database import database_url
from tests.helpers.processes import manage

# One invocation of every verb that reads or writes the database.
VERBS = [
    ("cron", "list"),
    ("cron", "show", "s"),
    ("cron", "pause", "s"),
    ("cron", "trigger", "s"),
    ("cron", "retire", "s"),
    ("cron", "retire", "s", "--apply"),
    ("cron", "adopt", "s", "o", "--apply"),
    ("cron", "retire-owner", "o", "--apply"),
    ("cron", "plan", "o"),
    ("cron", "owners"),
    ("queue", "list"),
    ("queue", "pause", "q"),
    ("jobs", "list", "--json"),
    ("jobs", "cancel", "--cron", "s"),
    ("jobs", "retry", "1"),
    ("jobs", "prune", "--dry-run"),
]


def run(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return manage(*args, DATABASE_URL=url, AWA_TEST_SCHEDULES=None)


def server() -> psycopg.Connection[tuple[object, ...]]:
    """An autocommit session on the test server's maintenance database."""
    params = dict(connection.get_connection_params())
    for key in ("cursor_factory", "context", "prepare_threshold"):
        params.pop(key, None)
    params["dbname"] = "postgres"
    return psycopg.connect(autocommit=True, **params)


@pytest.fixture
def unmigrated_url() -> Iterator[str]:
    """A URL of an empty database on the test server, dropped afterwards."""
    # One per test process: xdist workers run this module's cases side by side.
    name = f"{connection.settings_dict['NAME']}_unmigrated_{os.getpid()}"
    with server() as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        base, _, query = database_url().partition("?")
        yield f"{base.rsplit('/', 1)[0]}/{name}" + (f"?{query}" if query else "")
    finally:
        with server() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.mark.parametrize("args", VERBS, ids=["-".join(a) for a in VERBS])
def test_awa__an_unmigrated_database_is_named_with_what_to_do(
    unmigrated_url: str, args: tuple[str, ...]
) -> None:
    proc = run(unmigrated_url, "awa", *args)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "CommandError: database 'default' lacks awa_django migration(s) 0001_initial" in proc.stderr
    assert "run `manage.py migrate`" in proc.stderr
    assert "Traceback" not in proc.stderr and "LINE 1" not in proc.stderr


@pytest.mark.parametrize("args", VERBS, ids=["-".join(a) for a in VERBS])
def test_awa__an_unreachable_database_is_a_one_line_message(args: tuple[str, ...]) -> None:
    proc = run("postgres://postgres@127.0.0.1:1/nowhere", "awa", *args)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "CommandError: connection failed: " in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("awa", "jobs", "list", "--limit", "99999999999999999999"),
            "argument --limit: must be a whole number",
        ),
        (("awa", "jobs", "cancel", "7", "--cron", "s"), "give a job id or --cron NAME (one of them)"),
        (("awa", "health", "--local"), "--local and --pid need --role cron or --role tasks"),
        (("awa", "queue", "pause", ""), "argument name: queue name '': must be 1 to 200 characters long"),
        (("runtasks", "--concurrency", "99999999999999999999"), "argument --concurrency: must be a whole"),
    ],
)
def test_commands__usage_errors_exit_2_before_touching_the_database(
    args: tuple[str, ...], message: str
) -> None:
    proc = run("postgres://postgres@127.0.0.1:1/nowhere", *args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_runtasks__an_unknown_backend_is_a_message_not_a_traceback() -> None:
    proc = run("postgres://postgres@127.0.0.1:1/nowhere", "runtasks", "--burst", "--backend", "nope")
    assert proc.returncode == 1
    assert "CommandError: task backend 'nope' is not defined in settings.TASKS" in proc.stderr
    assert "Traceback" not in proc.stderr
