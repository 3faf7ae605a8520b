"""awa_django: durable, exactly-once periodic jobs for Django on PostgreSQL.

Public API: :func:`periodic` to declare a schedule, :class:`InvalidSchedule`
for bad declarations, :func:`enqueue` to enqueue a task with flow control
(unique and concurrency keys). Operator actions live in :mod:`awa_django.operations`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .exceptions import InvalidSchedule

__all__ = ["InvalidSchedule", "enqueue", "periodic"]
__version__ = "0.1.0.dev0"

if TYPE_CHECKING:
    from .schedules.declaration import periodic
    from .tasks.enqueue import enqueue


def __getattr__(name: str) -> Any:
    # ``periodic`` imports django.tasks, which needs configured settings; load it
    # lazily so ``import awa_django`` works before ``django.setup()``.
    if name == "periodic":
        from .schedules.declaration import periodic

        return periodic
    if name == "enqueue":
        from .tasks.enqueue import enqueue

        return enqueue
    raise AttributeError(name)
