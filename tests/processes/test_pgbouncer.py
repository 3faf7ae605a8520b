"""Through a real PgBouncer in transaction pooling mode.

``DATABASES["default"]`` of the subprocesses goes through a PgBouncer the test
starts in front of the test server; the leader lock and LISTEN use the
``direct`` alias (``AWA_LEADER_DATABASE``/``AWA_LISTEN_DATABASE``, see
tests/settings.py). Enqueue, claim, complete, heartbeat, the CLI and cron
fires all run through the pooler; election still yields one leader.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection

from awa_django.models import Job, RuntimeInstance
from tests.helpers.database import database_url, database_user, db_now, raw_connection, tcp_address
from tests.helpers.fires import assert_exactly_once_no_gap, slots
from tests.helpers.processes import ROOT, leader_process_pid
from tests.helpers.servers import PgBouncer, server_dir
from tests.helpers.waiting import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.fixture
def pgbouncer() -> Iterator[PgBouncer]:
    host, port = tcp_address()
    with server_dir("awa-pgbouncer-") as directory:
        bouncer = PgBouncer(directory, host, port, user=database_user())
        try:
            yield bouncer
        finally:
            bouncer.stop()


def pooled_env(bouncer: PgBouncer) -> dict[str, str]:
    """Settings of a process whose default alias goes through ``bouncer``."""
    return {
        "DATABASE_URL": bouncer.url(connection.settings_dict["NAME"]),
        "AWA_DIRECT_DATABASE_URL": database_url(),
    }


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    full = dict(os.environ, DJANGO_SETTINGS_MODULE="tests.settings", **env)
    return subprocess.run(
        [sys.executable, "-m", "django", *args],
        cwd=ROOT,
        env=full,
        capture_output=True,
        text=True,
        timeout=120,
    )


def transactions_through(bouncer: PgBouncer) -> int:
    name = connection.settings_dict["NAME"]
    return sum(int(row["total_xact_count"]) for row in bouncer.admin("SHOW STATS") if row["database"] == name)


def test_pgbouncer__enqueue_worker_and_cli_work_through_transaction_pooling(
    pgbouncer: PgBouncer, runtasks: Any
) -> None:
    assert [r["value"] for r in pgbouncer.admin("SHOW CONFIG") if r["key"] == "pool_mode"] == ["transaction"]
    env = pooled_env(pgbouncer)
    before = transactions_through(pgbouncer)

    # Enqueue through the pooler (django.tasks API in a separate process).
    enqueue = manage(
        env,
        "shell",
        "-c",
        "from tests.testapp.tasks import slow_effect, write_effect\n"
        "slow_effect.enqueue(label='pooled-slow', seconds=2.5)\n"
        "for i in range(5): write_effect.enqueue(label=f'pooled-{i}')",
    )
    assert enqueue.returncode == 0, enqueue.stderr
    assert Job.objects.count() == 6

    worker = runtasks("--concurrency", "2", env=env)
    # The slow task is heartbeated while it runs (AWA_HEARTBEAT_INTERVAL 0.2 s).
    slow = Job.objects.get(args__kwargs__label="pooled-slow")
    first_beat = wait_for(lambda: Job.objects.get(pk=slow.pk).heartbeat_at, timeout=60)
    wait_for(
        lambda: (beat := Job.objects.get(pk=slow.pk).heartbeat_at) is not None and beat > first_beat,
        timeout=60,
    )
    wait_for(lambda: Job.objects.filter(state="completed").count() == 6, timeout=60)

    # The CLI works unchanged through the pooler.
    listing = manage(env, "awa", "jobs", "list", "--json")
    assert listing.returncode == 0, listing.stderr
    assert {j["state"] for j in json.loads(listing.stdout)} == {"completed"}
    queues = manage(env, "awa", "queue", "pause", "mail", "--actor", "test")
    assert queues.returncode == 0 and "done" in queues.stdout
    health = manage(env, "awa", "health", "--role", "tasks")
    assert health.returncode == 0, health.stdout + health.stderr

    # The wake-up LISTEN connection is the direct one: an enqueue wakes the
    # worker although its default connection is pooled.
    with raw_connection() as direct:
        listeners = direct.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND application_name = %s",
            [f"awa_django runtasks listener pid={worker.pid}"],
        ).fetchone()
    assert listeners == (1,)
    pooled_names = [c["application_name"] or "" for c in pgbouncer.admin("SHOW CLIENTS")]
    assert not [n for n in pooled_names if n.startswith("awa_django")], pooled_names
    assert transactions_through(pgbouncer) > before + 20
    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0


def test_pgbouncer__two_runcron_elect_one_leader_and_fire_each_slot_once(
    pgbouncer: PgBouncer, runcron: Any, runtasks: Any
) -> None:
    env = pooled_env(pgbouncer)
    schedules = {
        "pooled-tick": {
            "cron": "* * * * * *",
            "task": "tests.testapp.tasks.record",
            "missed_fire_policy": "catch_up",
        }
    }
    procs = [runcron(schedules, env=env) for _ in range(2)]
    worker = runtasks(env=env)
    leader = wait_for(leader_process_pid, timeout=60)
    assert leader in {p.pid for p in procs}
    warm = db_now() + timedelta(seconds=1)
    before = transactions_through(pgbouncer)
    wait_for(lambda: len([f for f in slots("pooled-tick") if f >= warm]) >= 3, timeout=60)
    # Exactly one lock holder, and one process that believes it leads.
    assert leader_process_pid() == leader
    # The lock (and LISTEN) sessions are direct, not PgBouncer clients.
    pooled_names = [c["application_name"] or "" for c in pgbouncer.admin("SHOW CLIENTS")]
    assert not [n for n in pooled_names if n.startswith("awa_django")], pooled_names
    wait_for(
        lambda: RuntimeInstance.objects.filter(role="runcron", leader=True, shutting_down=False).count() == 1,
        timeout=60,
    )
    assert transactions_through(pgbouncer) > before  # fires and snapshots went through the pooler
    for proc in procs:
        proc.signal(signal.SIGTERM)
    assert [p.wait() for p in procs] == [0, 0]
    window = assert_exactly_once_no_gap("pooled-tick", since=warm)
    assert len(window) >= 3
    # Operator verbs use transaction-local contexts and row locks: fine when pooled.
    for verb in ("pause", "trigger", "resume"):
        done = manage(env, "awa", "cron", verb, "pooled-tick", "--actor", "ops")
        assert done.returncode == 0, done.stderr
    assert Job.objects.filter(metadata__triggered_by="ops").count() == 1
    wait_for(lambda: not Job.objects.exclude(state="completed").exists(), timeout=60)
    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0


def test_pgbouncer__check_warns_when_the_leader_alias_is_pooled(pgbouncer: PgBouncer) -> None:
    direct = pooled_env(pgbouncer)
    ok = manage(direct, "check")
    assert ok.returncode == 0 and "W100" not in ok.stderr + ok.stdout, ok.stderr
    # The same pooled default, but no direct alias for the lock and LISTEN.
    pooled_only = {"DATABASE_URL": direct["DATABASE_URL"], "AWA_TEST_POOL_MODE": "transaction"}
    warned = manage(pooled_only, "check")
    assert warned.returncode == 0
    output = warned.stdout + warned.stderr
    assert "awa_django.W100" in output and "awa_django.W101" in output and "awa_django.W102" in output


def test_pgbouncer__database_check_detects_an_undeclared_pgbouncer(pgbouncer: PgBouncer) -> None:
    # Neither AWA_POOL_MODE nor port 6432 gives it away: the probe asks the server.
    undeclared = {"DATABASE_URL": pooled_env(pgbouncer)["DATABASE_URL"]}
    static = manage(undeclared, "check")
    assert static.returncode == 0 and "W100" not in static.stdout + static.stderr
    probed = manage(undeclared, "check", "--database", "default")
    output = probed.stdout + probed.stderr
    assert probed.returncode == 0, output
    assert "awa_django.W104" in output
    assert "alias 'default' (LISTEN, leader lock) is a PgBouncer, pool_mode=transaction" in output
    direct = manage({"DATABASE_URL": database_url()}, "check", "--database", "default")
    assert direct.returncode == 0 and "W104" not in direct.stdout + direct.stderr
