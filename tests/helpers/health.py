"""Runtime rows for the health probe, and its report by check name.

``add_runtime`` writes a ``runcron``/``runtasks`` snapshot row whose times are
relative to the database clock (``seen_ago``, ``pass_ago``, ...), on host
``HOST`` unless told otherwise.
"""

from __future__ import annotations

import uuid

from django.db import connection

from awa_django import health

HOST = "probe-host"


def add_runtime(
    role: str = "runcron",
    *,
    hostname: str = HOST,
    pid: int = 100,
    leader: bool = False,
    seen_ago: float = 0.0,
    pass_ago: float | None = 0.0,
    started_ago: float = 60.0,
    interval_ms: int = 10_000,
    shutting_down: bool = False,
    fire_version: int | None = 5,
) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO awa_runtime_instances
                (instance_id, hostname, pid, version, role, started_at, last_seen_at,
                 snapshot_interval_ms, leader, queues, shutting_down, cron_protocol, last_pass_at,
                 cron_fire_version)
            VALUES (%s, %s, %s, 'test', %s,
                    clock_timestamp() - make_interval(secs => %s),
                    clock_timestamp() - make_interval(secs => %s),
                    %s, %s, '[]'::jsonb, %s, 1,
                    clock_timestamp() - make_interval(secs => %s), %s)
            """,
            [
                str(uuid.uuid4()),
                hostname,
                pid,
                role,
                started_ago,
                seen_ago,
                interval_ms,
                leader,
                shutting_down,
                pass_ago,
                fire_version,
            ],
        )


def by_name(report: health.HealthReport) -> dict[str, health.Check]:
    return {c.name: c for c in report.checks}
