"""Every awa_django migration, backwards to zero and forwards again, beside a
live leader (``runcron``, firing every second), a live worker (``runtasks``),
both publishing runtime snapshots as an authoritative owner, and writer
sessions that take the live processes' lock orders (a reconciliation: protocol
lock, runtime rows, declarations, schedules; a plan: owners, runtime rows,
declarations, manifests, schedules, without a lock; a fire: schedules, jobs,
slot outcomes; a claim: jobs, queue pauses): PostgreSQL detects no deadlock, and no
session waits for a lock much longer than its lock timeout.

The database is one of its own (the migrations drop every awa_* table). Below
a table's creation the live processes log errors, which is expected; what
must never appear is ``deadlock detected``, in any log or in the database's
own deadlock counter (``pg_stat_database.deadlocks``).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from awa_django.db.lock_order import PROTOCOL_LOCK_KEY
from tests.helpers.database import database_url
from tests.helpers.processes import manage_with
from tests.helpers.waiting import wait_for

pytestmark = [pytest.mark.slow]

LOCK_TIMEOUT = 2  # seconds: the live processes', the writers' and the migration's
# What a wait may exceed the lock timeout by on a loaded 2-core machine (a
# waiting session is seen late, a migration step runs slowly): a bound, not a
# timing claim; a lock cycle would wait until PostgreSQL broke it.
SLACK = 30
MIGRATOR = "awa-test-migrate"
WRITER = "awa-test-writer"
RECORD = "tests.testapp.tasks.record"


def _url(database: str) -> str:
    parts = urlsplit(database_url())
    return urlunsplit(parts._replace(path=f"/{database}"))


@pytest.fixture
def own_database() -> Iterator[str]:
    """A database of this test's own (dropped afterwards), migrated to the latest state."""
    name = urlsplit(database_url()).path.lstrip("/") + "_lock_order"
    with psycopg.connect(_url("postgres"), autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        done = manage_with({"DATABASE_URL": _url(name)}, "migrate", "-v", "0")
        assert done.returncode == 0, done.stdout + done.stderr
        yield name
    finally:
        with psycopg.connect(_url("postgres"), autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# Each writer is one transaction, in a live process's lock order.
RECONCILE = [
    f"SELECT pg_advisory_xact_lock({PROTOCOL_LOCK_KEY})",
    "UPDATE awa_runtime_instances SET last_seen_at = clock_timestamp() WHERE false",
    "SELECT count(*) FROM awa_cron_declarations",
    "SELECT count(*) FROM awa_cron_owners",
    "SELECT count(*) FROM awa_cron_jobs",
]
PLAN = [  # reconciliation.plan and preview: no lock, the evidence in table order
    "SELECT count(*) FROM awa_cron_owners",
    "SELECT count(*) FROM awa_runtime_instances",
    "SELECT count(*) FROM awa_cron_declarations",
    "SELECT count(*) FROM awa_cron_manifests",
    "SELECT count(*) FROM awa_cron_jobs",
]
FIRE = [
    "SELECT name FROM awa_cron_jobs ORDER BY name FOR UPDATE SKIP LOCKED",
    "SELECT count(*) FROM awa_jobs WHERE state = 'running'",
    "INSERT INTO awa_jobs (kind) VALUES ('tests.testapp.tasks.record') RETURNING id",
    "SELECT count(*) FROM awa_cron_slot_outcomes",
]
CLAIM = [
    "SELECT id FROM awa_jobs WHERE state = 'available' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED",
    "SELECT count(*) FROM awa_queue_meta",
]


def _writer(database: str, statements: list[str], stop: threading.Event, errors: list[str]) -> None:
    with psycopg.connect(_url(database), autocommit=True, application_name=WRITER) as conn:
        while not stop.is_set():
            try:
                with conn.transaction():
                    conn.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}s'")
                    for statement in statements:
                        conn.execute(statement)
            except psycopg.Error as exc:  # missing tables, lock timeouts: expected
                errors.append(str(exc))
            stop.wait(0.01)


def _watch_waits(database: str, stop: threading.Event, longest: dict[str, float]) -> None:
    """The longest lock wait seen of each session but the migrator's."""
    with psycopg.connect(_url(database), autocommit=True) as conn:
        while not stop.wait(0.1):
            for pid, app, seconds, what in conn.execute(
                "SELECT a.pid, a.application_name, extract(epoch FROM clock_timestamp() - l.waitstart), "
                "l.locktype || ' ' || coalesce(l.relation::text, l.objid::text, '') "
                "FROM pg_locks AS l JOIN pg_stat_activity AS a USING (pid) "
                "WHERE NOT l.granted AND l.waitstart IS NOT NULL AND a.datname = current_database() "
                "AND a.application_name <> %s",
                [MIGRATOR],
            ).fetchall():
                key = f"pid {pid} ({app or 'django'}) waiting for {what}"
                longest[key] = max(longest.get(key, 0.0), float(seconds))


def _migrate(database: str, *target: str) -> tuple[int, str]:
    """``migrate awa_django [TARGET]``: each migration in its own transaction, one after another."""
    done = manage_with(
        {"DATABASE_URL": _url(database), "PGAPPNAME": MIGRATOR, "AWA_LOCK_TIMEOUT": str(LOCK_TIMEOUT)},
        "migrate",
        "awa_django",
        *target,
        "-v",
        "0",
        timeout=300,
    )
    return done.returncode, f"migrate {' '.join(target) or 'to the latest'}: {done.stdout}{done.stderr}"


def _tail(text: str, lines: int = 40) -> str:
    return "\n".join(text.splitlines()[-lines:])


def _deadlocks(database: str) -> int:
    with psycopg.connect(_url(database), autocommit=True) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute("SELECT deadlocks FROM pg_stat_database WHERE datname = %s", [database]).fetchone()
    return int(row[0]) if row else 0


def _wait_for_a_completed_job(database: str, *procs: Any) -> None:
    """A job completes on the schema made anew: the live processes went on."""
    with psycopg.connect(_url(database), autocommit=True) as conn:
        try:
            wait_for(
                lambda: conn.execute("SELECT count(*) FROM awa_jobs WHERE state = 'completed'").fetchone()[0],
                timeout=120,
            )
        except AssertionError:
            logs = "\n".join(f"{p.command}:\n{_tail(p.output())}" for p in procs)
            raise AssertionError(f"no job completed after the migrations:\n{logs}") from None


def test_migrations__every_one_both_ways_beside_live_processes_never_deadlocks(
    own_database: str, runcron: Callable[..., Any], runtasks: Callable[..., Any]
) -> None:
    env = {
        "DATABASE_URL": _url(own_database),
        "AWA_LOCK_TIMEOUT": str(LOCK_TIMEOUT),
        "AWA_SNAPSHOT_INTERVAL": "0.1",
        "AWA_SYNC_INTERVAL": "0.2",
        "AWA_AUTHORITATIVE": "1",
        "AWA_OWNER": "billing",
        "AWA_REVISION": "rev-1",
        "AWA_RECONCILE_GRACE": "0.5",
    }
    leader = runcron({"every-second": {"cron": "* * * * * *", "task": RECORD}}, env=env)
    worker = runtasks(env=env)
    wait_for(lambda: "runtasks: worker" in worker.output(), timeout=60)
    wait_for(lambda: "waiting for leadership" in leader.output(), timeout=60)
    with psycopg.connect(_url(own_database), autocommit=True) as conn:
        wait_for(lambda: conn.execute("SELECT count(*) FROM awa_jobs").fetchone()[0] > 0, timeout=60)

    stop = threading.Event()
    errors: list[str] = []
    longest: dict[str, float] = {}
    threads = [
        threading.Thread(target=_writer, args=(own_database, statements, stop, errors))
        for statements in (RECONCILE, RECONCILE, PLAN, FIRE, CLAIM)
    ]
    threads.append(threading.Thread(target=_watch_waits, args=(own_database, stop, longest)))
    outputs: list[tuple[int, str]] = []
    try:
        for thread in threads:
            thread.start()
        outputs.append(_migrate(own_database, "zero"))
        outputs.append(_migrate(own_database))
        # Back at the latest schema (awa_jobs made anew), the live processes go
        # on firing and running jobs.
        migrated = all(code == 0 for code, _ in outputs)
        if migrated:  # else the deadlock (or other) failure is reported below
            _wait_for_a_completed_job(own_database, leader, worker)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
    for proc in (leader, worker):
        assert proc.proc.poll() is None, f"{proc.command} exited:\n{_tail(proc.output())}"
    for proc in (leader, worker):
        proc.signal(signal.SIGTERM)
        proc.wait(timeout=120)

    logs = {
        "runcron": leader.output(),
        "runtasks": worker.output(),
        "migrate": "\n".join(text for _, text in outputs),
    }
    logs["writers"] = "\n".join(errors)
    deadlocked = [
        f"{who}: {line}"
        for who, text in logs.items()
        for line in text.splitlines()
        if "deadlock detected" in line
    ]
    assert deadlocked == []
    assert [text for code, text in outputs if code != 0] == []
    assert _deadlocks(own_database) == 0
    too_long = {k: round(v, 1) for k, v in longest.items() if v > LOCK_TIMEOUT + SLACK}
    assert too_long == {}
