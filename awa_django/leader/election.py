"""The leader election: a session-scoped advisory lock, and its liveness.

The lock lives on a dedicated connection (see ``leader.Leader``): holding
it is being the leader, and losing that session (a terminated backend, a
dropped network) releases it, which :func:`ping` notices.
"""

from __future__ import annotations

from typing import Any

import psycopg

from ..store import fleet

# pg_advisory_lock key: the bytes "AWADJLDR" as a signed 64-bit integer.
LEADER_LOCK_KEY = int.from_bytes(b"AWADJLDR", "big", signed=True)


def try_lock(conn: psycopg.Connection[Any]) -> bool:
    """Take the leader lock on ``conn`` if it is free; True when taken."""
    return fleet.try_leader_lock(conn, LEADER_LOCK_KEY)


def unlock(conn: psycopg.Connection[Any]) -> None:
    """Release the leader lock held on ``conn``; errors propagate."""
    fleet.release_leader_lock(conn, LEADER_LOCK_KEY)


def ping(conn: psycopg.Connection[Any]) -> None:
    """A round trip on ``conn``; raises when its session is gone."""
    fleet.ping_leader_session(conn)
