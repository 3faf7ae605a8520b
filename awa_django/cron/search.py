"""Cron expressions and DST-aware fire times (pure: stdlib only, no Django).

Expressions have 5 fields (minute hour dom month dow), 6 fields with the SECONDS
FIRST (``"30 0 9 * * *"`` is 09:00:30 daily) or a macro
(``@daily`` ...). Each schedule has an IANA time zone.

Matching follows classic (Vixie/cronie) cron. ``parse_cron`` (in ``parse``)
turns every field into a set once, and the two day fields into one bit mask of
matching days per kind of month, so a search for the next or previous local time
here is a few table look-ups and bisections, whatever the expression (see
docs/explanation/semantics.md, "Cron expressions"). This module also names the
public functions of ``parse`` and ``legacy``, so callers need one import.

Local wall-clock times are mapped to UTC instants here, by default with the
Vixie/Debian cron DST policy:

* An entry is *fixed-time* unless its minute or hour field starts with ``*``.
* A local time that occurs twice (fall-back fold) fires once, at its first
  occurrence, for a fixed-time entry, and at both occurrences for a wildcard entry
  (the wildcard keeps running in real elapsed time).
* A local time that does not exist (spring-forward gap) fires once for a
  fixed-time entry, at the end of the gap (the transition instant), and several
  skipped times collapse into that one fire. A wildcard entry skips it.

A :class:`~awa_django.cron.zones.DstPolicy` passed as ``dst=`` chooses otherwise for
either side (``repeated`` first/last/both, ``skipped`` shift/skip), for fixed-time and
wildcard entries alike; a side left at None keeps the rule above.

Naive order is not instant order in a fold: 01:50 (first pass) comes before 01:10
(second pass). Rather than start a fixed safety margin (hours) early and sort, which
for a per-second schedule means ~10,000 steps, the walks below work out each fold's
bounds from zoneinfo and go over it twice. Every query stays at a handful of steps.

Every public function accepts aware datetimes in any zone and converts them to UTC
first: comparing or subtracting two datetimes of the same ``tzinfo`` uses their wall
clocks, which is wrong around a fold or a gap.
"""

from __future__ import annotations

import calendar
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from datetime import MAXYEAR, MINYEAR, UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from .interval import Interval, describe_every, interval_anchor
from .legacy import legacy_difference
from .parse import (
    _MONTH_LENGTHS,
    _SEARCH_MONTHS,
    _SECOND,
    CronError,
    CronExpression,
    _Plan,
    parse_cron,
    parse_timezone,
)
from .zones import (
    DST_REPEATED_CHOICES,
    DST_SKIPPED_CHOICES,
    VIXIE,
    DstPolicy,
    _classify,
    _gap_behind,
    _in_fold,
    _naive,
    _transition,
)

# What a schedule fires on: a cron expression (in a zone) or an interval.
Timing = CronExpression | Interval

__all__ = [
    "Interval",
    "Timing",
    "timing_of",
    "describe_every",
    "interval_anchor",
    "CronError",
    "CronExpression",
    "DST_REPEATED_CHOICES",
    "DST_SKIPPED_CHOICES",
    "DstPolicy",
    "FIRST_FIRE_LOOKBACK",
    "VIXIE",
    "due_fires",
    "fires_between",
    "latest_fire",
    "legacy_difference",
    "next_fire",
    "parse_cron",
    "parse_timezone",
    "search_start",
]

# Schedules that have never fired search from created_at minus this: a
# schedule created at HH:MM:30 still gets its HH:MM:00 fire.
FIRST_FIRE_LOOKBACK = timedelta(seconds=60)


# --- searching local wall-clock times ----------------------------------------------------


def _month_days(plan: _Plan, year: int, month: int) -> int:
    """The days of this month that match, as bits (bit d for day d): one table look-up."""
    length = _MONTH_LENGTHS[month] + (month == 2 and calendar.isleap(year))
    first = date(year, month, 1).isoweekday() % 7
    return plan.masks[(length - 28) * 7 + first]


def _next_day(plan: _Plan, year: int, month: int, day: int) -> date | None:
    """The first matching date on or after (year, month, day); ``day`` may be 32."""
    for _ in range(_SEARCH_MONTHS):
        if plan.month_bits >> month & 1:
            mask = _month_days(plan, year, month) >> day << day
            if mask:
                return date(year, month, (mask & -mask).bit_length() - 1)
        month, day = month + 1, 1
        if month > 12:
            month, year = 1, year + 1
            if year > MAXYEAR:
                return None
    return None


def _prev_day(plan: _Plan, year: int, month: int, day: int) -> date | None:
    """The last matching date on or before (year, month, day); ``day`` may be 0."""
    for _ in range(_SEARCH_MONTHS):
        if plan.month_bits >> month & 1:
            mask = _month_days(plan, year, month) & ((2 << day) - 1)
            if mask:
                return date(year, month, mask.bit_length() - 1)
        month, day = month - 1, 31
        if month < 1:
            month, year = 12, year - 1
            if year < MINYEAR:
                return None
    return None


def _next_time(plan: _Plan, hour: int, minute: int, second: int) -> tuple[int, int, int] | None:
    """The first matching time of day at or after hour:minute:second."""
    hours, minutes, seconds = plan.hours, plan.minutes, plan.seconds
    i = bisect_left(hours, hour)
    if i < len(hours) and hours[i] == hour:
        j = bisect_left(minutes, minute)
        if j < len(minutes) and minutes[j] == minute:
            k = bisect_left(seconds, second)
            if k < len(seconds):
                return hour, minute, seconds[k]
            j += 1
        if j < len(minutes):
            return hour, minutes[j], seconds[0]
        i += 1
    return (hours[i], minutes[0], seconds[0]) if i < len(hours) else None


def _prev_time(plan: _Plan, hour: int, minute: int, second: int) -> tuple[int, int, int] | None:
    """The last matching time of day at or before hour:minute:second."""
    hours, minutes, seconds = plan.hours, plan.minutes, plan.seconds
    i = bisect_right(hours, hour) - 1
    if i >= 0 and hours[i] == hour:
        j = bisect_right(minutes, minute) - 1
        if j >= 0 and minutes[j] == minute:
            k = bisect_right(seconds, second) - 1
            if k >= 0:
                return hour, minute, seconds[k]
            j -= 1
        if j >= 0:
            return hour, minutes[j], seconds[-1]
        i -= 1
    return (hours[i], minutes[-1], seconds[-1]) if i >= 0 else None


def _next_naive(plan: _Plan, start: datetime) -> datetime | None:
    """The first matching local time strictly after ``start`` (naive)."""
    try:
        t = start.replace(microsecond=0) + _SECOND
    except OverflowError:
        return None
    day = _next_day(plan, t.year, t.month, t.day)
    if day is not None and day == t.date():
        found = _next_time(plan, t.hour, t.minute, t.second)
        if found is not None:
            return datetime(day.year, day.month, day.day, *found)
        day = _next_day(plan, t.year, t.month, t.day + 1)
    if day is None:
        return None
    return datetime(day.year, day.month, day.day, plan.hours[0], plan.minutes[0], plan.seconds[0])


def _prev_naive(plan: _Plan, start: datetime) -> datetime | None:
    """The last matching local time strictly before ``start`` (naive)."""
    try:
        t = start.replace(microsecond=0) if start.microsecond else start - _SECOND
    except OverflowError:
        return None
    day = _prev_day(plan, t.year, t.month, t.day)
    if day is not None and day == t.date():
        found = _prev_time(plan, t.hour, t.minute, t.second)
        if found is not None:
            return datetime(day.year, day.month, day.day, *found)
        day = _prev_day(plan, t.year, t.month, t.day - 1)
    if day is None:
        return None
    return datetime(day.year, day.month, day.day, plan.hours[-1], plan.minutes[-1], plan.seconds[-1])


class _Exhausted(Exception):
    """No matching local time in the direction of a step (only at the ends of the calendar)."""


class _Cursor:
    """A position in local wall-clock time; ``_step`` moves it to the next/previous match."""

    __slots__ = ("current", "plan")

    def __init__(self, plan: _Plan, start: datetime) -> None:
        self.plan, self.current = plan, start

    def set_current(self, start: datetime) -> None:
        self.current = start


def _iter(expr: CronExpression, start: datetime) -> _Cursor:
    return _Cursor(expr._plan, start)


def _step(it: _Cursor, backward: bool, start: datetime | None = None) -> datetime:
    """One step, strictly after (before) ``start`` or the current position.

    Every step of a query goes through this function, so tests can count the work a query does.
    """
    if start is not None:
        it.current = start
    found = (_prev_naive if backward else _next_naive)(it.plan, it.current)
    if found is None:
        raise _Exhausted
    it.current = found
    return found


class _Shifted:
    """The shifted fires of one gap still to yield, ascending: a second stream that
    ``_forward`` merges into its walk (they land among the wall times after the gap)."""

    __slots__ = ("end", "head", "it", "tz")

    def __init__(self, plan: _Plan, tz: ZoneInfo, start: datetime, end: datetime) -> None:
        # Matching wall times in (start, end), each read on the offset before the gap.
        self.it, self.tz, self.end = _Cursor(plan, start), tz, end
        self.head: datetime | None = None
        self._advance()

    def _advance(self) -> None:
        try:
            naive = _step(self.it, backward=False)
        except _Exhausted:
            naive = None
        self.head = None if naive is None or naive >= self.end else _classify(naive, self.tz)[2]

    def before(self, bound: datetime | None) -> Iterator[datetime]:
        """Yield the fires < ``bound`` (all if None); drop one equal to it (same instant)."""
        while self.head is not None and (bound is None or self.head <= bound):
            head = self.head
            self._advance()
            if bound is None or head < bound:
                yield head


def _forward(
    expr: CronExpression, tz: ZoneInfo, after: datetime, dst: DstPolicy = VIXIE
) -> Iterator[datetime]:
    """Yield every fire instant > ``after``, ascending, each exactly once.

    With ``both`` (a wildcard entry's Vixie default) a fold is walked twice. The first
    pass yields the first occurrences up to the fold's end. Then the cursor rewinds to
    the fold's start and the second pass yields the second occurrences. With ``shift``
    a gap's wall times, moved forward by its length, land among the wall times after
    it, so they come from a second cursor merged in. No sort buffer is needed, and
    each fire costs about one step.
    """
    repeated, skipped = dst.modes(expr)
    it, fold, second_pass, shifted = _forward_start(expr, tz, after, repeated, skipped)
    last = after  # yields are strictly increasing; this also drops gap duplicates
    while True:
        try:
            naive = _step(it, backward=False)
        except _Exhausted:
            naive = None
        if fold is not None and (naive is None or naive >= fold[1]):
            if second_pass:
                fold, second_pass = None, False
            else:  # first pass done: walk the fold again for second occurrences
                it.set_current(fold[0] - _SECOND)
                second_pass = True
                continue
        fire = None
        if naive is not None:
            kind, a, b = _classify(naive, tz)
            if kind == "gap":
                t, gap_start, gap_end = _transition(tz, a, b)
                if skipped != "transition":  # skip the rest of the gap in one jump
                    if skipped == "shift":  # its fires come from a second cursor
                        shifted = _Shifted(expr._plan, tz, gap_start - _SECOND, gap_end)
                    it.set_current(gap_end - _SECOND)
                    continue
                fire = t
            elif kind == "fold" and repeated == "both":
                if fold is None:
                    _, end, start = _transition(tz, a, b)
                    fold = (start, end)
                fire = b if second_pass else a
            else:  # single, or a fold with one chosen occurrence
                fire = b if kind == "fold" and repeated == "last" else a
        for early in shifted.before(fire) if shifted is not None else ():
            if early > last:
                last = early
                yield early
        if fire is None:
            return
        if fire > last:
            last = fire
            yield fire


def _forward_start(
    expr: CronExpression, tz: ZoneInfo, after: datetime, repeated: str, skipped: str
) -> tuple[_Cursor, tuple[datetime, datetime] | None, bool, _Shifted | None]:
    """Where ``_forward`` starts: its cursor, the fold it is in (``both``), whether that
    fold's first pass is done, and the shifted fires of a gap ``after`` follows closely."""
    local = after.astimezone(tz)
    it = _iter(expr, _naive(local))
    fold = None
    second_pass = False
    shifted = None
    if skipped == "shift" and (behind := _gap_behind(tz, after)) is not None:
        shifted = _Shifted(expr._plan, tz, behind[2], behind[1])
    if repeated != "first" and _in_fold(local):
        _, a, b = _classify(_naive(local), tz)
        _, end, start = _transition(tz, a, b)
        if repeated == "both":
            fold = (start, end)
            second_pass = local.fold == 1  # first pass still owes every second occurrence
        elif local.fold == 0:  # "last": every second occurrence of the fold is to come
            it.set_current(start - _SECOND)
    return it, fold, second_pass, shifted


def _utc(name: str, value: datetime) -> datetime:
    """``value`` as a UTC datetime; ValueError if it is naive."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{name} must be a timezone-aware datetime, got {value!r}")
    return value.astimezone(UTC)


def fires_between(
    expr: Timing,
    tz: ZoneInfo,
    after: datetime,
    until: datetime,
    limit: int | None = None,
    *,
    dst: DstPolicy = VIXIE,
) -> list[datetime]:
    """All fire instants f with ``after < f <= until``, ascending, at most ``limit``.

    ``dst`` says what fires for local times a DST change repeats or skips (an
    interval ignores it: it counts elapsed time).
    """
    after, until = _utc("after", after), _utc("until", until)
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0 or None, got {limit}")
    out: list[datetime] = []
    if limit == 0 or until <= after:
        return out
    if isinstance(expr, Interval):
        return expr.fires_between(after, until, limit)
    for fire in _forward(expr, tz, after, dst):
        if fire > until:
            break
        out.append(fire)
        if limit is not None and len(out) >= limit:
            break
    return out


def next_fire(expr: Timing, tz: ZoneInfo, after: datetime, *, dst: DstPolicy = VIXIE) -> datetime | None:
    """The first fire instant strictly after ``after``, or None if there is none."""
    if isinstance(expr, Interval):
        return expr.next_after(_utc("after", after))
    return next(_forward(expr, tz, _utc("after", after), dst), None)


def latest_fire(
    expr: Timing, tz: ZoneInfo, after: datetime | None, until: datetime, *, dst: DstPolicy = VIXIE
) -> datetime | None:
    """The latest fire f with ``after < f <= until`` (no lower bound if ``after`` is None).

    Walks back from ``until`` and stops at the first local time that maps to
    an instant <= until. The cost therefore does not depend on ``until - after``.
    """
    until = _utc("until", until)
    after = None if after is None else _utc("after", after)
    if isinstance(expr, Interval):
        return expr.latest(after, until)
    repeated, skipped = dst.modes(expr)
    local = until.astimezone(tz)
    top = _naive(local)
    it = _iter(expr, top + _SECOND)
    best = _walk_back(it, tz, until, repeated, skipped)
    if repeated != "last" and _in_fold(local) and local.fold == 1:
        # `until` is in a fold's second pass. The first occurrences of wall times
        # later than `until`'s (up to the fold's end) have already happened, and they
        # come later than any first occurrence found above.
        _, a, b = _classify(top, tz)
        fold_end = _transition(tz, a, b)[1]
        try:
            naive = _step(it, backward=True, start=fold_end)
        except _Exhausted:
            naive = top
        if naive > top:
            first = _classify(naive, tz)[1]
            best = first if best is None else max(best, first)
    if skipped == "shift":
        best = _latest_shifted(it, tz, until, best)
    if best is None or (after is not None and best <= after):
        return None
    return best


def _latest_shifted(it: _Cursor, tz: ZoneInfo, until: datetime, best: datetime | None) -> datetime | None:
    """``best`` or, if later, the latest shifted fire of a gap that is <= ``until``.

    A gap's shifted fires land among the wall times after it (within one gap length
    of the transition), so the walk back may have stopped at a wall time after the
    gap that fires earlier than one of them.
    """
    behind = _gap_behind(tz, until)
    if behind is not None:  # only the gap's wall times up to `until`'s have fired
        start = behind[2] + _SECOND
    elif best is not None and (behind := _gap_behind(tz, best)) is not None:
        start = behind[1]  # `until` is past the shifted fires: all of them have fired
    else:
        return best
    try:
        naive = _step(it, backward=True, start=start)
    except _Exhausted:
        return best
    if naive < behind[0]:
        return best
    moved = _classify(naive, tz)[2]
    return moved if best is None else max(best, moved)


def _walk_back(it: _Cursor, tz: ZoneInfo, until: datetime, repeated: str, skipped: str) -> datetime | None:
    """The first fire met walking back from the cursor: the latest one <= ``until``
    (except a gap's shifted fires and a fold's later first occurrences, see above)."""
    while True:
        try:
            naive = _step(it, backward=True)
        except _Exhausted:
            return None
        kind, a, b = _classify(naive, tz)
        if kind == "gap":
            t, gap_start, _ = _transition(tz, a, b)
            if skipped == "transition":
                return t
            if skipped == "shift" and b <= until:
                return b
            # Nothing of the gap fires by `until` in this walk: jump to just before it.
            it.set_current(gap_start)
            continue
        if kind == "fold":
            if repeated == "first":
                return a
            if b <= until:
                return b
            if repeated == "both":
                # `until` is in the first pass: the first occurrence is the later fire.
                return a
            # "last" and the second occurrence is still to come: none of this
            # fold's wall times has fired; jump to just before the fold.
            it.set_current(_transition(tz, a, b)[2])
            continue
        return a


def search_start(last_enqueued_at: datetime | None, created_at: datetime) -> datetime:
    """The exclusive lower bound of a schedule's next automatic fire: its last fire, or for
    one that never fired ``created_at - 60 s`` made inclusive (the leader's rule; the admin
    uses it too, so both name the same first fire)."""
    if last_enqueued_at is not None:
        return last_enqueued_at
    # datetime has microsecond resolution, so "f > lower - 1us" is exactly "f >= lower".
    return created_at - FIRST_FIRE_LOOKBACK - timedelta(microseconds=1)


def due_fires(
    expr: Timing,
    tz: ZoneInfo,
    *,
    last_enqueued_at: datetime | None,
    created_at: datetime,
    now: datetime,
    catch_up: bool,
    limit: int,
    dst: DstPolicy = VIXIE,
) -> list[datetime]:
    """Fire instants a scheduler should enqueue at ``now``.

    Never fired: the latest fire in ``[created_at - 60s, now]`` (inclusive), whatever
    ``catch_up`` says, because a first registration never backfills. Otherwise
    fires in ``(last_enqueued_at, now]``: with ``catch_up`` the oldest ``limit`` of
    them, ascending; without it only the latest (coalesce). ``dst`` is the schedule's
    DST policy (the Vixie cron rule by default).
    """
    created_at, now = _utc("created_at", created_at), _utc("now", now)
    if last_enqueued_at is not None:
        last_enqueued_at = _utc("last_enqueued_at", last_enqueued_at)
    if last_enqueued_at is not None and catch_up:
        return fires_between(expr, tz, last_enqueued_at, now, limit, dst=dst)
    fire = latest_fire(expr, tz, search_start(last_enqueued_at, created_at), now, dst=dst)
    return [] if fire is None else [fire]


def timing_of(
    cron_expr: str | None, every_seconds: int | None, anchor: datetime | None, created_at: datetime
) -> Timing:
    """A stored schedule's timing: its interval, or its parsed expression (CronError if invalid)."""
    if every_seconds is not None:
        try:
            return Interval(every_seconds, interval_anchor(anchor, created_at))
        except ValueError as exc:
            raise CronError(str(exc)) from None
    if cron_expr is None:
        raise CronError("the schedule has neither a cron expression nor an interval")
    return parse_cron(cron_expr)
