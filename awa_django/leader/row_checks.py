"""What makes a schedule row one the evaluator cannot plan (it is then parked).

A row holds what a declaration, the admin or the CLI wrote, unless raw SQL or
an old writer put something else there; each check here names the first
such value, and the evaluator parks that row alone (see :mod:`.evaluator`).
"""

from __future__ import annotations

import functools

from .. import validation
from ..cron.interval import MAX_EVERY
from ..db import jsonb
from ..store.schedule_rows import ScheduleRow
from .policies import deadline_problem

# Timestamps the evaluator accepts (see docs/explanation/semantics.md).
TIMESTAMP_LOW = "1970-01-01T00:00:00+00:00"
TIMESTAMP_HIGH = "9000-01-01T00:00:00+00:00"
# Parsed expressions and checks kept (one per distinct text).
PARSE_CACHE_SIZE = 4096


def max_args_bytes() -> int:
    """``AWA_MAX_ARGS_BYTES``, or its default when the setting is invalid.

    A settings mistake (reported by check E060) must not park every row."""
    return jsonb.max_bytes()


def row_problem(row: ScheduleRow, max_bytes: int | None = None, max_depth: int | None = None) -> str | None:
    """Why the evaluator cannot handle ``row`` (a value no declaration could
    produce, written by raw SQL or an old writer), or None.

    ``max_bytes`` and ``max_depth`` are ``AWA_MAX_ARGS_BYTES`` and
    ``AWA_MAX_JSON_DEPTH`` read once for a batch (read here when omitted)."""
    for column, text_column in (
        ("last_enqueued_at", "prev_text"),
        ("created_at", "created_text"),
        ("anchor", "anchor_text"),
    ):
        if getattr(row, column) is None and getattr(row, text_column) is not None:
            return (
                f"{column} {getattr(row, text_column)!r} is outside the supported range "
                f"{TIMESTAMP_LOW[:10]} to {TIMESTAMP_HIGH[:10]}"
            )
    problem = _args_problem(row)
    if problem:
        return problem
    if row.metadata_type != "object":
        return f"metadata is a JSON {row.metadata_type}, not an object"
    limit = max_args_bytes() if max_bytes is None else max_bytes
    depth_limit = jsonb.max_depth() if max_depth is None else max_depth
    for column in ("args", "metadata"):
        problem = validation.size_problem(int(getattr(row, f"{column}_bytes")), limit)
        # The depth as the due query measured it, up to the limit + 1 (0 when
        # the value has no more opening brackets than the limit).
        problem = problem or validation.depth_problem(int(getattr(row, f"{column}_depth") or 0), depth_limit)
        if problem:
            return f"{column} {problem}"
    problem = _kind_problem(row.kind)
    if problem:
        return f"kind {problem}"
    problem = _timing_problem(row.cron_expr, row.every_seconds)
    if problem:
        return problem
    problem = _timezone_problem(row.timezone)
    if problem:
        return f"timezone {problem}"
    if row.missed_fire_policy not in ("coalesce", "catch_up"):
        return f"missed_fire_policy {row.missed_fire_policy!r} is not coalesce or catch_up"
    for column in ("starting_deadline", "jitter"):
        problem = deadline_problem(getattr(row, column))
        if problem:
            return f"{column} {problem}"
    return None


def _timing_problem(cron_expr: str | None, every_seconds: int | None) -> str | None:
    """Why a row has no timing the evaluator can use: exactly one of an
    expression and an interval (the table's CHECK says so too)."""
    if every_seconds is not None:
        if cron_expr is not None:
            return "cron_expr and every_seconds are both set; a schedule has one timing"
        if not 1 <= every_seconds <= MAX_EVERY:
            return f"every_seconds {every_seconds} is not from 1 to {MAX_EVERY}"
        return None
    if cron_expr is None:
        return "cron_expr and every_seconds are both NULL; a schedule needs one timing"
    problem = _expression_problem(cron_expr)
    return f"cron_expr {problem}" if problem else None


# The keys of a row's args and the JSON type of each. Either may be missing
# (the model's own default is {}): the worker and the task backend read a
# missing key as empty (tasks.paths.call_arguments), so such a row fires a job
# that runs; a third key or a wrong type is what they refuse.
ARGS_TYPES = {"args": "array", "kwargs": "object"}
ARGS_SHAPE = 'args is not {"args": [...], "kwargs": {...}}'


def _args_problem(row: ScheduleRow) -> str | None:
    if row.args_type != "object":
        return f"{ARGS_SHAPE}: it is a JSON {row.args_type}"
    keys = list(row.args_keys or [])
    for key in keys:
        if key not in ARGS_TYPES:
            return f"{ARGS_SHAPE}: it has the key {key[:80]!r}"
    for key, expected in ARGS_TYPES.items():
        found = getattr(row, f"args_{key}_type")
        if key in keys and found != expected:
            return f"{ARGS_SHAPE}: its {key!r} is a JSON {found}, not an {expected}"
    return None


# The checks and the parse of an expression depend on its text alone, and a
# pass sees the same few texts on thousands of rows: each is done once per
# process, not once per row per pass (per row, they would be half its cost).
# The zone is parsed per row through cron.search.parse_timezone (ZoneInfo keeps
# its own cache), so a leader whose tz database changes is not misled.
_expression_problem = functools.lru_cache(maxsize=PARSE_CACHE_SIZE)(validation.expression_problem)
_timezone_problem = functools.lru_cache(maxsize=PARSE_CACHE_SIZE)(validation.timezone_problem)
_kind_problem = functools.lru_cache(maxsize=PARSE_CACHE_SIZE)(validation.kind_problem)
