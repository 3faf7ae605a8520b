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


def _connection_params() -> dict[str, Any]:
    """The test database's libpq parameters, for a connection opened by hand."""
    params = dict(connection.get_connection_params())
    for key in ("cursor_factory", "context", "prepare_threshold"):
        params.pop(key, None)
    return params


def _same_server(params: dict[str, Any], started: datetime) -> str | None:
    """None when ``params`` reach the server that started at ``started``, else why not."""
    try:
        with psycopg.connect(**{"connect_timeout": 10, **params}) as conn:
            row = conn.execute("SELECT pg_postmaster_start_time()").fetchone()
    except psycopg.Error as exc:
        return str(exc).strip().splitlines()[0]
    return None if row is not None and row[0] == started else "another server answers there"


def tcp_candidates(listen_addresses: str) -> list[str]:
    """Where a client on this machine reaches a server listening on ``listen_addresses``."""
    wildcards = {"*": ["127.0.0.1", "::1"], "0.0.0.0": ["127.0.0.1"], "::": ["::1"]}
    hosts: list[str] = []
    for address in (a.strip() for a in listen_addresses.split(",")):
        for host in wildcards.get(address, [address] if address else []):
            if host not in hosts:
                hosts.append(host)
    return hosts


_found_tcp: dict[tuple[str, str], tuple[str, int]] = {}


def _discovered_tcp_address(socket: str) -> tuple[str, int]:
    """The TCP address of the server reached through ``socket``, from its own
    ``listen_addresses`` and ``port``, checked to answer as that same server."""
    params = _connection_params()
    with psycopg.connect(**params) as conn:
        row = conn.execute(
            "SELECT current_setting('listen_addresses'), current_setting('port')::int, "
            "pg_postmaster_start_time()"
        ).fetchone()
    assert row is not None
    listen, port, started = row
    hosts = tcp_candidates(listen)
    if not hosts:
        pytest.skip(
            f"the test server (Unix socket {socket or 'in the default directory'}) has no TCP "
            "listener (listen_addresses is empty) and AWA_TEST_DATABASE_TCP is unset: "
            "this test needs TCP in front of it"
        )
    tried = []
    for host in hosts:
        why = _same_server({**params, "host": host, "port": port}, started)
        if why is None:
            return host, port
        tried.append(f"{host}:{port}: {why}")
    pytest.fail(
        f"the test server (Unix socket {socket or 'in the default directory'}) listens on "
        f"{listen!r} port {port}, but no TCP connection reached it ({'; '.join(tried)}): "
        "set AWA_TEST_DATABASE_TCP=host:port"
    )


def tcp_address() -> tuple[str, int]:
    """A TCP address ``(host, port)`` of the server under test, for what needs TCP
    in front of it (PgBouncer, a TCP proxy, keepalives): the test database's own
    when it is reached over TCP, else ``AWA_TEST_DATABASE_TCP`` (``host:port``;
    scripts/with_db.py sets it for the embedded server on its Unix socket), else
    the one the server itself listens on (``listen_addresses``, ``port``), once
    it answers as the same server. Skips only when the server listens on no TCP
    address at all."""
    s = connection.settings_dict
    options = s.get("OPTIONS", {})
    host = s.get("HOST") or options.get("host") or ""
    if host and not host.startswith("/"):
        return host, int(s.get("PORT") or options.get("port") or os.environ.get("PGPORT") or 5432)
    given = os.environ.get("AWA_TEST_DATABASE_TCP", "")
    if given:
        given_host, given_port = given.rsplit(":", 1)
        return given_host, int(given_port)
    key = (host, str(s.get("PORT") or options.get("port") or ""))
    if key not in _found_tcp:
        _found_tcp[key] = _discovered_tcp_address(host)
    return _found_tcp[key]


def unix_socket_directory() -> str:
    """A Unix-socket directory of the server under test: the test database's own
    when it is reached through one, else one of the server's
    ``unix_socket_directories`` that answers here as the same server. Skips when
    none does (a server on another machine, or one with no socket)."""
    s = connection.settings_dict
    options = s.get("OPTIONS", {})
    host = s.get("HOST") or options.get("host") or ""
    if host.startswith("/"):
        return str(host)
    params = _connection_params()
    with psycopg.connect(**params) as conn:
        row = conn.execute(
            "SELECT current_setting('unix_socket_directories'), current_setting('port')::int, "
            "pg_postmaster_start_time()"
        ).fetchone()
    assert row is not None
    directories, port, started = row
    for directory in (d.strip() for d in directories.split(",")):
        here = directory.startswith("/") and os.path.isdir(directory)
        if here and _same_server({**params, "host": directory, "port": port}, started) is None:
            return directory
    pytest.skip(f"the test server at {host} has no Unix socket reachable here ({directories!r})")


def database_user() -> str:
    """The role the tests connect as (the test database's ``USER``)."""
    return str(connection.settings_dict.get("USER") or os.environ.get("PGUSER") or "postgres")


def raw_connection(autocommit: bool = True) -> psycopg.Connection[Any]:
    """A second, independent session on the test database."""
    return psycopg.connect(autocommit=autocommit, **_connection_params())


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
    from awa_django.leader.loop import LEADER_LOCK_KEY

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
