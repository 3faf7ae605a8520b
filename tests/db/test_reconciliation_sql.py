"""The reconciliation SQL objects, exercised the way any writer would reach them.

Old binaries, psql and foreign code know nothing of owners and retirement:
the protocol lock trigger, the unknown-runtime reset and the schedule fence
must hold for raw statements, without the caller's cooperation.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from django.db import DatabaseError, connection
from django.db.models.functions import Now

from awa_django.declarations.sync import sync_schedules
from awa_django.exceptions import OperationRefused
from awa_django.leader.evaluator import evaluate
from awa_django.models import CronJob, Job
from awa_django.operations import owners, schedules
from awa_django.reconciliation.persistence import CRON_PROTOCOL_VERSION, plan
from tests.factories import CronJobFactory, JobFactory
from tests.helpers.database import db_now, operator_context, raw_connection
from tests.helpers.reconcile import (
    Background,
    execute,
    fire,
    fire_entry,
    holding_protocol_lock,
    job,
    legacy_runtime,
    outdated_fire,
    owner_state,
    publish,
    row,
    sqlstate,
    wait_until_blocked,
)
from tests.testapp.tasks import record

pytestmark = pytest.mark.django_db(transaction=True)


def owned(name: str, owner: str = "billing", **fields: Any) -> CronJob:
    """An owned schedule row, set up under the operator context."""
    CronJobFactory(name=name, **fields)
    with operator_context():
        CronJob.objects.filter(name=name).update(owner_id=owner)
    return row(name)


def tombstone(name: str, owner: str | None = None, **fields: Any) -> CronJob:
    """A retired schedule row, set up under the operator context."""
    CronJobFactory(name=name, **fields)
    with operator_context():
        CronJob.objects.filter(name=name).update(
            owner_id=owner, retired_at=Now(), retired_by="ops", retired_revision="operator"
        )
    return row(name)


def updated(sql: str, params: Any = None) -> int:
    """Rows affected by a raw statement (autocommit)."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount


def definition_of(current: CronJob) -> tuple[Any, ...]:
    return (
        current.cron_expr,
        current.timezone,
        current.kind,
        current.queue,
        current.args,
        current.priority,
        current.max_attempts,
        current.tags,
        current.metadata,
        current.missed_fire_policy,
    )


def minute(offset: int = 0) -> Any:
    return db_now().replace(second=0, microsecond=0) + timedelta(minutes=offset)


# -- protocol capability and the unknown-runtime reset ---------------------------


def test_protocol__schema_version_matches_the_python_constant() -> None:
    assert execute("SELECT awa_cron_protocol_version()") == [(CRON_PROTOCOL_VERSION,)]
    instance = publish("billing", [])
    assert execute("SELECT cron_protocol FROM awa_runtime_instances WHERE instance_id = %s", [instance]) == [
        (CRON_PROTOCOL_VERSION,)
    ]


def test_unknown_runtime__first_legacy_write_resets_every_clock_then_writes_nothing() -> None:
    publish("billing", [job("invoice")], grace_ms=60_000)
    publish("mail", [job("reminder")], grace_ms=60_000)
    # Current-protocol snapshot writes leave the clocks (and the owner rows) alone.
    before = {o: owner_state(o) for o in ("billing", "mail")}
    assert all(s["agreed_since"] and s["evidence_until"] for s in before.values())
    execute("UPDATE awa_runtime_instances SET last_seen_at = clock_timestamp()")
    assert {o: owner_state(o) for o in ("billing", "mail")} == before

    old = legacy_runtime()
    after = {o: owner_state(o) for o in ("billing", "mail")}
    for owner in ("billing", "mail"):
        assert (after[owner]["agreed_since"], after[owner]["evidence_until"]) == (None, None)
        assert after[owner]["synced_hash"] == before[owner]["synced_hash"]
    legacy_runtime(old)  # its next heartbeat
    execute("UPDATE awa_runtime_instances SET pid = 2 WHERE instance_id = %s", [old])
    legacy_runtime()  # another old binary
    assert {o: owner_state(o)["xmin"] for o in ("billing", "mail")} == {
        o: s["xmin"] for o, s in after.items()
    }


def test_unknown_runtime__another_protocol_version_resets_the_clock_too() -> None:
    publish("billing", [job("invoice")], grace_ms=60_000)
    assert owner_state("billing")["agreed_since"] is not None
    future = legacy_runtime(protocol=CRON_PROTOCOL_VERSION + 1)
    assert owner_state("billing")["agreed_since"] is None
    assert plan("billing").blocking_instances == [future]


# -- the protocol lock -----------------------------------------------------------


@pytest.mark.parametrize(
    "statement",
    [
        "INSERT INTO awa_runtime_instances (instance_id, hostname, pid, version, role, started_at, "
        "last_seen_at, snapshot_interval_ms, leader, shutting_down) VALUES (gen_random_uuid(), 'old', 1, "
        "'0.0.1', 'runcron', now(), now(), 10000, false, false)",
        "UPDATE awa_runtime_instances SET last_seen_at = now()",
        "DELETE FROM awa_runtime_instances WHERE cron_protocol IS NULL",
        "UPDATE awa_cron_declarations SET last_seen_at = now()",
    ],
    ids=["legacy-insert", "legacy-update", "delete", "declaration-update"],
)
def test_lock_evidence__snapshot_writes_wait_for_the_protocol_lock(statement: str) -> None:
    publish("billing", [job("invoice")])
    legacy_runtime()
    writer_conn = raw_connection()
    try:
        with holding_protocol_lock() as holder:
            writer = Background(lambda: writer_conn.execute(statement).rowcount)
            wait_until_blocked(writer, "advisory")
            holder.commit()
        assert writer.result() >= 1
    finally:
        writer_conn.close()


def test_lock_evidence__publication_waits_for_the_protocol_lock() -> None:
    with holding_protocol_lock() as holder:
        writer = Background(lambda: publish("billing", [job("invoice")]))
        wait_until_blocked(writer, "advisory")
        assert not CronJob.objects.exists()
        holder.commit()
    writer.result()
    assert row("invoice").owner_id == "billing"


def test_lock_evidence__job_paths_fires_and_manual_triggers_never_take_the_protocol_lock() -> None:
    CronJobFactory(name="nightly")
    running = JobFactory(state="running", attempt=1, heartbeat_at=db_now())

    def job_paths() -> tuple[Any, ...]:
        with connection.cursor() as cursor:
            cursor.execute("SELECT awa_heartbeat_v1(%s::bigint[], %s::integer[])", [[running.id], [1]])
            beats = cursor.fetchone()[0]
        fired = evaluate().jobs
        enqueued = record.enqueue(label="user")
        triggered = schedules.trigger("nightly", "ops")
        schedules.pause("nightly", "ops")
        return beats, fired, enqueued, triggered

    with holding_protocol_lock():
        paths = Background(job_paths)
        assert paths.done_within(2.0), "a job path waited for the protocol lock"
        beats, fired, _enqueued, triggered = paths.result()
    assert beats == 1 and len(fired) == 1 and triggered["metadata"]["triggered_manually"] is True


# -- the schedule fence: deletion ------------------------------------------------


def test_fence__retired_row_refuses_deletion_as_a_tombstone() -> None:
    tombstone("gone")
    with pytest.raises(DatabaseError) as deleted:
        execute("DELETE FROM awa_cron_jobs WHERE name = 'gone'")
    assert sqlstate(deleted.value) == "55000"
    assert "retired" in str(deleted.value) and "durable ownership" not in str(deleted.value)
    tombstone("owned-gone", owner="billing")
    with pytest.raises(DatabaseError) as deleted:
        execute("DELETE FROM awa_cron_jobs WHERE name = 'owned-gone'")
    assert sqlstate(deleted.value) == "55000" and "retired" in str(deleted.value)
    assert CronJob.objects.count() == 2


def test_fence__owned_row_refuses_deletion_naming_durable_ownership() -> None:
    owned("invoice")
    with pytest.raises(DatabaseError) as deleted:
        execute("DELETE FROM awa_cron_jobs WHERE name = 'invoice'")
    assert sqlstate(deleted.value) == "55000" and "durable ownership" in str(deleted.value)
    with operator_context(), pytest.raises(DatabaseError):
        # Not even an operator deletes a durable row: there is no physical purge.
        CronJob.objects.filter(name="invoice").delete()
    assert CronJob.objects.filter(name="invoice").exists()


def test_fence__unowned_active_rows_stay_removable() -> None:
    CronJobFactory(name="plain")
    assert updated("DELETE FROM awa_cron_jobs WHERE name = 'plain'") == 1
    CronJobFactory(name="plain")
    assert schedules.remove("plain", "ops").changed
    assert not CronJob.objects.exists()


# -- the schedule fence: updates -------------------------------------------------


@pytest.mark.parametrize(
    ("column", "value"),
    [("owner_id", "'billing'"), ("retired_at", "now()"), ("retired_by", "'x'"), ("retired_revision", "'x'")],
)
def test_fence__lifecycle_changes_need_the_operator_context(column: str, value: str) -> None:
    CronJobFactory(name="plain")
    with pytest.raises(DatabaseError) as refused:
        execute(f"UPDATE awa_cron_jobs SET {column} = {value} WHERE name = 'plain'")
    assert sqlstate(refused.value) == "55000" and "operator" in str(refused.value)
    with pytest.raises(DatabaseError):
        # The manager context is not the operator context.
        with operator_context(), connection.cursor() as cursor:
            cursor.execute(
                "SELECT set_config('awa.cron_admin', 'yes', true), "
                "set_config('awa.cron_owner', 'billing', true)"
            )
            cursor.execute(f"UPDATE awa_cron_jobs SET {column} = {value} WHERE name = 'plain'")
    with operator_context(), connection.cursor() as cursor:
        cursor.execute(f"UPDATE awa_cron_jobs SET {column} = {value} WHERE name = 'plain'")
        assert cursor.rowcount == 1


def test_fence__owned_definitions_change_only_in_the_matching_manager_context() -> None:
    before = definition_of(owned("invoice"))
    statement = "UPDATE awa_cron_jobs SET cron_expr = '0 1 * * *', queue = 'mail' WHERE name = 'invoice'"
    assert updated(statement) == 0
    for context in ("mail", "", "BILLING"):
        with operator_context(), connection.cursor() as cursor:
            cursor.execute(
                "SELECT set_config('awa.cron_admin', '', true), set_config('awa.cron_owner', %s, true)",
                [context],
            )
            cursor.execute(statement)
            assert cursor.rowcount == 0
    assert definition_of(row("invoice")) == before
    with operator_context(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT set_config('awa.cron_admin', '', true), set_config('awa.cron_owner', 'billing', true)"
        )
        cursor.execute(statement)
        assert cursor.rowcount == 1
    assert (row("invoice").cron_expr, row("invoice").queue) == ("0 1 * * *", "mail")


def test_fence__owned_rows_still_fire_and_pause_without_any_context() -> None:
    owned("invoice")
    assert len(fire(fire_entry("invoice", minute()))) == 1
    assert row("invoice").last_enqueued_at == minute()
    assert len(outdated_fire("invoice", minute(1))) == 1  # an old leader may still fire active owned rows
    assert schedules.pause("invoice", "ops").changed
    assert schedules.resume("invoice", "ops").changed
    assert (
        updated("UPDATE awa_cron_jobs SET paused_at = now(), paused_by = 'psql' WHERE name = 'invoice'") == 1
    )
    assert Job.objects.count() == 2


def test_fence__every_update_of_a_retired_row_is_silently_suppressed() -> None:
    before = tombstone("gone", owner="billing", last_enqueued_at=None)
    for statement in (
        "UPDATE awa_cron_jobs SET paused_at = now(), paused_by = 'psql' WHERE name = 'gone'",
        "UPDATE awa_cron_jobs SET last_enqueued_at = now() WHERE name = 'gone'",
        "UPDATE awa_cron_jobs SET cron_expr = '0 1 * * *' WHERE name = 'gone'",
    ):
        assert updated(statement) == 0
    with operator_context(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT set_config('awa.cron_admin', '', true), set_config('awa.cron_owner', 'billing', true)"
        )
        cursor.execute("UPDATE awa_cron_jobs SET cron_expr = '0 1 * * *' WHERE name = 'gone'")
        assert cursor.rowcount == 0  # not even its manager rewrites a tombstone
    after = row("gone")
    assert (after.paused_at, after.last_enqueued_at, after.cron_expr, after.updated_at) == (
        None,
        None,
        before.cron_expr,
        before.updated_at,
    )


def test_fence__outdated_fire_statement_inserts_nothing_for_a_retired_row() -> None:
    tombstone("gone", owner="billing")
    tombstone("gone-unowned")
    for name in ("gone", "gone-unowned"):
        assert outdated_fire(name, minute()) == []
        assert row(name).last_enqueued_at is None
        assert fire(fire_entry(name, minute())) == []  # the current statement's own guard
    assert not Job.objects.exists()
    # The same statement on an active row does fire: only the fence stops it above.
    CronJobFactory(name="active")
    assert len(outdated_fire("active", minute())) == 1


def test_fence__retired_or_owned_rows_survive_the_old_upsert() -> None:
    gone = tombstone("gone")
    invoice = owned("invoice")
    changed = [dict(job(name, "0 1 * * *", queue="mail").definition()) for name in ("gone", "invoice", "new")]
    written = [r[0] for r in execute("SELECT * FROM awa_cron_upsert_v1(%s::jsonb)", [json.dumps(changed)])]
    assert written == ["new"]
    assert definition_of(row("gone")) == definition_of(gone) and row("gone").retired_at == gone.retired_at
    assert definition_of(row("invoice")) == definition_of(invoice) and row("invoice").owner_id == "billing"
    assert row("new").owner_id is None  # an old writer may still add brand-new unowned names


def test_upsert_v2__reports_owned_rows_and_is_quiet_for_tombstones() -> None:
    tombstone("gone")
    owned("invoice")
    CronJobFactory(name="plain")
    definitions = [job(name, "0 1 * * *").definition() for name in ("gone", "invoice", "plain", "new")]
    outcomes = sorted(
        execute("SELECT name, outcome FROM awa_cron_upsert_v2(%s::jsonb)", [json.dumps(definitions)])
    )
    assert outcomes == [("invoice", "owned"), ("new", "written"), ("plain", "written")]
    assert row("gone").cron_expr == "* * * * *" and row("invoice").cron_expr == "* * * * *"
    assert row("new").owner_id is None and row("plain").cron_expr == "0 1 * * *"
    assert sync_schedules([job("gone", "0 2 * * *"), job("invoice", "0 2 * * *")]) == []


def test_contexts__do_not_outlive_their_transaction() -> None:
    CronJobFactory(name="plain")
    owned("other")
    publish("billing", [job("invoice")])  # runs the manager context (definition sync)
    owners.retire(actor="ops", apply=True, name="plain")  # runs the operator context
    settings = execute(
        "SELECT current_setting('awa.cron_admin', true), current_setting('awa.cron_owner', true)"
    )
    assert all(value in (None, "") for value in settings[0])
    with pytest.raises(DatabaseError):
        execute("UPDATE awa_cron_jobs SET owner_id = 'mail' WHERE name = 'other'")
    assert updated("UPDATE awa_cron_jobs SET cron_expr = '0 1 * * *' WHERE name = 'invoice'") == 0


def test_trigger__waits_for_a_concurrent_retire_and_then_refuses() -> None:
    CronJobFactory(name="nightly")
    retirer = raw_connection(autocommit=False)
    try:
        retirer.execute("SELECT set_config('awa.cron_admin', 'on', true)")
        retirer.execute(
            "UPDATE awa_cron_jobs SET retired_at = clock_timestamp(), retired_by = 'ops', "
            "retired_revision = 'operator' WHERE name = 'nightly'"
        )
        trigger = Background(lambda: schedules.trigger("nightly", "ops"))
        wait_until_blocked(trigger, "transactionid")
        retirer.commit()
    finally:
        retirer.close()
    with pytest.raises(OperationRefused, match="retired"):
        trigger.result()
    assert not Job.objects.exists()


def test_trigger__sql_function_returns_nothing_for_a_retired_row() -> None:
    tombstone("gone", owner="billing")
    assert execute("SELECT id FROM awa_cron_trigger_v1('gone', 'ops')") == []
    assert not Job.objects.exists()


def test_raw_connection__psycopg_errors_carry_the_fence_sqlstate() -> None:
    # What an old binary sees on its own driver connection.
    tombstone("gone")
    with raw_connection() as conn, pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState):
        conn.execute("DELETE FROM awa_cron_jobs WHERE name = 'gone'")
