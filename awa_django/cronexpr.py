"""Deprecated path of the cron engine's fire-time search; import them from :mod:`awa_django`.

Kept for one release: each name still resolves, to the very object of its new
path, and warns (``DeprecationWarning``) where it is imported. Removed in the
next release.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import lazy

if TYPE_CHECKING:
    # The code's home, for type checkers; at run time each name loads on first use.
    from awa_django.cron.search import (
        CronError,
        CronExpression,
        fires_between,
        latest_fire,
        next_fire,
        parse_cron,
        parse_timezone,
    )

__all__ = [
    "CronError",
    "CronExpression",
    "fires_between",
    "latest_fire",
    "next_fire",
    "parse_cron",
    "parse_timezone",
]
_MOVED_TO = dict.fromkeys(__all__, "awa_django")


__getattr__ = lazy.deprecated(__name__, _MOVED_TO)
