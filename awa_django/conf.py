"""Typed access to awa_django's settings.

Every setting is one row of :data:`SETTINGS`: its name, default, kind (the
type and range it must have) and the system check id that reports a value
outside that range. The settings checks loop over this table; :class:`AwaSettings`
has one typed property per row. Values are read from ``django.conf.settings``
on access, so ``override_settings`` works in tests. Durations are seconds
(int or float). The library never reads environment variables itself.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from enum import Enum
from typing import Any, cast

from django.conf import settings as django_settings

from . import contract


def _seconds(value: object) -> bool:
    """A finite, non-negative int or float (a bool is not a number here)."""
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        # An int is finite (and math.isfinite raises OverflowError past 1e308).
        and (isinstance(value, int) or math.isfinite(value))
        and value >= 0
    )


def _whole(value: object, low: int, high: int | None = None) -> bool:
    if isinstance(value, bool) or not isinstance(value, int):
        return False
    return value >= low and (high is None or value <= high)


# Upper bounds PostgreSQL and the kernel enforce only when a value is used
# (at the first transaction, or when a connection opens): the checks refuse
# larger values at startup instead. lock_timeout and statement_timeout are
# int32 milliseconds; Linux takes TCP_KEEPIDLE/TCP_KEEPINTVL up to 32767 s and
# TCP_KEEPCNT up to 127 (libpq passes them to setsockopt, which refuses more).
MAX_TIMEOUT = 2147483.647
MAX_KEEPALIVE_SECONDS = 32767
MAX_KEEPALIVE_COUNT = 127
# The oldest age pruning takes (AWA_JOB_RETENTION, ``awa jobs prune
# --older-than``): 1000 years of 365 days. Much larger ages overflow a
# timedelta or, subtracted from now, PostgreSQL's timestamps (from 4713 BC).
MAX_RETENTION = 365_000 * 24 * 3600
# The deepest AWA_MAX_JSON_DEPTH: far below the recursion limits of Python's
# json, psycopg and the admin's rendering, which each nesting level uses.
MAX_JSON_DEPTH = contract.JSON_DEPTH_MAX


def _at_most(value: object, high: float) -> bool:
    return _seconds(value) and cast(float, value) <= high


def _module_paths(value: object) -> bool:
    return isinstance(value, (list, tuple)) and all(
        isinstance(m, str) and m.strip() and not m.startswith(".") for m in value
    )


class Kind(Enum):
    """What a setting's value must be; the value is the phrase of its error message."""

    SECONDS = "a number of seconds >= 0"
    INTERVAL = "a number of seconds > 0"
    COUNT = "a whole number >= 1"
    ATTEMPTS = f"a whole number {contract.MAX_ATTEMPTS_MIN}-{contract.MAX_ATTEMPTS_MAX}"
    SECONDS_OR_NONE = "None (off) or seconds > 0"
    TIMEOUT = f"a number of seconds 0-{MAX_TIMEOUT}"
    RETENTION = f"a number of seconds 0-{MAX_RETENTION}"
    KEEPALIVE_SECONDS = f"a whole number 1-{MAX_KEEPALIVE_SECONDS}"
    KEEPALIVE_COUNT = f"a whole number 1-{MAX_KEEPALIVE_COUNT}"
    JSON_DEPTH = f"a whole number 1-{MAX_JSON_DEPTH}"
    MODULE_PATHS = "a list of module paths"
    BOOL = "a bool"
    # Validated by dedicated checks, because their validity depends on more
    # than the value (DATABASES, AWA_AUTHORITATIVE, the schedule validator).
    SCHEDULES = "a dict of name -> options"
    ALIAS = "an alias of DATABASES"
    ALIAS_OR_NONE = "None or an alias of DATABASES"
    LABEL_OR_NONE = "None or a label"

    def accepts(self, value: object) -> bool:
        """Whether ``value`` is in range; kinds with a dedicated check accept anything here."""
        if self is Kind.SECONDS:
            return _seconds(value)
        if self is Kind.INTERVAL:
            return _seconds(value) and cast(float, value) > 0
        if self is Kind.COUNT:
            return _whole(value, 1)
        if self is Kind.ATTEMPTS:
            return _whole(value, contract.MAX_ATTEMPTS_MIN, contract.MAX_ATTEMPTS_MAX)
        if self is Kind.SECONDS_OR_NONE:
            return value is None or (_seconds(value) and cast(float, value) > 0)
        if self is Kind.TIMEOUT:
            return _at_most(value, MAX_TIMEOUT)
        if self is Kind.RETENTION:
            return _at_most(value, MAX_RETENTION)
        if self is Kind.KEEPALIVE_SECONDS:
            return _whole(value, 1, MAX_KEEPALIVE_SECONDS)
        if self is Kind.KEEPALIVE_COUNT:
            return _whole(value, 1, MAX_KEEPALIVE_COUNT)
        if self is Kind.JSON_DEPTH:
            return _whole(value, 1, MAX_JSON_DEPTH)
        if self is Kind.MODULE_PATHS:
            return _module_paths(value)
        if self is Kind.BOOL:
            return isinstance(value, bool)
        return True


@dataclass(frozen=True)
class Setting:
    """One ``AWA_*`` setting: its default, its kind and the check id reporting a bad value."""

    name: str
    default: Any
    kind: Kind
    check_id: str

    def value(self) -> object:
        return getattr(django_settings, self.name, self.default)

    def problem(self) -> str | None:
        """The check message for the current value, or None when it is in range."""
        value = self.value()
        if self.kind.accepts(value):
            return None
        shown = f"{value!r:.80}" if self.kind is Kind.MODULE_PATHS else repr(value)
        return f"{self.name} must be {self.kind.value}, got {shown}"


SETTINGS: tuple[Setting, ...] = (
    # Schedules declared in settings: {name: {"cron": ..., "task": ..., ...}}.
    Setting("AWA_SCHEDULES", {}, Kind.SCHEDULES, "awa_django.E001"),
    # How often the leader evaluates due schedules at most (it sleeps less when a
    # fire is due sooner, and wakes on NOTIFY when schedules change).
    Setting("AWA_EVALUATE_INTERVAL", 1.0, Kind.INTERVAL, "awa_django.E020"),
    # How often the leader re-upserts code-declared schedules into the table.
    Setting("AWA_SYNC_INTERVAL", 60.0, Kind.INTERVAL, "awa_django.E020"),
    # How often a standby retries the leader election.
    Setting("AWA_ELECTION_INTERVAL", 10.0, Kind.INTERVAL, "awa_django.E020"),
    # How often the leader pings its lock connection (SELECT 1).
    Setting("AWA_LEADER_CHECK_INTERVAL", 30.0, Kind.INTERVAL, "awa_django.E020"),
    # How often every runtime writes its snapshot (reconciliation evidence).
    Setting("AWA_SNAPSHOT_INTERVAL", 10.0, Kind.INTERVAL, "awa_django.E020"),
    # At most this many catch-up fires per schedule per evaluation pass.
    Setting("AWA_CATCH_UP_LIMIT", 1000, Kind.COUNT, "awa_django.E020"),
    # Owner-scoped reconciliation (opt-in).
    Setting("AWA_OWNER", None, Kind.LABEL_OR_NONE, "awa_django.E040"),
    Setting("AWA_AUTHORITATIVE", False, Kind.BOOL, "awa_django.E042"),
    Setting("AWA_REVISION", None, Kind.LABEL_OR_NONE, "awa_django.E041"),
    Setting("AWA_RECONCILE_GRACE", 60.0, Kind.SECONDS, "awa_django.E020"),
    # Database alias for the leader's session lock and LISTEN connection. It must
    # reach the same *database* as "default" (advisory locks and NOTIFY are per
    # database), over a direct connection (never a transaction-pooling PgBouncer).
    Setting("AWA_LEADER_DATABASE", "default", Kind.ALIAS, "awa_django.E022"),
    # Database alias for runtasks' LISTEN (wake-up) connection; None = the
    # database the worker serves. Like the leader alias, a direct connection.
    Setting("AWA_LISTEN_DATABASE", None, Kind.ALIAS_OR_NONE, "awa_django.E100"),
    # Health probes (`manage.py awa health`): a process whose last pass is older
    # than this is unhealthy (at least 3x its snapshot interval is always
    # allowed), and a schedule whose next fire is this late is overdue.
    Setting("AWA_HEALTH_MAX_PASS_AGE", 60.0, Kind.INTERVAL, "awa_django.E020"),
    Setting("AWA_HEALTH_OVERDUE_AFTER", 60.0, Kind.INTERVAL, "awa_django.E020"),
    # Metrics: the database-derived gauges are read at scrape time, in one
    # query bounded by this timeout (seconds).
    Setting("AWA_METRICS_QUERY_TIMEOUT", 5.0, Kind.INTERVAL, "awa_django.E020"),
    # The exporter of runcron/runtasks reads those gauges at most once per this
    # many seconds, whatever the number of scrapes; every scrape in between is
    # served the values of the last read.
    Setting("AWA_METRICS_INTERVAL", 10.0, Kind.INTERVAL, "awa_django.E020"),
    # Task worker.
    Setting("AWA_HEARTBEAT_INTERVAL", 5.0, Kind.INTERVAL, "awa_django.E020"),
    Setting("AWA_RESCUE_AFTER", 60.0, Kind.INTERVAL, "awa_django.E020"),
    Setting("AWA_MAX_ATTEMPTS", 3, Kind.ATTEMPTS, "awa_django.E020"),
    Setting("AWA_JOB_RETENTION", 7 * 24 * 3600.0, Kind.RETENTION, "awa_django.E020"),
    # Worker: fallback poll when no NOTIFY arrives, retry backoff (base and cap),
    # and how long a stopping worker waits for running tasks.
    Setting("AWA_POLL_INTERVAL", 1.0, Kind.INTERVAL, "awa_django.E020"),
    Setting("AWA_RETRY_BACKOFF", 1.0, Kind.SECONDS, "awa_django.E020"),
    Setting("AWA_RETRY_BACKOFF_MAX", 3600.0, Kind.SECONDS, "awa_django.E020"),
    Setting("AWA_SHUTDOWN_TIMEOUT", 30.0, Kind.SECONDS, "awa_django.E020"),
    # Admin: a schedule is "overdue" when a live leader exists and its next fire
    # is this many seconds in the past.
    Setting("AWA_OVERDUE_AFTER", 60.0, Kind.INTERVAL, "awa_django.E090"),
    # Hostile input: the largest JSON value (a schedule's or a job's args,
    # metadata, a task's result), in bytes of JSON, and its deepest nesting
    # (arrays and objects within one another). Larger or deeper values are
    # refused when declared, enqueued or returned; stored rows holding one are
    # parked (schedules) or failed (jobs).
    Setting("AWA_MAX_ARGS_BYTES", contract.PAYLOAD_BYTES_DEFAULT, Kind.COUNT, "awa_django.E060"),
    Setting("AWA_MAX_JSON_DEPTH", contract.JSON_DEPTH_DEFAULT, Kind.JSON_DEPTH, "awa_django.E060"),
    # Bounded waits: the longest wait for a lock another process holds (the
    # protocol lock, schedule rows) and the longest statement, in runcron and
    # awa sessions and in every process's snapshot transaction. 0 = no limit.
    Setting("AWA_LOCK_TIMEOUT", 5.0, Kind.TIMEOUT, "awa_django.E061"),
    Setting("AWA_STATEMENT_TIMEOUT", 60.0, Kind.TIMEOUT, "awa_django.E061"),
    # TCP keepalives on every connection the processes open (seconds, count):
    # a silently dead peer or partition is noticed after about 30 + 10 * 3 s.
    Setting("AWA_TCP_KEEPALIVES_IDLE", 30, Kind.KEEPALIVE_SECONDS, "awa_django.E062"),
    Setting("AWA_TCP_KEEPALIVES_INTERVAL", 10, Kind.KEEPALIVE_SECONDS, "awa_django.E062"),
    Setting("AWA_TCP_KEEPALIVES_COUNT", 3, Kind.KEEPALIVE_COUNT, "awa_django.E062"),
    # Worker: module prefixes, besides installed apps, whose tasks
    # runtasks may import; how long a job whose task module is absent here is
    # handed back for another deployment before it fails (0: fail at once);
    # how long completion/failure/heartbeat reports are retried on a fresh
    # connection; a per-attempt time limit (None: no limit).
    Setting("AWA_TASK_MODULES", [], Kind.MODULE_PATHS, "awa_django.E074"),
    Setting("AWA_UNKNOWN_TASK_TIMEOUT", 600.0, Kind.SECONDS, "awa_django.E074"),
    Setting("AWA_REPORT_RETRY_TIMEOUT", 60.0, Kind.SECONDS, "awa_django.E074"),
    Setting("AWA_TASK_TIMEOUT", None, Kind.SECONDS_OR_NONE, "awa_django.E074"),
    # The most characters of a failed attempt's traceback stored in its job's
    # errors, and of each field of a log record; longer ones are cut around a
    # marker (awa_django.bounded_text).
    Setting("AWA_ERROR_MAX_CHARS", contract.ERROR_MAX_CHARS_DEFAULT, Kind.COUNT, "awa_django.E074"),
)

# Name -> default, for code that needs a fallback when a setting is out of range.
DEFAULTS: dict[str, Any] = {setting.name: setting.default for setting in SETTINGS}


def _value(name: str) -> Any:
    return getattr(django_settings, name, DEFAULTS[name])


class AwaSettings:
    """One typed property per ``AWA_*`` setting, read on access.

    ``conf.EVALUATE_INTERVAL`` reads ``settings.AWA_EVALUATE_INTERVAL``. The
    types are what the system checks enforce at startup (the value is returned
    as configured, not converted, so code that guards against a bad value
    still sees it).
    """

    @property
    def SCHEDULES(self) -> Mapping[str, Any]:
        return cast("Mapping[str, Any]", _value("AWA_SCHEDULES"))

    @property
    def EVALUATE_INTERVAL(self) -> float:
        return cast(float, _value("AWA_EVALUATE_INTERVAL"))

    @property
    def SYNC_INTERVAL(self) -> float:
        return cast(float, _value("AWA_SYNC_INTERVAL"))

    @property
    def ELECTION_INTERVAL(self) -> float:
        return cast(float, _value("AWA_ELECTION_INTERVAL"))

    @property
    def LEADER_CHECK_INTERVAL(self) -> float:
        return cast(float, _value("AWA_LEADER_CHECK_INTERVAL"))

    @property
    def SNAPSHOT_INTERVAL(self) -> float:
        return cast(float, _value("AWA_SNAPSHOT_INTERVAL"))

    @property
    def CATCH_UP_LIMIT(self) -> int:
        return cast(int, _value("AWA_CATCH_UP_LIMIT"))

    @property
    def OWNER(self) -> str | None:
        return cast("str | None", _value("AWA_OWNER"))

    @property
    def AUTHORITATIVE(self) -> bool:
        return cast(bool, _value("AWA_AUTHORITATIVE"))

    @property
    def REVISION(self) -> str | None:
        return cast("str | None", _value("AWA_REVISION"))

    @property
    def RECONCILE_GRACE(self) -> float:
        return cast(float, _value("AWA_RECONCILE_GRACE"))

    @property
    def LEADER_DATABASE(self) -> str:
        return cast(str, _value("AWA_LEADER_DATABASE"))

    @property
    def LISTEN_DATABASE(self) -> str | None:
        return cast("str | None", _value("AWA_LISTEN_DATABASE"))

    @property
    def HEALTH_MAX_PASS_AGE(self) -> float:
        return cast(float, _value("AWA_HEALTH_MAX_PASS_AGE"))

    @property
    def HEALTH_OVERDUE_AFTER(self) -> float:
        return cast(float, _value("AWA_HEALTH_OVERDUE_AFTER"))

    @property
    def METRICS_QUERY_TIMEOUT(self) -> float:
        return cast(float, _value("AWA_METRICS_QUERY_TIMEOUT"))

    @property
    def METRICS_INTERVAL(self) -> float:
        return cast(float, _value("AWA_METRICS_INTERVAL"))

    @property
    def HEARTBEAT_INTERVAL(self) -> float:
        return cast(float, _value("AWA_HEARTBEAT_INTERVAL"))

    @property
    def RESCUE_AFTER(self) -> float:
        return cast(float, _value("AWA_RESCUE_AFTER"))

    @property
    def MAX_ATTEMPTS(self) -> int:
        return cast(int, _value("AWA_MAX_ATTEMPTS"))

    @property
    def JOB_RETENTION(self) -> float:
        return cast(float, _value("AWA_JOB_RETENTION"))

    @property
    def POLL_INTERVAL(self) -> float:
        return cast(float, _value("AWA_POLL_INTERVAL"))

    @property
    def RETRY_BACKOFF(self) -> float:
        return cast(float, _value("AWA_RETRY_BACKOFF"))

    @property
    def RETRY_BACKOFF_MAX(self) -> float:
        return cast(float, _value("AWA_RETRY_BACKOFF_MAX"))

    @property
    def SHUTDOWN_TIMEOUT(self) -> float:
        return cast(float, _value("AWA_SHUTDOWN_TIMEOUT"))

    @property
    def OVERDUE_AFTER(self) -> float:
        return cast(float, _value("AWA_OVERDUE_AFTER"))

    @property
    def MAX_ARGS_BYTES(self) -> int:
        return cast(int, _value("AWA_MAX_ARGS_BYTES"))

    @property
    def MAX_JSON_DEPTH(self) -> int:
        return cast(int, _value("AWA_MAX_JSON_DEPTH"))

    @property
    def LOCK_TIMEOUT(self) -> float:
        return cast(float, _value("AWA_LOCK_TIMEOUT"))

    @property
    def STATEMENT_TIMEOUT(self) -> float:
        return cast(float, _value("AWA_STATEMENT_TIMEOUT"))

    @property
    def TCP_KEEPALIVES_IDLE(self) -> int:
        return cast(int, _value("AWA_TCP_KEEPALIVES_IDLE"))

    @property
    def TCP_KEEPALIVES_INTERVAL(self) -> int:
        return cast(int, _value("AWA_TCP_KEEPALIVES_INTERVAL"))

    @property
    def TCP_KEEPALIVES_COUNT(self) -> int:
        return cast(int, _value("AWA_TCP_KEEPALIVES_COUNT"))

    @property
    def TASK_MODULES(self) -> Sequence[str]:
        return cast("Sequence[str]", _value("AWA_TASK_MODULES"))

    @property
    def UNKNOWN_TASK_TIMEOUT(self) -> float:
        return cast(float, _value("AWA_UNKNOWN_TASK_TIMEOUT"))

    @property
    def REPORT_RETRY_TIMEOUT(self) -> float:
        return cast(float, _value("AWA_REPORT_RETRY_TIMEOUT"))

    @property
    def TASK_TIMEOUT(self) -> float | None:
        return cast("float | None", _value("AWA_TASK_TIMEOUT"))

    @property
    def ERROR_MAX_CHARS(self) -> int:
        return cast(int, _value("AWA_ERROR_MAX_CHARS"))


conf = AwaSettings()


def retention_age(older_than: float | None = None) -> timedelta:
    """``older_than`` seconds, else ``AWA_JOB_RETENTION``, as an age; ``ValueError``
    naming it when it is not a finite number from 0 to ``MAX_RETENTION``."""
    name, seconds = (
        ("older_than", older_than) if older_than is not None else ("AWA_JOB_RETENTION", conf.JOB_RETENTION)
    )
    # Kind.RETENTION is the range check E020 enforces on the setting; a larger
    # age would overflow the timedelta (or the timestamp now - age) instead.
    if not Kind.RETENTION.accepts(seconds):
        raise ValueError(
            f"{name} must be a finite number of seconds >= 0 and <= {MAX_RETENTION}, got {seconds!r}"
        )
    return timedelta(seconds=float(seconds))
