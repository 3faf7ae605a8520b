"""The leader election's SQL: a session-scoped advisory lock, and its liveness.

The lock lives on a dedicated connection (see ``leader.Leader``): holding
it is being the leader, and losing that session (a terminated backend, a
dropped network) releases it, which :func:`ping` notices.
"""

from __future__ import annotations

from typing import Any

import psycopg

# pg_advisory_lock key: the bytes "AWADJLDR" as a signed 64-bit integer.
LEADER_LOCK_KEY = int.from_bytes(b"AWADJLDR", "big", signed=True)


def try_lock(conn: psycopg.Connection[Any]) -> bool:
    """Take the leader lock on ``conn`` if it is free; True when taken."""
    row = conn.execute("SELECT pg_try_advisory_lock(%s)", [LEADER_LOCK_KEY]).fetchone()
    return bool(row and row[0])


def unlock(conn: psycopg.Connection[Any]) -> None:
    """Release the leader lock held on ``conn``; errors propagate."""
    conn.execute("SELECT pg_advisory_unlock(%s)", [LEADER_LOCK_KEY])


def ping(conn: psycopg.Connection[Any]) -> None:
    """A round trip on ``conn``; raises when its session is gone."""
    conn.execute("SELECT 1")
