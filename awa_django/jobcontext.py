"""Public path of what a running task learns about its job, as the documentation names it.

The code lives in :mod:`awa_django.worker.context`; this module only re-exports it.
"""

from .worker.context import (
    CronFire,
    JobInfo,
    current_fire,
    current_job,
)

__all__ = ["CronFire", "JobInfo", "current_fire", "current_job"]
