"""Exceptions raised by awa_django."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured


class InvalidSchedule(ImproperlyConfigured):
    """A schedule declaration is invalid.

    The message always names the schedule and the offending field, e.g.
    ``schedule 'nightly-report': field 'cron': ...``. ``schedule`` and ``field``
    are also available as attributes for programmatic use.
    """

    def __init__(self, schedule: str | None, field: str, message: str) -> None:
        self.schedule = schedule
        self.field = field
        self.reason = message
        who = f"schedule {schedule!r}" if schedule is not None else "schedule"
        super().__init__(f"{who}: field {field!r}: {message}")


class UnknownScheduleOption(InvalidSchedule):
    """An ``AWA_SCHEDULES`` entry has a key that is not a schedule option."""


class ScheduleNotFound(LookupError):
    """An operation named a schedule that does not exist."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"no cron schedule named {name!r}")


class OperationRefused(RuntimeError):
    """An operator action is not allowed in the schedule's current state."""


class LeadershipUnavailable(RuntimeError):
    """Another process holds the leader lock (``runcron --once``)."""


class WorkerLost(RuntimeError):
    """Recorded in a job's errors when its worker stopped heartbeating."""


class JobCancelled(RuntimeError):
    """Recorded in a job's errors when an operator cancelled it."""


class TaskTimeout(RuntimeError):
    """Recorded in a job's errors when an attempt outlived ``AWA_TASK_TIMEOUT``."""


class ErrorsDropped(RuntimeError):
    """Recorded in a job's errors in place of earlier entries that were dropped:
    the oldest, to keep the errors within ``AWA_MAX_ARGS_BYTES``, or all of them
    when they could not be read (not an array, nested too deep)."""


class UnstorableResult(ValueError):
    """Recorded in a job's errors when PostgreSQL cannot store a task's return value."""


class NotMigrated(RuntimeError):
    """The database lacks awa_django migrations: run ``manage.py migrate``."""


class InvalidJobRow(ValueError):
    """Recorded in a job's errors when its row holds a value no job can have (a
    timestamp such as ``'-infinity'`` written by raw SQL): it fails without running."""
