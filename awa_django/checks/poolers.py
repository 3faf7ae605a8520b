"""System checks of connection poolers: the session-bound connections (the
leader's lock, LISTEN) and the pooled aliases' options (E100, W100-W104).

Registered with the others by :mod:`awa_django.checks`.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, Warning

from ..conf import conf
from ..db.aliases import leader_alias, listen_alias, pooler_warning, probe_pgbouncer

__all__ = ["check_pgbouncer_sessions", "check_poolers"]


def _served_aliases() -> list[str]:
    """Databases an AwaBackend serves (the worker LISTENs there by default)."""
    aliases = ["default"] if "default" in settings.DATABASES else []
    for spec in getattr(settings, "TASKS", {}).values():
        if isinstance(spec, dict) and str(spec.get("BACKEND", "")).startswith("awa_django."):
            alias = (spec.get("OPTIONS") or {}).get("DATABASE", "default")
            if isinstance(alias, str) and alias in settings.DATABASES and alias not in aliases:
                aliases.append(alias)
    return aliases


def _listen_alias_error() -> Error | None:
    """AWA_LISTEN_DATABASE is None or a PostgreSQL alias of DATABASES (E100)."""
    listen = conf.LISTEN_DATABASE
    if listen is None:
        return None
    if not isinstance(listen, str) or listen not in settings.DATABASES:
        problem = "is not in DATABASES"
    elif "postg" not in str(settings.DATABASES[listen].get("ENGINE", "")):  # postgresql, postgis
        problem = "is not PostgreSQL"
    else:
        return None
    return Error(
        f"AWA_LISTEN_DATABASE {listen!r} {problem}",
        hint="Set AWA_LISTEN_DATABASE to None or to a PostgreSQL alias of DATABASES.",
        id="awa_django.E100",
    )


def check_poolers(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """Session-bound connections (leader lock, LISTEN) avoid transaction poolers."""
    listen_error = _listen_alias_error()
    messages: list[CheckMessage] = [] if listen_error is None else [listen_error]
    leader = leader_alias()
    if isinstance(leader, str) and leader in settings.DATABASES:
        reason = pooler_warning(leader)
        if reason:
            messages.append(
                Warning(
                    f"leader alias {leader!r} {reason}: the lock needs a session",
                    hint="Point AWA_LEADER_DATABASE at an alias that connects directly (see docs).",
                    id="awa_django.W100",
                )
            )
    if listen_error is None:
        for served in _served_aliases():
            alias = listen_alias(served)
            reason = pooler_warning(alias)
            if reason:
                messages.append(
                    Warning(
                        f"LISTEN alias {alias!r} {reason}: wake-ups need a session",
                        hint="Point AWA_LISTEN_DATABASE at an alias that connects directly (see docs).",
                        id="awa_django.W101",
                    )
                )
    for alias, entry in settings.DATABASES.items():
        if not pooler_warning(alias):
            continue
        if entry.get("DISABLE_SERVER_SIDE_CURSORS") is not True:
            messages.append(
                Warning(
                    f"database {alias!r} is pooled but keeps server-side cursors",
                    hint="Under transaction pooling set DISABLE_SERVER_SIDE_CURSORS = True.",
                    id="awa_django.W102",
                )
            )
        if (entry.get("OPTIONS") or {}).get("prepare_threshold") is not None:
            messages.append(
                Warning(
                    f"database {alias!r} is pooled but enables prepared statements",
                    hint="Remove OPTIONS['prepare_threshold'] (prepared statements) for this alias.",
                    id="awa_django.W103",
                )
            )
    return messages


def check_pgbouncer_sessions(
    app_configs: Any = None, databases: Any = None, **kwargs: Any
) -> list[CheckMessage]:
    """The leader and LISTEN aliases do not answer as a non-session PgBouncer.

    Runs with ``manage.py check --database ALIAS`` (and ``migrate``): it
    connects to the virtual ``pgbouncer`` database behind each alias, so a
    PostgreSQL server logs one failed connection to database "pgbouncer". The
    mode is the one PgBouncer applies to the alias's database and user (per
    user, per database, then global), not only the global ``pool_mode``.
    """
    requested = set(databases or ())
    if not requested:
        return []
    roles: dict[str, list[str]] = {}
    leader = leader_alias()
    if isinstance(leader, str) and leader in settings.DATABASES:
        roles.setdefault(leader, []).append("leader lock")
    listen = conf.LISTEN_DATABASE
    if listen is None or (isinstance(listen, str) and listen in settings.DATABASES):
        for served in _served_aliases():
            roles.setdefault(listen_alias(served), []).append("LISTEN")
    messages: list[CheckMessage] = []
    for alias, uses in roles.items():
        # Only aliases the caller allowed us to query, and that are PostgreSQL.
        if alias not in requested or "postg" not in str(settings.DATABASES[alias].get("ENGINE", "")):
            continue
        mode = probe_pgbouncer(alias)
        if mode is not None and mode != "session":
            messages.append(
                Warning(
                    f"alias {alias!r} ({', '.join(sorted(set(uses)))}) is a PgBouncer, pool_mode={mode}",
                    hint=(
                        "Point the alias at PostgreSQL directly, or give its PgBouncer database and user "
                        "pool_mode = session (the [users] and [databases] entries override the global one)."
                    ),
                    id="awa_django.W104",
                )
            )
    return messages
