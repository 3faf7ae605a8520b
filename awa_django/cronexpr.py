"""Cron expressions and DST-aware fire times (pure: stdlib only, no Django).

Expressions have 5 fields (minute hour dom month dow), 6 fields with the SECONDS
FIRST (like Rust's ``croner``: ``"30 0 9 * * *"`` is 09:00:30 daily) or a macro
(``@daily`` ...). Each schedule has an IANA time zone.

Matching follows classic (Vixie/cronie) cron. ``parse_cron`` turns every field into a
set once: seconds, minutes, hours and months as sorted tuples, and the two day fields
into one bit mask of matching days per kind of month (its length, 28-31, and the
weekday of its 1st), 28 masks in all. A day matches when its bit is set, so the AND/OR
rule of the day fields, ``L``, ``W`` and ``#`` are all decided at parse time, and a
search for the next or previous local time is a few table look-ups and bisections,
whatever the expression (see docs/explanation/semantics.md, "Cron expressions").

Local wall-clock times are mapped to UTC instants here, with the Vixie/Debian cron
DST policy:

* An entry is *fixed-time* unless its minute or hour field starts with ``*``.
* A local time that occurs twice (fall-back fold) fires once, at its first
  occurrence, for a fixed-time entry, and at both occurrences for a wildcard entry
  (the wildcard keeps running in real elapsed time).
* A local time that does not exist (spring-forward gap) fires once for a
  fixed-time entry, at the end of the gap (the transition instant), and several
  skipped times collapse into that one fire. A wildcard entry skips it.

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
import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import MAXYEAR, MINYEAR, UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

__all__ = ["CronError", "CronExpression", "due_fires", "fires_between", "latest_fire",
           "legacy_difference", "next_fire", "parse_cron", "parse_timezone"]

_SECOND = timedelta(seconds=1)
# With no year field the calendar repeats every 400 years (146097 days, a whole number
# of weeks), so a day that can match at all matches within 400 years of any date.
_SEARCH_MONTHS = 400 * 12 + 1
_MACROS = {
    "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
# Hash ("H", "H/15", "H(0-29)") and random ("R") tokens (croniter, Jenkins). They depend on a
# hash id or on chance, so a schedule using them would not be reproducible.
_HASH_TOKEN = re.compile(r"[hr](\(.*\))?(/.*)?", re.IGNORECASE)
_STEP = re.compile(r"\*/(\d+)")
_FIELD_NAMES = ("second", "minute", "hour", "day-of-month", "month", "day-of-week")
_SEC, _MIN, _HOUR, _DOM, _MON, _DOW = range(6)
# Inclusive bounds as written; 7 is Sunday too in day-of-week.
_BOUNDS = ((0, 59), (0, 59), (0, 23), (1, 31), (1, 12), (0, 7))
_DAY_NAMES = ("Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTH_NAMES = ("", "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct",
                "Nov", "Dec")
_NAMES = {
    _MON: {name.lower(): i for i, name in enumerate(_MONTH_NAMES) if name},
    _DOW: {name.lower(): i for i, name in enumerate(_DAY_NAMES[:7])},
}
_ITEM = re.compile(r"(?P<start>\*|[0-9]+|[a-z]+)(?:-(?P<end>[0-9]+|[a-z]+))?(?:/(?P<step>[^/]*))?")
_MONTH_LENGTHS = (0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


class CronError(ValueError):
    """An invalid cron expression or time zone (the message names no schedule)."""


class _FieldError(Exception):
    def __init__(self, index: int, reason: str) -> None:
        super().__init__(reason)
        self.index, self.reason = index, reason


@dataclass(frozen=True, slots=True)
class _DayField:
    """One parsed day field: plain values plus the ``L``/``W``/``#`` items."""

    star: bool                              # the text starts with "*" or "?" (Vixie's DOM_STAR)
    values: frozenset[int]                  # days 1-31, or weekdays 0-6 (Sunday 0)
    last: bool = False                      # dom "L": the last day of the month
    nearest: frozenset[int] = frozenset()   # dom "nW" (0 stands for "LW")
    nth: frozenset[tuple[int, int]] = frozenset()   # dow "d#k": (weekday, k)
    last_weekday: frozenset[int] = frozenset()      # dow "dL": the last such weekday

    def dom_mask(self, length: int, first: int) -> int:
        """Bit d set for each day d of a month of ``length`` days starting on ``first``."""
        mask = sum(1 << d for d in self.values if d <= length)
        if self.last:
            mask |= 1 << length
        for n in self.nearest:
            day = _nearest_weekday(n or length, length, first)
            if day is not None:
                mask |= 1 << day
        return mask

    def dow_mask(self, length: int, first: int) -> int:
        """Like dom_mask, for a day-of-week field (Sunday 0; ``first`` is the 1st's weekday)."""
        mask = 0
        for weekday in self.values:
            for day in range((weekday - first) % 7 + 1, length + 1, 7):
                mask |= 1 << day
        for weekday, week in self.nth:
            day = (weekday - first) % 7 + 1 + 7 * (week - 1)
            if day <= length:
                mask |= 1 << day
        for weekday in self.last_weekday:
            day = (weekday - first) % 7 + 1
            mask |= 1 << (day + 7 * ((length - day) // 7))
        return mask


def _nearest_weekday(n: int, length: int, first: int) -> int | None:
    """Day ``nW`` of a month: the weekday nearest to day n, never in another month."""
    if n > length:
        return None
    weekday = (first + n - 1) % 7
    if weekday == 6:                        # Saturday: Friday, or Monday if n is the 1st
        return n - 1 if n > 1 else n + 2
    if weekday == 0:                        # Sunday: Monday, or Friday if n is the last day
        return n + 1 if n < length else n - 2
    return n


class _Plan:
    """An expression compiled to sets: what the searches below read."""

    __slots__ = ("hours", "masks", "minutes", "month_bits", "months", "seconds")

    def __init__(self, fields: tuple[str, ...], day_rule: str = "classic") -> None:
        self.seconds = tuple(sorted(_parse_values(_SEC, fields[_SEC])))
        self.minutes = tuple(sorted(_parse_values(_MIN, fields[_MIN])))
        self.hours = tuple(sorted(_parse_values(_HOUR, fields[_HOUR])))
        self.months = tuple(sorted(_parse_values(_MON, fields[_MON])))
        self.month_bits = sum(1 << m for m in self.months)
        dom, dow = _parse_days(_DOM, fields[_DOM]), _parse_days(_DOW, fields[_DOW])
        # Vixie: a day field starting with "*" means AND, else OR. ``day_rule`` forces
        # one of them, to compare with what an older engine did (legacy_difference).
        both = (dom.star or dow.star) if day_rule == "classic" else day_rule == "and"
        masks = []
        for length in (28, 29, 30, 31):
            for first in range(7):          # weekday of the 1st, Sunday 0
                in_dom, in_dow = dom.dom_mask(length, first), dow.dow_mask(length, first)
                masks.append(in_dom & in_dow if both else in_dom | in_dow)
        self.masks = tuple(masks)

    def month_masks(self) -> list[int]:
        """The masks of every kind of month in the month set (the days that can fire)."""
        return [self.masks[(length - 28) * 7 + first] for month in self.months
                for length in ((28, 29) if month == 2 else (_MONTH_LENGTHS[month],))
                for first in range(7)]

    def can_match_in(self, month: int) -> bool:
        lengths = (28, 29) if month == 2 else (_MONTH_LENGTHS[month],)
        return any(self.masks[(length - 28) * 7 + first] for length in lengths for first in range(7))


def _number(index: int, token: str) -> int:
    names = _NAMES.get(index, {})
    if token in names:
        return names[token]
    if not token.isdigit():
        raise _FieldError(index, f"{token!r} is not a number" + (
            f" or a name ({', '.join(sorted(names, key=names.__getitem__))})" if names else ""))
    value = int(token)
    low, high = _BOUNDS[index]
    if not low <= value <= high:
        raise _FieldError(index, f"{value} is not in {low}-{high}")
    return value


def _parse_values(index: int, text: str) -> set[int]:
    """Expand a list of ``*``, ``a``, ``a-b``, with an optional ``/step``, to its values."""
    low, high = _BOUNDS[index]
    out: set[int] = set()
    for item in text.lower().split(","):
        match = _ITEM.fullmatch(item)
        if match is None:
            raise _FieldError(index, f"{item!r} is not a value, range or step" if item
                              else "empty list item")
        start, end, step_text = match["start"], match["end"], match["step"]
        step = 1
        if step_text is not None:
            if not step_text.isdigit() or int(step_text) == 0:
                raise _FieldError(index, f"step {step_text!r} is not a whole number >= 1")
            step = int(step_text)
        if start == "*":
            if end is not None:
                raise _FieldError(index, f"{item!r}: '*' cannot start a range")
            first, last = low, high
        else:
            first = _number(index, start)
            if end is not None:
                last = _number(index, end)
            elif step_text is not None:     # "a/n": from a to the end of the field
                if index == _DOW:
                    first, high = first % 7, 6
                last = high
            else:
                last = first
        values: Iterable[int]
        if first <= last:
            values = range(first, last + 1, step)
        elif step_text is not None:
            raise _FieldError(index, f"{item!r}: a range that wraps around cannot have a step")
        else:                               # "22-2": wraps around the end of the field
            values = [*range(first, high + 1), *range(low, last + 1)]
        out.update(v % 7 if index == _DOW else v for v in values)
    return out


_NTH = re.compile(r"(?P<day>[0-9]+|[a-z]+)#(?P<week>[0-9]+)")
_LAST_WEEKDAY = re.compile(r"(?P<day>[0-9]+|[a-z]+)l|l(?P<alias>[0-9]+|[a-z]+)")


def _parse_days(index: int, text: str) -> _DayField:
    """A day field: ``L``, ``LW``, ``nW`` (day-of-month), ``d#k``, ``dL`` (day-of-week) + values."""
    lowered = text.lower()
    if "?" in lowered and lowered != "?":
        raise _FieldError(index, "'?' must be the whole field")
    plain: list[str] = []
    last = False
    nearest: set[int] = set()
    nth: set[tuple[int, int]] = set()
    last_weekday: set[int] = set()
    for item in ("*" if lowered == "?" else lowered).split(","):
        if index == _DOM:
            if item in ("l", "lw"):
                last = last or item == "l"
                if item == "lw":
                    nearest.add(0)
                continue
            if item.endswith("w") and item[:-1].isdigit():
                nearest.add(_number(index, item[:-1]))
                continue
            if "l" in item or "w" in item:
                raise _FieldError(index, f"{item!r}: 'L', 'LW' and 'nW' (n = 1-31) stand alone "
                                         "between commas, without ranges or steps")
        else:
            if match := _NTH.fullmatch(item):
                week = int(match["week"])
                if not 1 <= week <= 5:
                    raise _FieldError(index, f"{item!r}: the week after '#' is 1-5")
                nth.add((_number(index, match["day"]) % 7, week))
                continue
            if match := _LAST_WEEKDAY.fullmatch(item):
                last_weekday.add(_number(index, match["day"] or match["alias"]) % 7)
                continue
            if "#" in item or "l" in item:
                raise _FieldError(index, f"{item!r}: use 'd#k' (k-th weekday d, k = 1-5) or 'dL' "
                                         "(last weekday d), alone between commas")
        plain.append(item)
    return _DayField(
        star=lowered.startswith(("*", "?")),
        values=frozenset(_parse_values(index, ",".join(plain)) if plain else ()),
        last=last, nearest=frozenset(nearest), nth=frozenset(nth),
        last_weekday=frozenset(last_weekday),
    )


@dataclass(frozen=True, slots=True)
class CronExpression:
    """A validated cron expression.

    ``fields`` is always (second, minute, hour, day-of-month, month, day-of-week).
    The compiled field sets are built once, here; equality and hashing use the text
    and fields only, so an expression can key a cache.
    """

    text: str
    fields: tuple[str, ...]
    _plan: _Plan = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        try:
            plan = _Plan(self.fields)
        except _FieldError as exc:
            raise CronError(f"invalid cron expression {self.text!r}: bad "
                            f"{_FIELD_NAMES[exc.index]} field {self.fields[exc.index]!r}: "
                            f"{exc.reason}") from None
        object.__setattr__(self, "_plan", plan)

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

    Raises CronError for malformed input (naming the field and why), H/R hash
    tokens, ``@reboot``, and expressions that can never fire (``0 0 30 2 *``).
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
    expression = CronExpression(text=text, fields=fields)
    plan = expression._plan
    if not any(plan.can_match_in(month) for month in plan.months):
        dom, month, dow = fields[_DOM], fields[_MON], fields[_DOW]
        if dow in ("*", "?"):
            why = f"day-of-month {dom!r} never occurs in month {month!r}"
        else:
            why = f"day-of-month {dom!r} and day-of-week {dow!r} never meet in month {month!r}"
        raise invalid(f"it never matches any date ({why})")
    return expression


def legacy_difference(expr: CronExpression) -> str | None:
    """Why ``expr`` fires at other times than under awa_django's earlier croniter-based matching.

    None when the fire times are the same. Found from the text: the shapes that changed
    are a day field starting with ``*`` (but not ``*`` itself) next to a restricted
    one, ``L``/``W``/``#`` next to a restricted other day field, ``nW`` past the end of
    a month of the set, and croniter's reading of a range with equal ends (``5-5``,
    ``7-7``) as "every value".
    """
    dom, dow = expr.fields[_DOM].lower(), expr.fields[_DOW].lower()
    # croniter read a day field as "every day" when it had a bare "*" (or "?") item, or
    # listed every value while the other day field had a "*" somewhere; it OR'ed the
    # fields only when neither was read so.
    dom_values = _parse_days(_DOM, dom).values
    dow_values = _parse_days(_DOW, dow).values
    dom_open = bool({"*", "?"} & set(dom.split(","))) or (len(dom_values) == 31 and "*" in dow)
    dow_open = bool({"*", "?"} & set(dow.split(","))) or (len(dow_values) == 7 and "*" in dom)
    legacy_rule = "and" if dom_open or dow_open else "or"
    special = bool(re.search(r"\d*w", dom) or re.search(r"[#l]", dow))
    if not special and _Plan(expr.fields, legacy_rule).month_masks() != expr._plan.month_masks():
        star = next((f for f in (dom, dow) if f.startswith("*")), None)
        if star is not None:
            return (f"day field {star!r} starts with '*': it now narrows the other day field "
                    "(AND), as in classic cron")
        return "both day fields are restricted: a day matching either one now fires (OR)"
    # Next to "nW", "#" or "dL" croniter did not OR the day fields; unless the days are
    # those of that special field alone, assume they changed.
    if special and legacy_rule == "or":
        sec, minute, hour, _, month, _ = expr.fields
        alone = []
        if re.search(r"\d*w", dom):
            alone.append(_Plan((sec, minute, hour, dom, month, "*")).month_masks())
        if re.search(r"[#l]", dow):
            alone.append(_Plan((sec, minute, hour, "*", month, dow)).month_masks())
        if len(alone) == 2 or expr._plan.month_masks() not in alone:
            return "'W', '#' or 'L' now adds its days to those of the other day field (OR)"
    for item in dom.split(","):
        if item.endswith("w") and item[:-1].isdigit() and int(item[:-1]) > 28:
            n = int(item[:-1])
            if any(_MONTH_LENGTHS[m] < n or m == 2 for m in expr._plan.months):
                return f"'{n}W' no longer fires in months that have no day {n}"
    # croniter read a range with equal ends ("5-5", "7-7", "jan-1/2") as every value.
    for index, text in enumerate(expr.fields):
        for item in text.lower().split(","):
            match = _ITEM.fullmatch(item)
            if match is None or match["end"] is None or match["start"] == "*":
                continue
            ends = [_number(index, match[k]) % (7 if index == _DOW else 100) for k in ("start", "end")]
            if ends[0] != ends[1]:
                continue
            low, high = _BOUNDS[index]
            full = set(range(7)) if index == _DOW else set(range(low, high + 1))
            try:
                values = _parse_values(index, text)
            except _FieldError:             # "L", "W" or "#" in the list: never every value
                values = set()
            if values != full:
                return (f"range {item!r} in the {_FIELD_NAMES[index]} field now means one value, "
                        "not every value")
    return None


def parse_timezone(name: str) -> ZoneInfo:
    """Return the ZoneInfo for an IANA zone name; CronError if it is unknown or invalid."""
    try:
        if not isinstance(name, str) or not name.strip():
            raise ValueError(name)
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, TypeError, OSError):
        raise CronError(f"unknown timezone {name!r}") from None


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
    return datetime(day.year, day.month, day.day, plan.hours[-1], plan.minutes[-1],
                    plan.seconds[-1])


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
    occurrences up to the fold's end. Then the cursor rewinds to the fold's start and
    the second pass yields the second occurrences. No sort buffer is needed, and
    each fire costs about one step.
    """
    wild = not expr.fixed_time
    local = after.astimezone(tz)
    it = _iter(expr, _naive(local))
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
        except _Exhausted:
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


def _utc(name: str, value: datetime) -> datetime:
    """``value`` as a UTC datetime; ValueError if it is naive."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{name} must be a timezone-aware datetime, got {value!r}")
    return value.astimezone(UTC)


def fires_between(expr: CronExpression, tz: ZoneInfo, after: datetime, until: datetime,
                  limit: int | None = None) -> list[datetime]:
    """All fire instants f with ``after < f <= until``, ascending, at most ``limit``."""
    after, until = _utc("after", after), _utc("until", until)
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
    return next(_forward(expr, tz, _utc("after", after)), None)


def latest_fire(expr: CronExpression, tz: ZoneInfo, after: datetime | None,
                until: datetime) -> datetime | None:
    """The latest fire f with ``after < f <= until`` (no lower bound if ``after`` is None).

    Walks back from ``until`` and stops at the first local time that maps to
    an instant <= until. The cost therefore does not depend on ``until - after``.
    """
    until = _utc("until", until)
    after = None if after is None else _utc("after", after)
    wild = not expr.fixed_time
    local = until.astimezone(tz)
    top = _naive(local)
    it = _iter(expr, top + _SECOND)
    best = None
    while best is None:
        try:
            naive = _step(it, backward=True)
        except _Exhausted:
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
        except _Exhausted:
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
    created_at, now = _utc("created_at", created_at), _utc("now", now)
    if last_enqueued_at is not None:
        last_enqueued_at = _utc("last_enqueued_at", last_enqueued_at)
    if last_enqueued_at is not None and catch_up:
        return fires_between(expr, tz, last_enqueued_at, now, limit)
    # datetime has microsecond resolution, so "f > lower - 1us" is exactly "f >= lower".
    lower = last_enqueued_at or created_at - timedelta(seconds=60, microseconds=1)
    fire = latest_fire(expr, tz, lower, now)
    return [] if fire is None else [fire]
