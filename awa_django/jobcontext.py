"""Public path of what a running task learns about its job, as the documentation names it.

The code lives in :mod:`awa_django.tasks.context`; this module only re-exports it.
"""

from .tasks.context import (
    CronFire,
    JobInfo,
    current_fire,
    current_job,
)

__all__ = ["CronFire", "JobInfo", "current_fire", "current_job"]
