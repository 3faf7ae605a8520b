"""Hostile-input checks shared by declarations and the evaluator.

Everything here answers one question, "can every process handle this value the
same way?", and returns a reason (``str``) or ``None``; callers turn a reason
into an :class:`~awa_django.exceptions.InvalidSchedule` (declarations) or a
parked row (the evaluator). The limits are documented in
docs/reference/settings.md and docs/howto/declaring-schedules.md.

Pure: no database, no Django settings (the args limit is passed in).
"""

from __future__ import annotations

import math
import re
import unicodedata
from datetime import UTC, datetime
from typing import Any

from . import contract
from .cron.parse import non_ascii_reason

# The payload limits' wording lives below db/ (its JSON decoder words them too);
# re-exported for the validators that name it here.
from .db.json_limits import depth_problem as depth_problem
from .db.json_limits import size_problem as size_problem

# A cron expression longer than this is refused before it is parsed: parsing
# cost grows with the text, and every evaluation pass parses due rows again.
MAX_EXPRESSION_LENGTH = contract.CRON_EXPRESSION_MAX_LENGTH
# JSON nesting deeper than this (args, kwargs, metadata) is refused: deep
# nesting overflows the recursion of json, psycopg and the worker. The
# default of AWA_MAX_JSON_DEPTH, which callers with settings pass instead.
MAX_JSON_DEPTH = contract.JSON_DEPTH_DEFAULT
# Zone names whose meaning depends on the host rather than on the name.
HOST_DEPENDENT_ZONES = frozenset({"localtime", "posixrules", "factory"})

# Unicode categories never allowed in a schedule name or tag: control
# characters (ESC, newline, ...), format characters (RTL overrides, zero-width
# joiners), surrogates and line/paragraph separators. Any of them lets a name
# forge rows in a terminal listing.
_FORBIDDEN_NAME_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
# (min, max) of each field, seconds first (the order of CronExpression.fields).
_FIELD_RANGES = ((0, 59), (0, 59), (0, 23), (1, 31), (1, 12), (0, 7))
_FIELD_NAMES = ("second", "minute", "hour", "day-of-month", "month", "day-of-week")
_MONTHS = {
    m: i
    for i, m in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), start=1
    )
}
_DAYS = {d: i for i, d in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
# A queue name, as for schedules: 1 to 200 characters (see name_problem).
MAX_QUEUE_LENGTH = contract.QUEUE_MAX_LENGTH
# run_after is stored as timestamptz, read back in UTC and shown in local time
# zones (offsets under a day): a day inside Python's years 1-9999 keeps every
# one of those conversions in range.
RUN_AFTER_MIN = contract.TIMESTAMP_MIN
RUN_AFTER_MAX = contract.TIMESTAMP_MAX
_RANGE = re.compile(r"([0-9a-zA-Z]+)-([0-9a-zA-Z]+)")
_DOTTED_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+")


def text_problem(value: str) -> str | None:
    """NUL or a lone surrogate: PostgreSQL text and jsonb cannot store either."""
    if "\x00" in value:
        return "contains a NUL character"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "contains a lone surrogate (not valid Unicode text)"
    return None


def name_problem(value: str) -> str | None:
    """A name or tag that cannot be stored or would not print as itself."""
    problem = text_problem(value)
    if problem:
        return problem
    for char in value:
        if unicodedata.category(char) in _FORBIDDEN_NAME_CATEGORIES:
            return f"contains the control or format character U+{ord(char):04X}"
    return None


def queue_problem(value: Any) -> str | None:
    """A queue name ``awa_jobs`` cannot store, or that would not print as itself."""
    if not isinstance(value, str):
        return f"must be a string, not {type(value).__name__}"
    if not 1 <= len(value) <= MAX_QUEUE_LENGTH:
        return f"must be 1 to {MAX_QUEUE_LENGTH} characters long"
    return name_problem(value)


def run_after_problem(value: datetime) -> str | None:
    """A ``run_after`` outside :data:`RUN_AFTER_MIN` - :data:`RUN_AFTER_MAX` (UTC).

    A naive value is compared as if it were UTC: the day of margin covers its zone.
    """
    try:
        offset = value.utcoffset()
        instant = value.replace(tzinfo=UTC) if offset is None else value.astimezone(UTC)
    except (OverflowError, ValueError):  # before year 1 or after year 9999 in UTC
        instant = None
    if instant is None or not RUN_AFTER_MIN <= instant <= RUN_AFTER_MAX:
        return (
            f"must be between {RUN_AFTER_MIN.isoformat()} and {RUN_AFTER_MAX.isoformat()}, so that "
            "it can be read back and shown in any time zone"
        )
    return None


def json_problem(
    value: Any, max_depth: int = MAX_JSON_DEPTH, *, string_keys: bool = False, within: int = 0
) -> str | None:
    """The first string (key or value) that cannot be stored, or too deep nesting.

    With ``string_keys``, also a dict key that is not a string: JSON would
    turn ``1`` into ``"1"`` (and ``{1: a, "1": b}`` into one key), so the task
    would not get what was declared. ``within``: how many levels the stored
    value wraps ``value`` in (1 for a call's args, stored in ``{"args": ...}``).
    Iterative, so a hostile depth cannot overflow the interpreter's stack.
    """
    stack: list[tuple[Any, int, str]] = [(value, within, "")]
    while stack:
        item, depth, where = stack.pop()
        # Depth counts the arrays and objects within one another ([] is 1,
        # [[1]] is 2), as the database's awa_json_depth_v1 and db.jsonb do.
        if isinstance(item, (dict, list, tuple)) and depth_problem(depth + 1, max_depth):
            return depth_problem(depth + 1, max_depth)
        if isinstance(item, str):
            problem = text_problem(item)
            if problem:
                return f"{where or 'a value'} {problem}"
        elif isinstance(item, float) and not math.isfinite(item):
            return f"{where or 'a value'} is {item!r} (not JSON)"
        elif isinstance(item, dict):
            for key, child in item.items():
                if string_keys and not isinstance(key, str):
                    return f"{where + ': ' if where else ''}key {key!r:.40} is not a string (JSON keys are strings)"
                if isinstance(key, str):
                    problem = text_problem(key)
                    if problem:
                        return f"key {key!r} {problem}"
                stack.append((child, depth + 1, f"value of {key!r}"))
        elif isinstance(item, (list, tuple)):
            stack.extend((child, depth + 1, where) for child in item)
    return None


def expression_problem(text: str) -> str | None:
    """Cron text that parses but would not mean what it says (see the docs).

    Checked before parsing: length, characters (ASCII only, so non-ASCII
    whitespace is never taken for a separator), steps within the field's span,
    ranges that are not reversed.
    """
    if len(text) > MAX_EXPRESSION_LENGTH:
        return f"is {len(text)} characters long; the limit is {MAX_EXPRESSION_LENGTH}"
    stripped = text.strip(" \t")
    parts = re.split(r"[ \t]+", stripped)
    fields = ["0", *parts] if len(parts) == 5 else parts
    for char in text:
        if not (" " <= char <= "~" or char == "\t"):
            # Name the field when the text has one there (a '\u0665' digit, not a no-break space).
            index = next((i for i, f in enumerate(fields) if char in f), None)
            if len(fields) == 6 and index is not None and not char.isspace() and char >= "\x80":
                return f"bad {_FIELD_NAMES[index]} field {fields[index]!r}: {non_ascii_reason(char)}"
            return f"contains the character U+{ord(char):04X}; use ASCII only, fields separated by spaces"
    if stripped.startswith("@") or len(parts) not in (5, 6):
        return None  # the parser names the field-count error
    for index, field in enumerate(fields):
        low, high = _FIELD_RANGES[index]
        name = _FIELD_NAMES[index]
        for token in field.split(","):
            base, _, step = token.partition("/")
            if step and (not step.isdigit() or not 1 <= int(step) <= high - low):
                return f"step {step!r} in the {name} field must be a whole number from 1 to {high - low}"
            match = _RANGE.fullmatch(base)
            if match:
                start, end = (_field_value(index, part) for part in match.groups())
                if start is not None and end is not None and start > end:
                    return f"range {base!r} in the {name} field is reversed; write it low-high or as a list"
    return None


def _field_value(index: int, token: str) -> int | None:
    if token.isdigit():
        return int(token)
    names = _MONTHS if index == 4 else _DAYS if index == 5 else {}
    return names.get(token.lower())


def timezone_problem(name: str) -> str | None:
    """Zone names whose meaning depends on the host (``localtime``, ``posixrules``)."""
    if name.strip().lower() in HOST_DEPENDENT_ZONES:
        return f"{name!r} depends on the host's configuration; use an IANA name such as 'Europe/Berlin'"
    problem = text_problem(name)
    if problem:
        return problem
    return None


def kind_problem(kind: str) -> str | None:
    """A task path that is not an absolute dotted path (``.x``, ``..``, ``x``)."""
    problem = text_problem(kind)
    if problem:
        return problem
    if not _DOTTED_PATH.fullmatch(kind):
        return f"{kind!r} is not an absolute dotted path such as 'myapp.tasks.send_digest'"
    return None


def validate_label(value: Any, what: str) -> str:
    """Owner ids and revisions: non-blank, at most 200 bytes, no NUL or lone surrogate."""
    limit = contract.LABEL_MAX_BYTES
    if not isinstance(value, str) or not value.strip() or text_problem(value) or len(value.encode()) > limit:
        raise ValueError(
            f"{what} must be a non-blank string of at most {limit} bytes without NUL or lone surrogates, "
            f"got {value!r:.100}"
        )
    return value
