"""Connections to the test database and reads of its state.

The test database is pytest-django's (``test_<NAME>``): these helpers open
independent sessions on it, hand its URL to subprocesses, read the server's
clock and find the session that holds the ``runcron`` leader lock.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import psycopg
import pytest
from django.db import connection, transaction


def database_url() -> str:
    """A URL for the *test* database, for subprocesses and raw connections."""
    s = connection.settings_dict
    host = s.get("HOST") or ""
    port = f":{s['PORT']}" if s.get("PORT") else ""
    socket = s.get("OPTIONS", {}).get("host")
    query = f"?host={socket}" if socket else ""
    return f"postgres://{database_user()}@{host}{port}/{s['NAME']}{query}"


def tcp_address() -> tuple[str, int]:
    """A TCP address ``(host, port)`` of the server under test, for what needs TCP
    in front of it (PgBouncer, a TCP proxy, keepalives): the test database's own
    when it is reached over TCP, else ``AWA_TEST_DATABASE_TCP`` (``host:port``;
    scripts/with_db.py sets it for the embedded server on its Unix socket)."""
    s = connection.settings_dict
    options = s.get("OPTIONS", {})
    host = s.get("HOST") or options.get("host") or ""
    if host and not host.startswith("/"):
        return host, int(s.get("PORT") or options.get("port") or os.environ.get("PGPORT") or 5432)
    given = os.environ.get("AWA_TEST_DATABASE_TCP", "")
    if not given:
        pytest.fail(
            f"the test server is reached through the Unix socket in {host or 'the default directory'}; "
            "this test needs a TCP address for it: set AWA_TEST_DATABASE_TCP=host:port"
        )
    given_host, given_port = given.rsplit(":", 1)
    return given_host, int(given_port)


def database_user() -> str:
    """The role the tests connect as (the test database's ``USER``)."""
    return str(connection.settings_dict.get("USER") or os.environ.get("PGUSER") or "postgres")


def raw_connection(autocommit: bool = True) -> psycopg.Connection[Any]:
    """A second, independent session on the test database."""
    params = dict(connection.get_connection_params())
    for key in ("cursor_factory", "context", "prepare_threshold"):
        params.pop(key, None)
    return psycopg.connect(autocommit=autocommit, **params)


@contextmanager
def operator_context() -> Iterator[None]:
    """A transaction in which the schedule fence lets lifecycle columns change,
    as awa_django's operator actions do (tests use it to set up rows)."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT set_config('awa.cron_admin', 'on', true)")
        yield


def db_now() -> datetime:
    """The database server's clock (``clock_timestamp()``), on Django's connection.

    Not ``now()``: inside a test's transaction that is the transaction's start.
    """
    with connection.cursor() as cursor:
        cursor.execute("SELECT clock_timestamp()")
        now: datetime = cursor.fetchone()[0]
    return now


def leader_pid() -> int | None:
    """The pid of the backend session holding the runcron leader lock, if any."""
    from awa_django.scheduler.leader import LEADER_LOCK_KEY

    key = LEADER_LOCK_KEY & 0xFFFFFFFFFFFFFFFF
    with raw_connection() as conn:
        row = conn.execute(
            "SELECT a.pid FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE l.locktype = 'advisory' AND l.granted "
            # Advisory locks are per database; other test databases may have leaders too.
            "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
            "AND l.classid::bigint = %s AND l.objid::bigint = %s",
            [key >> 32, key & 0xFFFFFFFF],
        ).fetchone()
    return row[0] if row else None
