"""Public path of the additive definition sync, for tests of your schedules, as the documentation names it.

The code lives in :mod:`awa_django.schedules.sync`; this module only re-exports it.
"""

from .schedules.sync import (
    sync_schedules,
)

__all__ = ["sync_schedules"]
