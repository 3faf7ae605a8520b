"""A leader firing large slots keeps its fire connections while it leads.

A slot of 400 rows or more is dealt out over the leader's connection and
FIRE_LANES - 1 kept ones: the leader opens them once, not once per slot.
Counted with PostgreSQL's own tally of sessions opened on the test database,
read on one connection kept open for the whole test.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from awa_django.leader import prefire
from tests.helpers.waiting import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

# Four lanes of 275 rows per slot: every slot uses three kept connections.
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


def test_leader__large_slots_reuse_the_fire_connections_it_keeps_while_it_leads(
    runcron: Callable[..., Any], second_connection: psycopg.Connection[Any]
) -> None:
    schedules = {
        f"s{i:04d}": {"cron": "* * * * * *", "task": "tests.testapp.tasks.record"} for i in range(SCHEDULES)
    }
    proc = runcron(schedules, env={"AWA_SYNC_INTERVAL": "60", "AWA_LOG_LEVEL": "WARNING"})
    wait_for(lambda: full_slots(second_connection) >= 2, timeout=180, interval=0.2)
    opened, slots = sessions_opened(second_connection), full_slots(second_connection)
    wait_for(lambda: full_slots(second_connection) >= slots + SLOTS, timeout=180, interval=0.2)
    # Connections per slot would add three sessions per slot (18). Kept ones
    # are opened once: at most the lanes not yet opened by the slots before
    # (an ordinary pass uses one), and the announcer's VACUUM (every 5,000
    # fires) opens its own.
    assert prefire.FIRE_LANES == 4
    assert sessions_opened(second_connection) - opened <= prefire.FIRE_LANES + 1, proc.output()
