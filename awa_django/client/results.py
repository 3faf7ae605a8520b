"""A job row as ``django.tasks`` sees it: the ``TaskResult`` of a :class:`JobRow`.

One builder for every reader (``get_result``, enqueue, the worker's
``task_started``/``task_finished``, the leader's announcements of fired jobs).
"""

from __future__ import annotations

import contextlib
from datetime import datetime
from typing import Any

from ..models import JobState
from ..store.job_rows import JobRow
from .compat import InvalidTask, Task, TaskError, TaskResult, TaskResultDoesNotExist, TaskResultStatus
from .paths import resolve_task

__all__ = ["STATUS", "to_task_result"]

STATUS = {
    JobState.AVAILABLE: TaskResultStatus.READY,
    JobState.SCHEDULED: TaskResultStatus.READY,
    JobState.RETRYABLE: TaskResultStatus.READY,
    JobState.RUNNING: TaskResultStatus.RUNNING,
    JobState.COMPLETED: TaskResultStatus.SUCCESSFUL,
    JobState.FAILED: TaskResultStatus.FAILED,
    JobState.CANCELLED: TaskResultStatus.FAILED,
}


def to_task_result(row: JobRow, alias: str, task: Task[Any, Any] | None = None) -> TaskResult[Any, Any]:
    """The ``TaskResult`` of job ``row`` for the backend ``alias`` (the task
    resolved from the row's ``kind`` unless given)."""
    if task is None:
        task = resolve_task(row.kind)
        if task is None:
            raise TaskResultDoesNotExist(f"{row.id}: {row.kind!r} is not an importable Task")
    task = _as_enqueued(task, row, alias)
    # A value that could not be decoded (see db.jsonb) reads as empty here.
    args = row.args if isinstance(row.args, dict) else {}
    result: TaskResult[Any, Any] = TaskResult(
        task=task,
        id=str(row.id),
        status=STATUS[JobState(row.state)],
        enqueued_at=row.created_at,
        started_at=row.started_at,
        finished_at=row.finished_at,
        last_attempted_at=row.attempted_at,
        # Set below: normalize_json (TaskResult's own) would walk the
        # decoded JSON again in Python, seconds for a megabyte of args.
        args=[],
        kwargs={},
        backend=alias,
        errors=[
            TaskError(
                exception_class_path=str(e.get("exception_class_path", "builtins.Exception")),
                traceback=str(e.get("traceback", "")),
            )
            for e in row.errors
            if isinstance(e, dict)
        ],
        worker_ids=list(row.worker_ids),
    )
    # Decoded from jsonb: lists, dicts, strings, numbers, booleans and None
    # already, which is what normalize_json would make of them.
    object.__setattr__(result, "args", list(args.get("args", [])))
    object.__setattr__(result, "kwargs", dict(args.get("kwargs", {})))
    if row.state == JobState.COMPLETED:
        object.__setattr__(result, "_return_value", row.result)
    return result


def _as_enqueued(task: Task[Any, Any], row: JobRow, alias: str) -> Task[Any, Any]:
    """``task`` with the ``.using()`` overrides job ``row`` was enqueued with."""
    overrides: dict[str, Any] = {}  # Task.using()'s keyword arguments, of their own types
    if row.priority != task.priority:
        overrides["priority"] = row.priority
    if row.queue != task.queue_name:
        overrides["queue_name"] = row.queue
    if task.backend != alias:
        overrides["backend"] = alias
    run_after = row.metadata.get("run_after")
    if isinstance(run_after, str):
        with contextlib.suppress(ValueError):  # a hand-written row: keep the task as declared
            overrides["run_after"] = datetime.fromisoformat(run_after)
    if not overrides:
        return task
    try:
        return task.using(**overrides)
    except (InvalidTask, ValueError, KeyError):
        # e.g. a cron fire into a queue this backend does not list: the
        # row stays readable, with the task as declared.
        return task
