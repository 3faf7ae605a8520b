"""The catch-up VACUUM of awa_jobs (maintenance/jobs_vacuum.py): nothing while
cleanup keeps up or while an old transaction holds it back (that transaction
is named, once); a VACUUM once the hold-back ends with cleanup behind,
cancelling an autovacuum-like run in its way only when it began before; index
upkeep waits while cleanup is behind; a role that may not vacuum is told once."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator

import psycopg
import pytest
from django.db import connection

from awa_django.maintenance import index_upkeep, jobs_vacuum
from awa_django.store import maintenance as maintenance_store
from tests.helpers.waiting import wait_for

# VACUUM cannot run inside a transaction: no test transaction.
pytestmark = pytest.mark.django_db(transaction=True)

ROWS = 3000


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    """Nothing remembered, and statistics that count no dead row version: the
    table is emptied between tests, but what earlier tests left may still be
    counted (PostgreSQL 14 reports through its collector, later). Autovacuum
    is off for awa_jobs meanwhile: it could remove the dead versions a test
    makes before the statistics count them."""
    jobs_vacuum.forget()
    index_upkeep.forget()
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE awa_jobs SET (autovacuum_enabled = false)")

    def vacuumed_clean() -> bool:
        with connection.cursor() as cursor:
            cursor.execute("VACUUM awa_jobs")
        return tuples()[1] == 0

    wait_for(vacuumed_clean, timeout=60, interval=0.3)
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("ALTER TABLE awa_jobs RESET (autovacuum_enabled)")
        jobs_vacuum.forget()
        index_upkeep.forget()


@pytest.fixture
def small_floor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jobs_vacuum, "MIN_DEAD", ROWS // 2)
    monkeypatch.setattr(jobs_vacuum, "QUIET_AFTER", 0.0)


def tuples() -> tuple[int, int]:
    with connection.cursor() as cursor:
        live, dead, _ = jobs_vacuum.tuples(cursor)
        return live, dead


def vacuums() -> int:
    with connection.cursor() as cursor:
        return jobs_vacuum.tuples(cursor)[2]


def churn(rows: int = ROWS) -> None:
    """``rows`` jobs inserted and deleted, their dead versions left for cleanup
    (and counted once the statistics have them)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO awa_jobs (kind) SELECT 'tests.testapp.tasks.record' FROM generate_series(1, %s)",
            [rows],
        )
        cursor.execute("DELETE FROM awa_jobs")
    wait_for(lambda: tuples()[1] >= rows, timeout=60, interval=0.2)


def test_behind__many_dead_versions_against_live_rows(small_floor: None) -> None:
    with connection.cursor() as cursor:
        assert not jobs_vacuum.behind(cursor)
    churn()
    with connection.cursor() as cursor:
        assert jobs_vacuum.behind(cursor)


def test_catch_up__nothing_while_cleanup_keeps_up() -> None:
    churn()  # under MIN_DEAD (100,000)
    before = vacuums()
    assert jobs_vacuum.catch_up() is False
    assert vacuums() == before


def test_catch_up__waits_for_an_old_transaction_then_vacuums(
    small_floor: None, caplog: pytest.LogCaptureFixture
) -> None:
    with psycopg.connect(**connection.get_connection_params()) as reader:
        reader.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        reader.execute("SELECT count(*) FROM awa_jobs").fetchone()
        churn()
        assert jobs_vacuum.catch_up() is False  # nothing it holds could be removed
        assert "default" in jobs_vacuum._held_back
        reader.execute("COMMIT")
    with caplog.at_level(logging.INFO, logger="awa_django.queues"):
        assert jobs_vacuum.catch_up() is True
    (record,) = [r for r in caplog.records if getattr(r, "event", None) == "jobs.vacuumed"]
    assert record.dead >= ROWS  # type: ignore[attr-defined]
    assert "default" not in jobs_vacuum._held_back
    wait_for(lambda: tuples()[1] == 0, timeout=60, interval=0.2)  # the VACUUM removed them
    assert jobs_vacuum.catch_up() is False  # caught up: nothing more to do


def test_catch_up__names_each_transaction_that_holds_cleanup_back_once(
    small_floor: None, caplog: pytest.LogCaptureFixture
) -> None:
    def told() -> list[logging.LogRecord]:
        return [r for r in caplog.records if getattr(r, "event", None) == "jobs.cleanup_held_back"]

    params = {**connection.get_connection_params(), "application_name": "nightly-report"}
    with psycopg.connect(**params) as reader, caplog.at_level(logging.WARNING, logger="awa_django.queues"):
        reader.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        reader.execute("SELECT count(*) FROM awa_jobs").fetchone()
        pid = reader.info.backend_pid
        assert jobs_vacuum.catch_up() is False
        (record,) = told()
        assert record.pid == pid and record.application == "nightly-report"  # type: ignore[attr-defined]
        assert record.state == "idle in transaction"  # type: ignore[attr-defined]
        assert f"process {pid}" in record.getMessage() and "nightly-report" in record.getMessage()
        assert jobs_vacuum.catch_up() is False
        assert len(told()) == 1  # the same transaction: told once
        reader.execute("COMMIT")
        reader.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        reader.execute("SELECT count(*) FROM awa_jobs").fetchone()
        assert jobs_vacuum.catch_up() is False
        assert len(told()) == 2  # a new transaction of the same session
        reader.execute("COMMIT")
    assert jobs_vacuum.catch_up() is False
    assert len(told()) == 2 and "default" not in jobs_vacuum._told


def test_catch_up__leaves_a_vacuum_begun_after_the_hold_back_alone(
    small_floor: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    churn()
    # What pg_stat_progress_vacuum shows while autovacuum works on the table.
    monkeypatch.setattr(maintenance_store, "jobs_vacuum_under_way", lambda cursor, after: after is None)
    assert jobs_vacuum.catch_up() is False  # no hold-back seen: the run under way is on it
    # One begun before the hold-back ended removes none of it: a VACUUM of its own.
    with connection.cursor() as cursor:
        cursor.execute("SELECT clock_timestamp()")
        jobs_vacuum._held_back["default"] = cursor.fetchone()[0]
    assert jobs_vacuum.catch_up() is True


def test_catch_up__a_held_table_lock_defers_it_within_the_lock_timeout(
    small_floor: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    churn()
    monkeypatch.setattr(jobs_vacuum, "LOCK_TIMEOUT_MS", 200)
    with psycopg.connect(**connection.get_connection_params()) as holder:
        # A lock VACUUM conflicts with, as a wraparound autovacuum holds it.
        holder.execute("BEGIN")
        holder.execute("LOCK TABLE awa_jobs IN SHARE UPDATE EXCLUSIVE MODE")
        with caplog.at_level(logging.INFO, logger="awa_django.queues"):
            assert jobs_vacuum.catch_up() is False
        holder.execute("ROLLBACK")
    assert any(getattr(r, "event", None) == "jobs.vacuum_deferred" for r in caplog.records)
    with connection.cursor() as cursor:
        cursor.execute("SHOW lock_timeout")
        assert cursor.fetchone()[0] != "200ms"  # the session's own timeouts are back
    assert jobs_vacuum.catch_up() is True


def test_catch_up__a_role_that_may_not_vacuum_is_told_once(
    small_floor: None, caplog: pytest.LogCaptureFixture
) -> None:
    churn()
    role = f"awa_no_vacuum_{os.getpid()}"  # roles are the cluster's: one per test process
    with connection.cursor() as cursor:
        cursor.execute(f"DROP ROLE IF EXISTS {role}")
        cursor.execute(f"CREATE ROLE {role}")
        cursor.execute(f"GRANT SELECT ON awa_jobs TO {role}")
        cursor.execute(f"SET ROLE {role}")
    try:
        with caplog.at_level(logging.INFO, logger="awa_django.queues"):
            assert jobs_vacuum.catch_up() is False
            assert jobs_vacuum.catch_up() is False
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET ROLE")
            cursor.execute(f"DROP OWNED BY {role}")
            cursor.execute(f"DROP ROLE {role}")
    refused = [r for r in caplog.records if getattr(r, "event", None) == "jobs.vacuum_refused"]
    assert len(refused) == 1


def test_index_upkeep__waits_while_cleanup_is_behind(
    small_floor: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    churn()
    calls: list[int] = []
    monkeypatch.setattr(index_upkeep, "estimates", lambda cursor: calls.append(1) or [])
    assert index_upkeep.upkeep() is None
    assert calls == []  # not even sized: a rebuild now would grow straight back
    assert jobs_vacuum.catch_up() is True
    wait_for(lambda: tuples()[1] < ROWS // 2, timeout=60, interval=0.2)
    assert index_upkeep.upkeep() is None
    assert calls == [1]


def test_index_upkeep__leaves_a_build_in_progress_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    with connection.cursor() as cursor:
        cursor.execute("CREATE INDEX awa_jobs_ready_ccnew ON awa_jobs (id)")
        cursor.execute(
            "UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'awa_jobs_ready_ccnew'::regclass"
        )
    try:
        # What pg_stat_progress_create_index shows while an operator's REINDEX runs.
        monkeypatch.setattr(maintenance_store, "index_build_under_way", lambda cursor: True)
        assert index_upkeep.upkeep() is None
        with connection.cursor() as cursor:
            cursor.execute("SELECT to_regclass('awa_jobs_ready_ccnew')")
            assert cursor.fetchone()[0] is not None  # not taken for a leftover
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP INDEX IF EXISTS awa_jobs_ready_ccnew")


def test_catch_up__backs_off_when_an_unseen_transaction_holds_cleanup_back(
    small_floor: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # A reader the check cannot see (another role's, without pg_read_all_stats).
    monkeypatch.setattr(jobs_vacuum, "QUIET_AFTER", 3600.0)
    monkeypatch.setattr(jobs_vacuum, "STATS_WAIT", 60.0)  # a busy collector (PostgreSQL 14)
    with psycopg.connect(**connection.get_connection_params()) as reader:
        reader.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        reader.execute("SELECT count(*) FROM awa_jobs").fetchone()
        churn()
        with caplog.at_level(logging.INFO, logger="awa_django.queues"):
            assert jobs_vacuum.catch_up() is True  # ran, and removed nothing
        (held,) = [r for r in caplog.records if getattr(r, "event", None) == "jobs.vacuum_held_back"]
        assert held.retry_in == jobs_vacuum.RETRY_AFTER  # type: ignore[attr-defined]
        before = vacuums()
        assert jobs_vacuum.catch_up() is False  # not again at once
        assert vacuums() == before
        # Each VACUUM that does no better doubles the wait, up to the cap.
        jobs_vacuum._retry["default"] = (0.0, jobs_vacuum._retry["default"][1])
        assert jobs_vacuum.catch_up() is True
        assert jobs_vacuum._retry["default"][1] == 2 * jobs_vacuum.RETRY_AFTER
        jobs_vacuum._retry["default"] = (0.0, jobs_vacuum.MAX_RETRY_AFTER)
        assert jobs_vacuum.catch_up() is True
        assert jobs_vacuum._retry["default"][1] == jobs_vacuum.MAX_RETRY_AFTER
        reader.execute("COMMIT")
    jobs_vacuum._retry["default"] = (0.0, jobs_vacuum._retry["default"][1])
    assert jobs_vacuum.catch_up() is True  # the reader gone, the VACUUM helps
    assert "default" not in jobs_vacuum._retry


def test_catch_up__writers_go_on_while_it_vacuums(small_floor: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Enqueue-like inserts and claim-like updates never wait for the catch-up
    VACUUM beyond a moment (its truncation lock gives way to waiters)."""
    # The writer's statements are transactions of their own, milliseconds long:
    # not the old transaction that holds cleanup back (QUIET_AFTER 0 would count one
    # caught mid-statement).
    monkeypatch.setattr(jobs_vacuum, "QUIET_AFTER", 30.0)
    churn(20000)
    params = connection.get_connection_params()
    stop = threading.Event()
    written: list[int] = []
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            with psycopg.connect(**params, autocommit=True) as conn:
                conn.execute("SET lock_timeout = '5s'")  # a real block fails the test
                while not stop.is_set():
                    (job_id,) = conn.execute(
                        "INSERT INTO awa_jobs (kind) VALUES ('tests.testapp.tasks.record') RETURNING id"
                    ).fetchone()
                    conn.execute("UPDATE awa_jobs SET state = 'running' WHERE id = %s", [job_id])
                    written.append(job_id)
        except BaseException as exc:  # reported below
            errors.append(exc)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        wait_for(lambda: written, timeout=60)
        assert jobs_vacuum.catch_up() is True
        during = len(written)
        wait_for(lambda: len(written) > during, timeout=60)  # still writing afterwards
    finally:
        stop.set()
        thread.join(60)
    assert not errors
