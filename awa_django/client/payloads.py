"""What a job may store: task arguments, results and errors as PostgreSQL jsonb takes them.

jsonb rejects NUL characters and lone surrogates that ``json.dumps`` lets
through; checking here turns them into a clear error in the caller (the
enqueuing code, or the task that returned the value) instead of a database
error later. An error's text cannot be refused (the failure must be
recorded): :func:`storable_text` writes those characters out instead.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from ..db import jsonb
from ..validation import depth_problem, json_problem
from .compat import InvalidTask, Task, normalize_json


def checked_payload(args: Any, kwargs: Any) -> tuple[dict[str, Any], str]:
    """The stored form of a call's arguments and its JSON text; raise if PostgreSQL
    could not store it, here in the caller rather than later in the worker (and
    not with a database error that would abort the caller's transaction)."""
    try:
        payload = {"args": normalize_json(list(args)), "kwargs": normalize_json(dict(kwargs))}
        text = json.dumps(payload, allow_nan=False)
    except RecursionError:
        raise ValueError(f"args {depth_problem(sys.maxsize, jsonb.max_depth())}") from None
    problem = payload_problem(text)
    if problem:
        raise ValueError(f"args {problem}")
    if "\\u0000" not in text and "\\ud" not in text:
        return payload, text  # json.dumps escapes NUL and every surrogate this way: none here
    if contains_nul(payload):
        raise ValueError("task arguments cannot contain NUL characters (PostgreSQL jsonb rejects them)")
    # Lone surrogates, like NUL, pass json.dumps and then fail in the
    # database. (No depth bound here: json.dumps above already had one.)
    surrogate = json_problem(payload, max_depth=sys.maxsize)
    if surrogate:
        raise ValueError(f"task arguments cannot be stored: {surrogate} (PostgreSQL jsonb rejects it)")
    return payload, text


def payload_problem(text: str) -> str | None:
    """Why JSON ``text`` (from ``json.dumps``) is over ``AWA_MAX_ARGS_BYTES`` or
    ``AWA_MAX_JSON_DEPTH``, or None: the limits of declarations and stored rows,
    held to at ``enqueue()`` and for results too."""
    limit = jsonb.max_bytes()
    if len(text) > limit:
        # json.dumps writes non-ASCII as \\uXXXX; PostgreSQL stores UTF-8.
        text = json.dumps(json.loads(text), ensure_ascii=False)
    return jsonb.nesting_problem(text, limit)


def contains_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(contains_nul(k) or contains_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(contains_nul(v) for v in value)
    return False


def unstorable_reason(value: Any) -> str | None:
    """Why PostgreSQL jsonb cannot store ``value`` (NUL, lone surrogate), or None."""
    if isinstance(value, str):
        if "\x00" in value:
            return "contains a NUL character (PostgreSQL jsonb rejects them)"
        if any("\ud800" <= ch <= "\udfff" for ch in value):
            return "contains a lone surrogate (not valid Unicode; PostgreSQL jsonb rejects it)"
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            reason = unstorable_reason(key) or unstorable_reason(item)
            if reason:
                return reason
    elif isinstance(value, list):
        for item in value:
            reason = unstorable_reason(item)
            if reason:
                return reason
    return None


def storable_text(text: str) -> str:
    """``text`` as PostgreSQL text and jsonb can store it: each NUL written ``\\x00``
    and each lone surrogate ``\\udXXX``, visibly, instead of a database error."""
    if "\x00" in text:
        text = text.replace("\x00", "\\x00")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def exception_text(exc: BaseException) -> str:
    """``str(exc)``, or ``<unprintable ClassName>`` when the exception's own ``__str__`` raises."""
    try:
        return str(exc)
    except BaseException:  # its __str__ is arbitrary code: it may raise anything, even SystemExit
        return f"<unprintable {type(exc).__qualname__}>"


def enqueue_calls(calls: Any) -> list[Any]:
    """``AwaBackend.enqueue_many``'s calls as a list (each checked by :func:`call_parts`)."""
    if isinstance(calls, (str, bytes, Mapping)) or not isinstance(calls, Iterable):
        raise TypeError(f"enqueue_many takes a list of (task, args, kwargs) calls, got {calls!r:.80}")
    return list(calls)


def call_parts(call: Any, alias: str) -> tuple[Task[Any, Any], Any, Mapping[str, Any]]:
    """One enqueue call as ``(task, args, kwargs)``, or the reason it is not one.

    Refused rather than converted: text as ``args`` (one argument per
    character), keyword names that are not strings, and a task bound to
    another backend (its job would land in this backend's database).
    """
    if not isinstance(call, (tuple, list)) or len(call) != 3:
        raise TypeError(f"a call is a (task, args, kwargs) tuple, got {call!r:.80}")
    task, args, kwargs = call
    if not isinstance(task, Task):
        raise TypeError(f"{task!r:.80} is not a django.tasks Task")
    if not isinstance(args, (tuple, list)):
        raise TypeError(f"args must be a list or tuple, got {type(args).__name__}")
    if not isinstance(kwargs, Mapping) or not all(isinstance(k, str) for k in kwargs):
        raise TypeError("kwargs must be a dict with string keys")
    if task.backend != alias:
        raise InvalidTask(f"task {task.module_path!r} uses task backend {task.backend!r}, not {alias!r}")
    return task, args, kwargs


@contextmanager
def naming_call(index: int, total: int, call: Any) -> Iterator[None]:
    """Re-raise a bad call's error naming it (position and task) when there are several."""
    try:
        yield
    except (InvalidTask, TypeError, ValueError) as exc:
        if total == 1:
            raise
        task = call[0] if isinstance(call, (tuple, list)) and call else None
        what = task.module_path if isinstance(task, Task) else type(call).__name__
        cls = next(c for c in (InvalidTask, TypeError, ValueError) if isinstance(exc, c))
        raise cls(f"call {index} of {total} ({what}): {exception_text(exc)}") from exc
