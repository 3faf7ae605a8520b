"""Database plumbing shared by every awa_django module.

One place for what the leader, the worker, reconciliation and the operator
commands all need from PostgreSQL:

- :func:`dedicated_connection`: a psycopg connection of its own, outside
  Django's per-thread pool (the leader's session lock, LISTEN connections);
- :class:`Listener`: wait for a NOTIFY, a wake-up from another thread, or a
  deadline, with no polling slices (``runcron`` and ``runtasks`` both use it);
- :func:`dict_rows` / :func:`fetch_dicts`: rows as dicts keyed by column name;
- :func:`read_only_snapshot`: one REPEATABLE READ READ ONLY snapshot, and
  :func:`savepoint_if_nested` to isolate one statement in a caller's transaction;
- :func:`operator_context` / :func:`owner_context`: the transaction-local
  settings through which the fence trigger tells an operator or an owner's
  reconciliation from an ordinary write;
- :func:`database_now`: the database clock every scheduling decision uses;
- :class:`reconnect_on_error`: "catch a database error, log it, drop the
  connection so the next use reconnects", written once; :func:`connection_drops`
  counts those drops, so threads that keep a connection know to check theirs.
"""

from __future__ import annotations

import logging
import os
import select
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext, suppress
from datetime import datetime
from types import TracebackType
from typing import Any

import psycopg
from django.db import DatabaseError, InterfaceError, connections, transaction
from psycopg.types.string import TextLoader

logger = logging.getLogger("awa_django.db")

# The errors after which a Django connection is dropped and reopened on next use.
CONNECTION_ERRORS = (DatabaseError, InterfaceError)

# How many connections this process dropped after an error. An outage (a
# server restart, a failover) breaks every connection at once: a thread that
# kept its own through one seen elsewhere checks it before relying on it.
_drops = 0
_drops_lock = threading.Lock()


def connection_drops() -> int:
    """How many times :class:`reconnect_on_error` dropped a connection in this process."""
    return _drops


def _count_drop() -> None:
    global _drops
    with _drops_lock:
        _drops += 1


# Longest single blocking wait of a Listener: a stop request that forgot to
# call wake() is still honoured this promptly.
WAIT_SLICE = 0.25


def dedicated_connection(alias: str, role: str) -> psycopg.Connection[Any]:
    """Open an autocommit psycopg connection to the server behind ``alias``.

    It is not one of Django's connections: a session-scoped advisory lock or a
    LISTEN must outlive the transactions and thread-local connections Django
    manages. ``role`` goes into ``application_name`` with the pid, so an
    operator (and the tests) can map a backend to its process.
    """
    params = dict(connections[alias].get_connection_params())
    # Django-specific entries are not libpq parameters.
    for key in ("cursor_factory", "context", "prepare_threshold", "server_side_binding"):
        params.pop(key, None)
    params["application_name"] = f"awa_django {role} pid={os.getpid()}"
    conn = psycopg.connect(autocommit=True, **params)
    # json and jsonb come back as text, as on Django's connections: psycopg's
    # own loaders would decode them unbounded (see awa_django.db.jsonb).
    for json_type in ("json", "jsonb"):
        conn.adapters.register_loader(json_type, TextLoader)
    return conn


class Listener:
    """LISTEN on one channel and wait for a NOTIFY, a :meth:`wake` or a deadline.

    Either bound to a connection the caller owns (:meth:`on`: the leader's
    lock connection; its errors propagate, so a lost session is noticed at
    once) or opening its own lazily (``connect``: the worker; a failed connect
    or a broken connection is logged, and the caller polls until
    ``retry_after`` seconds later, so a database that is down or failing over
    sees no reconnect storm).
    """

    def __init__(
        self,
        channel: str,
        connect: Callable[[], psycopg.Connection[Any]] | None = None,
        *,
        retry_after: float = 1.0,
        conn: psycopg.Connection[Any] | None = None,
    ) -> None:
        self.channel = channel
        self._connect = connect
        self._retry_after = retry_after
        self._retry_at = 0.0
        self._conn = conn
        self._owned = conn is None
        self._listening = False
        # A self-pipe: wake() from any thread (or a signal handler) ends a wait.
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        # Guards the pipe against a wake() racing close(): a write to a
        # closed descriptor number could hit a file opened since.
        self._pipe_lock = threading.Lock()
        self._closed = False

    @classmethod
    def on(cls, conn: psycopg.Connection[Any], channel: str) -> Listener:
        """LISTEN on ``conn`` now; errors (the session is gone) propagate."""
        listener = cls(channel, conn=conn)
        listener._listen(conn)
        return listener

    def _listen(self, conn: psycopg.Connection[Any]) -> None:
        conn.execute(f"LISTEN {self.channel}")
        self._listening = True

    def connection(self) -> psycopg.Connection[Any] | None:
        """The listening connection, opened on first use; None while polling."""
        if self._conn is not None or self._connect is None:
            return self._conn
        if time.monotonic() < self._retry_at:
            return None
        try:
            conn = self._connect()
            self._listen(conn)
        except psycopg.Error as exc:
            self._retry_at = time.monotonic() + self._retry_after
            logger.warning(
                "cannot LISTEN on %s (%s); polling", self.channel, exc, extra={"event": "listen.error"}
            )
            return None
        self._conn = conn
        return conn

    def wake(self) -> None:
        """End the current (or next) wait early; safe from any thread or signal handler."""
        # Never block: a signal handler may interrupt close() holding the lock
        # (then there is no wait left to end anyway).
        if not self._pipe_lock.acquire(blocking=False):
            return
        try:
            if not self._closed:
                os.write(self._wake_w, b"x")
        except OSError:
            pass  # the pipe is full: a wake-up is pending anyway
        finally:
            self._pipe_lock.release()

    def wait(self, timeout: float, stop: threading.Event | None = None) -> bool:
        """Wait up to ``timeout`` seconds; True when a NOTIFY arrived.

        Returns early (False) on :meth:`wake` or when ``stop`` is set.
        """
        deadline = time.monotonic() + max(0.0, timeout)
        while stop is None or not stop.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            conn = self.connection()
            if conn is not None and self._received(conn):
                return True
            conn = self._conn  # None if _received just dropped a broken connection
            fds = [self._wake_r] + ([conn.fileno()] if conn is not None else [])
            ready, _, _ = select.select(fds, [], [], min(remaining, WAIT_SLICE))
            if self._wake_r in ready:
                self._drain_wakes()
                return False
            if conn is not None and ready and self._received(conn):
                return True
        return False

    def _received(self, conn: psycopg.Connection[Any]) -> bool:
        """Drain what has arrived (including what came during other commands)."""
        try:
            return bool(list(conn.notifies(timeout=0)))
        except psycopg.Error:
            if not self._owned:
                raise
            self._drop()
            return False

    def _drain_wakes(self) -> None:
        try:
            while os.read(self._wake_r, 512):
                pass
        except OSError:
            pass  # empty (non-blocking read)

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        self._retry_at = time.monotonic() + self._retry_after
        if conn is not None:
            logger.warning(
                "LISTEN connection on %s lost; polling", self.channel, extra={"event": "listen.error"}
            )
            conn.close()

    def close(self) -> None:
        """Close the connection if this listener opened it, and the wake pipe."""
        conn, self._conn = self._conn, None
        if conn is not None and self._owned:
            conn.close()
        with self._pipe_lock:
            if self._closed:
                return
            self._closed = True
            os.close(self._wake_r)
            os.close(self._wake_w)


def dict_rows(cursor: Any) -> list[dict[str, Any]]:
    """The cursor's remaining rows as dicts keyed by column name."""
    columns = [c.name for c in cursor.description]
    return [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]


def fetch_dicts(
    sql: str, params: Sequence[Any] | None = None, using: str = "default"
) -> list[dict[str, Any]]:
    """Run ``sql`` on Django's connection ``using``; its rows as dicts."""
    with connections[using].cursor() as cursor:
        cursor.execute(sql, params)
        return dict_rows(cursor)


@contextmanager
def read_only_snapshot(using: str = "default") -> Iterator[None]:
    """A REPEATABLE READ READ ONLY transaction: one snapshot, no lock taken.

    Inside a caller's transaction that transaction's snapshot rules apply.
    """
    nested = connections[using].in_atomic_block
    with transaction.atomic(using=using):
        if not nested:
            with connections[using].cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        yield


def savepoint_if_nested(using: str = "default") -> Any:
    """A savepoint inside a caller's transaction, so one failed statement does not
    abort it; nothing in autocommit, where each statement is its own transaction."""
    return transaction.atomic(using=using) if connections[using].in_atomic_block else nullcontext()


def set_local(cursor: Any, name: str, value: str) -> None:
    """A transaction-local setting (gone at commit or rollback)."""
    cursor.execute("SELECT set_config(%s, %s, true)", [name, value])


@contextmanager
def _setting(cursor: Any, name: str, value: str) -> Iterator[None]:
    # Internal coordination between awa_django and its fence trigger, not an
    # API: the trigger lets the write through only while the setting is on.
    set_local(cursor, name, value)
    try:
        yield
    except BaseException:
        # After a failed statement the transaction is aborted and its rollback
        # (or the savepoint's) undoes the setting: resetting it then would
        # replace the statement's own error with "current transaction is aborted".
        with suppress(DatabaseError, psycopg.Error):
            set_local(cursor, name, "")
        raise
    set_local(cursor, name, "")


def operator_context(cursor: Any) -> Any:
    """Writes inside run as an operator's (retire, restore, adopt, transfer)."""
    return _setting(cursor, "awa.cron_admin", "on")


def owner_context(cursor: Any, owner: str) -> Any:
    """Writes inside run as ``owner``'s reconciliation."""
    return _setting(cursor, "awa.cron_owner", owner)


def policies_context(cursor: Any) -> Any:
    """Writes inside know the execution policies: the fence lets them move
    ``last_enqueued_at`` forward on a row with a policy (it suppresses such a
    move from a fire statement of a release that ignores the policies)."""
    return _setting(cursor, "awa.cron_policies", "on")


def database_now(using: str = "default") -> datetime:
    """The database clock: the one every scheduling decision uses."""
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT statement_timestamp()")
        now: datetime = cursor.fetchone()[0]
    return now


class reconnect_on_error:
    """Catch a database error, log it, and drop the Django connection.

    The connection is reopened on its next use. Inside a caller's transaction
    the error propagates instead (the transaction is aborted anyway, and only
    its owner may end it). After the block, ``error`` holds what was caught::

        with reconnect_on_error("default", "claim", log, "worker.error") as guard:
            rows = jobs.claim(...)
        if guard.error is not None:
            ...
    """

    def __init__(
        self,
        using: str,
        what: str,
        log: logging.Logger,
        event: str,
        also: tuple[type[BaseException], ...] = (),
        stopping: threading.Event | None = None,
    ) -> None:
        self.using = using
        self.what = what
        self.log = log
        self.event = event
        # Further errors handled the same way (e.g. a report that gave up retrying).
        self.errors = CONNECTION_ERRORS + also
        # Once set, an error is expected (a stopping process cancels the
        # statements of its helper threads) and logged at DEBUG only.
        self.stopping = stopping
        self.error: BaseException | None = None

    def __enter__(self) -> reconnect_on_error:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool:
        if exc is None or not isinstance(exc, self.errors):
            return False
        self.error = exc
        if self.stopping is not None and self.stopping.is_set():
            self.log.debug("%s ended by the stop: %s", self.what, exc, extra={"event": self.event})
        else:
            self.log.error("%s failed: %s", self.what, exc, extra={"event": self.event})
        if connections[self.using].in_atomic_block:
            return False
        connections[self.using].close()
        _count_drop()
        return True
