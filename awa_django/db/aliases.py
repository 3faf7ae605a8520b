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

import contextlib
from typing import Any

from django.conf import settings

from ..conf import conf

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
    that applies to the alias's database and user (``"transaction"``,
    ``"session"``, ``"statement"``; see :func:`effective_pool_mode`),
    ``"unknown"`` for a PgBouncer that would not tell, or None when it is not
    a PgBouncer (or cannot be reached: the other checks report that).
    """
    import psycopg

    dbname, params = _libpq_params(alias, timeout)
    try:
        console = psycopg.connect(dbname="pgbouncer", autocommit=True, prepare_threshold=None, **params)
    except psycopg.Error as exc:
        return "unknown" if "not allowed" in str(exc) else None
    try:
        version = console.execute("SHOW VERSION").fetchone()
        if not version or "pgbouncer" not in str(version[0]).lower():
            return None
        try:
            return _console_pool_mode(console, dbname, params)
        except psycopg.Error:
            return "unknown"
    except psycopg.Error:
        return None
    finally:
        console.close()


def _libpq_params(alias: str, timeout: int) -> tuple[str | None, dict[str, Any]]:
    """The alias's database name, and its psycopg parameters without it."""
    from django.db import connections

    params = dict(connections[alias].get_connection_params())
    dbname = params.get("dbname") or params.get("database")
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
    return (str(dbname) if dbname else None), params


def _show(console: Any, what: str) -> list[dict[str, Any]]:
    """One admin console ``SHOW`` as dicts (columns by name: versions add some)."""
    cursor = console.execute(f"SHOW {what}")
    names = [c.name for c in cursor.description or []]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _console_pool_mode(console: Any, dbname: str | None, params: dict[str, Any]) -> str:
    import psycopg

    login = str(console.info.user)
    defaults = [r["value"] for r in _show(console, "CONFIG") if r.get("key") == "pool_mode"]
    default = str(defaults[0]) if defaults else None
    databases = _show(console, "DATABASES")
    if dbname and _pool(_show(console, "POOLS"), dbname, _pool_user(login, dbname, databases)) is None:
        # PgBouncer creates the pool of (database, user) at the first login,
        # and a database served by the "*" entry too: log in once (nothing is
        # run) so that SHOW POOLS gives PgBouncer's own answer. If the login
        # fails, the configured overrides decide.
        with contextlib.suppress(psycopg.Error):
            psycopg.connect(dbname=dbname, autocommit=True, prepare_threshold=None, **params).close()
        databases = _show(console, "DATABASES")
    pools = _show(console, "POOLS")
    return effective_pool_mode(login, dbname, databases, _show(console, "USERS"), pools, default)


def _named(rows: list[dict[str, Any]], name: str | None) -> dict[str, Any]:
    return next((r for r in rows if name is not None and r.get("name") == name), {})


def _pool_user(login: str, dbname: str | None, databases: list[dict[str, Any]]) -> str:
    """The user of the pool: the entry's forced ``user=``, else the login user."""
    return str(_named(databases, dbname).get("force_user") or login)


def _pool(pools: list[dict[str, Any]], dbname: str, user: str) -> dict[str, Any] | None:
    return next((p for p in pools if p.get("database") == dbname and p.get("user") == user), None)


def effective_pool_mode(
    login: str,
    dbname: str | None,
    databases: list[dict[str, Any]],
    users: list[dict[str, Any]],
    pools: list[dict[str, Any]],
    default: str | None,
) -> str:
    """The pool mode PgBouncer applies to ``login`` connecting to ``dbname``.

    ``databases``, ``users`` and ``pools`` are the rows of the admin console's
    ``SHOW DATABASES``, ``SHOW USERS`` and ``SHOW POOLS``; ``default`` is the
    global ``pool_mode`` of ``SHOW CONFIG``. The global mode is only a
    default: a ``[databases]`` entry's ``pool_mode=`` overrides it, and a
    ``[users]`` entry overrides both. The pool's own ``pool_mode`` column
    (PgBouncer 1.18+) is PgBouncer's answer and wins; without it (an older
    PgBouncer, or no pool yet) that precedence is applied here, the user's
    override skipped for an entry that forces its own ``user=``.
    """
    database = _named(databases, dbname)
    pool_user = _pool_user(login, dbname, databases)
    pool = _pool(pools, dbname, pool_user) if dbname else None
    if pool and pool.get("pool_mode"):
        return str(pool["pool_mode"])
    user = {} if database.get("force_user") else _named(users, login)
    for mode in (user.get("pool_mode"), database.get("pool_mode"), default):
        if mode:
            return str(mode)
    return "unknown"
