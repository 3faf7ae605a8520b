"""The operators' console: the Django admin for schedules, jobs, queues, owners
and runtimes.

Every page is read-only (definitions come from code, state from the
processes); every action calls the same service functions as ``manage.py
awa`` and needs its own permission (``awa_django.pause_cronjob``,
``trigger_cronjob``, ``retire_cronjob``, ``cancel_job``, ``pause_queue``).
"""

from __future__ import annotations

from .jobs import JobAdmin
from .owners import CronOwnerAdmin
from .queues import QueueAdmin
from .runtimes import RuntimeInstanceAdmin
from .schedules import CronJobAdmin

__all__ = ["CronJobAdmin", "CronOwnerAdmin", "JobAdmin", "QueueAdmin", "RuntimeInstanceAdmin"]
