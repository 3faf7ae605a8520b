"""Primary failover: runcron and runtasks survive the promotion of a standby.

The test builds a private primary and a streaming standby (``initdb``,
``pg_basebackup -R``) on free ports, runs ``runcron`` and ``runtasks`` with a
libpq multi-host server list (``target_session_attrs=read-write``), crashes
the primary (``pg_ctl stop -m immediate``), promotes the standby, and checks
on the new primary that both processes carried on by themselves (same
process ids), that every slot fired exactly once with no gap (``catch_up``),
and that every job ended completed, the one caught mid-run re-run after a rescue.
"""

from __future__ import annotations

import signal
from datetime import datetime
from typing import Any

import pytest

from tests.helpers.processes import manage_with
from tests.helpers.servers import Cluster, server_dir, wait_until

pytestmark = [pytest.mark.slow]

DBNAME = "awa_failover"


def query(cluster: Cluster, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with cluster.connect(DBNAME) as conn:
        return list(conn.execute(sql, params or None).fetchall())


def fired_slots(cluster: Cluster) -> list[datetime]:
    rows = query(
        cluster,
        "SELECT metadata->>'cron_fire_at' FROM awa_jobs "
        "WHERE metadata->>'cron_name' = 'fo-tick' AND metadata ? 'cron_fire_at'",
    )
    return sorted(datetime.fromisoformat(r[0]) for r in rows)


@pytest.mark.django_db(transaction=True)
def test_failover__runcron_and_runtasks_survive_promotion_of_a_streaming_standby(
    runcron: Any, runtasks: Any
) -> None:
    with server_dir("awa-failover-") as directory:
        primary, standby = Cluster(directory, "primary"), Cluster(directory, "standby")
        try:
            primary.init_primary()
            primary.start()
            with primary.connect() as conn:
                conn.execute(f"CREATE DATABASE {DBNAME}")
            primary_url = f"postgres://postgres@127.0.0.1:{primary.port}/{DBNAME}"
            migrated = manage_with({"DATABASE_URL": primary_url}, "migrate", "-v", "0", timeout=180)
            assert migrated.returncode == 0, migrated.stderr
            standby.init_standby_of(primary)
            standby.start()
            wait_until(
                lambda: query(primary, "SELECT 1 FROM pg_stat_replication WHERE state = 'streaming'"),
                60,
                "streaming replication",
            )

            env = {
                "DATABASE_URL": primary_url,
                "AWA_TEST_MULTIHOST": f"127.0.0.1:{primary.port},127.0.0.1:{standby.port}",
                "AWA_SNAPSHOT_INTERVAL": "0.5",
            }
            schedules = {
                "fo-tick": {
                    "cron": "* * * * * *",
                    "task": "tests.testapp.tasks.write_effect",
                    "missed_fire_policy": "catch_up",
                    "max_attempts": 10,
                }
            }
            cron = runcron(schedules, env=env)
            tasks = runtasks("--concurrency", "2", env=env)
            wait_until(
                lambda: query(primary, "SELECT count(*) FROM awa_jobs WHERE state = 'completed'")[0][0] >= 3,
                60,
                "jobs completed on the first primary",
            )

            # A task running when the primary dies, its start already replicated.
            enqueued = manage_with(
                {"DATABASE_URL": primary_url},
                "shell",
                "-c",
                "from tests.testapp.tasks import slow_effect\n"
                "slow_effect.enqueue(label='mid-crash', seconds=3)",
                timeout=180,
            )
            assert enqueued.returncode == 0, enqueued.stderr
            wait_until(
                lambda: query(
                    standby, "SELECT 1 FROM testapp_effect WHERE label = 'mid-crash' AND phase = 'started'"
                ),
                60,
                "the running task's start on the standby",
            )

            primary.stop("immediate")  # a crash: no shutdown checkpoint, no goodbye to clients
            standby.promote()
            promoted_at = query(standby, "SELECT statement_timestamp()")[0][0]

            # Both processes reconnect by themselves: new fires after the
            # promotion, fired and run on the new primary.
            wait_until(
                lambda: (
                    query(
                        standby,
                        "SELECT count(*) FROM awa_jobs WHERE state = 'completed' AND "
                        "(metadata->>'cron_fire_at')::timestamptz > %s",
                        promoted_at,
                    )[0][0]
                    >= 3
                ),
                90,
                "jobs fired and completed on the promoted standby",
            )
            assert cron.proc.poll() is None and tasks.proc.poll() is None
            # Their snapshot threads reconnected too.
            wait_until(
                lambda: (
                    {
                        row[0]
                        for row in query(
                            standby,
                            "SELECT role FROM awa_runtime_instances WHERE NOT shutting_down AND last_seen_at > %s",
                            promoted_at,
                        )
                    }
                    == {"runcron", "runtasks"}
                ),
                60,
                "snapshots on the new primary",
            )
            # Every job ends completed; attempts cut off by the crash are rescued and re-run.
            wait_until(
                lambda: (
                    not query(
                        standby,
                        "SELECT 1 FROM awa_jobs WHERE state <> 'completed' "
                        "AND (metadata->>'cron_fire_at')::timestamptz < %s",
                        promoted_at,
                    )
                ),
                90,
                "every job from before the promotion completed",
            )
            # The task cut off by the crash could not report: it was rescued
            # (its attempt counted, with an error) and run again to completion.
            wait_until(
                lambda: query(
                    standby,
                    "SELECT 1 FROM awa_jobs WHERE args->'kwargs'->>'label' = "
                    "'mid-crash' AND state = 'completed'",
                ),
                90,
                "the re-run",
            )
            ((attempt, errors),) = query(
                standby, "SELECT attempt, errors FROM awa_jobs WHERE args->'kwargs'->>'label' = 'mid-crash'"
            )
            assert attempt >= 2 and errors, (attempt, errors)
            for proc in (cron, tasks):
                proc.signal(signal.SIGTERM)
            assert cron.wait() == 0 and tasks.wait() == 0
            # The leader lost its lock session with the old primary and won
            # the election again on the new one, in the same process.
            assert cron.output().count("elected leader") >= 2, cron.output()[-3000:]

            slots = fired_slots(standby)
            assert len(slots) == len(set(slots)), "a slot fired twice on the new primary"
            gaps = [(a, b) for a, b in zip(slots, slots[1:], strict=False) if (b - a).total_seconds() != 1]
            assert gaps == [], f"slots missing around the failover: {gaps}"
            unrun = query(
                standby,
                "SELECT j.id FROM awa_jobs j WHERE j.state = 'completed' AND NOT EXISTS "
                "(SELECT 1 FROM testapp_effect e WHERE e.job_id = j.id)",
            )
            assert unrun == [], "a job is completed without its effect"
        finally:
            standby.stop("immediate")
            primary.stop("immediate")
