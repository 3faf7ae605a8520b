"""``awa_django.enqueue``: ``Task.enqueue()`` with flow control.

    result = awa_django.enqueue(sync_tenant, args=[tenant.id],
                                unique_key=f"sync:{tenant.id}",
                                concurrency_key=f"tenant:{tenant.id}")

``unique_key``: while a job with this key is unfinished (waiting, scheduled,
running or waiting to retry), nothing is inserted and the existing job's
result is returned. The database decides (a partial unique index and
``INSERT ... ON CONFLICT DO NOTHING``), so concurrent enqueues from any number
of processes create one job. ``concurrency_key``: at most
``concurrency_limit`` jobs with the key run at once across every worker
(enforced at claim, ``awa_claim_v3``).

Django's ``Task`` API has no place for these options (``Task.using()`` takes
only the framework's own), so they are arguments of this function; the task
itself, with any ``.using()`` overrides, is passed as it would be enqueued.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from django.db import connections

from ..store import jobs
from . import tracing
from .backend import AwaBackend
from .compat import Task, TaskResult
from .paths import require_runnable_here
from .payloads import call_parts, checked_payload
from .results import to_task_result

__all__ = ["MAX_KEY_LENGTH", "MAX_CONCURRENCY_LIMIT", "FlowKeys", "enqueue", "flow_keys"]

MAX_KEY_LENGTH = 500  # characters; a btree index entry must stay well under 2,700 bytes
MAX_CONCURRENCY_LIMIT = 1_000_000
# How often an enqueue that found its key taken looks again when the job that
# held it finished in between (each round is one INSERT and one SELECT).
ROUNDS = 5


class FlowKeys(NamedTuple):
    """A job's flow-control keys, validated."""

    unique_key: str | None = None
    concurrency_key: str | None = None
    concurrency_limit: int | None = None


def key_problem(value: Any) -> str | None:
    """Why ``value`` cannot be a key, or None."""
    if not isinstance(value, str):
        return f"must be a string, not {type(value).__name__}"
    if not value.strip():
        return "must not be empty or blank"
    if len(value) > MAX_KEY_LENGTH:
        return f"must be at most {MAX_KEY_LENGTH} characters long, not {len(value)}"
    if "\x00" in value:
        return "must not contain a NUL character"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "must be valid Unicode (it has a lone surrogate)"
    return None


def flow_keys(unique_key: Any = None, concurrency_key: Any = None, concurrency_limit: Any = 1) -> FlowKeys:
    """The validated keys; raise ``TypeError``/``ValueError`` naming the bad argument."""
    for name, value in (("unique_key", unique_key), ("concurrency_key", concurrency_key)):
        problem = None if value is None else key_problem(value)
        if problem:
            error = TypeError if not isinstance(value, str) else ValueError
            raise error(f"{name} {problem}")
    limit = concurrency_limit
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise TypeError(f"concurrency_limit must be a whole number, not {type(limit).__name__}")
    if not 1 <= limit <= MAX_CONCURRENCY_LIMIT:
        raise ValueError(f"concurrency_limit must be 1-{MAX_CONCURRENCY_LIMIT}, got {limit}")
    if concurrency_key is None and limit != 1:
        raise ValueError("concurrency_limit needs a concurrency_key")
    return FlowKeys(unique_key, concurrency_key, limit if concurrency_key is not None else None)


def enqueue(
    task: Task[Any, Any],
    args: Any = (),
    kwargs: Mapping[str, Any] | None = None,
    *,
    unique_key: str | None = None,
    concurrency_key: str | None = None,
    concurrency_limit: int = 1,
) -> TaskResult[Any, Any]:
    """Enqueue ``task(*args, **kwargs)`` like ``task.enqueue()``, with flow control.

    Returns the new job's ``TaskResult``, or, when an unfinished job holds
    ``unique_key``, that job's (no ``task_enqueued`` is sent for it). Runs in
    the caller's transaction, like ``task.enqueue()``: an enqueue racing an
    uncommitted one with the same key waits for that transaction to end.
    """
    keys = flow_keys(unique_key, concurrency_key, concurrency_limit)
    if not isinstance(task, Task):
        raise TypeError(f"task must be a django.tasks Task, got {task!r:.80}")
    if kwargs is None:
        kwargs = {}
    backend = task.get_backend()
    if not isinstance(backend, AwaBackend):
        if keys.unique_key is None and keys.concurrency_key is None:
            return task.enqueue(*args, **kwargs)  # nothing to control: any backend
        raise TypeError(
            f"unique_key and concurrency_key need an awa_django AwaBackend; task backend "
            f"{task.backend!r} is {type(backend).__module__}.{type(backend).__qualname__}"
        )
    if keys.unique_key is None and keys.concurrency_key is None:
        return backend.enqueue(task, args, kwargs)
    return insert_keyed(backend, task, args, kwargs, keys)


def insert_keyed(
    backend: AwaBackend, task: Task[Any, Any], args: Any, kwargs: Any, keys: FlowKeys
) -> TaskResult[Any, Any]:
    """Insert one keyed job (validated as ``backend.enqueue`` does), or return the
    unfinished job that holds its ``unique_key``."""
    task, args, kwargs = call_parts((task, args, kwargs), backend.alias)
    backend.validate_task(task)
    require_runnable_here(task)
    _, text = checked_payload(args, kwargs)
    run_after = task.run_after
    metadata: dict[str, Any] = {"run_after": run_after.isoformat()} if run_after is not None else {}
    tracing.stamp_jobs([metadata])  # the trace context, as backend.enqueue writes it
    new = jobs.NewJob(task.module_path, task.queue_name, text, task.priority, metadata, run_after)
    with connections[backend.database].cursor() as cursor:
        for _ in range(ROUNDS):
            row = jobs.insert_keyed(cursor, new, backend.max_attempts, *keys)
            if row is not None:
                result = to_task_result(row, backend.alias, task)
                backend.announce([result])
                return result
            held = jobs.unique_key_holder_of(cursor, str(keys.unique_key))
            if held is not None:
                same = held.kind == task.module_path
                return to_task_result(held, backend.alias, task if same else None)
    raise RuntimeError(f"unique_key {keys.unique_key!r:.100}: taken and freed {ROUNDS} times in a row")
