"""election.py: the leader lock is one session-scoped advisory lock, and ping
notices when that session is gone."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from awa_django.leader import election
from tests.helpers.database import raw_connection
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def sessions() -> Iterator[list[psycopg.Connection[Any]]]:
    """Two independent sessions on the test database."""
    conns = [raw_connection(), raw_connection()]
    try:
        yield conns
    finally:
        for conn in conns:
            conn.close()


def holder_pids(conn: psycopg.Connection[Any]) -> list[int]:
    """Backends holding the advisory lock whose 64-bit key is LEADER_LOCK_KEY in this
    database (advisory locks are per database; pg_locks shows every database's)."""
    rows = conn.execute(
        "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1 "
        "AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
        "AND ((classid::bigint << 32) | objid::bigint) = %s",
        [election.LEADER_LOCK_KEY],
    ).fetchall()
    return [int(r[0]) for r in rows]


def test_leader_lock_key__is_awadjldr_as_a_signed_64_bit_integer() -> None:
    """Other binaries sharing the database must agree on this key."""
    assert election.LEADER_LOCK_KEY.to_bytes(8, "big", signed=True) == b"AWADJLDR"
    assert election.LEADER_LOCK_KEY == 0x415741444A4C4452


def test_try_lock__only_one_session_holds_the_lock(sessions: list[psycopg.Connection[Any]]) -> None:
    first, second = sessions
    assert election.try_lock(first) is True
    assert election.try_lock(second) is False
    assert holder_pids(second) == [first.info.backend_pid]


def test_unlock__lets_another_session_take_the_lock(sessions: list[psycopg.Connection[Any]]) -> None:
    first, second = sessions
    assert election.try_lock(first)
    election.unlock(first)
    assert holder_pids(second) == []
    assert election.try_lock(second) is True
    assert election.try_lock(first) is False


def test_try_lock__closing_the_holders_session_releases_the_lock(
    sessions: list[psycopg.Connection[Any]],
) -> None:
    first, second = sessions
    assert election.try_lock(first)
    first.close()
    assert wait_for(lambda: election.try_lock(second))


def test_ping__raises_once_the_session_is_terminated(sessions: list[psycopg.Connection[Any]]) -> None:
    first, second = sessions
    assert election.try_lock(first)
    election.ping(first)  # a live session answers
    second.execute("SELECT pg_terminate_backend(%s)", [first.info.backend_pid])

    def ping_fails() -> bool:
        try:
            election.ping(first)
        except psycopg.Error:
            return True
        return False

    assert wait_for(ping_fails)
    # The terminated session's lock is free again.
    assert wait_for(lambda: election.try_lock(second))
