"""awa_django.db: dedicated connections, the Listener, snapshots, contexts, the error guard."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import psycopg
import pytest
from django.db import DatabaseError, connection, transaction

from awa_django.db import sessions

DEADLINE = 60.0


def _notify(channel: str) -> None:
    with sessions.dedicated_connection("default", "test notifier") as conn:
        conn.execute(f"NOTIFY {channel}")


@pytest.mark.django_db(transaction=True)
def test_dedicated_connection__is_autocommit_and_names_its_role_and_pid() -> None:
    with sessions.dedicated_connection("default", "test role") as conn:
        assert conn.autocommit
        name = conn.execute("SELECT current_setting('application_name')").fetchone()
        assert name is not None
        assert name[0].startswith("awa_django test role pid=")


@pytest.mark.django_db(transaction=True)
def test_listener__returns_true_on_notify_and_false_on_timeout() -> None:
    listener = sessions.Listener(
        "awa_test_chan", lambda: sessions.dedicated_connection("default", "test listener")
    )
    try:
        assert listener.wait(0.01) is False
        _notify("awa_test_chan")
        assert listener.wait(DEADLINE) is True
        assert listener.wait(0.01) is False  # drained
    finally:
        listener.close()


@pytest.mark.django_db(transaction=True)
def test_listener__notify_received_during_another_command_is_not_lost() -> None:
    conn = sessions.dedicated_connection("default", "test lock")
    listener = sessions.Listener.on(conn, "awa_test_backlog")
    try:
        _notify("awa_test_backlog")
        conn.execute("SELECT pg_sleep(0.05)")  # the notify arrives while this runs
        assert listener.wait(DEADLINE) is True
    finally:
        listener.close()
        conn.close()


@pytest.mark.django_db(transaction=True)
def test_listener__wake_from_another_thread_ends_a_long_wait() -> None:
    listener = sessions.Listener(
        "awa_test_wake", lambda: sessions.dedicated_connection("default", "test listener")
    )
    result: list[bool] = []
    waiter = threading.Thread(target=lambda: result.append(listener.wait(3600)))
    try:
        listener.connection()
        waiter.start()
        listener.wake()
        waiter.join(DEADLINE)
        assert not waiter.is_alive()
        assert result == [False]
    finally:
        listener.wake()
        waiter.join(DEADLINE)
        listener.close()


def test_listener__stop_event_ends_a_wait_without_a_connection() -> None:
    calls: list[int] = []

    def refuse() -> Any:
        calls.append(1)
        raise psycopg.OperationalError("refused (test)")

    listener = sessions.Listener("awa_test_stop", refuse, retry_after=3600)
    stop = threading.Event()
    stop.set()
    try:
        assert listener.wait(3600, stop) is False
        # Polling, not reconnecting: one attempt within retry_after.
        assert listener.wait(0.01) is False
        assert listener.wait(0.01) is False
        assert calls == [1]
    finally:
        listener.close()


def test_listener__wake_after_close_is_harmless() -> None:
    listener = sessions.Listener("awa_test_closed", None)
    listener.close()
    listener.wake()
    listener.close()


@pytest.mark.django_db(transaction=True)
def test_listener__owned_connection_errors_propagate_to_the_owner() -> None:
    conn = sessions.dedicated_connection("default", "test lock")
    listener = sessions.Listener.on(conn, "awa_test_owned")
    pid = conn.info.backend_pid
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
        deadline = time.monotonic() + DEADLINE
        with pytest.raises(psycopg.Error):
            while time.monotonic() < deadline:
                listener.wait(0.2)
    finally:
        listener.close()
        conn.close()


@pytest.mark.django_db(transaction=True)
def test_listener__its_own_broken_connection_is_dropped_and_reopened_later() -> None:
    opened: list[psycopg.Connection[Any]] = []

    def connect() -> psycopg.Connection[Any]:
        conn = sessions.dedicated_connection("default", "test listener")
        opened.append(conn)
        return conn

    listener = sessions.Listener("awa_test_drop", connect, retry_after=0.0)
    try:
        first = listener.connection()
        assert first is not None
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [first.info.backend_pid])
        deadline = time.monotonic() + DEADLINE
        while listener._conn is first and time.monotonic() < deadline:
            assert listener.wait(0.2) is False
        assert listener._conn is not first
        second = listener.connection()
        assert second is not None and second is not first
        _notify("awa_test_drop")
        assert listener.wait(DEADLINE) is True
    finally:
        listener.close()
        for conn in opened:
            conn.close()


@pytest.mark.django_db
def test_dict_rows_and_fetch_dicts__key_rows_by_column() -> None:
    assert sessions.fetch_dicts("SELECT 1 AS a, 'x' AS b UNION ALL SELECT 2, 'y' ORDER BY 1") == [
        {"a": 1, "b": "x"},
        {"a": 2, "b": "y"},
    ]
    with connection.cursor() as cursor:
        cursor.execute("SELECT 3 AS c WHERE false")
        assert sessions.dict_rows(cursor) == []


@pytest.mark.django_db(transaction=True)
def test_read_only_snapshot__is_repeatable_read_and_refuses_writes() -> None:
    with sessions.read_only_snapshot(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT current_setting('transaction_isolation'), current_setting('transaction_read_only')"
        )
        assert cursor.fetchone() == ("repeatable read", "on")
    with (
        pytest.raises(DatabaseError, match="read-only"),
        sessions.read_only_snapshot(),
        connection.cursor() as cursor,
    ):
        cursor.execute("CREATE TEMP TABLE awa_should_not_exist (x int)")


@pytest.mark.django_db
def test_read_only_snapshot__inside_a_caller_transaction_keeps_its_rules() -> None:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT 1")  # the caller's transaction has started
        with sessions.read_only_snapshot():
            cursor.execute("SELECT current_setting('transaction_read_only')")
            assert cursor.fetchone() == ("off",)


@pytest.mark.django_db
def test_operator_and_owner_contexts__are_set_inside_and_cleared_after() -> None:
    def setting(cursor: Any, name: str) -> str:
        cursor.execute("SELECT coalesce(current_setting(%s, true), '')", [name])
        return str(cursor.fetchone()[0])

    with transaction.atomic(), connection.cursor() as cursor:
        with sessions.operator_context(cursor):
            assert setting(cursor, "awa.cron_admin") == "on"
        assert setting(cursor, "awa.cron_admin") == ""
        with sessions.owner_context(cursor, "billing"):
            assert setting(cursor, "awa.cron_owner") == "billing"
        assert setting(cursor, "awa.cron_owner") == ""


@pytest.mark.django_db
def test_database_now__is_the_database_clock() -> None:
    now = sessions.database_now()
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement_timestamp()")
        later = cursor.fetchone()[0]
    assert now.tzinfo is not None
    assert now <= later


@pytest.mark.django_db(transaction=True)
def test_reconnect_on_error__logs_drops_the_connection_and_records_the_error(caplog: Any) -> None:
    log = logging.getLogger("awa_django.test")
    connection.ensure_connection()
    with caplog.at_level(logging.ERROR, logger="awa_django.test"):
        with sessions.reconnect_on_error("default", "probe", log, "test.error") as guard:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1/0")
    assert isinstance(guard.error, DatabaseError)
    assert connection.connection is None  # reopened on next use
    assert [(r.getMessage().split(":")[0], getattr(r, "event", None)) for r in caplog.records] == [
        ("probe failed", "test.error")
    ]
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


@pytest.mark.django_db
def test_reconnect_on_error__inside_a_transaction_propagates() -> None:
    log = logging.getLogger("awa_django.test")
    with pytest.raises(DatabaseError), transaction.atomic():
        with (
            sessions.reconnect_on_error("default", "probe", log, "test.error"),
            connection.cursor() as cursor,
        ):
            cursor.execute("SELECT 1/0")


def test_reconnect_on_error__other_errors_propagate_untouched() -> None:
    log = logging.getLogger("awa_django.test")
    with pytest.raises(ZeroDivisionError):
        with sessions.reconnect_on_error("default", "probe", log, "test.error") as guard:
            raise ZeroDivisionError
    assert guard.error is None


def test_reconnect_on_error__also_handles_the_errors_named_by_the_caller(caplog: Any) -> None:
    class GaveUp(Exception):
        pass

    log = logging.getLogger("awa_django.test")
    with caplog.at_level(logging.ERROR, logger="awa_django.test"):
        with sessions.reconnect_on_error("default", "report", log, "test.error", also=(GaveUp,)) as guard:
            raise GaveUp("retries exhausted")
    assert isinstance(guard.error, GaveUp)
    assert [r.getMessage() for r in caplog.records] == ["report failed: retries exhausted"]


@pytest.mark.django_db
def test_savepoint_if_nested__a_failed_statement_leaves_the_callers_transaction_usable() -> None:
    with transaction.atomic(), connection.cursor() as cursor:
        with pytest.raises(DatabaseError), sessions.savepoint_if_nested():
            cursor.execute("SELECT 1/0")
        cursor.execute("SELECT 1")  # the outer transaction was not aborted
        assert cursor.fetchone() == (1,)


def test_savepoint_if_nested__outside_a_transaction_adds_nothing() -> None:
    from contextlib import nullcontext

    assert isinstance(sessions.savepoint_if_nested(), nullcontext)
