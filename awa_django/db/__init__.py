"""Plumbing between awa_django and PostgreSQL.

``sessions``: dedicated connections, ``Listener``, rows as dicts, the read-only
snapshot, operator and owner contexts, the database clock; ``aliases`` picks the
alias of each of awa_django's own connections (PgBouncer setups); ``guards``
bounds every wait on another session; ``sqlfiles`` loads the shipped SQL files
and their hashes; ``migration_state`` says whether the database is migrated;
``jsonb`` decodes stored JSON within the payload limits, never raising;
``timestamps`` reads timestamps no datetime can hold (a raw row's 'infinity');
``lock_order`` is the lock order migrations take so they never deadlock live
processes (``in_lock_order``).
"""

__all__ = [
    "aliases",
    "guards",
    "jsonb",
    "lock_order",
    "migration_state",
    "sessions",
    "sqlfiles",
    "timestamps",
]
