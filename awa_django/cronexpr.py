"""Public path of the cron engine's fire-time search, as the documentation names it.

The code lives in :mod:`awa_django.cron.search`; this module only re-exports it.
"""

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

__all__ = [
    "CronError",
    "CronExpression",
    "DstPolicy",
    "fires_between",
    "latest_fire",
    "next_fire",
    "parse_cron",
    "parse_timezone",
]
