"""Interval timing: slots at ``anchor + k * every`` in absolute time.

An :class:`Interval` answers the same questions the cron search answers for an
expression (the fires in a range, the next fire, the latest fire), so the
evaluator, the admin and the CLI ask a schedule's timing and never which kind
it is. Slots are whole seconds apart and counted from the anchor in UTC, so a
DST change (or any zone) moves none of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

__all__ = ["MAX_EVERY", "Interval", "describe_every", "interval_anchor"]

# The largest value of the every_seconds column (a PostgreSQL integer), about
# 68 years: longer periods are a mistake, and k * every stays far inside what
# a datetime holds. schedules.ranges.RANGES["every"] holds the same bound.
MAX_EVERY = 2**31 - 1


def interval_anchor(anchor: datetime | None, created_at: datetime) -> datetime:
    """The effective anchor: the explicit one, else the creation time truncated to the second."""
    if anchor is None:
        return created_at.astimezone(UTC).replace(microsecond=0)
    return anchor.astimezone(UTC)


def _unit(seconds: int) -> tuple[int, str]:
    for size, word in ((86400, "day"), (3600, "hour"), (60, "minute")):
        if seconds % size == 0:
            return seconds // size, word
    return seconds, "second"


def describe_every(seconds: int) -> str:
    """``every`` in words: "every 90 seconds", "every 2 hours", "every day"."""
    count, word = _unit(seconds)
    return f"every {word}" if count == 1 else f"every {count} {word}s"


@dataclass(frozen=True, slots=True)
class Interval:
    """Fires at ``anchor + k * every`` for every integer k (``every`` in whole seconds)."""

    every: int
    anchor: datetime

    def __post_init__(self) -> None:
        if (
            isinstance(self.every, bool)
            or not isinstance(self.every, int)
            or not 1 <= self.every <= MAX_EVERY
        ):
            raise ValueError(
                f"every must be a whole number of seconds from 1 to {MAX_EVERY}, got {self.every!r}"
            )
        if self.anchor.tzinfo is None or self.anchor.utcoffset() is None:
            raise ValueError(f"anchor must be a timezone-aware datetime, got {self.anchor!r}")

    @property
    def text(self) -> str:
        return describe_every(self.every)

    def describe(self) -> str:
        return describe_every(self.every)

    def _index_at_or_before(self, t: datetime) -> int:
        """The largest k with ``anchor + k * every <= t``."""
        return (t - self.anchor) // timedelta(seconds=self.every)

    def slot(self, k: int) -> datetime:
        return (self.anchor + timedelta(seconds=k * self.every)).astimezone(UTC)

    def next_after(self, after: datetime) -> datetime:
        """The first slot strictly after ``after``."""
        return self.slot(self._index_at_or_before(after) + 1)

    def latest(self, after: datetime | None, until: datetime) -> datetime | None:
        """The latest slot f with ``after < f <= until`` (no lower bound if ``after`` is None)."""
        fire = self.slot(self._index_at_or_before(until))
        return None if after is not None and fire <= after else fire

    def fires_between(self, after: datetime, until: datetime, limit: int | None = None) -> list[datetime]:
        """Every slot f with ``after < f <= until``, ascending, at most ``limit``."""
        first = self._index_at_or_before(after) + 1
        last = self._index_at_or_before(until)
        if limit is not None:
            last = min(last, first + limit - 1)
        return [self.slot(k) for k in range(first, last + 1)]
