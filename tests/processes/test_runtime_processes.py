"""Runtime snapshots and authoritative startup, with real processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection

from awa_django import contract
from awa_django.models import CronDeclaration, CronJob, CronManifest, CronOwner, RuntimeInstance
from tests.factories import CronJobFactory
from tests.helpers.database import database_url, raw_connection
from tests.helpers.processes import ROOT
from tests.helpers.waiting import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

AUTHORITATIVE = {
    "AWA_AUTHORITATIVE": "1",
    "AWA_OWNER": "billing",
    "AWA_REVISION": "rev-1",
    "AWA_SNAPSHOT_INTERVAL": "0.3",
    "AWA_RECONCILE_GRACE": "0.5",
}
INVOICE = {"invoice": {"cron": "0 0 1 1 *", "task": "tests.testapp.tasks.record"}}


def test_snapshots__every_process_reports_independent_of_leadership(runcron: Any, runtasks: Any) -> None:
    env = {"AWA_SNAPSHOT_INTERVAL": "0.3"}
    procs = [runcron({}, env=env), runcron({}, env=env), runtasks("--queue", "mail", env=env)]
    wait_for(lambda: RuntimeInstance.objects.count() == 3, timeout=60)
    rows = {r.pid: r for r in RuntimeInstance.objects.all()}
    assert {r.role for r in rows.values()} == {"runcron", "runtasks"}
    assert all(r.cron_protocol == 1 and r.snapshot_interval_ms == 300 for r in rows.values())
    assert rows[procs[2].pid].queues == ["mail"]
    # Standbys write too: every row keeps advancing.
    first = {pid: r.last_seen_at for pid, r in rows.items()}
    wait_for(lambda: all(r.last_seen_at > first[r.pid] for r in RuntimeInstance.objects.all()), timeout=60)
    wait_for(lambda: RuntimeInstance.objects.filter(leader=True).count() == 1, timeout=60)
    for p in procs:
        p.signal(signal.SIGTERM)
    assert [p.wait() for p in procs] == [0, 0, 0]
    assert all(r.shutting_down for r in RuntimeInstance.objects.all())  # final write


def test_authoritative__runcron_and_runtasks_publish_one_manifest(runcron: Any, runtasks: Any) -> None:
    env = {**AUTHORITATIVE, "AWA_TEST_SCHEDULES": json.dumps(INVOICE)}
    procs = [runcron({}, env=env), runtasks(env=env)]
    wait_for(lambda: CronDeclaration.objects.count() == 2, timeout=60)
    assert CronManifest.objects.count() == 1
    row = wait_for(lambda: CronJob.objects.filter(name="invoice").first(), timeout=60)
    assert row.owner_id == "billing"
    wait_for(lambda: CronOwner.objects.get(owner_id="billing").agreed_since is not None, timeout=60)
    for p in procs:
        p.signal(signal.SIGTERM)
    assert [p.wait() for p in procs] == [0, 0]


@pytest.mark.parametrize("command", ["runcron", "runtasks"])
def test_authoritative__startup_fails_on_foreign_names_and_publishes_nothing(command: str) -> None:
    CronJobFactory(name="invoice")  # unowned: must be adopted first
    env = dict(
        os.environ,
        DJANGO_SETTINGS_MODULE="tests.settings",
        DATABASE_URL=database_url(),
        AWA_TEST_SCHEDULES=json.dumps(INVOICE),
        **AUTHORITATIVE,
    )
    result = subprocess.run(
        [sys.executable, "-m", "django", command],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert "invoice" in result.stderr and "adoption" in result.stderr
    assert not CronOwner.objects.exists() and not CronDeclaration.objects.exists()
    assert not CronManifest.objects.exists() and not RuntimeInstance.objects.exists()
    assert CronJob.objects.get(name="invoice").owner_id is None


def test_authoritative__removed_schedule_is_retired_after_grace(runcron: Any) -> None:
    schedules = {**INVOICE, "statement": {"cron": "0 0 1 1 *", "task": "tests.testapp.tasks.record"}}
    env = {**AUTHORITATIVE, "AWA_TEST_SCHEDULES": json.dumps(schedules), "AWA_SYNC_INTERVAL": "0.5"}
    first = runcron({}, env=env)
    # (testapp-yearly, from tests/testapp/cron.py, is declared too.)
    wait_for(
        lambda: (
            {"invoice", "statement"}
            <= set(CronJob.objects.filter(owner_id="billing").values_list("name", flat=True))
        ),
        timeout=60,
    )
    first.signal(signal.SIGTERM)
    assert first.wait() == 0
    # Deploy rev-2 without "statement".
    env = {**env, "AWA_TEST_SCHEDULES": json.dumps(INVOICE), "AWA_REVISION": "rev-2"}
    second = runcron({}, env=env)
    row = wait_for(
        lambda: CronJob.objects.filter(name="statement", retired_at__isnull=False).first(), timeout=60
    )
    assert (row.retired_by, row.retired_revision) == ("billing", "rev-2")
    assert CronJob.objects.get(name="invoice").retired_at is None
    second.signal(signal.SIGTERM)
    assert second.wait() == 0


def test_migration__locks_cron_jobs_before_anything_and_never_cycles_with_a_fire() -> None:
    call_command("migrate", "awa_django", "0003", verbosity=0)
    fire_tx = raw_connection(autocommit=False)
    observer = raw_connection()
    try:
        # (The model already has 0004's columns: insert with SQL.)
        observer.execute("INSERT INTO awa_cron_jobs (name, cron_expr, kind) VALUES ('hot', '* * * * *', 'k')")
        # A fire in flight: the schedule row is marked (cron first) ...
        fire_tx.execute("UPDATE awa_cron_jobs SET last_enqueued_at = now() WHERE name = 'hot'")
        env = dict(os.environ, DJANGO_SETTINGS_MODULE="tests.settings", DATABASE_URL=database_url())
        migrator = subprocess.Popen(
            [sys.executable, "-m", "django", "migrate", "awa_django", "0004", "-v", "0"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        waiting = wait_for(
            lambda: observer.execute(
                "SELECT pid FROM pg_locks WHERE relation = 'awa_cron_jobs'::regclass AND NOT granted "
                "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
            ).fetchone(),
            timeout=60,
        )[0]
        held = observer.execute(
            "SELECT relation::regclass::text FROM pg_locks WHERE pid = %s AND granted "
            "AND locktype = 'relation' AND mode = 'AccessExclusiveLock'",
            [waiting],
        ).fetchall()
        assert held == []  # the migrator holds nothing the fire could need
        # ... and the fire's job insert into awa_jobs still goes through.
        done = threading.Event()

        def insert() -> None:
            fire_tx.execute("INSERT INTO awa_jobs (kind, args) VALUES ('tests.testapp.tasks.record', '{}')")
            done.set()

        thread = threading.Thread(target=insert)
        thread.start()
        thread.join(timeout=60)
        assert done.is_set(), "the fire blocked behind the migration: lock cycle"
        fire_tx.commit()
        output, _ = migrator.communicate(timeout=60)
        assert migrator.returncode == 0, output
    finally:
        fire_tx.close()
        observer.close()
        call_command("migrate", "awa_django", verbosity=0)  # whatever happened, leave the schema current
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_proc WHERE proname = %s",
            [contract.current_function("awa_cron_schedule_fence")],
        )
        assert cursor.fetchone()[0] == 1


def test_legacy_writer__statement_trigger_serialises_it_behind_the_protocol_lock() -> None:
    holder = raw_connection(autocommit=False)
    legacy = raw_connection()
    try:
        holder.execute("SELECT awa_cron_protocol_lock()")
        finished = threading.Event()

        def legacy_write() -> None:
            legacy.execute(
                "INSERT INTO awa_runtime_instances (instance_id, hostname, pid, version, role, started_at, "
                "snapshot_interval_ms, leader, queues, shutting_down) "
                "VALUES (gen_random_uuid(), 'old', 1, '0.0', 'legacy', now(), 10000, false, '[]', false)"
            )
            finished.set()

        thread = threading.Thread(target=legacy_write)
        thread.start()
        with raw_connection() as observer:  # the legacy session waits for the protocol lock
            wait_for(
                lambda: observer.execute(
                    "SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = %s",
                    [legacy.info.backend_pid],
                ).fetchone()[0],
                timeout=60,
            )
        assert not finished.is_set()
        holder.commit()
        thread.join(timeout=60)
        assert finished.is_set()
    finally:
        holder.close()
        legacy.close()
    assert RuntimeInstance.objects.get(role="legacy").cron_protocol is None
