"""Cutting text awa_django did not write to a bounded size: a task's error
(its message and traceback, stored in ``awa_jobs.errors`` and logged) and
the fields of a log record.

A task can raise an exception whose message is 100 MB, or chain 5,000
exceptions. Stored whole, the job's ``errors`` outgrows what every reader
decodes (``AWA_MAX_ARGS_BYTES``) and its next attempt could not run; logged
whole, one record is a 100 MB line. :func:`cut` keeps the start and, larger,
the end of such a text (where Python writes the exception's own line) around
a marker saying how many characters were cut; the bound is
``AWA_ERROR_MAX_CHARS`` (see :func:`max_chars`).
"""

from __future__ import annotations

from collections.abc import Iterable

from django.core.exceptions import ImproperlyConfigured

from . import contract
from .conf import DEFAULTS, Kind, conf

__all__ = ["cut", "cut_chunks", "max_chars"]

# The bound in effect is at most this fraction of AWA_MAX_ARGS_BYTES: a
# character is at most 6 bytes of JSON text (``\u001f``), and an entry must
# leave room in ``errors`` for the others and for the note about dropped ones.
BYTES_PER_CHAR = 8
# A bound below this would cut even the exception's own line.
MIN_CHARS = contract.ERROR_MAX_CHARS_MIN


def max_chars() -> int:
    """``AWA_ERROR_MAX_CHARS``, at most an eighth of ``AWA_MAX_ARGS_BYTES`` (check
    W112), or the default while a setting is invalid (check E074) or unreadable."""
    try:
        value, limit = conf.ERROR_MAX_CHARS, conf.MAX_ARGS_BYTES
    except ImproperlyConfigured:  # settings not configured yet (a record logged very early)
        value, limit = DEFAULTS["AWA_ERROR_MAX_CHARS"], DEFAULTS["AWA_MAX_ARGS_BYTES"]
    if not Kind.COUNT.accepts(value):
        value = DEFAULTS["AWA_ERROR_MAX_CHARS"]
    if not Kind.COUNT.accepts(limit):
        limit = DEFAULTS["AWA_MAX_ARGS_BYTES"]
    return max(MIN_CHARS, min(int(value), int(limit) // BYTES_PER_CHAR))


def marker(cut_chars: int) -> str:
    """The line standing for ``cut_chars`` characters cut out of a text."""
    return f"\n[... {cut_chars:,} characters cut (AWA_ERROR_MAX_CHARS) ...]\n"


def cut(text: str, limit: int | None = None) -> str:
    """``text`` if it has at most ``limit`` characters (default :func:`max_chars`),
    else its first quarter and last three quarters of ``limit`` around a :func:`marker`."""
    limit = max_chars() if limit is None else limit
    if len(text) <= limit:
        return text
    head = limit // 4
    tail = limit - head
    return text[:head] + marker(len(text) - head - tail) + text[len(text) - tail :]


def cut_chunks(chunks: Iterable[str], limit: int | None = None) -> str:
    """The text of ``chunks`` joined and :func:`cut`, without joining more than
    ``limit`` characters of it (a 5,000-deep exception chain, a huge message)."""
    limit = max_chars() if limit is None else limit
    head_size = limit // 4
    tail_size = limit - head_size
    head: list[str] = []
    tail: list[str] = []
    head_len = tail_len = total = 0
    for chunk in chunks:
        total += len(chunk)
        if head_len < head_size:
            taken = chunk[: head_size - head_len]
            head.append(taken)
            head_len += len(taken)
            chunk = chunk[len(taken) :]
        if chunk:
            tail.append(chunk[-tail_size:])
            tail_len += len(tail[-1])
            while tail_len - len(tail[0]) >= tail_size:  # the oldest chunk is not needed any more
                tail_len -= len(tail.pop(0))
    end = "".join(tail)
    if total <= limit:
        return "".join(head) + end
    end = end[len(end) - tail_size :]
    return "".join(head) + marker(total - head_size - tail_size) + end
