"""The two day fields of a cron expression as bit masks of days (pure: stdlib only).

A parsed day field (``parse._parse_days``) gives, for each kind of month (its
length, 28-31, and the weekday of its 1st), the bit mask of the days it matches;
``days_anded`` is classic cron's rule for combining the two fields (see
docs/explanation/semantics.md, "The two day fields").
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

__all__ = ["days_anded"]


def days_anded(dom: str, dow: str) -> bool:
    """Vixie cron's day rule: a day field starting with ``*`` (or ``?``) ANDs the two, else OR.

    "Starts with" is literal, as Vixie's DOM_STAR/DOW_STAR flags: ``*/2`` and ``*,1``
    AND the fields although they do not match every day.
    """
    return dom.startswith(("*", "?")) or dow.startswith(("*", "?"))


@dataclass(frozen=True, slots=True)
class _DayField:
    """One parsed day field: plain values plus the ``L``/``W``/``#`` items."""

    star: bool  # the text starts with "*" or "?" (Vixie's DOM_STAR)
    values: frozenset[int]  # days 1-31, or weekdays 0-6 (Sunday 0)
    last: bool = False  # dom "L": the last day of the month
    nearest: frozenset[int] = frozenset()  # dom "nW" (0 stands for "LW")
    nth: frozenset[tuple[int, int]] = frozenset()  # dow "d#k": (weekday, k)
    last_weekday: frozenset[int] = frozenset()  # dow "dL": the last such weekday

    def dom_mask(self, length: int, first: int) -> int:
        """Bit d set for each day d of a month of ``length`` days starting on ``first``."""
        mask = _bits(self.values) & ((2 << length) - 1)
        if self.last:
            mask |= 1 << length
        for n in self.nearest:
            day = _nearest_weekday(n or length, length, first)
            if day is not None:
                mask |= 1 << day
        return mask

    def dow_mask(self, length: int, first: int) -> int:
        """Like dom_mask, for a day-of-week field (Sunday 0; ``first`` is the 1st's weekday)."""
        mask = _weekday_days(_bits(self.values), first) & ((2 << length) - 1)
        for weekday, week in self.nth:
            day = (weekday - first) % 7 + 1 + 7 * (week - 1)
            if day <= length:
                mask |= 1 << day
        for weekday in self.last_weekday:
            day = (weekday - first) % 7 + 1
            mask |= 1 << (day + 7 * ((length - day) // 7))
        return mask


# Day masks are bit operations on two cached tables, not loops over the days of
# 28 kinds of month (start-up compiles thousands of expressions).
@functools.lru_cache(maxsize=1024)
def _bits(values: frozenset[int]) -> int:
    return sum(1 << v for v in values)


@functools.lru_cache(maxsize=1024)
def _weekday_days(weekdays: int, first: int) -> int:
    """Bits of the days 1-31 whose weekday is in the bit set ``weekdays``, the 1st being ``first``."""
    return sum(1 << day for day in range(1, 32) if weekdays >> ((first + day - 1) % 7) & 1)


def _nearest_weekday(n: int, length: int, first: int) -> int | None:
    """Day ``nW`` of a month: the weekday nearest to day n, never in another month."""
    if n > length:
        return None
    weekday = (first + n - 1) % 7
    if weekday == 6:  # Saturday: Friday, or Monday if n is the 1st
        return n - 1 if n > 1 else n + 2
    if weekday == 0:  # Sunday: Monday, or Friday if n is the last day
        return n + 1 if n < length else n - 2
    return n
