"""Which database alias each of awa_django's own connections uses.

Most of awa_django's SQL is one statement or one transaction at a time and
works through a transaction-pooling PgBouncer. Two things need a real,
long-lived *session*: the leader's advisory lock (``AWA_LEADER_DATABASE``) and
the ``LISTEN`` connections that wake processes up (``AWA_LISTEN_DATABASE``).
Through transaction pooling the pooler hands each transaction to whichever
server connection is free, so a session lock or a ``LISTEN`` lands on a server
connection the process does not keep: the lock may be held by nobody or by
everybody, and notifications are lost.

Nothing on the wire says reliably that a connection goes through PgBouncer,
so :func:`pooler_warning` relies on what the settings tell: a ``DATABASES``
entry may declare ``"AWA_POOL_MODE": "transaction"`` (ignored by Django), and
port 6432, PgBouncer's default port, is treated as a pooler.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from .conf import conf

PGBOUNCER_DEFAULT_PORT = "6432"
# Pool modes in which a session does not survive the end of a transaction.
SESSIONLESS_POOL_MODES = ("transaction", "statement")


def leader_alias() -> str:
    """The alias of the leader's lock and ``awa_cron`` LISTEN connection."""
    return conf.LEADER_DATABASE


def listen_alias(serving: str) -> str:
    """The alias ``runtasks`` LISTENs on, for a worker serving database ``serving``.

    ``AWA_LISTEN_DATABASE`` when set, otherwise the served database itself.
    """
    alias = conf.LISTEN_DATABASE
    return serving if alias is None else alias


def pooler_warning(alias: str) -> str | None:
    """Why ``alias`` is believed to go through a transaction pooler, or None.

    Evidence, in order: the entry's own ``AWA_POOL_MODE`` declaration, then
    its port being PgBouncer's default (6432). An entry that declares
    ``"AWA_POOL_MODE": "session"`` (or ``"direct"``) is trusted over the port.
    """
    entry: dict[str, Any] = settings.DATABASES.get(alias, {})
    declared = entry.get("AWA_POOL_MODE")
    if isinstance(declared, str):
        if declared.lower() in SESSIONLESS_POOL_MODES:
            return f"declares AWA_POOL_MODE={declared!r}"
        return None
    port = str(entry.get("PORT") or "").strip()
    if port == PGBOUNCER_DEFAULT_PORT:
        return "uses port 6432, PgBouncer's default port"
    return None


def probe_pgbouncer(alias: str, timeout: int = 5) -> str | None:
    """Ask the server behind ``alias`` whether it is a PgBouncer; its pool mode if so.

    Connects to the virtual database ``pgbouncer`` (PgBouncer's admin console)
    with the alias's host, port and credentials. A PgBouncer answers
    ``SHOW VERSION`` (or refuses a user that is not an admin or stats user with
    "not allowed"); PostgreSQL has no such database. Returns the pool mode
    (``"transaction"``, ``"session"``, ``"statement"``), ``"unknown"`` for a
    PgBouncer that would not tell, or None when it is not a PgBouncer (or
    cannot be reached: the other checks report that).
    """
    import psycopg
    from django.db import connections

    params = dict(connections[alias].get_connection_params())
    for key in (
        "cursor_factory",
        "context",
        "prepare_threshold",
        "server_side_binding",
        "dbname",
        "database",
    ):
        params.pop(key, None)
    params["connect_timeout"] = timeout
    try:
        conn = psycopg.connect(dbname="pgbouncer", autocommit=True, prepare_threshold=None, **params)
    except psycopg.Error as exc:
        return "unknown" if "not allowed" in str(exc) else None
    try:
        version = conn.execute("SHOW VERSION").fetchone()
        if not version or "pgbouncer" not in str(version[0]).lower():
            return None
        try:
            rows = conn.execute("SHOW CONFIG").fetchall()
        except psycopg.Error:
            return "unknown"
        modes = [str(row[1]) for row in rows if row and row[0] == "pool_mode"]
        return modes[0] if modes else "unknown"
    except psycopg.Error:
        return None
    finally:
        conn.close()
