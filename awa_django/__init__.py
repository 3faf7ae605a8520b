"""awa_django: durable, exactly-once periodic jobs for Django on PostgreSQL.

Public API: :func:`periodic` to declare a schedule, :class:`InvalidSchedule`
for bad declarations; :func:`create_schedule`, :func:`update_schedule` and
:func:`delete_schedule` for runtime schedules (owner :data:`RUNTIME_OWNER`);
:func:`enqueue` to enqueue a task with flow control (unique and concurrency
keys). Operator actions live in :mod:`awa_django.operations`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .exceptions import InvalidSchedule

__all__ = [
    "RUNTIME_OWNER",
    "InvalidSchedule",
    "create_schedule",
    "delete_schedule",
    "enqueue",
    "periodic",
    "update_schedule",
]
__version__ = "0.1.0.dev0"

if TYPE_CHECKING:
    from .actions.runtime_schedules import create_schedule, delete_schedule, update_schedule
    from .schedules.declaration import periodic
    from .schedules.runtime import RUNTIME_OWNER
    from .tasks.enqueue import enqueue

# Runtime schedules (created by operators, not declared in code).
_RUNTIME_API = {"RUNTIME_OWNER", "create_schedule", "update_schedule", "delete_schedule"}


def __getattr__(name: str) -> Any:
    # ``periodic`` imports django.tasks, which needs configured settings; load it
    # lazily so ``import awa_django`` works before ``django.setup()``.
    if name == "periodic":
        from .schedules.declaration import periodic

        return periodic
    if name == "enqueue":
        from .tasks.enqueue import enqueue

        return enqueue
    if name in _RUNTIME_API:
        from .actions import runtime_schedules

        return getattr(runtime_schedules, name)
    raise AttributeError(name)
