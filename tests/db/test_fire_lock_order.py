"""The evaluator's fire statement takes schedule row locks in name order."""

from __future__ import annotations

import threading

import pytest
from django.db import connections

from awa_django.models import Job
from tests.factories import CronJobFactory
from tests.helpers.database import raw_connection
from tests.helpers.fires import CURRENT_FIRE, FIRE, T0, fire, fresh, plan_entry
from tests.helpers.sql_schema import install_superseded
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("function", ["awa_cron_fire_v2"])
def test_fire__locks_rows_in_name_order(function: str) -> None:
    """A writer that follows the lock order (by name) never deadlocks with it."""
    FIRE["function"] = function
    with connections["default"].cursor() as cursor:
        install_superseded(cursor, function)  # the versions after it skip a locked row
    a = fresh(CronJobFactory(name="a").name)
    b = fresh(CronJobFactory(name="b").name)
    other = raw_connection(autocommit=False)
    try:
        other.execute("SET lock_timeout = '3s'")
        other.execute("SELECT 1 FROM awa_cron_jobs WHERE name = 'a' FOR UPDATE")
        done = threading.Event()

        def run_fire() -> None:
            try:
                fire(plan_entry(b, [T0]), plan_entry(a, [T0]))  # the plan lists b first
            finally:
                connections.close_all()
                done.set()

        thread = threading.Thread(target=run_fire)
        thread.start()
        with raw_connection() as observer:  # the fire now waits for "a" and must hold nothing else
            wait_for(
                lambda: observer.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
                ).fetchone()[0],
                timeout=60,
            )
        other.execute("SELECT 1 FROM awa_cron_jobs WHERE name = 'b' FOR UPDATE")  # must not block
        other.rollback()
        thread.join(timeout=60)
        assert done.is_set()
    finally:
        other.close()
        FIRE["function"] = CURRENT_FIRE
        with connections["default"].cursor() as cursor:
            cursor.execute(f"DROP FUNCTION {function}(jsonb)")
    assert Job.objects.count() == 2
