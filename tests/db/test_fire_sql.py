"""The SQL objects behind exactly-once fires, exercised directly.

These talk to the installed functions and triggers with raw SQL, as any
writer (an old binary, psql, the ORM) would: the guarantees must not depend on
the caller remembering anything.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from django.db import DatabaseError, connection, transaction

from awa_django import contract
from awa_django.models import CronJob, Job
from awa_django.store.job_rows import job_row
from tests.factories import CronJobFactory
from tests.helpers.database import operator_context
from tests.helpers.fires import CURRENT_FIRE, FIRE, T0, fire, fresh, plan_entry

pytestmark = pytest.mark.django_db

# Every fire statement keeps the same contract: v2 added name-ordered row
# locking, v3 parking, v4 metadata for the fired jobs, v5 the execution
# policies, v6 interval schedules, v7 a cheaper overlap check, v8 (used by the
# evaluator) records unique-key skips. The installed ones: the current version
# and the previous one, kept for processes of the previous release.
FIRE_FUNCTIONS = [contract.previous_function("awa_cron_fire"), contract.current_function("awa_cron_fire")]


@pytest.fixture(autouse=True, params=FIRE_FUNCTIONS)
def fire_function(request: pytest.FixtureRequest) -> Any:
    FIRE["function"] = request.param
    yield request.param
    FIRE["function"] = CURRENT_FIRE


def test_fire__first_fire_marks_and_inserts_in_one_statement() -> None:
    row = fresh(
        CronJobFactory(
            name="nightly",
            queue="reports",
            priority=7,
            max_attempts=9,
            tags=["a", "b"],
            metadata={"team": "ops"},
            args={"args": [1], "kwargs": {"k": "v"}},
        ).name
    )
    jobs = fire(plan_entry(row, [T0]))
    assert len(jobs) == 1
    job = jobs[0]
    assert job["kind"] == row.kind
    assert (job["queue"], job["priority"], job["max_attempts"], job["tags"]) == ("reports", 7, 9, ["a", "b"])
    assert job["args"] == {"args": [1], "kwargs": {"k": "v"}}
    assert job["state"] == "available" and job["attempt"] == 0
    assert job["metadata"] == {
        "team": "ops",
        "cron_name": "nightly",
        "cron_fire_at": "2026-03-01T12:00:00+00:00",
    }
    assert fresh("nightly").last_enqueued_at == T0


def test_fire__lost_cas_inserts_nothing_and_is_not_an_error() -> None:
    row = fresh(CronJobFactory().name)
    assert len(fire(plan_entry(row, [T0]))) == 1
    # A second leader that read the same (NULL) token loses the compare-and-swap.
    assert fire(plan_entry(row, [T0])) == []
    assert fire(plan_entry(row, [T0 + timedelta(minutes=1)])) == []
    assert Job.objects.count() == 1
    assert fresh(row.name).last_enqueued_at == T0


def test_fire__cas_compares_exact_microseconds() -> None:
    token = T0 + timedelta(microseconds=123456)
    row = fresh(CronJobFactory(last_enqueued_at=token).name)
    assert fire(plan_entry(row, [T0 + timedelta(minutes=1)], prev=T0)) == []
    assert len(fire(plan_entry(row, [T0 + timedelta(minutes=1)]))) == 1


@pytest.mark.parametrize(
    "change",
    [
        {"paused_at": T0, "paused_by": "alice"},
        {"retired_at": T0, "retired_by": "ops", "retired_revision": "operator"},
        {"cron_expr": "*/5 * * * *"},
        {"timezone": "Europe/Berlin"},
        {"missed_fire_policy": "catch_up"},
    ],
    ids=["paused", "retired", "expression", "timezone", "policy"],
)
def test_fire__guards_close_the_read_then_change_window(change: dict[str, Any]) -> None:
    row = fresh(CronJobFactory().name)  # the leader "reads" here
    with operator_context():
        CronJob.objects.filter(name=row.name).update(**change)  # an operator acts
    assert fire(plan_entry(row, [T0])) == []
    assert Job.objects.count() == 0
    assert fresh(row.name).last_enqueued_at is None


def test_fire__recreated_schedule_cannot_refire_a_slot() -> None:
    row = fresh(CronJobFactory(name="daily").name)
    assert len(fire(plan_entry(row, [T0]))) == 1
    CronJob.objects.filter(name="daily").delete()
    again = fresh(CronJobFactory(name="daily").name)
    assert fire(plan_entry(again, [T0])) == []  # same slot: skipped by the unique index
    assert len(fire(plan_entry(fresh("daily"), [T0 + timedelta(days=1)]))) == 1
    assert Job.objects.count() == 2


def test_fire__catch_up_fires_in_order_and_set_based_rows_are_independent() -> None:
    a = fresh(CronJobFactory(name="a", missed_fire_policy="catch_up", last_enqueued_at=T0).name)
    b = fresh(CronJobFactory(name="b", last_enqueued_at=T0).name)
    c = fresh(CronJobFactory(name="c").name)
    CronJob.objects.filter(name="b").update(last_enqueued_at=T0 + timedelta(seconds=1))  # b's CAS will lose
    fires_a = [T0 + timedelta(minutes=i) for i in (1, 2, 3)]
    jobs = fire(plan_entry(a, fires_a), plan_entry(b, [T0 + timedelta(minutes=1)]), plan_entry(c, [T0]))
    assert [(j["metadata"]["cron_name"], j["metadata"]["cron_fire_at"]) for j in jobs] == [
        ("a", "2026-03-01T12:01:00+00:00"),
        ("a", "2026-03-01T12:02:00+00:00"),
        ("a", "2026-03-01T12:03:00+00:00"),
        ("c", "2026-03-01T12:00:00+00:00"),
    ]
    assert [j["id"] for j in jobs] == sorted(j["id"] for j in jobs)
    assert fresh("a").last_enqueued_at == fires_a[-1]
    assert fresh("b").last_enqueued_at == T0 + timedelta(seconds=1)


def test_fire__entry_without_fires_only_stores_next_fire_at() -> None:
    row = fresh(CronJobFactory(last_enqueued_at=T0).name)
    before = fresh(row.name)
    assert fire(plan_entry(row, [], next_fire_at=T0 + timedelta(hours=1))) == []
    after = fresh(row.name)
    assert after.next_fire_at == T0 + timedelta(hours=1)
    assert (after.last_enqueued_at, after.updated_at) == (before.last_enqueued_at, before.updated_at)


def test_fire__mark_and_insert_are_atomic_when_the_insert_fails() -> None:
    row = fresh(CronJobFactory().name)
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE FUNCTION pg_temp.refuse() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN RAISE EXCEPTION 'job insert refused'; END $$"
        )
        cursor.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON awa_jobs FOR EACH ROW EXECUTE FUNCTION pg_temp.refuse()"
        )
    with pytest.raises(DatabaseError, match="job insert refused"), transaction.atomic():
        fire(plan_entry(row, [T0]))
    with connection.cursor() as cursor:
        cursor.execute("DROP TRIGGER refuse ON awa_jobs")
    assert fresh(row.name).last_enqueued_at is None  # the mark was rolled back with the insert
    assert len(fire(plan_entry(row, [T0]))) == 1


@pytest.mark.parametrize(
    ("setup", "change"),
    [
        ({}, {"cron_expr": "0 * * * *"}),
        ({}, {"timezone": "Asia/Tokyo"}),
        ({}, {"missed_fire_policy": "catch_up"}),
        ({}, {"last_enqueued_at": T0 + timedelta(minutes=5)}),
        ({}, {"paused_at": T0}),
        ({"paused_at": T0}, {"paused_at": None}),
        ({}, {"retired_at": T0}),
        ({"retired_at": T0}, {"retired_at": None}),
    ],
    ids=["expression", "timezone", "policy", "token", "pause", "resume", "retire", "restore"],
)
def test_next_fire_at__reset_by_every_change_it_depends_on(
    setup: dict[str, Any], change: dict[str, Any]
) -> None:
    name = CronJobFactory(last_enqueued_at=T0, **setup).name
    stored = T0 + timedelta(hours=1)
    # A statement that sets next_fire_at itself keeps it (as the fire statement does).
    with operator_context():  # the fence would drop any write to a retired row
        CronJob.objects.filter(name=name).update(next_fire_at=stored)
    assert fresh(name).next_fire_at == stored
    with operator_context():
        CronJob.objects.filter(name=name).update(**change)
    assert fresh(name).next_fire_at is None


def test_next_fire_at__unrelated_changes_keep_it() -> None:
    name = CronJobFactory(last_enqueued_at=T0).name
    fire(plan_entry(fresh(name), [], next_fire_at=T0 + timedelta(hours=1)))
    CronJob.objects.filter(name=name).update(queue="mail", metadata={"x": 1}, priority=3)
    assert fresh(name).next_fire_at == T0 + timedelta(hours=1)


def upsert(*definitions: dict[str, Any]) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT awa_cron_upsert_v1(%s::jsonb)", [json.dumps(list(definitions))])
        return [r[0] for r in cursor.fetchall()]


def definition(name: str, **overrides: Any) -> dict[str, Any]:
    base = {
        "name": name,
        "cron_expr": "0 9 * * *",
        "timezone": "UTC",
        "kind": "tests.testapp.tasks.record",
        "queue": "default",
        "args": {"args": [], "kwargs": {"format": "pdf"}},
        "priority": 0,
        "max_attempts": 3,
        "tags": [],
        "metadata": {},
        "missed_fire_policy": "coalesce",
    }
    return base | overrides


def test_upsert__inserts_updates_and_never_deletes() -> None:
    assert upsert(definition("deploy-a"), definition("deploy-b")) == ["deploy-a", "deploy-b"]
    assert upsert(
        definition(
            "deploy-b",
            cron_expr="30 8 * * *",
            timezone="Pacific/Auckland",
            queue="reports",
            missed_fire_policy="catch_up",
        )
    ) == ["deploy-b"]
    row = fresh("deploy-b")
    assert (row.cron_expr, row.timezone, row.queue, row.missed_fire_policy) == (
        "30 8 * * *",
        "Pacific/Auckland",
        "reports",
        "catch_up",
    )
    assert CronJob.objects.filter(name="deploy-a").exists()  # another deployment's row survives


def test_upsert__unchanged_definition_writes_nothing() -> None:
    upsert(definition("steady"))
    before = fresh("steady")
    assert upsert(definition("steady")) == []
    assert fresh("steady").updated_at == before.updated_at


def test_upsert__preserves_pause_and_last_enqueued_at() -> None:
    upsert(definition("kept"))
    CronJob.objects.filter(name="kept").update(paused_at=T0, paused_by="ops", last_enqueued_at=T0)
    upsert(definition("kept", cron_expr="30 8 * * *", args={"args": [], "kwargs": {"version": "v2"}}))
    row = fresh("kept")
    assert (row.paused_at, row.paused_by, row.last_enqueued_at) == (T0, "ops", T0)
    assert row.cron_expr == "30 8 * * *" and row.args["kwargs"] == {"version": "v2"}


def test_upsert__retired_row_stays_a_tombstone() -> None:
    upsert(definition("gone"))
    with operator_context():
        CronJob.objects.filter(name="gone").update(retired_at=T0, retired_by="ops")
    assert upsert(definition("gone", cron_expr="* * * * *")) == []
    assert fresh("gone").cron_expr == "0 9 * * *"


def test_trigger__bypasses_pause_and_leaves_the_schedule_alone() -> None:
    name = CronJobFactory(last_enqueued_at=T0, paused_at=T0, paused_by="ops", metadata={"team": "x"}).name
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM awa_cron_trigger_v1(%s, %s)", [name, "alice"])
        columns = [c.name for c in cursor.description]
        (job,) = [job_row(columns, r) for r in cursor.fetchall()]
    assert job["metadata"] == {
        "team": "x",
        "cron_name": name,
        "triggered_manually": True,
        "triggered_by": "alice",
    }
    row = fresh(name)
    assert (row.last_enqueued_at, row.paused_by) == (T0, "ops")


def test_trigger__refuses_retired_and_unknown_rows() -> None:
    name = CronJobFactory(retired_at=T0).name
    with connection.cursor() as cursor:
        for target in (name, "no-such-schedule"):
            cursor.execute("SELECT * FROM awa_cron_trigger_v1(%s, %s)", [target, "alice"])
            assert cursor.fetchall() == []
    assert Job.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_notify__schedule_changes_wake_listeners(second_connection: psycopg.Connection[Any]) -> None:
    second_connection.execute("LISTEN awa_cron")
    name = CronJobFactory().name  # insert
    assert list(second_connection.notifies(timeout=30, stop_after=1)), "insert did not notify"
    CronJob.objects.filter(name=name).update(paused_at=T0)
    CronJob.objects.filter(name=name).update(paused_at=None)  # resume
    assert len(until_sentinel(second_connection)) == 2, "pause and resume each notify"
    # The leader's own fire statement stores next_fire_at: no self-wake-up.
    fire(plan_entry(fresh(name), [T0]))
    assert until_sentinel(second_connection) == []


def until_sentinel(listener: psycopg.Connection[Any]) -> list[str]:
    """The payloads ``listener`` receives on awa_cron before a sentinel sent now.

    Notifications arrive in commit order, so everything committed before the
    sentinel arrives before it: no time window to guess.
    """
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_notify('awa_cron', 'test-sentinel')")
    received: list[str] = []
    for notify in listener.notifies(timeout=60):
        if notify.payload == "test-sentinel":
            return received
        received.append(notify.payload)
    raise AssertionError(f"no sentinel within 60 s (received {received})")
