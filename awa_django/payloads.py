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
from typing import Any

from django.utils.json import normalize_json

from .validation import json_problem


def checked_payload(args: Any, kwargs: Any) -> tuple[dict[str, Any], str]:
    """The stored form of a call's arguments and its JSON text; raise if PostgreSQL
    could not store it, here in the caller rather than later in the worker (and
    not with a database error that would abort the caller's transaction)."""
    payload = {"args": normalize_json(list(args)), "kwargs": normalize_json(dict(kwargs))}
    text = json.dumps(payload, allow_nan=False)
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
