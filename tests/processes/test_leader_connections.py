"""A leader firing large slots keeps one fire connection while it leads.

Slots with more than one fire batch (over 500 rows) send every other batch on
a second connection: the leader opens it once, not once per slot. Counted
with PostgreSQL's own tally of sessions opened on the test database, read on
one connection kept open for the whole test.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from tests.helpers.waiting import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

# Three fire batches of at most 500 rows per slot: every slot uses a second connection.
SCHEDULES = 1100
SLOTS = 6


def sessions_opened(conn: psycopg.Connection[Any]) -> int:
    conn.execute("SELECT pg_stat_clear_snapshot()")
    row = conn.execute("SELECT sessions FROM pg_stat_database WHERE datname = current_database()").fetchone()
    return int(row[0]) if row else 0


def full_slots(conn: psycopg.Connection[Any]) -> int:
    """Slots for which every schedule fired."""
    row = conn.execute(
        "SELECT count(*) FROM (SELECT 1 FROM awa_jobs GROUP BY metadata->>'cron_fire_at' "
        "HAVING count(*) >= %s) AS slots",
        [SCHEDULES],
    ).fetchone()
    return int(row[0]) if row else 0


def test_leader__large_slots_share_one_fire_connection_while_it_leads(
    runcron: Callable[..., Any], second_connection: psycopg.Connection[Any]
) -> None:
    schedules = {
        f"s{i:04d}": {"cron": "* * * * * *", "task": "tests.testapp.tasks.record"} for i in range(SCHEDULES)
    }
    proc = runcron(schedules, env={"AWA_SYNC_INTERVAL": "60", "AWA_LOG_LEVEL": "WARNING"})
    wait_for(lambda: full_slots(second_connection) >= 2, timeout=180, interval=0.2)
    opened, slots = sessions_opened(second_connection), full_slots(second_connection)
    wait_for(lambda: full_slots(second_connection) >= slots + SLOTS, timeout=180, interval=0.2)
    # A second connection per slot would add one session per slot.
    assert sessions_opened(second_connection) - opened <= 2, proc.output()
