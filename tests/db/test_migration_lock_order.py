"""Migrations that alter several awa_* tables take the live writers' lock order
first (awa_django.db.lock_order), so they never deadlock with them.

The writer here is a real second session doing what snapshot publication and
reconciliation do: the protocol lock, a write to ``awa_runtime_instances``,
then a read of ``awa_cron_jobs``. ``migrate`` runs in a subprocess across
0018 (which alters both tables), forwards and backwards, started while the
writer is inside its transaction. The migration must wait for the protocol
lock holding nothing, so the writer's read goes through and both finish.
Waits are on conditions (``pg_locks``), never on durations.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from django.core.management import call_command
from django.db import connection

from awa_django.db.lock_order import ATTEMPTS, PROTOCOL_LOCK_KEY, LockOrder, lock_sql
from awa_django.store.queries import query
from tests.helpers.database import database_url, raw_connection
from tests.helpers.processes import ROOT
from tests.helpers.waiting import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.fixture
def current_schema_afterwards() -> Iterator[None]:
    """Whatever a test migrated to, leave the schema current."""
    yield
    call_command("migrate", "awa_django", verbosity=0)


def start_migrate(target: str, **extra: str) -> subprocess.Popen[str]:
    """``migrate awa_django TARGET`` in a subprocess on the test database."""
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="tests.settings", DATABASE_URL=database_url(), **extra)
    return subprocess.Popen(
        [sys.executable, "-m", "django", "migrate", "awa_django", target, "-v", "0"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def waiting_backend(observer: psycopg.Connection[Any], *, besides: int) -> int | None:
    """A session of this database (not ``besides``) waiting for a lock."""
    row = observer.execute(
        "SELECT pid FROM pg_locks WHERE NOT granted AND pid <> %s AND pid <> pg_backend_pid() "
        "AND database IS NOT DISTINCT FROM (SELECT oid FROM pg_database WHERE datname = current_database()) "
        "LIMIT 1",
        [besides],
    ).fetchone()
    return None if row is None else int(row[0])


def relation_locks(observer: psycopg.Connection[Any], pid: int) -> list[str]:
    return [
        r[0]
        for r in observer.execute(
            "SELECT relation::regclass::text FROM pg_locks WHERE pid = %s AND granted "
            "AND locktype = 'relation' AND relation::regclass::text LIKE 'awa\\_%%'",
            [pid],
        ).fetchall()
    ]


def migrate_beside_a_reconciling_writer(start: str, target: str) -> None:
    """At ``start``, a writer holds the protocol lock and has written a runtime
    row; ``migrate`` to ``target`` starts; then the writer reads the schedules."""
    call_command("migrate", "awa_django", start, verbosity=0)
    writer = raw_connection(autocommit=False)
    observer = raw_connection()
    migrator: subprocess.Popen[str] | None = None
    try:
        # A deadlock would be broken by PostgreSQL after deadlock_timeout; this
        # only keeps a broken build from hanging the suite.
        writer.execute("SET statement_timeout = '120s'")
        writer.execute("SELECT awa_cron_protocol_lock()")
        writer.execute("UPDATE awa_runtime_instances SET last_seen_at = last_seen_at")
        migrator = start_migrate(target)
        pid = wait_for(lambda: waiting_backend(observer, besides=writer.info.backend_pid), timeout=60)
        held = relation_locks(observer, pid)
        # The writer's read of awa_cron_jobs (evidence.stored_rows) goes through
        # (in the wrong order, one of the two fails with "deadlock detected").
        writer.execute("SELECT count(*) FROM awa_cron_jobs").fetchone()
        writer.commit()
        output, _ = migrator.communicate(timeout=120)
        assert migrator.returncode == 0, output
        assert held == [], "the migration waited while holding awa_* tables"
    finally:
        if migrator is not None and migrator.poll() is None:
            migrator.kill()
            migrator.communicate()
        writer.close()
        observer.close()


def test_migration_0018__forwards_waits_for_the_protocol_lock_holding_no_table(
    current_schema_afterwards: None,
) -> None:
    migrate_beside_a_reconciling_writer("0017", "0018")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_attribute WHERE attrelid = 'awa_cron_jobs'::regclass "
            "AND attname = 'overlap'"
        )
        assert cursor.fetchone()[0] == 1


def test_migration_0018__backwards_waits_for_the_protocol_lock_holding_no_table(
    current_schema_afterwards: None,
) -> None:
    migrate_beside_a_reconciling_writer("0018", "0017")
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass('awa_cron_slot_counts') IS NULL")
        assert cursor.fetchone()[0] is True


def test_lock_order__a_long_holder_fails_the_migration_cleanly_after_its_attempts(
    current_schema_afterwards: None,
) -> None:
    call_command("migrate", "awa_django", "0017", verbosity=0)
    holder = raw_connection(autocommit=False)
    try:
        holder.execute("SELECT pg_advisory_xact_lock(%s)", [PROTOCOL_LOCK_KEY])
        migrator = start_migrate("0018", AWA_LOCK_TIMEOUT="0.2")
        output, _ = migrator.communicate(timeout=120)
    finally:
        holder.rollback()
        holder.close()
    assert migrator.returncode != 0
    assert "MigrationLockTimeout" in output and f"in {ATTEMPTS} attempts" in output, output
    assert "run migrate again" in output
    # Nothing half applied: still at 0017.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_attribute WHERE attrelid = 'awa_cron_jobs'::regclass "
            "AND attname = 'overlap'"
        )
        assert cursor.fetchone()[0] == 0


def test_lock_order__takes_the_protocol_lock_then_the_tables_in_the_documented_order() -> None:
    sql = lock_sql(["awa_jobs", "awa_cron_jobs"])
    assert sql.index("pg_advisory_xact_lock") < sql.index("'awa_cron_jobs'") < sql.index("'awa_jobs'")
    with raw_connection(autocommit=False) as conn, raw_connection() as observer:
        conn.execute(sql)
        pid = conn.info.backend_pid
        assert sorted(relation_locks(observer, pid)) == ["awa_cron_jobs", "awa_jobs"]
        modes = observer.execute(
            "SELECT DISTINCT mode FROM pg_locks WHERE pid = %s AND locktype = 'relation' "
            "AND relation IN ('awa_cron_jobs'::regclass, 'awa_jobs'::regclass)",
            [pid],
        ).fetchall()
        assert modes == [("AccessExclusiveLock",)]
        assert observer.execute(
            "SELECT count(*) FROM pg_locks WHERE pid = %s AND locktype = 'advisory' AND granted", [pid]
        ).fetchone() == (1,)
        conn.rollback()


def test_lock_order__refuses_a_table_missing_from_the_order() -> None:
    with pytest.raises(ValueError, match="awa_other.*TABLE_LOCK_ORDER"):
        LockOrder(["awa_jobs", "awa_other"])


def advisory_wait_start(observer: psycopg.Connection[Any], *, besides: int) -> Any:
    """When the current wait for the protocol lock (of a session but ``besides``) began."""
    row = observer.execute(
        "SELECT waitstart FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND pid <> %s "
        "AND waitstart IS NOT NULL LIMIT 1",
        [besides],
    ).fetchone()
    return None if row is None else row[0]


def test_lock_order__a_timed_out_attempt_gives_way_and_a_later_one_succeeds(
    current_schema_afterwards: None,
) -> None:
    call_command("migrate", "awa_django", "0017", verbosity=0)
    holder = raw_connection(autocommit=False)
    observer = raw_connection()
    try:
        holder.execute("SELECT pg_advisory_xact_lock(%s)", [PROTOCOL_LOCK_KEY])
        migrator = start_migrate("0018", AWA_LOCK_TIMEOUT="2")
        pid = holder.info.backend_pid
        first = wait_for(lambda: advisory_wait_start(observer, besides=pid), timeout=60)
        # A second attempt waits anew: the first gave up its place in the queue.
        wait_for(lambda: advisory_wait_start(observer, besides=pid) not in (None, first), timeout=60)
        holder.rollback()
        output, _ = migrator.communicate(timeout=120)
    finally:
        holder.close()
        observer.close()
    assert migrator.returncode == 0, output


def test_sqlmigrate__shows_the_lock_order_first_in_both_directions() -> None:
    for backwards in (False, True):
        out = io.StringIO()
        call_command("sqlmigrate", "awa_django", "0018_execution_policies", backwards=backwards, stdout=out)
        first = out.getvalue().split("pg_advisory_xact_lock", 1)[0]
        assert "ALTER TABLE" not in first and "DROP" not in first
        assert f"applied {'backwards' if backwards else 'forwards'})" in first


def test_lock_order__the_victim_of_a_deadlock_with_a_writer_outside_the_protocol_gives_way_and_retries(
    current_schema_afterwards: None,
) -> None:
    """A writer that locks awa_runtime_instances first and gets the protocol lock
    only then (as the tables' statement trigger makes a runtime of an older
    release do) closes a cycle with the waiting migration; PostgreSQL aborts the
    migration's wait (its deadlock_timeout runs out first here), which gives way."""
    call_command("migrate", "awa_django", "0017", verbosity=0)
    legacy = raw_connection(autocommit=False)
    observer = raw_connection()
    got_lock = threading.Event()
    migrator: subprocess.Popen[str] | None = None
    try:
        legacy.execute("SET deadlock_timeout = '60s'")
        legacy.execute("LOCK TABLE awa_runtime_instances IN ROW EXCLUSIVE MODE")
        migrator = start_migrate("0018", AWA_LOCK_TIMEOUT="60", PGOPTIONS="-c deadlock_timeout=5s")
        wait_for(lambda: waiting_backend(observer, besides=legacy.info.backend_pid), timeout=60)

        def take_protocol_lock() -> None:
            legacy.execute("SELECT awa_cron_protocol_lock()")
            got_lock.set()

        thread = threading.Thread(target=take_protocol_lock)
        thread.start()
        thread.join(timeout=120)
        assert got_lock.is_set(), "the writer never got the protocol lock"
        legacy.commit()
        output, _ = migrator.communicate(timeout=120)
        assert migrator.returncode == 0, output
    finally:
        if migrator is not None and migrator.poll() is None:
            migrator.kill()
            migrator.communicate()
        legacy.close()
        observer.close()


def waits_for_a_lock(observer: psycopg.Connection[Any], pid: int) -> bool:
    row = observer.execute(
        "SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = %s", [pid]
    ).fetchone()
    return bool(row and row[0])


@pytest.mark.parametrize(
    ("reader", "held"),
    [
        # The leader's slot history trim: the migration waits for awa_jobs
        # holding awa_cron_jobs; the trim must not hold a slot table by then.
        (query("trim_slot_history") % {"kept": 100}, "awa_jobs"),
        # The metrics exporter's gauges: the migration waits for awa_cron_jobs
        # holding awa_runtime_instances; the gauges must not hold awa_jobs by then.
        (query("metrics_database_gauges"), "awa_cron_jobs"),
    ],
    ids=["slot_history_trim", "metrics_gauges"],
)
def test_live_readers__read_in_the_lock_order_so_migrating_0018_back_never_deadlocks_them(
    reader: str, held: str, current_schema_afterwards: None
) -> None:
    call_command("migrate", "awa_django", "0018", verbosity=0)
    blocker = raw_connection(autocommit=False)
    observer = raw_connection()
    session = raw_connection()
    outcome: list[str] = []
    migrator: subprocess.Popen[str] | None = None
    try:
        blocker.execute(f"LOCK TABLE {held} IN ACCESS SHARE MODE")
        # The reader's deadlock check runs first: it is the victim of a cycle.
        migrator = start_migrate("0017", PGOPTIONS="-c deadlock_timeout=60s", AWA_LOCK_TIMEOUT="60")
        wait_for(
            lambda: observer.execute(
                "SELECT 1 FROM pg_locks WHERE NOT granted AND relation = %s::regclass AND pid <> %s",
                [held, blocker.info.backend_pid],
            ).fetchone(),
            timeout=60,
        )

        def read() -> None:
            try:
                session.execute(reader)
                outcome.append("read")
            except psycopg.Error as exc:  # the tables may be gone by then: not a deadlock
                outcome.append(str(exc))

        thread = threading.Thread(target=read)
        thread.start()
        wait_for(lambda: waits_for_a_lock(observer, session.info.backend_pid) or outcome, timeout=60)
        blocker.rollback()
        thread.join(timeout=120)
        output, _ = migrator.communicate(timeout=120)
        assert outcome and "deadlock" not in outcome[0], outcome
        assert migrator.returncode == 0, output
    finally:
        if migrator is not None and migrator.poll() is None:
            migrator.kill()
            migrator.communicate()
        for conn in (blocker, observer, session):
            conn.close()


@pytest.mark.parametrize(
    ("start", "target", "table"), [("0023", "0024", "awa_jobs"), ("0026", "0027", "awa_cron_jobs")]
)
def test_locked_sql_file__a_long_reader_fails_the_step_after_its_attempts_and_never_blocks_writers(
    current_schema_afterwards: None, start: str, target: str, table: str
) -> None:
    """A non-atomic migration's brief ALTER waits in the lock order, bounded and
    retried: an unbounded wait behind a long reader would queue every writer."""
    call_command("migrate", "awa_django", start, verbosity=0)
    reader = raw_connection(autocommit=False)
    try:
        reader.execute(f"SELECT count(*) FROM {table}")
        migrator = start_migrate(target, AWA_LOCK_TIMEOUT="0.2")
        output, _ = migrator.communicate(timeout=120)
        # Between attempts a writer gets through (the timed-out wait gave way).
        with raw_connection() as writer:
            writer.execute("SET lock_timeout = '10s'")
            writer.execute(f"SELECT count(*) FROM {table}")
    finally:
        reader.rollback()
        reader.close()
    assert migrator.returncode != 0
    assert "MigrationLockTimeout" in output and f"in {ATTEMPTS} attempts" in output, output
    call_command("migrate", "awa_django", target, verbosity=0)


def test_lock_order__leaves_the_transactions_lock_timeout_as_it_was() -> None:
    """The preamble's bound is its own: later statements of the migration wait as
    they would without it."""
    from django.db import transaction

    with (
        transaction.atomic(),
        connection.schema_editor(atomic=False) as editor,
        connection.cursor() as cursor,
    ):
        cursor.execute("SELECT set_config('lock_timeout', '0', true)")
        LockOrder(["awa_jobs"]).lock(editor)
        cursor.execute("SHOW lock_timeout")
        assert cursor.fetchone() == ("0",)
