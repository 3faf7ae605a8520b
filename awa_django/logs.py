"""Log records of awa_django, escaped for plain-text handlers.

Records carry data from the database and from tasks: schedule names written
by raw SQL, a task's exception message, worker ids, queue names. Printed
as-is by a plain-text handler, ``\\x1b]52;...\\x07`` writes the clipboard of
whoever tails the log, ``\\x1b[2J`` clears their screen, and ``\\r``, ``\\n``
or U+2028 forge log lines. :class:`EscapingFilter`, installed on every
awa_django logger by :func:`install` (at app start-up), writes such
characters out visibly through :func:`awa_django.terminal.printable` in a
record's arguments, its string ``extra=`` fields and its traceback, before
any handler formats it. ``jsonlog.JsonFormatter`` gets the same record.

It also bounds them: each argument, each string extra and the traceback is
cut to ``AWA_ERROR_MAX_CHARS`` characters (:mod:`awa_django.bounded_text`),
so a task raising a 100 MB message or a 5,000-deep chain of exceptions
never makes a 100 MB log line. Django's ``django.tasks`` logger, which logs
a failed task with its exception, gets :class:`BoundingFilter`: the same
cut, without the escaping.
"""

from __future__ import annotations

import logging
import re
import traceback
from typing import Any

from . import bounded_text
from .terminal import printable

__all__ = ["LOGGER_NAMES", "BoundingFilter", "EscapingFilter", "bounded_traceback", "escape_value", "install"]

# Every logger awa_django logs through (their names are a documented
# contract); tests/unit/test_logs.py checks the list against the sources.
LOGGER_NAMES = (
    "awa_django",
    "awa_django.admin.common",
    "awa_django.announcer",
    "awa_django.connection_guards",
    "awa_django.db",
    "awa_django.evaluator",
    "awa_django.humanize",
    "awa_django.leader",
    "awa_django.metrics",
    "awa_django.operations",
    "awa_django.ownership",
    "awa_django.queues",
    "awa_django.reconciliation",
    "awa_django.runcron",
    "awa_django.runtasks",
    "awa_django.runtime",
    "awa_django.shutdown",
    "awa_django.sync",
    "awa_django.vacuum",
    "awa_django.worker",
)

# Attributes every LogRecord has; any other came from ``extra=``.
_STANDARD = frozenset(vars(logging.LogRecord("x", logging.INFO, "x", 0, "", None, None))) | {
    "message",
    "asctime",
    "taskName",
}
# A traceback line that is the traceback's own: indented (frames, code), a
# header, or an exception's "Class: message" line. Any other line comes from
# inside a message and is indented so it cannot pass for a record.
_TRACEBACK_LINE = re.compile(
    r"(\s|Traceback \(most recent call last\):|During handling of the above exception"
    r"|The above exception was the direct cause|[\w.]+(:|$))"
)


def escape_value(value: Any, limit: int | None = None) -> Any:
    """``value`` with control and format characters written out, if it has any,
    and cut to ``limit`` characters (default ``AWA_ERROR_MAX_CHARS``); numbers,
    None and short values that print cleanly are returned unchanged."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    limit = bounded_text.max_chars() if limit is None else limit
    if isinstance(value, str):
        return printable(bounded_text.cut(value, limit))
    try:
        text = str(value)
    except Exception:  # its __str__ is arbitrary code
        return f"<unprintable {type(value).__qualname__}>"
    escaped = printable(bounded_text.cut(text, limit))
    return value if escaped == text else escaped


def bounded_traceback(exc_info: Any, limit: int | None = None) -> str:
    """The traceback of ``exc_info`` as ``logging`` formats it, cut to ``limit``
    characters (default ``AWA_ERROR_MAX_CHARS``) without formatting it whole."""
    _kind, value, tb = exc_info
    if value is None:
        return "NoneType: None"
    try:
        chunks = traceback.TracebackException(type(value), value, tb, compact=True).format()
        return bounded_text.cut_chunks(chunks, limit).rstrip("\n")
    except Exception:  # e.g. a RecursionError on a pathological chain
        return f"{type(value).__qualname__} (the traceback could not be formatted)"


def _escaped_traceback(exc_info: Any) -> str:
    text = bounded_traceback(exc_info)
    lines = []
    for line in text.split("\n"):
        line = printable(line)
        lines.append(line if _TRACEBACK_LINE.match(line) else f"    {line}")
    return "\n".join(lines)


class EscapingFilter(logging.Filter):
    """Escape a record's data in place (arguments, string extras, traceback)."""

    def filter(self, record: logging.LogRecord) -> bool:
        limit = bounded_text.max_chars()
        if isinstance(record.args, dict):
            record.args = {key: escape_value(value, limit) for key, value in record.args.items()}
        elif record.args:
            record.args = tuple(escape_value(arg, limit) for arg in record.args)
        for key, value in list(vars(record).items()):
            if key not in _STANDARD and isinstance(value, str):
                setattr(record, key, printable(bounded_text.cut(value, limit)))
        if record.exc_info and not record.exc_text:
            record.exc_text = _escaped_traceback(record.exc_info)
        return True


class BoundingFilter(logging.Filter):
    """Cut a record's string arguments and its traceback to ``AWA_ERROR_MAX_CHARS``,
    changing nothing else: for Django's ``django.tasks`` logger, whose record
    of a failed task carries the exception the worker's task raised."""

    def filter(self, record: logging.LogRecord) -> bool:
        limit = bounded_text.max_chars()
        if isinstance(record.args, tuple):
            record.args = tuple(bounded_text.cut(a, limit) if isinstance(a, str) else a for a in record.args)
        if record.exc_info and not record.exc_text:
            record.exc_text = bounded_traceback(record.exc_info, limit)
        return True


# Django's loggers of task events (django_tasks: the backport on Django 5.2).
TASK_EVENT_LOGGERS = ("django.tasks", "django_tasks")

_FILTER = EscapingFilter()
_BOUNDING = BoundingFilter()


def install() -> None:
    """Add :class:`EscapingFilter` to every logger of :data:`LOGGER_NAMES`, and
    :class:`BoundingFilter` to those of :data:`TASK_EVENT_LOGGERS` (once)."""
    for name in LOGGER_NAMES:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
    for name in TASK_EVENT_LOGGERS:
        logger = logging.getLogger(name)
        if _BOUNDING not in logger.filters:
            logger.addFilter(_BOUNDING)
