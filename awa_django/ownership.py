"""Public path of the lifecycle verbs on owned schedules, as the documentation names it.

The code lives in :mod:`awa_django.actions.owners`; this module only re-exports it.
"""

from .actions.owners import (
    adopt,
    restore,
    restore_owner,
    retire,
    retire_owner,
)

__all__ = ["adopt", "restore", "restore_owner", "retire", "retire_owner"]
