"""JSON-lines logging: one object per record, ready for a log pipeline.

Every record carries ``ts``, ``level``, ``logger``, ``message``, the process
id, and every ``extra=`` attribute awa_django passes (``event``,
``schedule``, ``fire_at``, ``job_id``, ``owner``, ...). Records logged by a
``runcron``/``runtasks`` process also carry that process's ``instance_id``
(its row in ``awa_runtime_instances``) and ``role``; records logged while a
task runs carry the job (``job_id``, ``attempt``, ``queue``) and, for a cron
fire, ``schedule`` and ``fire_at``. So one fire can be followed from its slot
(``cron.fired``: schedule, fire_at, job_id) to its outcome (``job.*``:
job_id), including whatever the task itself logged.

A line is bounded: ``message``, ``exception``, ``stack`` and every string
``extra=`` field are each cut to ``AWA_ERROR_MAX_CHARS`` characters
(:mod:`awa_django.bounded_text`), whichever logger the record comes from.

Use :func:`json_logging` as ``LOGGING`` (or merge its parts into yours)::

    from awa_django.jsonlog import json_logging
    LOGGING = json_logging(level="INFO")
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from . import bounded_text
from . import jobcontext as context
from .logs import bounded_traceback

# Attributes every LogRecord has; anything else came from ``extra=``.
_STANDARD = frozenset(vars(logging.LogRecord("x", logging.INFO, "x", 0, "", None, None))) | {
    "message",
    "asctime",
    "taskName",
}

_process_fields: dict[str, Any] = {}
_process_lock = threading.Lock()


def bind_process(**fields: Any) -> None:
    """Fields added to every record of this process (runtime ``instance_id``, ``role``)."""
    with _process_lock:
        _process_fields.update(fields)


def _plain(value: Any, limit: int) -> Any:
    if isinstance(value, str):
        return bounded_text.cut(value, limit)
    if isinstance(value, (int, float, bool)) or value is None:
        return value
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_plain(v, limit) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v, limit) for k, v in value.items()}
    return bounded_text.cut(str(value), limit)


# Characters JSON allows raw inside strings but line splitters (Python's
# str.splitlines, some log shippers) take for a line break: one record would
# become two. They occur only inside strings of the output, where the \uXXXX
# escape means the same character.
_LINE_BREAKS = {"\u2028": "\\u2028", "\u2029": "\\u2029", "\u0085": "\\u0085"}


def _escape_line_breaks(text: str) -> str:
    if text.isascii():
        return text
    for char, escape in _LINE_BREAKS.items():
        text = text.replace(char, escape)
    return text


class JsonFormatter(logging.Formatter):
    """Format each record as one JSON object on one line."""

    def format(self, record: logging.LogRecord) -> str:
        limit = bounded_text.max_chars()
        data: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": bounded_text.cut(record.getMessage(), limit),
            "pid": record.process,
        }
        with _process_lock:
            data.update(_process_fields)
        job = context.current_job()
        if job is not None:
            data.update({"job_id": job.id, "attempt": job.attempt, "queue": job.queue})
            fire = context.current_fire()
            if fire is not None:
                data["schedule"] = fire.schedule
                if fire.fire_at is not None:
                    data["fire_at"] = fire.fire_at.isoformat()
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                data[key] = _plain(value, limit)
        if record.exc_info:
            data["exception"] = bounded_traceback(record.exc_info, limit)
        if record.stack_info:
            data["stack"] = bounded_text.cut(self.formatStack(record.stack_info), limit)
        return _escape_line_breaks(json.dumps(data, ensure_ascii=False, default=str))


def json_logging(level: str = "INFO", *, root: bool = False) -> dict[str, Any]:
    """A ``LOGGING`` dict: awa_django's records (and the root's, if ``root``) as JSON lines on stderr.

    Django's own loggers (``django``, which includes ``django.tasks`` and
    ``django.request``, and ``django.server``) get the same JSON handler in
    place of Django's default plain console handler, and stop propagating: with
    ``DEBUG = True`` their records would otherwise be printed twice, once as
    plain text. Errors are still mailed to ``ADMINS`` when ``DEBUG = False``,
    as Django's default configuration does. On Django 5.2 the django-tasks
    backport logs as ``django_tasks`` (outside ``django``): it is treated the same.
    """
    config: dict[str, Any] = {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"require_debug_false": {"()": "django.utils.log.RequireDebugFalse"}},
        "formatters": {"json": {"()": "awa_django.jsonlog.JsonFormatter"}},
        "handlers": {
            "json": {"class": "logging.StreamHandler", "formatter": "json"},
            "mail_admins": {
                "level": "ERROR",
                "filters": ["require_debug_false"],
                "class": "django.utils.log.AdminEmailHandler",
            },
        },
        "loggers": {
            "awa_django": {"handlers": ["json"], "level": level, "propagate": False},
            "django": {"handlers": ["json", "mail_admins"], "level": "INFO", "propagate": False},
            "django.server": {"handlers": ["json"], "level": "INFO", "propagate": False},
            "django_tasks": {"handlers": ["json", "mail_admins"], "level": "INFO", "propagate": False},
        },
    }
    if root:
        config["root"] = {"handlers": ["json"], "level": level}
    return config


def logs_json(logger: logging.Logger) -> bool:
    """True when a record of ``logger`` reaches a handler that formats it as JSON."""
    current: logging.Logger | None = logger
    while current is not None:
        if any(isinstance(handler.formatter, JsonFormatter) for handler in current.handlers):
            return True
        if not current.propagate:
            return False
        current = current.parent
    return False


def announce(write: Callable[[str], Any], logger: logging.Logger, text: str, event: str) -> None:
    """A command's start/stop line: a log record when logs are JSON, else a line on stdout.

    With JSON logging every line a process writes must be one JSON object, so
    the line becomes an INFO record of ``logger`` (with ``event``); otherwise it
    stays a plain line of the command's output, shown whatever the log level.
    """
    if logs_json(logger):
        logger.info("%s", text, extra={"event": event})
    else:
        write(text)
