"""awa_django: durable, exactly-once periodic jobs for Django on PostgreSQL.

The public API, documented in ``docs/reference/api.md``: :func:`periodic` and
:func:`declared_schedules` to declare schedules, :class:`InvalidSchedule` for bad
declarations; :func:`create_schedule`, :func:`update_schedule` and
:func:`delete_schedule` for runtime schedules (owner :data:`RUNTIME_OWNER`);
:func:`task` (the task decorator of whichever task framework is installed),
:func:`enqueue` with flow control (unique and concurrency keys) and
:class:`TaskNotRunnable`; the cron engine's fire-time search (:func:`parse_cron`,
:func:`next_fire`, :func:`fires_between`, ...). Operator actions live in
:mod:`awa_django.operations`, helpers for tests in :mod:`awa_django.testing`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import lazy
from .exceptions import InvalidSchedule

__all__ = [
    "RUNTIME_OWNER",
    "CronError",
    "CronExpression",
    "DstPolicy",
    "InvalidSchedule",
    "TaskNotRunnable",
    "create_schedule",
    "declared_schedules",
    "delete_schedule",
    "enqueue",
    "fires_between",
    "latest_fire",
    "next_fire",
    "parse_cron",
    "parse_timezone",
    "periodic",
    "task",
    "update_schedule",
]
__version__ = "0.1.0.dev0"

if TYPE_CHECKING:
    from .client.compat import task
    from .client.enqueue import enqueue
    from .client.paths import TaskNotRunnable
    from .cron.search import (
        CronError,
        CronExpression,
        DstPolicy,
        fires_between,
        latest_fire,
        next_fire,
        parse_cron,
        parse_timezone,
    )
    from .declarations.declaration import declared_schedules, periodic
    from .declarations.runtime import RUNTIME_OWNER
    from .operations.runtime_schedules import create_schedule, delete_schedule, update_schedule

_CRON = (
    "CronError",
    "CronExpression",
    "DstPolicy",
    "fires_between",
    "latest_fire",
    "next_fire",
    "parse_cron",
    "parse_timezone",
)
_RUNTIME = ("RUNTIME_OWNER", "create_schedule", "update_schedule", "delete_schedule")
# Where each lazily loaded name lives. ``periodic`` and ``task`` import the task
# framework, which needs configured settings: loading on first access lets
# ``import awa_django`` (in settings.py, say) work before ``django.setup()``.
_HOMES = {
    **dict.fromkeys(_CRON, "awa_django.cron.search"),
    **dict.fromkeys(_RUNTIME, "awa_django.operations.runtime_schedules"),
    "declared_schedules": "awa_django.declarations.declaration",
    "periodic": "awa_django.declarations.declaration",
    "enqueue": "awa_django.client.enqueue",
    "task": "awa_django.client.compat",
    "TaskNotRunnable": "awa_django.client.paths",
}


__getattr__ = lazy.forwarding(__name__, _HOMES)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
