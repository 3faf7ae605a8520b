"""Parsing cron expressions (pure: stdlib only, no Django).

Expressions have 5 fields (minute hour dom month dow), 6 fields with the SECONDS
FIRST (``"30 0 9 * * *"`` is 09:00:30 daily) or a macro
(``@daily`` ...). Matching follows classic (Vixie/cronie) cron. ``parse_cron`` turns
every field into a set once: seconds, minutes, hours and months as sorted tuples, and
the two day fields into one bit mask of matching days per kind of month (its length,
28-31, and the weekday of its 1st), 28 masks in all. A day matches when its bit is
set, so the AND/OR rule of the day fields, ``L``, ``W`` and ``#`` are all decided at
parse time (see docs/explanation/semantics.md, "Cron expressions"); the masks of one
day field and the AND/OR rule are in ``days``. The searches over these sets are in
``search``, the time zones in ``zones``. Expressions are ASCII only: a digit of another
script is refused, naming its field, before any field is read.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .days import _DayField, days_anded

__all__ = ["CronError", "CronExpression", "parse_cron", "parse_timezone"]

_SECOND = timedelta(seconds=1)
# With no year field the calendar repeats every 400 years (146097 days, a whole number
# of weeks), so a day that can match at all matches within 400 years of any date.
_SEARCH_MONTHS = 400 * 12 + 1
_MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
# Hash ("H", "H/15", "H(0-29)") and random ("R") tokens (croniter, Jenkins). They depend on a
# hash id or on chance, so a schedule using them would not be reproducible.
_HASH_TOKEN = re.compile(r"[hr](\(.*\))?(/.*)?", re.IGNORECASE)
_STEP = re.compile(r"\*/(\d+)")
# Fields are separated by ASCII whitespace only: str.split() would also split at a
# no-break or an em space, which other cron tools read as part of a field.
_ASCII_SPACE = " \t\n\r\f\v"
_SEPARATOR = re.compile(f"[{_ASCII_SPACE}]+")
_FIELD_NAMES = ("second", "minute", "hour", "day-of-month", "month", "day-of-week")
_SEC, _MIN, _HOUR, _DOM, _MON, _DOW = range(6)
# Inclusive bounds as written; 7 is Sunday too in day-of-week.
_BOUNDS = ((0, 59), (0, 59), (0, 23), (1, 31), (1, 12), (0, 7))
_DAY_NAMES = ("Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTH_NAMES = ("", "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
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


class _Plan:
    """An expression compiled to sets: what the searches below read."""

    __slots__ = ("hours", "masks", "minutes", "month_bits", "months", "seconds")

    def __init__(self, fields: tuple[str, ...], day_rule: str = "classic") -> None:
        self.seconds = _sorted_values(_SEC, fields[_SEC])
        self.minutes = _sorted_values(_MIN, fields[_MIN])
        self.hours = _sorted_values(_HOUR, fields[_HOUR])
        self.months = _sorted_values(_MON, fields[_MON])
        self.month_bits = sum(1 << m for m in self.months)
        self.masks = _day_masks(fields[_DOM], fields[_DOW], day_rule)

    def month_masks(self) -> list[int]:
        """The masks of every kind of month in the month set (the days that can fire)."""
        return [
            self.masks[(length - 28) * 7 + first]
            for month in self.months
            for length in ((28, 29) if month == 2 else (_MONTH_LENGTHS[month],))
            for first in range(7)
        ]

    def can_match_in(self, month: int) -> bool:
        lengths = (28, 29) if month == 2 else (_MONTH_LENGTHS[month],)
        return any(self.masks[(length - 28) * 7 + first] for length in lengths for first in range(7))


# Declared schedules share fields (most say "* *" for the days): each field is
# compiled once per process (start-up stays within 3 s at 10,000 declared).
@functools.lru_cache(maxsize=4096)
def _sorted_values(index: int, text: str) -> tuple[int, ...]:
    return tuple(sorted(_parse_values(index, text)))


@functools.lru_cache(maxsize=4096)
def _day_masks(dom_text: str, dow_text: str, day_rule: str) -> tuple[int, ...]:
    """The fireable days of each kind of month: index (length - 28) * 7 + weekday of the 1st."""
    dom, dow = _parse_days(_DOM, dom_text), _parse_days(_DOW, dow_text)
    # ``day_rule`` forces AND or OR, to compare with an older engine (legacy_difference).
    both = days_anded(dom_text, dow_text) if day_rule == "classic" else day_rule == "and"
    masks = []
    for length in (28, 29, 30, 31):
        for first in range(7):  # weekday of the 1st, Sunday 0
            in_dom, in_dow = dom.dom_mask(length, first), dow.dow_mask(length, first)
            masks.append(in_dom & in_dow if both else in_dom | in_dow)
    return tuple(masks)


def non_ascii_reason(text: str) -> str | None:
    """Why ``text`` is refused for a non-ASCII character, or None. The field parsers rely
    on it: ``str.isdigit()`` and ``int()`` accept the digits of every script (Arabic-Indic,
    fullwidth; ``isdigit()`` even superscripts, which ``int()`` then rejects)."""
    char = next((c for c in text if not c.isascii()), None)
    if char is None:
        return None
    if char.isdigit() or char.isnumeric():
        return f"{char!r} (U+{ord(char):04X}) is not an ASCII digit; write digits as 0-9"
    return f"contains the character U+{ord(char):04X}; use ASCII only, fields separated by spaces"


def _number(index: int, token: str) -> int:
    names = _NAMES.get(index, {})
    if token in names:
        return names[token]
    if not token.isdigit():
        raise _FieldError(
            index,
            f"{token!r} is not a number"
            + (f" or a name ({', '.join(sorted(names, key=names.__getitem__))})" if names else ""),
        )
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
            raise _FieldError(index, f"{item!r} is not a value, range or step" if item else "empty list item")
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
            elif step_text is not None:  # "a/n": from a to the end of the field
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
        else:  # "22-2": wraps around the end of the field
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
                raise _FieldError(
                    index,
                    f"{item!r}: 'L', 'LW' and 'nW' (n = 1-31) stand alone "
                    "between commas, without ranges or steps",
                )
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
                raise _FieldError(
                    index,
                    f"{item!r}: use 'd#k' (k-th weekday d, k = 1-5) or 'dL' "
                    "(last weekday d), alone between commas",
                )
        plain.append(item)
    return _DayField(
        star=lowered.startswith(("*", "?")),
        values=frozenset(_parse_values(index, ",".join(plain)) if plain else ()),
        last=last,
        nearest=frozenset(nearest),
        nth=frozenset(nth),
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
            for index, text in enumerate(self.fields):
                if reason := non_ascii_reason(text):
                    raise _FieldError(index, reason)
            plan = _Plan(self.fields)
        except _FieldError as exc:
            raise CronError(
                f"invalid cron expression {self.text!r}: bad "
                f"{_FIELD_NAMES[exc.index]} field {self.fields[exc.index]!r}: "
                f"{exc.reason}"
            ) from None
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
    out = re.sub(
        r"[0-7]|[a-zA-Z]{3}", lambda m: _DAY_NAMES[int(m[0])] if m[0].isdigit() else m[0].title(), dow
    )
    return out if re.fullmatch(r"[A-Z][a-z]{2}([-,][A-Z][a-z]{2})*", out) else None


def parse_cron(expr: str) -> CronExpression:
    """Parse and validate a 5-field, 6-field (seconds first) or macro expression.

    Raises CronError for malformed input (naming the field and why), H/R hash
    tokens, ``@reboot``, and expressions that can never fire (``0 0 30 2 *``).
    """
    if not isinstance(expr, str):
        raise CronError(f"cron expression must be a string, not {type(expr).__name__}")
    text = expr.strip(_ASCII_SPACE)
    if not text:
        raise CronError("cron expression is empty")

    def invalid(reason: str) -> CronError:
        return CronError(f"invalid cron expression {text!r}: {reason}")

    if text.startswith("@"):
        if text.lower() not in _MACROS:
            raise invalid(f"unsupported macro; use one of {', '.join(_MACROS)}")
        parts = _MACROS[text.lower()].split()
    else:
        parts = _SEPARATOR.split(text)
    if len(parts) not in (5, 6):
        raise invalid(non_ascii_reason(text) or f"expected 5 or 6 fields, got {len(parts)}")
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


def parse_timezone(name: str) -> ZoneInfo:
    """Return the ZoneInfo for an IANA zone name; CronError if it is unknown or invalid."""
    try:
        if not isinstance(name, str) or not name.strip():
            raise ValueError(name)
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, TypeError, OSError):
        raise CronError(f"unknown timezone {name!r}") from None
