"""Helpers for the reconciliation tests: simulated runtimes, raw evidence, locks.

A "runtime" here is what ``runcron``/``runtasks`` does every snapshot interval:
one :class:`~awa_django.reconciliation.snapshots.RuntimeReporter` transaction (protocol lock,
snapshot with ``cron_protocol = 1``, manifest and declaration). Several
instances of one owner are several reporters; a runtime that republishes a new
manifest keeps its instance id. Legacy (pre-protocol) writers are raw SQL.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

import psycopg
from django.db import connection, connections

from awa_django import contract
from awa_django.declarations.declaration import Schedule, build_schedule
from awa_django.models import CronJob
from awa_django.reconciliation.persistence import ReconciliationConfig
from awa_django.reconciliation.snapshots import RuntimeReporter
from tests.helpers.database import raw_connection
from tests.helpers.waiting import wait_for

TASK = "tests.testapp.tasks.record"
# The keys of a plan's JSON (``awa cron plan --json``), pinned here once: a change
# to this shape breaks scripts that read it.
PLAN_KEYS = {
    "owner_id",
    "desired_hash",
    "declarations",
    "blocking_instances",
    "blockers",
    "additions",
    "updates",
    "retirements",
    "conflicts",
    "agreed_since",
    "grace_remaining_ms",
    "evaluated_at",
    "applied",
}


def job(name: str, cron: str = "* * * * *", **options: Any) -> Schedule:
    """A validated schedule (Awa's ``job(name)``: every minute, nested args)."""
    options.setdefault("kwargs", {"label": name, "nested": {"b": 2, "a": 1}})
    return build_schedule(name, cron, TASK, **options)


def publish(
    owner: str,
    schedules: Sequence[Schedule] = (),
    *,
    instance: str | None = None,
    revision: str = "rev-1",
    grace_ms: int = 0,
    check: bool = False,
) -> str:
    """One snapshot + publication transaction of a runtime; returns its instance id.

    Pass ``instance`` to republish as an existing runtime (a new manifest after
    a code change keeps the instance id).
    """
    reporter = RuntimeReporter(
        "runcron", list(schedules), config=ReconciliationConfig(owner, revision, grace_ms)
    )
    if instance is not None:
        reporter.instance_id = instance
    reporter.write(check=check)
    return reporter.instance_id


def shut_down(instance: str, owner: str = "billing") -> None:
    """The final ``shutting_down`` snapshot of a runtime."""
    reporter = RuntimeReporter("runcron", [], config=ReconciliationConfig(owner, "rev-1", 0))
    reporter.instance_id = instance
    reporter.write(shutting_down=True)


def legacy_runtime(instance: str | None = None, *, protocol: int | None = None, conn: Any = None) -> str:
    """A snapshot written by a pre-protocol binary (no ``cron_protocol`` column)."""
    instance = instance or str(uuid.uuid4())
    columns = (
        "instance_id, hostname, pid, version, role, started_at, last_seen_at, snapshot_interval_ms, "
        "leader, shutting_down"
    )
    values = "%s, 'old-host', 1, '0.0.1', 'runcron', now(), now(), 10000, false, false"
    params: list[Any] = [instance]
    if protocol is not None:
        columns += ", cron_protocol"
        values += ", %s"
        params.append(protocol)
    sql = (
        f"INSERT INTO awa_runtime_instances ({columns}) VALUES ({values}) "
        "ON CONFLICT (instance_id) DO UPDATE SET last_seen_at = now()"
    )
    if conn is not None:
        conn.execute(sql, params)
    else:
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
    return instance


def execute(sql: str, params: Any = None) -> list[tuple[Any, ...]]:
    """Run raw SQL on Django's connection (autocommit) and return its rows."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return list(cursor.fetchall()) if cursor.description else []


def age_evidence(seconds: float) -> None:
    """Make every runtime snapshot and declaration ``seconds`` older."""
    execute(
        "UPDATE awa_runtime_instances SET last_seen_at = last_seen_at - make_interval(secs => %s)", [seconds]
    )
    execute(
        "UPDATE awa_cron_declarations SET last_seen_at = last_seen_at - make_interval(secs => %s)", [seconds]
    )


def row(name: str) -> CronJob:
    return CronJob.objects.get(name=name)


def owner_state(owner: str) -> dict[str, Any] | None:
    rows = execute(
        "SELECT synced_hash, agreed_hash, agreed_since, evidence_until, xmin::text "
        "FROM awa_cron_owners WHERE owner_id = %s",
        [owner],
    )
    if not rows:
        return None
    keys = ("synced_hash", "agreed_hash", "agreed_since", "evidence_until", "xmin")
    return dict(zip(keys, rows[0], strict=True))


def table_snapshot() -> dict[str, Any]:
    """Every reconciliation-relevant row, to prove an operation wrote nothing."""
    return {
        "jobs": execute("SELECT to_jsonb(c), xmin::text FROM awa_cron_jobs AS c ORDER BY name"),
        "owners": execute("SELECT to_jsonb(o), xmin::text FROM awa_cron_owners AS o ORDER BY owner_id"),
        "manifests": execute("SELECT owner_id, desired_hash FROM awa_cron_manifests ORDER BY 1, 2"),
        "declarations": execute("SELECT to_jsonb(d), xmin::text FROM awa_cron_declarations AS d ORDER BY 1"),
        "runtimes": execute("SELECT to_jsonb(r), xmin::text FROM awa_runtime_instances AS r ORDER BY 1"),
        "awa_jobs": execute("SELECT count(*) FROM awa_jobs"),
    }


class Background:
    """Run ``fn`` in a thread with its own Django connection."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self._fn = fn
        self.value: Any = None
        self.error: BaseException | None = None
        self.finished = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.value = self._fn()
        except BaseException as exc:  # re-raised by result()
            self.error = exc
        finally:
            connections.close_all()
            self.finished.set()

    def done_within(self, seconds: float) -> bool:
        return self.finished.wait(seconds)

    def result(self, timeout: float = 15) -> Any:
        assert self.finished.wait(timeout), "background operation did not finish"
        self.thread.join(timeout)
        if self.error is not None:
            raise self.error
        return self.value


def waiting_sessions(wait_event: str | None = None) -> int:
    """Sessions of the test database waiting on a heavyweight lock."""
    with raw_connection() as conn:
        sql = (
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock'"
        )
        params: list[Any] = []
        if wait_event is not None:
            sql += " AND wait_event = %s"
            params.append(wait_event)
        return conn.execute(sql, params).fetchone()[0]  # type: ignore[index]


def wait_until_blocked(task: Background, wait_event: str | None = None, timeout: float = 10) -> None:
    """Wait until some session blocks on a lock, and check ``task`` is still waiting."""
    wait_for(lambda: waiting_sessions(wait_event) > 0 or task.finished.is_set(), timeout=timeout)
    assert not task.finished.is_set(), f"expected to block, finished with {task.error or task.value!r}"


@contextmanager
def holding_protocol_lock() -> Iterator[psycopg.Connection[Any]]:
    """Another session inside a transaction that holds the protocol lock."""
    conn = raw_connection(autocommit=False)
    try:
        conn.execute("SELECT awa_cron_protocol_lock()")
        yield conn
    finally:
        conn.rollback()
        conn.close()


def sleep_ms(ms: float) -> None:
    time.sleep(ms / 1000)


def sqlstate(exc: BaseException) -> str | None:
    """The SQLSTATE of a (Django-wrapped) database error."""
    for candidate in (exc, exc.__cause__):
        state = getattr(candidate, "sqlstate", None)
        if state:
            return str(state)
    return None


def fire_entry(name: str, fire_at: datetime) -> dict[str, Any]:
    """A plan entry for the current fire statement, as the evaluator builds it."""
    current = row(name)
    return {
        "name": current.name,
        "prev": current.last_enqueued_at.isoformat() if current.last_enqueued_at else None,
        "created_at": current.created_at.isoformat(),
        "cron_expr": current.cron_expr,
        "timezone": current.timezone,
        "missed_fire_policy": current.missed_fire_policy,
        "fires": [fire_at.isoformat()],
        "next_fire_at": (fire_at + timedelta(minutes=1)).isoformat(),
    }


def fire(*entries: dict[str, Any]) -> list[int]:
    """Run the current fire statement; the ids of the jobs it inserted."""
    return [
        r[0]
        for r in execute(
            f"SELECT id FROM {contract.current_function('awa_cron_fire')}(%s::jsonb)",
            [json.dumps(list(entries))],
        )
    ]


# The atomic-enqueue statement of a writer that predates retirement: the CAS and
# the pause guard, but no ``retired_at IS NULL``. Only the fence stops it.
OUTDATED_FIRE = """
    WITH mark AS (
        UPDATE awa_cron_jobs
           SET last_enqueued_at = %(fire)s, updated_at = now()
         WHERE name = %(name)s
           AND last_enqueued_at IS NOT DISTINCT FROM %(prev)s
           AND paused_at IS NULL
        RETURNING name, kind, queue, args, priority, max_attempts, tags, metadata
    )
    INSERT INTO awa_jobs (kind, queue, args, state, priority, attempt, max_attempts, run_at,
                          created_at, errors, tags, metadata)
    SELECT kind, queue, args, 'available', priority, 0, max_attempts, now(), now(), '[]'::jsonb,
           tags, metadata || jsonb_build_object('cron_name', name, 'cron_fire_at', %(fire_text)s)
      FROM mark
    RETURNING id
"""


def outdated_fire(name: str, fire_at: datetime) -> list[int]:
    """Fire ``name`` the way a pre-protocol leader would; the ids of inserted jobs."""
    prev = row(name).last_enqueued_at
    rows = execute(
        OUTDATED_FIRE, {"name": name, "fire": fire_at, "prev": prev, "fire_text": fire_at.isoformat()}
    )
    return [r[0] for r in rows]
