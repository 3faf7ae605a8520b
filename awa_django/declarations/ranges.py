"""The range of every number a schedule option takes: one table for every door.

A declaration (``periodic()``, ``cron.py``, ``AWA_SCHEDULES``), the runtime
API (``create_schedule`` / ``update_schedule``), the admin form and
``manage.py awa cron create|edit`` all build a schedule through
:func:`~awa_django.declarations.builder.build_schedule`, which asks
:func:`number_problem` here; the CLI's number flags and the admin's number
fields read :data:`RANGES` too, and the database holds the same bounds as
CHECK constraints (``sql/0027_option_ranges.sql``), so no door can accept a
value another refuses, or one the column cannot store.

Each bound is the column's: ``every_seconds`` is an ``integer`` (at most
2,147,483,647 s, about 68 years); ``starting_deadline`` and ``jitter`` are
finite ``double precision`` seconds, at most 100 years (a date further back
or forward is out of the supported range, see the row checks); a
``concurrency_limit`` goes to ``awa_jobs.concurrency_limit``.

Pure: no database, no settings. The numbers are :mod:`awa_django.contract`'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import contract

__all__ = ["INT4_MAX", "MAX_DURATION", "RANGES", "NumberRange", "number_problem"]

# The largest value of a PostgreSQL ``integer`` column.
INT4_MAX = contract.INT4_MAX
# The longest starting deadline or jitter, in seconds (100 years of 366 days).
MAX_DURATION = contract.DURATION_MAX_SECONDS


@dataclass(frozen=True)
class NumberRange:
    """The values one option takes: ``low`` to ``high``, finite, whole when ``whole``.

    ``low_open``: ``low`` itself is refused (a deadline of 0 s is none at all).
    ``column`` and ``sql_type`` say where the value is stored.
    """

    option: str
    column: str
    sql_type: str
    low: int
    high: int
    whole: bool = False
    low_open: bool = False
    unit: str = ""

    def describe(self) -> str:
        """The range as an error message says it ("a whole number of seconds from 1 to ...")."""
        what = ("a whole number" if self.whole else "a number") + (f" of {self.unit}" if self.unit else "")
        if self.low_open:
            return f"{what} more than {self.low} and at most {self.high}"
        return f"{what} from {self.low} to {self.high}"

    def problem(self, value: object) -> str | None:
        """Why ``value`` (a number already, durations as seconds) is outside the range, or None."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"must be {self.describe()}, got {type(value).__name__} {value!r:.60}"
        if isinstance(value, float) and not math.isfinite(value):
            return f"must be {self.describe()}, got {value!r} (not a finite number)"
        if self.whole and not (isinstance(value, int) or value.is_integer()):
            return f"must be {self.describe()}, got {value!r:.60}"
        too_low = value <= self.low if self.low_open else value < self.low
        if too_low or value > self.high:
            shown = f"{value:g}" if isinstance(value, float) else repr(value)[:60]
            return f"must be {self.describe()}, got {shown}"
        return None


RANGES: dict[str, NumberRange] = {
    r.option: r
    for r in (
        NumberRange(
            "every",
            "every_seconds",
            "integer",
            contract.EVERY_SECONDS_MIN,
            contract.EVERY_SECONDS_MAX,
            whole=True,
            unit="seconds",
        ),
        NumberRange(
            "starting_deadline",
            "starting_deadline",
            "double precision",
            0,
            MAX_DURATION,
            low_open=True,
            unit="seconds",
        ),
        NumberRange("jitter", "jitter", "double precision", 0, MAX_DURATION, unit="seconds"),
        NumberRange(
            "priority", "priority", "integer", contract.PRIORITY_MIN, contract.PRIORITY_MAX, whole=True
        ),
        NumberRange(
            "max_attempts",
            "max_attempts",
            "integer",
            contract.MAX_ATTEMPTS_MIN,
            contract.MAX_ATTEMPTS_MAX,
            whole=True,
        ),
        NumberRange(
            "concurrency_limit",
            "awa_jobs.concurrency_limit",
            "integer",
            contract.CONCURRENCY_LIMIT_MIN,
            contract.CONCURRENCY_LIMIT_MAX,
            whole=True,
        ),
    )
}


def number_problem(option: str, value: object) -> str | None:
    """Why ``value`` is not a value of ``option`` (a key of :data:`RANGES`), or None."""
    return RANGES[option].problem(value)
