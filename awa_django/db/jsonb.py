"""Reading the jsonb columns of every ``awa_*`` table defensively.

Raw SQL (or an older writer) can store JSON no declaration or ``enqueue()``
would accept: nested thousands of levels deep (``json.loads`` and the admin's
rendering then overflow the interpreter's stack) or many megabytes large.
Every reader (the leader's fire rows, the worker's claim and rescue,
reconciliation's manifests, the models behind the admin and the CLI: every
JSON model field is a :class:`GuardedJSONField`) decodes through
:func:`decode`, which checks size and depth on the text first, without
recursion, and hands back an :class:`Undecodable` naming the column and the
limit instead of raising: the row's owner fails or parks that row alone, every
other row is served. awa_django's own psycopg connections hand json back as
text too (:func:`awa_django.db.sessions.dedicated_connection`).

The limits are the ones declarations, ``enqueue()`` and task results are held
to (``AWA_MAX_ARGS_BYTES``, ``AWA_MAX_JSON_DEPTH``); depth counts the arrays
and objects nested within one another (``[]`` is 1, ``[[1]]`` is 2). A column
holding such values inside levels of its own (a manifest: a list of
definitions, each an object holding args) allows those ``wraps`` levels more,
and may be unbounded in size (``size_limit``): it holds many payloads.
``tests/unit/test_json_reads.py`` fails on a JSON column read any other way.
"""

from __future__ import annotations

import json
import re
from typing import Any

from django.db import models

from ..conf import DEFAULTS, Kind, conf
from .json_limits import depth_problem, size_problem

__all__ = [
    "MANIFEST_WRAPS",
    "Deferred",
    "GuardedJSONField",
    "Undecodable",
    "decode",
    "max_bytes",
    "max_depth",
    "nesting_problem",
    "text_depth",
    "type_name",
]

# The levels a manifest adds around each definition's args and metadata: the
# list of definitions, then the definition object.
MANIFEST_WRAPS = 2

# A JSON string (its escapes included): brackets inside one are text, not nesting.
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKETS = re.compile(r"[\[\]{}]")
# What JSON holds outside its strings besides brackets (whitespace, separators,
# numbers, true, false, null): deleted before the brackets are peeled.
_SCALARS = str.maketrans("", "", " \t\n\r,:0123456789+-.eEtrufalsn")


def max_bytes() -> int:
    """``AWA_MAX_ARGS_BYTES``, or its default when the setting is invalid (check E060)."""
    value = conf.MAX_ARGS_BYTES
    return int(value) if Kind.COUNT.accepts(value) else int(DEFAULTS["AWA_MAX_ARGS_BYTES"])


def max_depth() -> int:
    """``AWA_MAX_JSON_DEPTH``, or its default when the setting is invalid (check E060)."""
    value = conf.MAX_JSON_DEPTH
    return int(value) if Kind.JSON_DEPTH.accepts(value) else int(DEFAULTS["AWA_MAX_JSON_DEPTH"])


def text_depth(text: str, limit: int) -> int:
    """The nesting depth of JSON ``text``, counted up to ``limit + 1`` (then it stops).

    A scan of the brackets outside strings: no recursion, linear in the text.
    """
    opening = text.count("[") + text.count("{")
    if opening <= limit:  # no deeper than its count of opening brackets
        return _scan(text, limit) if opening else 0
    return _peel(_STRING.sub("", text).translate(_SCALARS), limit)


def _peel(brackets: str, limit: int) -> int:
    """The depth of ``brackets`` (JSON with its strings and scalars taken out),
    up to ``limit + 1``: each round removes the innermost level at once (three
    ``str.replace``, not a loop of the interpreter), so a wide value of a
    megabyte costs a few rounds. Text that is not balanced JSON goes to the
    exact scan, as does a value deeper than the limit (which stops there)."""
    head = brackets[: limit + 1]
    if "\x00" in brackets or ("]" not in head and "}" not in head):
        # NUL is the marker below (and not JSON there); a value opening more
        # levels than the limit at once is refused by the scan at its start.
        return _scan(brackets, limit)
    remaining = brackets
    for depth in range(limit + 1):
        if not remaining:
            return depth
        # Both kinds marked before either is removed: "{[]}" loses one level.
        peeled = remaining.replace("[]", "\x00").replace("{}", "\x00").replace("\x00", "")
        if len(peeled) == len(remaining):
            break  # no innermost level left: not JSON (mismatched, or other text)
        remaining = peeled
    else:
        if not remaining:
            return limit + 1
    return _scan(brackets, limit)


def _scan(text: str, limit: int) -> int:
    depth = deepest = 0
    for match in _BRACKETS.finditer(text):
        if match.group() in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    break
        else:
            depth -= 1
    return deepest


def nesting_problem(text: str, size_limit: int | None = None, depth_limit: int | None = None) -> str | None:
    """Why JSON ``text`` is refused (too large, too deep), or None; the limits are read when omitted."""
    size_limit = max_bytes() if size_limit is None else size_limit
    size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
    problem = size_problem(size, size_limit)
    if problem:
        return problem
    depth_limit = max_depth() if depth_limit is None else depth_limit
    return depth_problem(text_depth(text, depth_limit), depth_limit)


def type_name(value: Any) -> str:
    """The JSON type of a decoded value: object, array, string, number, boolean, null."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    return "null" if value is None else "a number"


class Undecodable:
    """A stored JSON value that was not decoded, and why (shown in its place)."""

    __slots__ = ("column", "reason")

    def __init__(self, column: str, reason: str) -> None:
        self.column = column
        self.reason = reason

    def __str__(self) -> str:
        return f"<not shown: {self.column} {self.reason}>"

    __repr__ = __str__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Undecodable) and (other.column, other.reason) == (self.column, self.reason)

    def __hash__(self) -> int:
        return hash((self.column, self.reason))


class Deferred:
    """A stored JSON value read as text and decoded only when asked (:meth:`value`).

    The leader's fire statement returns each fired job, args included, but
    only announcing a job (``task_enqueued``, on the announcer's thread) reads
    its args: a megabyte of args decoded on the firing thread would delay the
    next batch of every schedule by the time it takes."""

    __slots__ = ("column", "text")

    def __init__(self, text: str, column: str) -> None:
        self.text = text
        self.column = column

    def value(self) -> Any:
        """The value, decoded through :func:`decode` (an :class:`Undecodable` when it cannot be)."""
        return decode(self.text, self.column)

    def __repr__(self) -> str:
        return f"<{self.column}: {len(self.text)} characters of JSON, not decoded yet>"


def decode(text: str, column: str, *, wraps: int = 0, size_limit: int | None = None) -> Any:
    """JSON ``text`` of ``column`` decoded, or an :class:`Undecodable` saying why not.

    ``wraps``: levels the column adds around values held to ``AWA_MAX_JSON_DEPTH``;
    ``size_limit``: bytes allowed (``AWA_MAX_ARGS_BYTES`` when None).
    """
    if text in ("{}", "[]"):  # jsonb prints an empty object or array exactly so
        return {} if text == "{}" else []
    if wraps:
        depth_limit = max_depth() + wraps
        problem = size_problem(len(text.encode("utf-8", "surrogatepass")), size_limit or max_bytes())
        if not problem and text_depth(text, depth_limit) > depth_limit:
            problem = (
                f"is nested deeper than {depth_limit} levels "
                f"(AWA_MAX_JSON_DEPTH={max_depth()} within {wraps} levels of its own)"
            )
    else:
        problem = nesting_problem(text, size_limit)
    if problem:
        return Undecodable(column, problem)
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        return Undecodable(column, f"is not valid JSON: {exc}")


class GuardedJSONField(models.JSONField):
    """A ``JSONField`` whose stored values are read through :func:`decode`.

    An undecodable value loads as an :class:`Undecodable` (the admin and the
    CLI show its reason), never as an exception failing the whole page or
    listing; writing one back is refused, so it can never replace the stored
    value. Migrations see a plain ``JSONField`` (same column, same behaviour).
    ``wraps`` and ``size_limit`` are :func:`decode`'s.
    """

    def __init__(self, *args: Any, wraps: int = 0, size_limit: int | None = None, **kwargs: Any) -> None:
        self.wraps = wraps
        self.size_limit = size_limit
        super().__init__(*args, **kwargs)

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        if isinstance(value, str):
            return decode(value, self.name, wraps=self.wraps, size_limit=self.size_limit)
        return super().from_db_value(value, expression, connection)

    def get_prep_value(self, value: Any) -> Any:
        if isinstance(value, Undecodable):
            raise ValueError(f"{self.name} was not decoded ({value.reason}); it cannot be written back")
        return super().get_prep_value(value)

    def deconstruct(self) -> Any:
        name, _path, args, kwargs = super().deconstruct()
        return name, "django.db.models.JSONField", args, kwargs
