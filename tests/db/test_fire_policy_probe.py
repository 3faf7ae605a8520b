"""The overlap check of the fire statement: probed per schedule, never joined.

``awa_cron_fire_v7`` (the leader's statement) decides ``overlap`` from one
probe of a schedule's unfinished jobs per row with a policy. These tests read
the plan PostgreSQL ran (``auto_explain`` at NOTICE level, ANALYZE on, nested
statements included) for a whole batch of ``skip`` schedules, and compare v7's
decisions with v6's (same contract) on a batch that mixes every case.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.db import connection, transaction

from awa_django.models import CronJob
from awa_django.store.job_rows import job_row
from awa_django.store.queries import query
from tests.factories import CronJobFactory, JobFactory
from tests.helpers.database import db_now
from tests.helpers.fires import plan_entry
from tests.helpers.sql_schema import install_superseded

pytestmark = pytest.mark.django_db

BATCH = 200
JOIN_FILTER = re.compile(r"Rows Removed by Join Filter: (\d+)")
# The function the leader calls.
LEADER_FUNCTION = re.search(r"FROM (\w+)\(", query("fire_plan")).group(1)  # type: ignore[union-attr]
# The per-row read of awa_jobs, however the planner reads it (index or bitmap
# scan, as the table's statistics decide): how many times it ran.
PROBE = re.compile(
    r"(?:Index Scan|Index Only Scan|Bitmap Heap Scan|Seq Scan)(?: using \w+)? on awa_jobs j\b.*?loops=(\d+)\)"
)


def minute(moment: datetime, minutes_ago: int = 0) -> datetime:
    return moment.replace(second=0, microsecond=0) - timedelta(minutes=minutes_ago)


def call(function: str, plan: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """The (schedule, slot) of each job ``function`` inserted for ``plan``."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {function}(%s::jsonb)", [json.dumps(plan)])
        columns = [c.name for c in cursor.description]
        rows = [job_row(columns, r) for r in cursor.fetchall()]
    return sorted((r["metadata"]["cron_name"], r["metadata"]["cron_fire_at"]) for r in rows)


@pytest.fixture
def explained() -> Iterator[list[str]]:
    """Every plan the session runs, with ANALYZE, as notices (this test's transaction only)."""
    notices: list[str] = []
    connection.ensure_connection()
    raw = connection.connection

    def keep(diagnostic: Any) -> None:
        notices.append(diagnostic.message_primary or "")

    raw.add_notice_handler(keep)
    with connection.cursor() as cursor:
        cursor.execute("LOAD 'auto_explain'")
        for setting, value in [
            ("log_min_duration", "0"),
            ("log_analyze", "on"),
            ("log_nested_statements", "on"),
            ("log_level", "notice"),
        ]:
            cursor.execute(f"SET LOCAL auto_explain.{setting} = '{value}'")
    try:
        yield notices
    finally:
        raw.remove_notice_handler(keep)


def test_overlap_check__a_batch_of_skip_schedules_is_probed_once_each_and_never_joined(
    explained: list[str],
) -> None:
    now = db_now()
    rows = [
        CronJobFactory(name=f"skip-{i:03d}", overlap="skip", last_enqueued_at=minute(now, 2))
        for i in range(BATCH)
    ]
    for row in rows[::2]:  # half of them have a job still running
        JobFactory(
            state="running", metadata={"cron_name": row.name, "cron_fire_at": "2000-01-01T00:00:00+00:00"}
        )
    explained.clear()
    fired = call(LEADER_FUNCTION, [plan_entry(row, [minute(now, 1)]) for row in rows])
    assert [name for name, _ in fired] == [row.name for row in rows[1::2]]
    fire_plan = next(n for n in explained if "awa_cron_slot_outcomes" in n and "Insert on awa_jobs" in n)
    # A join of the batch with its policy rows would throw away about BATCH^2
    # pairs; the probe reads each schedule's own index entries, once.
    assert sum(int(n) for n in JOIN_FILTER.findall(fire_plan)) < BATCH
    probes = PROBE.findall(fire_plan.replace("\n", " "))
    assert probes and all(int(loops) == BATCH for loops in probes), fire_plan


def mixed_batch(now: datetime) -> list[dict[str, Any]]:
    """Every overlap case in one batch: allow, skip free and busy, buffer_one
    free, running, running with one waiting, and catch-up of three slots."""
    cases = [
        ("allow", None),
        ("skip", None),
        ("skip", "running"),
        ("skip", "retryable"),
        ("buffer_one", None),
        ("buffer_one", "running"),
        ("buffer_one", "scheduled"),
    ]
    plan = []
    for i, (overlap, state) in enumerate(cases):
        for policy in ("coalesce", "catch_up"):
            row = CronJobFactory(
                name=f"mixed-{i}-{policy}",
                overlap=overlap,
                missed_fire_policy=policy,
                last_enqueued_at=minute(now, 4),
            )
            if state:
                JobFactory(
                    state=state, metadata={"cron_name": row.name, "cron_fire_at": "2000-01-01T00:00:00+00:00"}
                )
            slots = [minute(now, m) for m in (3, 2, 1)] if policy == "catch_up" else [minute(now, 1)]
            plan.append(plan_entry(row, slots))
    return plan


def decisions(function: str, plan: list[dict[str, Any]]) -> tuple[Any, ...]:
    fired = call(function, plan)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT name, slot, outcome, blocked_by IS NOT NULL FROM awa_cron_slot_outcomes ORDER BY 1, 2, 3"
        )
        outcomes = cursor.fetchall()
    marks = sorted(CronJob.objects.values_list("name", "last_enqueued_at", "next_fire_at"))
    return fired, outcomes, marks


def test_overlap_check__v7_decides_every_case_as_v6() -> None:
    now = db_now()
    plan = mixed_batch(now)
    results = {}
    with connection.cursor() as cursor:
        install_superseded(cursor, "awa_cron_fire_v6")
    for function in ("awa_cron_fire_v6", "awa_cron_fire_v7"):
        with transaction.atomic():
            results[function] = decisions(function, plan)
            transaction.set_rollback(True)
    v6, v7 = results["awa_cron_fire_v6"], results["awa_cron_fire_v7"]
    assert v7 == v6
    fired_names = {name for name, _ in v7[0]}
    # The batch exercised both sides of every policy.
    assert "mixed-0-catch_up" in fired_names and "mixed-2-coalesce" not in fired_names
    assert any(outcome == "skipped_overlap" for _, _, outcome, _ in v7[1])
