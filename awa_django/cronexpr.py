"""Cron expressions and DST-aware fire times (pure: stdlib + croniter, no Django).

Expressions have 5 fields (minute hour dom month dow), 6 fields with the SECONDS
FIRST (like Rust's ``croner``: ``"30 0 9 * * *"`` is 09:00:30 daily) or a macro
(``@daily`` ...). Each schedule has an IANA time zone. croniter is used only in naive
(tz-less) mode to list matching local wall-clock times, and this module maps
each of them to UTC instants itself, using the Vixie/Debian cron DST policy:

* An entry is *fixed-time* unless its minute or hour field starts with ``*``.
* A local time that occurs twice (fall-back fold) fires once, at its first
  occurrence, for a fixed-time entry, and at both occurrences for a wildcard entry
  (the wildcard keeps running in real elapsed time).
* A local time that does not exist (spring-forward gap) fires once for a
  fixed-time entry, at the end of the gap (the transition instant), and several
  skipped times collapse into that one fire. A wildcard entry skips it.

Naive order is not instant order in a fold: 01:50 (first pass) comes before 01:10
(second pass). Rather than start a fixed safety margin (hours) early and sort, which
for a per-second schedule means ~10,000 croniter steps, the walks below work out
each fold's bounds from zoneinfo and go over it twice. Every query stays at a handful
of croniter steps.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterBadDateError, CroniterError, croniter

__all__ = ["CronError", "CronExpression", "due_fires", "fires_between", "latest_fire",
           "next_fire", "parse_cron", "parse_timezone"]

_SECOND = timedelta(seconds=1)
# Any fixed start works for the "can it ever fire?" check: with no year field,
# a schedule that can fire at all fires within croniter's 50-year search window.
_PROBE_START = datetime(2000, 1, 1)
_MACROS = {
    "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
# croniter's hash ("H", "H/15", "H(0-29)") and random ("R") tokens. They depend on a
# hash id or on chance, so a schedule using them would not be reproducible.
_HASH_TOKEN = re.compile(r"[hr](\(.*\))?(/.*)?", re.IGNORECASE)
_STEP = re.compile(r"\*/(\d+)")
_FIELD_NAMES = ("second", "minute", "hour", "day-of-month", "month", "day-of-week")
_DAY_NAMES = ("Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTH_NAMES = ("", "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct",
                "Nov", "Dec")


class CronError(ValueError):
    """An invalid cron expression or time zone (the message names no schedule)."""


@dataclass(frozen=True, slots=True)
class CronExpression:
    """A validated cron expression.

    ``fields`` is always (second, minute, hour, day-of-month, month, day-of-week).
    """

    text: str
    fields: tuple[str, ...]

    @property
    def fixed_time(self) -> bool:
        """True unless the minute or hour field starts with ``*`` (Vixie cron's DST rule)."""
        return not (self.fields[1].startswith("*") or self.fields[2].startswith("*"))

    def describe(self) -> str:
        """Short English summary for common shapes; otherwise the raw expression."""
        sec, minute, hour, dom, month, dow = self.fields
        every_day = dom == month == dow == "*"
        if every_day and hour == "*":
            if minute == "*" and sec in ("*", "*/1"):
                return "Every second"
            if minute == "*" and (m := _STEP.fullmatch(sec)):
                return f"Every {m[1]} seconds"
            if sec == "0" and minute in ("*", "*/1"):
                return "Every minute"
            if sec == "0" and (m := _STEP.fullmatch(minute)):
                return f"Every {m[1]} minutes"
            if sec == "0" and minute.isdigit():
                return f"Every hour at :{int(minute):02d}"
            return self.text
        if not (sec.isdigit() and minute.isdigit() and hour.isdigit()):
            return self.text
        at = f"{int(hour):02d}:{int(minute):02d}" + (f":{int(sec):02d}" if int(sec) else "")
        if every_day:
            return f"Daily at {at}"
        if dom == month == "*" and (days := _day_names(dow)):
            return f"{days} at {at}"
        if month == dow == "*" and dom.isdigit():
            return f"Monthly on day {int(dom)} at {at}"
        if dow == "*" and dom.isdigit() and month.isdigit() and 1 <= int(month) <= 12:
            return f"Yearly on {_MONTH_NAMES[int(month)]} {int(dom)} at {at}"
        return self.text


def _day_names(dow: str) -> str | None:
    """``"1-5"`` -> ``"Mon-Fri"``; None when the field is more than a list/range of days."""
    out = re.sub(r"[0-7]|[a-zA-Z]{3}",
                 lambda m: _DAY_NAMES[int(m[0])] if m[0].isdigit() else m[0].title(), dow)
    return out if re.fullmatch(r"[A-Z][a-z]{2}([-,][A-Z][a-z]{2})*", out) else None


def parse_cron(expr: str) -> CronExpression:
    """Parse and validate a 5-field, 6-field (seconds first) or macro expression.

    Raises CronError for malformed input, H/R hash tokens, ``@reboot``, and
    expressions that can never fire (``0 0 30 2 *``).
    """
    if not isinstance(expr, str):
        raise CronError(f"cron expression must be a string, not {type(expr).__name__}")
    text = expr.strip()
    if not text:
        raise CronError("cron expression is empty")

    def invalid(reason: str) -> CronError:
        return CronError(f"invalid cron expression {text!r}: {reason}")

    if text.startswith("@"):
        if text.lower() not in _MACROS:
            raise invalid(f"unsupported macro; use one of {', '.join(_MACROS)}")
        parts = _MACROS[text.lower()].split()
    else:
        parts = text.split()
    if len(parts) not in (5, 6):
        raise invalid(f"expected 5 or 6 fields, got {len(parts)}")
    fields = tuple(["0", *parts] if len(parts) == 5 else parts)
    if any(_HASH_TOKEN.fullmatch(tok) for field in fields for tok in field.split(",")):
        raise invalid("hash/random tokens (H, R) are not supported")
    if not _accepted(fields):
        # croniter's own message quotes its internally reordered fields; name the culprit.
        for i, name in enumerate(_FIELD_NAMES):
            if not _accepted(tuple(f if j == i else "*" for j, f in enumerate(fields))):
                raise invalid(f"bad {name} field {fields[i]!r}")
        raise invalid("fields are not a valid combination")
    try:
        _step(_iter(fields, _PROBE_START), backward=False)
    except CroniterBadDateError:
        raise invalid("it never matches any date") from None
    return CronExpression(text=text, fields=fields)


def _accepted(fields: tuple[str, ...]) -> bool:
    try:
        return bool(_iter(fields, _PROBE_START))
    except (CroniterError, ValueError, TypeError, KeyError, IndexError):
        return False


def parse_timezone(name: str) -> ZoneInfo:
    """Return the ZoneInfo for an IANA zone name; CronError if it is unknown or invalid."""
    try:
        if not isinstance(name, str) or not name.strip():
            raise ValueError(name)
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, TypeError, OSError):
        raise CronError(f"unknown timezone {name!r}") from None


def _iter(fields: tuple[str, ...], start: datetime) -> croniter:
    return croniter(" ".join(fields), start, ret_type=datetime, second_at_beginning=True)


def _step(it: croniter, backward: bool, start: datetime | None = None) -> datetime:
    """One croniter step, strictly after (before) ``start`` or the current position.

    Every croniter step goes through this function, so tests can count the work a query does.
    """
    step: datetime = it.get_prev(start_time=start) if backward else it.get_next(start_time=start)
    return step


def _naive(instant: datetime) -> datetime:
    return instant.replace(tzinfo=None, microsecond=0)


def _transition(tz: ZoneInfo, lo: datetime, hi: datetime) -> tuple[datetime, datetime, datetime]:
    """Find the offset change in (lo, hi]: (instant, its wall time on the old offset, on the new).

    The two wall times bound the gap (old..new) or the fold (new..old) in local time.
    zoneinfo has no public list of transitions, so this bisects on whole seconds.
    lo/hi are the two readings (fold=0/1) of one local time, so they are at most one
    DST shift apart, which takes about 12 steps.
    """
    old = lo.astimezone(tz).utcoffset() or timedelta(0)
    while hi - lo > _SECOND:
        mid = (lo + (hi - lo) / 2).replace(microsecond=0)
        if mid.astimezone(tz).utcoffset() == old:
            lo = mid
        else:
            hi = mid
    return hi, _naive(hi + old), _naive(hi + (hi.astimezone(tz).utcoffset() or timedelta(0)))


def _classify(naive: datetime, tz: ZoneInfo) -> tuple[str, datetime, datetime]:
    """Return (kind, first, second) for a local time; kind is "single", "fold" or "gap".

    Under PEP 495, fold=0 reads a local time with the offset in force before a
    transition and fold=1 with the one after. If converting back gives a different
    wall time, the time lies in a gap. If it round-trips but the two readings differ,
    it is ambiguous. For a fold, first < second are the two occurrences. For a gap,
    first < second bracket the transition instant.
    """
    a = naive.replace(tzinfo=tz, fold=0).astimezone(UTC)
    b = naive.replace(tzinfo=tz, fold=1).astimezone(UTC)
    if _naive(a.astimezone(tz)) != naive:
        return "gap", min(a, b), max(a, b)
    return ("fold" if a != b else "single"), a, b


def _in_fold(local: datetime) -> bool:
    return local.replace(fold=1 - local.fold).utcoffset() != local.utcoffset()


def _forward(expr: CronExpression, tz: ZoneInfo, after: datetime) -> Iterator[datetime]:
    """Yield every fire instant > ``after``, ascending, each exactly once.

    A wildcard entry covers a fold twice. The first pass yields the first
    occurrences up to the fold's end. Then croniter rewinds to the fold's start and
    the second pass yields the second occurrences. No sort buffer is needed, and
    each fire costs about one croniter step.
    """
    wild = not expr.fixed_time
    local = after.astimezone(tz)
    it = _iter(expr.fields, _naive(local))
    last = after              # yields are strictly increasing; this also drops gap duplicates
    fold = None               # (start, end) naive bounds of the fold being walked
    second_pass = False
    if wild and _in_fold(local):
        _, a, b = _classify(_naive(local), tz)
        _, end, start = _transition(tz, a, b)
        fold = (start, end)
        second_pass = local.fold == 1   # first pass still owes every second occurrence
    while True:
        try:
            naive = _step(it, backward=False)
        except CroniterBadDateError:
            naive = None
        if fold is not None and (naive is None or naive >= fold[1]):
            if second_pass:
                fold, second_pass = None, False
            else:               # first pass done: walk the fold again for second occurrences
                it.set_current(fold[0] - _SECOND)
                second_pass = True
                continue
        if naive is None:
            return
        kind, a, b = _classify(naive, tz)
        if kind == "gap":
            t, _, gap_end = _transition(tz, a, b)
            if wild:            # skip the rest of the gap in one jump
                it.set_current(gap_end - _SECOND)
                continue
            fire = t
        elif kind == "fold" and wild:
            if fold is None:
                _, end, start = _transition(tz, a, b)
                fold = (start, end)
            fire = b if second_pass else a
        else:                   # single, or fixed-time fold: first occurrence only
            fire = a
        if fire > last:
            last = fire
            yield fire


def _check_aware(**values: datetime | None) -> None:
    for name, value in values.items():
        if value is not None and (value.tzinfo is None or value.utcoffset() is None):
            raise ValueError(f"{name} must be a timezone-aware datetime, got {value!r}")


def fires_between(expr: CronExpression, tz: ZoneInfo, after: datetime, until: datetime,
                  limit: int | None = None) -> list[datetime]:
    """All fire instants f with ``after < f <= until``, ascending, at most ``limit``."""
    _check_aware(after=after, until=until)
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0 or None, got {limit}")
    out: list[datetime] = []
    if limit == 0 or until <= after:
        return out
    for fire in _forward(expr, tz, after):
        if fire > until:
            break
        out.append(fire)
        if limit is not None and len(out) >= limit:
            break
    return out


def next_fire(expr: CronExpression, tz: ZoneInfo, after: datetime) -> datetime | None:
    """The first fire instant strictly after ``after``, or None if there is none."""
    _check_aware(after=after)
    return next(_forward(expr, tz, after), None)


def latest_fire(expr: CronExpression, tz: ZoneInfo, after: datetime | None,
                until: datetime) -> datetime | None:
    """The latest fire f with ``after < f <= until`` (no lower bound if ``after`` is None).

    Walks back from ``until`` and stops at the first local time that maps to
    an instant <= until. The cost therefore does not depend on ``until - after``.
    """
    _check_aware(after=after, until=until)
    wild = not expr.fixed_time
    local = until.astimezone(tz)
    top = _naive(local)
    it = _iter(expr.fields, top + _SECOND)
    best = None
    while best is None:
        try:
            naive = _step(it, backward=True)
        except CroniterBadDateError:
            break
        kind, a, b = _classify(naive, tz)
        if kind == "gap":
            t, gap_start, _ = _transition(tz, a, b)
            if wild:            # nothing in the gap fires; jump to just before it
                it.set_current(gap_start)
                continue
            best = t
        elif kind == "fold":
            # For a candidate at or before `until`'s wall time, a wildcard's second
            # occurrence is the later fire if it has already happened. Otherwise
            # `until` is in the first pass, and the first occurrence is.
            best = b if wild and b <= until else a
        else:
            best = a
    if _in_fold(local) and local.fold == 1:
        # `until` is in a fold's second pass. The first occurrences of wall times
        # later than `until`'s (up to the fold's end) have already happened, and they
        # come later than any first occurrence found above.
        _, a, b = _classify(top, tz)
        fold_end = _transition(tz, a, b)[1]
        try:
            naive = _step(it, backward=True, start=fold_end)
        except CroniterBadDateError:
            naive = top
        if naive > top:
            first = _classify(naive, tz)[1]
            best = first if best is None else max(best, first)
    if best is None or (after is not None and best <= after):
        return None
    return best


def due_fires(expr: CronExpression, tz: ZoneInfo, *, last_enqueued_at: datetime | None,
              created_at: datetime, now: datetime, catch_up: bool, limit: int) -> list[datetime]:
    """Fire instants a scheduler should enqueue at ``now`` (a port of Awa's compute_fire_times).

    Never fired: the latest fire in ``[created_at - 60s, now]`` (inclusive), whatever
    ``catch_up`` says, because a first registration never backfills. Otherwise
    fires in ``(last_enqueued_at, now]``: with ``catch_up`` the oldest ``limit`` of
    them, ascending; without it only the latest (coalesce).
    """
    _check_aware(last_enqueued_at=last_enqueued_at, created_at=created_at, now=now)
    if last_enqueued_at is not None and catch_up:
        return fires_between(expr, tz, last_enqueued_at, now, limit)
    # datetime has microsecond resolution, so "f > lower - 1us" is exactly "f >= lower".
    lower = last_enqueued_at or created_at - timedelta(seconds=60, microseconds=1)
    fire = latest_fire(expr, tz, lower, now)
    return [] if fire is None else [fire]
