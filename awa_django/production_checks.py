"""System checks for production setups: connection poolers (E100, W100-W104).
The health/metrics settings are checked with the others, from ``conf.SETTINGS``.

Imported by :mod:`awa_django.checks`, which registers every check; ids are
documented in docs/reference/checks.md.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, Warning, register

from .checks import HINTS
from .conf import conf

POOLER_HINTS = {
    "awa_django.E100": "Set AWA_LISTEN_DATABASE to None or to a PostgreSQL alias of DATABASES.",
    "awa_django.W100": "Point AWA_LEADER_DATABASE at an alias that connects directly (see docs).",
    "awa_django.W101": "Point AWA_LISTEN_DATABASE at an alias that connects directly (see docs).",
    "awa_django.W102": "Under transaction pooling set DISABLE_SERVER_SIDE_CURSORS = True.",
    "awa_django.W103": "Remove OPTIONS['prepare_threshold'] (prepared statements) for this alias.",
}


# E-ids carry their hint in HINTS too (every documented error id has one).
HINTS["awa_django.E100"] = POOLER_HINTS["awa_django.E100"]
# The health/metrics settings of issue 13 are rows of conf.SETTINGS (E020).


def _served_aliases() -> list[str]:
    """Databases an AwaBackend serves (the worker LISTENs there by default)."""
    aliases = ["default"] if "default" in settings.DATABASES else []
    for spec in getattr(settings, "TASKS", {}).values():
        if isinstance(spec, dict) and str(spec.get("BACKEND", "")).startswith("awa_django."):
            alias = (spec.get("OPTIONS") or {}).get("DATABASE", "default")
            if isinstance(alias, str) and alias in settings.DATABASES and alias not in aliases:
                aliases.append(alias)
    return aliases


@register(Tags.compatibility)
def check_poolers(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """Session-bound connections (leader lock, LISTEN) avoid transaction poolers."""
    from .db.aliases import leader_alias, listen_alias, pooler_warning

    def warn(check_id: str, msg: str) -> Warning:
        return Warning(msg, hint=POOLER_HINTS[check_id], id=check_id)

    messages: list[CheckMessage] = []
    listen = conf.LISTEN_DATABASE
    if listen is not None:
        if not isinstance(listen, str) or listen not in settings.DATABASES:
            messages.append(
                Error(
                    f"AWA_LISTEN_DATABASE {listen!r} is not in DATABASES",
                    hint=POOLER_HINTS["awa_django.E100"],
                    id="awa_django.E100",
                )
            )
            listen = None
        elif "postg" not in str(settings.DATABASES[listen].get("ENGINE", "")):  # postgresql, postgis
            messages.append(
                Error(
                    f"AWA_LISTEN_DATABASE {listen!r} is not PostgreSQL",
                    hint=POOLER_HINTS["awa_django.E100"],
                    id="awa_django.E100",
                )
            )
    leader = leader_alias()
    if isinstance(leader, str) and leader in settings.DATABASES:
        reason = pooler_warning(leader)
        if reason:
            messages.append(
                warn("awa_django.W100", f"leader alias {leader!r} {reason}: the lock needs a session")
            )
    if not any(m.id == "awa_django.E100" for m in messages):
        for served in _served_aliases():
            alias = listen_alias(served)
            reason = pooler_warning(alias)
            if reason:
                messages.append(
                    warn("awa_django.W101", f"LISTEN alias {alias!r} {reason}: wake-ups need a session")
                )
    for alias, entry in settings.DATABASES.items():
        if not pooler_warning(alias):
            continue
        if entry.get("DISABLE_SERVER_SIDE_CURSORS") is not True:
            messages.append(
                warn("awa_django.W102", f"database {alias!r} is pooled but keeps server-side cursors")
            )
        if (entry.get("OPTIONS") or {}).get("prepare_threshold") is not None:
            messages.append(
                warn("awa_django.W103", f"database {alias!r} is pooled but enables prepared statements")
            )
    return messages


POOLER_HINTS["awa_django.W104"] = (
    "Point the alias at PostgreSQL directly, or give its PgBouncer database and user "
    "pool_mode = session (the [users] and [databases] entries override the global one)."
)


@register(Tags.database)
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
    from .db.aliases import leader_alias, listen_alias, probe_pgbouncer

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
                    hint=POOLER_HINTS["awa_django.W104"],
                    id="awa_django.W104",
                )
            )
    return messages
