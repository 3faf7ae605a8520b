"""Every wait on another process is bounded: a frozen lock holder (here an
open transaction holding the protocol lock or a schedule row, as a SIGSTOPped
peer inside its snapshot transaction would) delays nobody beyond
``AWA_LOCK_TIMEOUT``; migrations take the running processes' lock order.

Assertions wait on conditions with generous deadlines *while the lock is
still held*: that proves the wait is bounded without timing anything.
"""

from __future__ import annotations

import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.core.management import call_command
from django.db import OperationalError, connection, connections
from django.test import override_settings

from awa_django.db import sessions
from awa_django.db.guards import guard_process_connections, keepalive_options
from awa_django.leader.evaluator import evaluate
from awa_django.models import Job
from awa_django.reconciliation.snapshots import RuntimeReporter
from tests.factories import CronJobFactory
from tests.helpers.database import raw_connection
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def assert_gives_up_on_the_lock(action: Callable[[], Any]) -> None:
    """Run ``action`` in a thread (its own connection) and require that it stops
    waiting with a lock timeout, well within a generous deadline."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            action()
        except OperationalError as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=60)
    assert not thread.is_alive(), "still waiting on the lock"
    assert errors and "lock timeout" in str(errors[0]), errors


RECORD = "tests.testapp.tasks.record"


@pytest.fixture
def protocol_lock_holder() -> Iterator[psycopg.Connection[Any]]:
    """A session frozen inside a transaction that holds the protocol lock."""
    conn = raw_connection(autocommit=False)
    conn.execute("SELECT awa_cron_protocol_lock()")
    try:
        yield conn
    finally:
        conn.rollback()
        conn.close()


def fired(name: str) -> int:
    return Job.objects.filter(metadata__cron_name=name).count()


def test_evaluate__a_row_locked_by_another_session_is_skipped_and_fires_later() -> None:
    CronJobFactory(name="held", cron_expr="* * * * * *")
    CronJobFactory(name="free", cron_expr="* * * * * *")
    holder = raw_connection(autocommit=False)
    try:
        holder.execute("SELECT 1 FROM awa_cron_jobs WHERE name = 'held' FOR UPDATE")
        done: list[Any] = []

        def run() -> None:
            try:
                done.append(evaluate())
            finally:
                connections.close_all()

        thread = threading.Thread(target=run)
        thread.start()
        thread.join(timeout=60)
        assert done, "the pass waited for the locked row"
        assert fired("free") == 1 and fired("held") == 0
    finally:
        holder.rollback()
        holder.close()
    wait_for(lambda: evaluate() and fired("held") == 1, timeout=60)


@override_settings(AWA_LOCK_TIMEOUT=0.5)
def test_snapshot_write__gives_up_after_the_lock_timeout(protocol_lock_holder: Any) -> None:
    reporter = RuntimeReporter("runtasks", [])
    assert_gives_up_on_the_lock(reporter.write)


@override_settings(AWA_LOCK_TIMEOUT=0.5)
def test_reporter_start__additive_process_starts_while_the_lock_is_held(protocol_lock_holder: Any) -> None:
    reporter = RuntimeReporter("runtasks", [])
    started = threading.Event()

    def run() -> None:
        try:
            reporter.start()
            started.set()
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    assert started.wait(60)
    reporter._stop.set()


def test_runtasks__starts_and_stops_while_a_frozen_peer_holds_the_protocol_lock(
    runtasks: Callable[..., Any], protocol_lock_holder: Any
) -> None:
    proc = runtasks(env={"AWA_LOCK_TIMEOUT": "1", "AWA_SNAPSHOT_INTERVAL": "0.5"})
    wait_for(lambda: "runtasks: worker" in proc.output(), timeout=60)
    proc.signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 0, proc.output()
    assert "lock timeout" in proc.output()


def test_runcron__fires_and_stops_while_a_frozen_peer_holds_the_protocol_lock(
    runcron: Callable[..., Any], protocol_lock_holder: Any
) -> None:
    proc = runcron(
        {"every-second": {"cron": "* * * * * *", "task": RECORD}},
        env={"AWA_LOCK_TIMEOUT": "1", "AWA_SNAPSHOT_INTERVAL": "0.5", "AWA_SYNC_INTERVAL": "1"},
    )
    # Sync (bounded too) inserts the schedule, then it fires every second.
    wait_for(lambda: fired("every-second") >= 2, timeout=60)
    proc.signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 0, proc.output()


def test_dedicated_connection__and_django_connections_use_tcp_keepalives() -> None:
    saved = dict(connection.settings_dict.get("OPTIONS", {}))
    try:
        with override_settings(AWA_TCP_KEEPALIVES_IDLE=17):
            guard_process_connections()
            params = connection.get_connection_params()
            assert params["keepalives_idle"] == 17 and params["keepalives"] == 1
            with sessions.dedicated_connection("default", "runcron leader") as conn:
                info = conn.info.get_parameters()
                assert info.get("keepalives_idle") == "17"
                assert info.get("keepalives_count") == str(keepalive_options()["keepalives_count"])
    finally:
        connection.settings_dict["OPTIONS"] = saved


def _old_binary_snapshot_writer(stop: threading.Event, failures: list[str]) -> None:
    """Write runtime snapshots and declarations the way every process does, in the
    writers' lock order (protocol lock, runtime row, declaration row), every 0.02 s.

    Raw SQL on the columns that exist since 0004: during a rolling deploy the
    writers racing a migration are processes of the previous release, and the
    current runtasks refuses to start on a partly migrated database.
    """
    instance_id = uuid.uuid4()
    with raw_connection() as conn:
        while not stop.is_set():
            try:
                with conn.transaction():
                    conn.execute("SET LOCAL lock_timeout = '30s'")
                    conn.execute("SELECT awa_cron_protocol_lock()")
                    conn.execute(
                        """INSERT INTO awa_runtime_instances
                               (instance_id, hostname, pid, version, role, started_at, last_seen_at,
                                snapshot_interval_ms, leader, queues, shutting_down, cron_protocol)
                           VALUES (%s, 'old', 1, 'old', 'runtasks', clock_timestamp(), clock_timestamp(),
                                   20, false, '[]'::jsonb, false, 1)
                           ON CONFLICT (instance_id) DO UPDATE SET last_seen_at = clock_timestamp()""",
                        [instance_id],
                    )
                    conn.execute(
                        """INSERT INTO awa_cron_declarations
                               (instance_id, owner_id, revision, desired_hash, grace_ms, last_seen_at)
                           VALUES (%s, 'billing', 'r1', 'h1', 60000, clock_timestamp())
                           ON CONFLICT (instance_id) DO UPDATE SET last_seen_at = clock_timestamp()""",
                        [instance_id],
                    )
            except psycopg.Error as exc:
                failures.append(f"snapshot: {exc}")
            time.sleep(0.02)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_migration_0005__forward_and_back_against_live_snapshot_writers_never_deadlocks() -> None:
    call_command("migrate", "awa_django", "0005", verbosity=0)
    with raw_connection() as conn:
        conn.execute("INSERT INTO awa_cron_owners (owner_id) VALUES ('billing') ON CONFLICT DO NOTHING")
        conn.execute(
            "INSERT INTO awa_cron_manifests (owner_id, desired_hash, manifest) "
            "VALUES ('billing', 'h1', '[]') ON CONFLICT DO NOTHING"
        )
    stop = threading.Event()
    failures: list[str] = []
    writers = [threading.Thread(target=_old_binary_snapshot_writer, args=(stop, failures)) for _ in range(2)]
    try:
        for writer in writers:
            writer.start()
        for i in range(16):
            target = "0004_reconciliation" if i % 2 == 0 else "0005"
            try:
                call_command("migrate", "awa_django", target, verbosity=0)
            except Exception as exc:  # any failure is counted, deadlock or not
                failures.append(f"{target}: {exc}")
            time.sleep(0.05)
    finally:
        stop.set()
        for writer in writers:
            writer.join(timeout=60)
        call_command("migrate", "awa_django", verbosity=0)
    assert failures == []


PROTOCOL_LOCK_KEY = 4708303696999502420


def protocol_lock_held(*, idle_in_transaction: bool = False) -> bool:
    """Some session holds the protocol lock; with ``idle_in_transaction``, one
    that has done all its client sent and waits for more inside its transaction
    (a frozen client: nothing it already sent can still release the lock)."""
    key = PROTOCOL_LOCK_KEY & 0xFFFFFFFFFFFFFFFF
    with raw_connection() as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE l.locktype = 'advisory' AND l.granted "
            "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
            "AND l.classid::bigint = %s AND l.objid::bigint = %s "
            "AND (NOT %s OR a.state = 'idle in transaction')",
            [key >> 32, key & 0xFFFFFFFF, idle_in_transaction],
        ).fetchone()
    return bool(row and row[0])


def stopped(pid: int) -> bool:
    """The process is stopped by a signal (state T in /proc)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat.rsplit(")", 1)[1].split()[0] == "T"


@pytest.mark.slow
def test_runtasks__a_sigstopped_peer_inside_its_snapshot_transaction_delays_no_one(
    runtasks: Callable[..., Any], runcron: Callable[..., Any]
) -> None:
    frozen = runtasks(env={"AWA_SNAPSHOT_INTERVAL": "0.005"})
    wait_for(lambda: "runtasks: worker" in frozen.output(), timeout=60)
    # Stop it at a moment it holds the protocol lock (inside a snapshot write).
    # Its backend must be idle in that transaction: a statement it sent before
    # the stop (such as the COMMIT) may still be on its way to the server.
    for _ in range(2000):
        frozen.signal(signal.SIGSTOP)
        wait_for(lambda: stopped(frozen.pid), timeout=60)
        time.sleep(0.02)
        if protocol_lock_held(idle_in_transaction=True):
            break
        frozen.signal(signal.SIGCONT)
        time.sleep(0.003)
    else:
        pytest.fail("never caught the peer inside its snapshot transaction")
    try:
        fast = {"AWA_LOCK_TIMEOUT": "1", "AWA_SNAPSHOT_INTERVAL": "0.5", "AWA_SYNC_INTERVAL": "1"}
        other = runtasks(env=fast)
        leader = runcron({"every-second": {"cron": "* * * * * *", "task": RECORD}}, env=fast)
        wait_for(lambda: "runtasks: worker" in other.output(), timeout=60)
        wait_for(lambda: fired("every-second") >= 2, timeout=60)
        assert protocol_lock_held()  # still frozen with the lock
        for proc in (other, leader):
            proc.signal(signal.SIGTERM)
        for proc in (other, leader):
            assert proc.wait(timeout=60) == 0, proc.output()
    finally:
        frozen.signal(signal.SIGCONT)


@override_settings(AWA_LOCK_TIMEOUT=0.5)
def test_operator_pause__gives_up_on_a_row_held_by_a_frozen_peer() -> None:
    from awa_django.operations import schedules

    CronJobFactory(name="held")
    holder = raw_connection(autocommit=False)
    try:
        holder.execute("SELECT 1 FROM awa_cron_jobs WHERE name = 'held' FOR UPDATE")
        assert_gives_up_on_the_lock(lambda: schedules.pause("held", "ops"))
    finally:
        holder.rollback()
        holder.close()


def test_bound_transaction_waits__never_leaks_into_the_callers_transaction() -> None:
    from django.db import transaction

    from awa_django.operations import schedules

    CronJobFactory(name="mine")
    with transaction.atomic(), connection.cursor() as cursor:
        schedules.pause("mine", "ops")
        cursor.execute("SHOW lock_timeout")
        assert cursor.fetchone()[0] == "0"
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        from awa_django.db.guards import bound_transaction_waits

        bound_transaction_waits(cursor)  # outermost: bounded for this transaction only
        cursor.execute("SHOW lock_timeout")
        assert cursor.fetchone()[0] == "5s"
    with connection.cursor() as cursor:
        cursor.execute("SHOW lock_timeout")
        assert cursor.fetchone()[0] == "0"


STOP_LOCK_TIMEOUT = 10.0


def registered(pid: int) -> bool:
    """The process wrote its first runtime snapshot (its start-up is over)."""
    with raw_connection() as conn:
        row = conn.execute("SELECT count(*) FROM awa_runtime_instances WHERE pid = %s", [pid]).fetchone()
    return bool(row and row[0])


def some_backend_waits_on_a_lock() -> bool:
    with raw_connection() as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
        ).fetchone()
    return bool(row and row[0])


@pytest.mark.slow
@pytest.mark.parametrize("command", ["runcron", "runtasks"])
def test_stop__a_process_waiting_on_a_frozen_lock_holder_exits_within_one_lock_timeout(
    command: str, runcron: Callable[..., Any], runtasks: Callable[..., Any]
) -> None:
    env = {"AWA_LOCK_TIMEOUT": str(STOP_LOCK_TIMEOUT), "AWA_SNAPSHOT_INTERVAL": "0.5"}
    proc = runcron(env=env) if command == "runcron" else runtasks(env=env)
    wait_for(lambda: registered(proc.pid), timeout=60)
    if command == "runcron":
        wait_for(lambda: "elected leader" in proc.output(), timeout=60)  # maintenance runs too
    holder = raw_connection(autocommit=False)
    try:
        holder.execute("SELECT awa_cron_protocol_lock()")
        wait_for(some_backend_waits_on_a_lock, timeout=60)  # the snapshot thread, or maintenance
        proc.signal(signal.SIGTERM)
        # Generous (1.6x) yet below the two lock timeouts a stop costs when its
        # waits come one after the other; the lock is still held throughout.
        try:
            code = proc.wait(timeout=1.6 * STOP_LOCK_TIMEOUT)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{command} still stopping after 1.6 x AWA_LOCK_TIMEOUT:\n{proc.output()}")
        assert code == 0, proc.output()
    finally:
        holder.rollback()
        holder.close()


@override_settings(AWA_LOCK_TIMEOUT=300)
def test_cancellable_waits__join_cancels_a_helper_waiting_on_the_lock(protocol_lock_holder: Any) -> None:
    from awa_django.db.guards import CancellableWaits

    waits = CancellableWaits("default")
    errors: list[BaseException] = []

    def helper() -> None:
        waits.bind()
        try:
            RuntimeReporter("runtasks", []).write()  # waits up to 300 s on the held lock
        except OperationalError as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    thread = threading.Thread(target=helper)
    thread.start()
    wait_for(some_backend_waits_on_a_lock, timeout=60)
    assert waits.join(thread, time.monotonic() + 60)  # far below the 300 s lock timeout
    assert errors and getattr(errors[0].__cause__, "sqlstate", None) == "57014", errors
