"""System checks of the ``AWA_*`` settings: each one's type and range (its row in
``conf.SETTINGS``), and the settings that must agree with each other or with
Django's (E020, E021, W060, W112).

Registered with the others by :mod:`awa_django.checks`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, Warning

from ..bounded_text import BYTES_PER_CHAR, MIN_CHARS
from ..conf import SETTINGS, Kind, conf
from ..declarations.declaration import finite

__all__ = [
    "DURATION_SETTINGS",
    "INTERVAL_SETTINGS",
    "SETTING_HINTS",
    "check_error_max_chars",
    "check_lock_timeout",
    "check_setting_limits",
    "check_settings",
]

# The hint of an out-of-range AWA_* setting, by the check id of its row in conf.SETTINGS.
SETTING_HINTS: Mapping[str, str] = MappingProxyType(
    {
        "awa_django.E020": "Seconds: intervals > 0, other durations >= 0; counts: see the reference.",
        "awa_django.E042": "AWA_AUTHORITATIVE is True or False.",
        "awa_django.E060": "AWA_MAX_ARGS_BYTES: bytes >= 1 (default 1048576); AWA_MAX_JSON_DEPTH: 1-200 (32).",
        "awa_django.E061": (
            "Timeouts are seconds from 0 (off) to 2147483.647 (PostgreSQL's limit); defaults 5, 60."
        ),
        "awa_django.E062": "Keepalive idle and interval are whole seconds 1-32767; the count is 1-127.",
        "awa_django.E074": "See docs/reference/settings.md for the worker settings' types and ranges.",
        "awa_django.E090": "The admin marks a schedule overdue when its next fire is this far in the past.",
    }
)

# Settings reported as E020 when out of range, by kind (the tests loop over
# them): durations that may be 0 (no grace, retry at once, prune everything
# finished, no drain) and intervals that drive loops, which must be > 0.
DURATION_SETTINGS = tuple(
    s.name for s in SETTINGS if s.check_id == "awa_django.E020" and s.kind in (Kind.SECONDS, Kind.RETENTION)
)
INTERVAL_SETTINGS = tuple(
    s.name for s in SETTINGS if s.check_id == "awa_django.E020" and s.kind is Kind.INTERVAL
)


def check_setting_limits(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """Every ``AWA_*`` setting has the type and range of its row in ``conf.SETTINGS``.

    Settings whose validity depends on more than their value (aliases, the
    owner labels, the schedules) have dedicated checks in this module.
    """
    messages: list[CheckMessage] = []
    for setting in SETTINGS:
        problem = setting.problem()
        if problem is not None:
            messages.append(Error(problem, hint=SETTING_HINTS[setting.check_id], id=setting.check_id))
    return messages


def check_settings(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """Rescue outlives two heartbeats; USE_TZ is on (ranges: :func:`check_setting_limits`)."""
    messages: list[CheckMessage] = []
    rescue, beat = conf.RESCUE_AFTER, conf.HEARTBEAT_INTERVAL
    if finite(rescue) and finite(beat) and 0 < rescue <= 2 * beat:
        messages.append(
            Error(
                f"AWA_RESCUE_AFTER ({rescue}) must exceed twice AWA_HEARTBEAT_INTERVAL ({beat}), "
                "or live tasks get rescued",
                hint=SETTING_HINTS["awa_django.E020"],
                id="awa_django.E020",
            )
        )
    if not settings.USE_TZ:
        messages.append(
            Error(
                "awa_django requires USE_TZ = True",
                hint="awa_django stores timestamptz; set USE_TZ = True.",
                id="awa_django.E021",
            )
        )
    return messages


def check_lock_timeout(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """A lock timeout of 0 leaves waits unbounded (ranges: :func:`check_setting_limits`)."""
    lock_timeout = conf.LOCK_TIMEOUT
    if finite(lock_timeout) and lock_timeout == 0:
        return [
            Warning(
                "AWA_LOCK_TIMEOUT is 0: waits on other processes' locks are unbounded",
                hint="Set AWA_LOCK_TIMEOUT > 0 so a frozen peer cannot stall every process.",
                id="awa_django.W060",
            )
        ]
    return []


def check_error_max_chars(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """An error cut to AWA_ERROR_MAX_CHARS fits in a job's errors (ranges: :func:`check_setting_limits`)."""
    chars, limit = conf.ERROR_MAX_CHARS, conf.MAX_ARGS_BYTES
    if not (Kind.COUNT.accepts(chars) and Kind.COUNT.accepts(limit)):
        return []  # reported as E074 / E060
    if chars * BYTES_PER_CHAR <= limit:
        return []
    return [
        Warning(
            f"AWA_ERROR_MAX_CHARS ({chars}) is more than an eighth of AWA_MAX_ARGS_BYTES ({limit}): "
            f"errors are cut to {max(limit // BYTES_PER_CHAR, MIN_CHARS)} characters instead",
            hint="A job's errors must stay within AWA_MAX_ARGS_BYTES for its next attempt to run; "
            "lower AWA_ERROR_MAX_CHARS or raise AWA_MAX_ARGS_BYTES.",
            id="awa_django.W112",
        )
    ]
