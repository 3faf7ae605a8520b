"""Validating one declaration into a :class:`~awa_django.declarations.shape.Schedule`.

:func:`build_schedule` checks each field in a fixed order (the first problem
is the one reported) and raises :class:`~awa_django.exceptions.InvalidSchedule`
naming the schedule and the field, before anything touches the database.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterable, Mapping, Set, ValuesView
from datetime import UTC, datetime, timedelta
from typing import Any

from django.utils.module_loading import import_string

from .. import contract, validation
from ..client.compat import Task
from ..conf import Kind, conf
from ..cron import search
from ..exceptions import InvalidSchedule
from .flow import flow_metadata
from .ranges import RANGES, number_problem
from .shape import Schedule

# Start-up builds every declared schedule several times (system checks, then
# runcron itself), and many share an expression: its checks and parse, pure
# functions of the text, run once per process (at 10,000 declared schedules,
# parsing each again would dominate start-up).
_expression_problem = functools.lru_cache(maxsize=4096)(validation.expression_problem)


@functools.lru_cache(maxsize=4096)
def _parse_cron(text: str) -> search.CronExpression:
    return search.parse_cron(text)  # a CronError is raised, never cached


POLICIES = ("coalesce", "catch_up")
OVERLAP_POLICIES = ("allow", "skip", "buffer_one")
# The shortest gap of an expression is looked for among this many fires from
# a fixed instant (enough for every field's period to repeat: a year of
# monthly fires, a week of hourly ones); cached per (expression, zone).
GAP_SAMPLE = 400
_GAP_FROM = datetime(2026, 1, 1, tzinfo=UTC)
MAX_NAME_LENGTH = contract.NAME_MAX_LENGTH
MAX_TAGS = contract.MAX_TAGS
MAX_ATTEMPTS_RANGE = (RANGES["max_attempts"].low, RANGES["max_attempts"].high)
# Keys every cron job's metadata gets from the scheduler; user metadata must not
# shadow them, or a job could claim to be a fire it is not.
RESERVED_METADATA_KEYS = contract.RESERVED_METADATA_KEYS


def _json(value: Any, name: str, field_name: str) -> Any:
    """Round-trip ``value`` through strict JSON, or raise naming the field."""
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidSchedule(name, field_name, f"must be JSON-serialisable ({exc})") from None


def _refuse(name: str, field_name: str, problem: str | None) -> None:
    """Raise :class:`InvalidSchedule` for a problem found by :mod:`.validation`."""
    if problem:
        raise InvalidSchedule(name, field_name, problem)


def _json_size(value: Any) -> int:
    """Bytes of ``value`` as PostgreSQL prints it from jsonb (``", "`` and
    ``": "`` between items, UTF-8): the measure the stored row keeps
    (awa_cron_jobs.args_bytes) and the leader holds to AWA_MAX_ARGS_BYTES, so
    what is accepted here is never parked there for its size."""
    return len(json.dumps(value, ensure_ascii=False, separators=(", ", ": ")).encode("utf-8"))


def _max_args_bytes(name: str) -> int:
    limit = conf.MAX_ARGS_BYTES
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidSchedule(name, "args", f"AWA_MAX_ARGS_BYTES must be a whole number >= 1, got {limit!r}")
    return limit


def _max_json_depth(name: str) -> int:
    limit = conf.MAX_JSON_DEPTH
    if not Kind.JSON_DEPTH.accepts(limit):
        raise InvalidSchedule(
            name, "args", f"AWA_MAX_JSON_DEPTH must be {Kind.JSON_DEPTH.value}, got {limit!r}"
        )
    return int(limit)


def _resolve_task(name: str, task: Any) -> Task[Any, Any]:
    if isinstance(task, str):
        _refuse(name, "task", validation.kind_problem(task))
        try:
            task = import_string(task)
        except ImportError as exc:
            raise InvalidSchedule(name, "task", f"cannot import {task!r} ({exc})") from None
        except Exception as exc:  # a module failing at import is the declaration's fault
            raise InvalidSchedule(
                name, "task", f"importing {task!r} failed: {type(exc).__name__}: {exc}"
            ) from None
    if not isinstance(task, Task):
        raise InvalidSchedule(name, "task", f"{task!r} is not a django.tasks Task (decorate it with @task)")
    return task


def _int_in_range(name: str, field_name: str, value: Any, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidSchedule(name, field_name, f"must be a whole number from {low} to {high}, got {value!r}")
    return value


def _check_name(name: Any) -> str:
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME_LENGTH or "\x00" in name:
        raise InvalidSchedule(
            name if isinstance(name, str) else None,
            "name",
            f"must be a non-blank string of 1-{MAX_NAME_LENGTH} characters without NUL, "
            + (
                f"got {len(name)} characters"
                if isinstance(name, str) and len(name) > MAX_NAME_LENGTH
                else f"got {name!r}"
            ),
        )
    _refuse(name, "name", validation.name_problem(name))
    return name


def _check_cron(name: str, cron: Any) -> search.CronExpression:
    if isinstance(cron, str):
        # Before parsing: a huge or hostile expression must cost nothing.
        _refuse(name, "cron", _expression_problem(cron))
    try:
        return _parse_cron(cron) if isinstance(cron, str) else search.parse_cron(cron)
    except search.CronError as exc:
        raise InvalidSchedule(name, "cron", str(exc)) from None


def _check_every(name: str, cron: Any, every: Any, anchor: Any) -> tuple[int | None, datetime | None]:
    """An interval's (every in whole seconds, explicit anchor in UTC), or (None, None) for cron.

    Exactly one of ``cron`` and ``every`` is given."""
    if every is None:
        if cron is None:
            raise InvalidSchedule(name, "cron", "is required (or every=, for an interval schedule)")
        if anchor is not None:
            raise InvalidSchedule(name, "anchor", "is only for an interval schedule (every=)")
        return None, None
    if cron is not None:
        raise InvalidSchedule(name, "every", "cannot be given with cron: a schedule has one timing")
    given = _seconds(name, "every", every)
    _refuse(name, "every", number_problem("every", given))
    seconds = int(given or 0)  # whole, in the integer column's range
    if anchor is None:
        return seconds, None
    if not isinstance(anchor, datetime) or anchor.tzinfo is None or anchor.utcoffset() is None:
        raise InvalidSchedule(name, "anchor", f"must be a timezone-aware datetime, got {anchor!r:.60}")
    if anchor.microsecond:
        raise InvalidSchedule(name, "anchor", f"must be a whole second, got {anchor.isoformat()}")
    if not datetime(1970, 1, 1, tzinfo=UTC) <= anchor <= datetime(9000, 1, 1, tzinfo=UTC):
        raise InvalidSchedule(name, "anchor", f"must be between 1970 and 9000, got {anchor.isoformat()}")
    return seconds, anchor.astimezone(UTC)


def _check_timing(
    name: str, cron: Any, every: Any, anchor: Any
) -> tuple[search.CronExpression | None, int | None, datetime | None]:
    """(expression, None, None) for a cron schedule, (None, every, anchor) for an interval."""
    seconds, explicit_anchor = _check_every(name, cron, every, anchor)
    return (None if seconds is not None else _check_cron(name, cron)), seconds, explicit_anchor


def _check_timezone_and_policy(name: str, timezone: Any, missed_fire_policy: Any) -> None:
    if not isinstance(timezone, str):  # e.g. a ZoneInfo: the row stores the zone's name
        raise InvalidSchedule(
            name,
            "timezone",
            f"must be an IANA zone name such as 'Europe/Berlin', got {type(timezone).__name__}",
        )
    _refuse(name, "timezone", validation.timezone_problem(timezone))
    try:
        search.parse_timezone(timezone)
    except search.CronError as exc:
        raise InvalidSchedule(name, "timezone", str(exc)) from None
    if missed_fire_policy not in POLICIES:
        raise InvalidSchedule(
            name, "missed_fire_policy", f"must be 'coalesce' or 'catch_up', got {missed_fire_policy!r}"
        )


def _seconds(name: str, field_name: str, value: Any) -> float | None:
    """A timedelta or a number of seconds as seconds (int when whole); None stays None."""
    if value is None:
        return None
    if isinstance(value, timedelta):
        value = value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidSchedule(
            name, field_name, f"must be a timedelta or a number of seconds, got {value!r:.60}"
        )
    if isinstance(value, int):
        return value  # exact, however large: its range is checked by the caller
    if not math.isfinite(value):
        raise InvalidSchedule(name, field_name, f"must be a finite number of seconds, got {value!r}")
    # Microseconds, as stored and as the database computes offsets.
    value = round(float(value), 6)
    return int(value) if value.is_integer() else value


@functools.lru_cache(maxsize=4096)
def shortest_gap(expression: search.CronExpression, timezone: str) -> float | None:
    """Seconds between the two closest fires of ``expression`` in ``timezone``
    among ``GAP_SAMPLE`` fires; None if it fires fewer than twice."""
    zone = search.parse_timezone(timezone)
    fires = search.fires_between(expression, zone, _GAP_FROM, _GAP_FROM + timedelta(days=3660), GAP_SAMPLE)
    gaps = [(b - a).total_seconds() for a, b in zip(fires, fires[1:], strict=False)]
    return min(gaps) if gaps else None


def _check_policies(
    name: str,
    expression: search.CronExpression | int | None,
    timezone: str,
    overlap: Any,
    deadline: Any,
    jitter: Any,
    concurrency_key: Any = None,
) -> tuple[str, float | None, float]:
    """The execution policies of one declaration: (overlap, starting_deadline, jitter).

    ``expression`` is the cron expression, or an interval's seconds."""
    if overlap not in OVERLAP_POLICIES:
        raise InvalidSchedule(
            name, "overlap", f"must be 'allow', 'skip' or 'buffer_one', got {overlap!r:.60}"
        )
    _check_overlap_key(name, overlap, concurrency_key)
    seconds = _seconds(name, "starting_deadline", deadline)
    if seconds is not None:
        # At most 100 years: longer than any slot can wait (a date this far back is out of range).
        _refuse(name, "starting_deadline", number_problem("starting_deadline", seconds))
    spread = _seconds(name, "jitter", 0 if jitter is None else jitter) or 0
    _refuse(name, "jitter", number_problem("jitter", spread))
    if spread:
        gap = (
            expression
            if isinstance(expression, int) or expression is None
            else shortest_gap(expression, timezone)
        )
        if gap is not None and spread >= gap:
            raise InvalidSchedule(
                name, "jitter", f"must be less than the schedule's shortest gap ({gap:g} s), got {spread:g} s"
            )
    return overlap, seconds, spread


def _check_overlap_key(name: str, overlap: str, concurrency_key: Any) -> None:
    """buffer_one is carried by a concurrency key of the schedule's own, and a job
    has one key: it cannot be combined with a concurrency_key."""
    if overlap == "buffer_one" and concurrency_key is not None:
        raise InvalidSchedule(
            name,
            "overlap",
            "'buffer_one' gives each job the schedule's own concurrency key and cannot be combined "
            "with concurrency_key (use overlap 'skip', or keep concurrency_key with overlap 'allow')",
        )


def _check_queue(name: str, queue: Any, task: Task[Any, Any]) -> str:
    queue = task.queue_name if queue is None else queue
    if not isinstance(queue, str) or not queue or len(queue) > contract.QUEUE_MAX_LENGTH:
        raise InvalidSchedule(name, "queue", f"must be a non-empty string, got {queue!r}")
    _refuse(name, "queue", validation.name_problem(queue))
    backend = task.get_backend()
    if backend.queues and queue not in backend.queues:
        raise InvalidSchedule(
            name,
            "queue",
            f"{queue!r} is not one of the QUEUES of task backend {backend.alias!r}: {sorted(backend.queues)}",
        )
    return queue


def _check_max_attempts(name: str, max_attempts: Any) -> int:
    if max_attempts is None:
        default = conf.MAX_ATTEMPTS
        try:
            max_attempts = _int_in_range(name, "max_attempts", default, *MAX_ATTEMPTS_RANGE)
        except InvalidSchedule:
            raise InvalidSchedule(
                name, "max_attempts", f"not given, and the default AWA_MAX_ATTEMPTS={default!r} is invalid"
            ) from None
    return _int_in_range(name, "max_attempts", max_attempts, *MAX_ATTEMPTS_RANGE)


# Iterables refused where a list is expected: text would become one item per
# character, and a set (or dict view) iterates in a per-process order (string
# hashing is randomised), so replicas would declare different definitions.
_NOT_A_LIST = (str, bytes, bytearray, Mapping, Set, ValuesView)


def _check_arguments(name: str, args: Any, kwargs: Any) -> tuple[list[Any], dict[str, Any]]:
    if isinstance(args, _NOT_A_LIST) or not isinstance(args, Iterable):
        raise InvalidSchedule(name, "args", f"must be a list or tuple, got {type(args).__name__}")
    args = list(args)
    depth = _max_json_depth(name)
    # The depth limit holds for the value stored: {"args": [...], "kwargs": {...}}.
    _refuse(name, "args", validation.json_problem(args, depth, string_keys=True, within=1))
    args_json = _json(args, name, "args")
    kwargs = {} if kwargs is None else kwargs
    if not isinstance(kwargs, Mapping) or not all(isinstance(k, str) for k in kwargs):
        raise InvalidSchedule(name, "kwargs", "must be a dict with string keys")
    kwargs = dict(kwargs)
    _refuse(name, "kwargs", validation.json_problem(kwargs, depth, string_keys=True, within=1))
    kwargs_json = _json(kwargs, name, "kwargs")
    limit = _max_args_bytes(name)
    _refuse(
        name, "args", validation.size_problem(_json_size({"args": args_json, "kwargs": kwargs_json}), limit)
    )
    return args_json, kwargs_json


def _check_metadata(name: str, metadata: Any) -> dict[str, Any]:
    metadata = {} if metadata is None else metadata
    if not isinstance(metadata, Mapping) or not all(isinstance(k, str) for k in metadata):
        raise InvalidSchedule(name, "metadata", "must be a dict with string keys")
    clash = RESERVED_METADATA_KEYS.intersection(metadata)
    if clash:
        raise InvalidSchedule(name, "metadata", f"keys {sorted(clash)} are reserved for the scheduler")
    _refuse(
        name, "metadata", validation.json_problem(dict(metadata), _max_json_depth(name), string_keys=True)
    )
    metadata_json: dict[str, Any] = _json(dict(metadata), name, "metadata")
    _refuse(name, "metadata", validation.size_problem(_json_size(metadata_json), _max_args_bytes(name)))
    return metadata_json


def _check_flow(name: str, unique_key: Any, concurrency_key: Any, concurrency_limit: Any) -> dict[str, Any]:
    """The flow-control metadata (:func:`.flow.flow_metadata`). A key template
    PostgreSQL cannot store (NUL, a lone surrogate) is refused by its field
    first, before any SQL; the template's form is checked by :mod:`.flow`."""
    for field_name, value in (("unique_key", unique_key), ("concurrency_key", concurrency_key)):
        if isinstance(value, str):
            _refuse(name, field_name, validation.text_problem(value))
    return flow_metadata(name, unique_key, concurrency_key, concurrency_limit)


def _check_tags(name: str, tags: Any) -> tuple[str, ...]:
    if isinstance(tags, _NOT_A_LIST) or not isinstance(tags, Iterable):
        raise InvalidSchedule(name, "tags", f"must be a list of strings, got {type(tags).__name__}")
    tag_list = tuple(tags)
    if len(tag_list) > MAX_TAGS or not all(
        isinstance(t, str) and t and len(t) <= MAX_NAME_LENGTH and "\x00" not in t for t in tag_list
    ):
        raise InvalidSchedule(
            name,
            "tags",
            f"must be at most {MAX_TAGS} non-empty strings of at most {MAX_NAME_LENGTH} "
            f"characters, got {len(tag_list)} item(s)",
        )
    for tag in tag_list:
        _refuse(name, "tags", validation.name_problem(tag))
    return tag_list


def build_schedule(
    name: Any,
    cron: Any,
    task: Any,
    *,
    every: Any = None,
    anchor: Any = None,
    timezone: Any = "UTC",
    args: Any = (),
    kwargs: Any = None,
    queue: Any = None,
    priority: Any = None,
    max_attempts: Any = None,
    tags: Any = (),
    metadata: Any = None,
    missed_fire_policy: Any = "coalesce",
    overlap: Any = "allow",
    starting_deadline: Any = None,
    jitter: Any = 0,
    source: str = "",
    unique_key: Any = None,
    concurrency_key: Any = None,
    concurrency_limit: Any = None,
) -> Schedule:
    """Validate one declaration and return its :class:`Schedule` (no registration)."""
    name = _check_name(name)
    expression, seconds, explicit_anchor = _check_timing(name, cron, every, anchor)
    _check_timezone_and_policy(name, timezone, missed_fire_policy)
    resolved = _resolve_task(name, task)
    queue = _check_queue(name, queue, resolved)
    priority = resolved.priority if priority is None else priority
    priority = _int_in_range(name, "priority", priority, contract.PRIORITY_MIN, contract.PRIORITY_MAX)
    max_attempts = _check_max_attempts(name, max_attempts)
    args_json, kwargs_json = _check_arguments(name, args, kwargs)
    metadata_json = _check_metadata(name, metadata)
    metadata_json.update(_check_flow(name, unique_key, concurrency_key, concurrency_limit))
    tag_list = _check_tags(name, tags)
    overlap, starting_deadline, jitter = _check_policies(
        name, expression or seconds, timezone, overlap, starting_deadline, jitter, concurrency_key
    )
    return Schedule(
        name=name,
        cron=expression,
        timezone=timezone,
        kind=resolved.module_path,
        queue=queue,
        args=args_json,
        kwargs=kwargs_json,
        priority=priority,
        max_attempts=max_attempts,
        tags=tag_list,
        metadata=metadata_json,
        missed_fire_policy=missed_fire_policy,
        overlap=overlap,
        starting_deadline=starting_deadline,
        jitter=jitter,
        every=seconds,
        anchor=explicit_anchor,
        source=source,
    )
