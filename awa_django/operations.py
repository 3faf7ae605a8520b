"""Public path of the operator verbs on schedules, as the documentation names it.

The code lives in :mod:`awa_django.actions.schedules`; this module only re-exports it.
"""

from .actions.schedules import (
    get_schedule,
    list_schedules,
    pause,
    remove,
    resume,
    trigger,
    upcoming_fires,
)

__all__ = ["get_schedule", "list_schedules", "pause", "remove", "resume", "trigger", "upcoming_fires"]
