"""Typed access to awa_django's settings.

Every value is read from ``django.conf.settings`` on access, so
``override_settings`` works in tests. Durations are seconds (int or float).
The library never reads environment variables itself.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings as django_settings

DEFAULTS: dict[str, Any] = {
    # Schedules declared in settings: {name: {"cron": ..., "task": ..., ...}}.
    "AWA_SCHEDULES": {},
    # How often the leader evaluates due schedules at most (it sleeps less when a
    # fire is due sooner, and wakes on NOTIFY when schedules change).
    "AWA_EVALUATE_INTERVAL": 1.0,
    # How often the leader re-upserts code-declared schedules into the table.
    "AWA_SYNC_INTERVAL": 60.0,
    # How often a standby retries the leader election.
    "AWA_ELECTION_INTERVAL": 10.0,
    # How often the leader pings its lock connection (SELECT 1).
    "AWA_LEADER_CHECK_INTERVAL": 30.0,
    # How often every runtime writes its snapshot (reconciliation evidence).
    "AWA_SNAPSHOT_INTERVAL": 10.0,
    # At most this many catch-up fires per schedule per evaluation pass.
    "AWA_CATCH_UP_LIMIT": 1000,
    # Owner-scoped reconciliation (opt-in).
    "AWA_OWNER": None,
    "AWA_AUTHORITATIVE": False,
    "AWA_REVISION": None,
    "AWA_RECONCILE_GRACE": 60.0,
    # Database alias for the leader's session lock and LISTEN connection. It must
    # reach the same *database* as "default" (advisory locks and NOTIFY are per
    # database), over a direct connection (never a transaction-pooling PgBouncer).
    "AWA_LEADER_DATABASE": "default",
    # Database alias for runtasks' LISTEN (wake-up) connection; None = the
    # database the worker serves. Like the leader alias, a direct connection.
    "AWA_LISTEN_DATABASE": None,
    # Health probes (`manage.py awa health`): a process whose last pass is older
    # than this is unhealthy (at least 3x its snapshot interval is always
    # allowed), and a schedule whose next fire is this late is overdue.
    "AWA_HEALTH_MAX_PASS_AGE": 60.0,
    "AWA_HEALTH_OVERDUE_AFTER": 60.0,
    # Metrics: the database-derived gauges are read at scrape time, in one
    # query bounded by this timeout (seconds).
    "AWA_METRICS_QUERY_TIMEOUT": 5.0,
    # Task worker.
    "AWA_HEARTBEAT_INTERVAL": 5.0,
    "AWA_RESCUE_AFTER": 60.0,
    "AWA_MAX_ATTEMPTS": 3,
    "AWA_JOB_RETENTION": 7 * 24 * 3600.0,
    # Worker: fallback poll when no NOTIFY arrives, retry backoff (base and cap),
    # and how long a stopping worker waits for running tasks.
    "AWA_POLL_INTERVAL": 1.0,
    "AWA_RETRY_BACKOFF": 1.0,
    "AWA_RETRY_BACKOFF_MAX": 3600.0,
    "AWA_SHUTDOWN_TIMEOUT": 30.0,
    # Admin: a schedule is "overdue" when a live leader exists and its next fire
    # is this many seconds in the past.
    "AWA_OVERDUE_AFTER": 60.0,
    # Hostile input: the largest args (and metadata) of a schedule, in bytes
    # of JSON. Larger declarations are refused; larger stored rows are parked.
    "AWA_MAX_ARGS_BYTES": 1024 * 1024,
    # Bounded waits: the longest wait for a lock another process holds (the
    # protocol lock, schedule rows) and the longest statement, in runcron and
    # awa sessions and in every process's snapshot transaction. 0 = no limit.
    "AWA_LOCK_TIMEOUT": 5.0,
    "AWA_STATEMENT_TIMEOUT": 60.0,
    # TCP keepalives on every connection the processes open (seconds, count):
    # a silently dead peer or partition is noticed after about 30 + 10 * 3 s.
    "AWA_TCP_KEEPALIVES_IDLE": 30,
    "AWA_TCP_KEEPALIVES_INTERVAL": 10,
    "AWA_TCP_KEEPALIVES_COUNT": 3,
    # Worker (issue 9): module prefixes, besides installed apps, whose tasks
    # runtasks may import; how long a job whose task module is absent here is
    # handed back for another deployment before it fails (0: fail at once);
    # how long completion/failure/heartbeat reports are retried on a fresh
    # connection; a per-attempt time limit (None: no limit).
    "AWA_TASK_MODULES": [],
    "AWA_UNKNOWN_TASK_TIMEOUT": 600.0,
    "AWA_REPORT_RETRY_TIMEOUT": 60.0,
    "AWA_TASK_TIMEOUT": None,
}


class AwaSettings:
    """Attribute access to the ``AWA_*`` settings with their defaults.

    ``conf.EVALUATE_INTERVAL`` reads ``settings.AWA_EVALUATE_INTERVAL``.
    """

    def __getattr__(self, name: str) -> Any:
        key = f"AWA_{name}"
        if key not in DEFAULTS:
            raise AttributeError(f"unknown awa_django setting {key}")
        return getattr(django_settings, key, DEFAULTS[key])


conf = AwaSettings()
