"""An ``awa_jobs`` row as Python reads it: decoded in one place, typed.

:func:`job_row` decodes a raw row (column names and values) into a dict: the
leader's fire statement hands its jobs on as such dicts, their ``args`` still
undecoded. :class:`JobRow` is the typed, frozen row every other reader gets,
built only by :meth:`JobRow.from_row` (or :meth:`JobRow.from_dict` for a row
already decoded by :func:`job_row`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

from ..db import jsonb

__all__ = ["INVALID", "JOB_JSON_COLUMNS", "JobRow", "job_row"]

JOB_JSON_COLUMNS = ("args", "metadata", "errors", "result")
# What a column that cannot be decoded reads as (its reason goes to args).
_EMPTY: dict[str, Any] = {"metadata": {}, "errors": []}  # Any: an empty object or array
# Columns whose undecodable value does not stop the job: the errors of earlier
# attempts are a record, not an input, so the next attempt runs and its failure
# (if any) replaces them with a note (awa_errors_append_v1).
_RECORD_ONLY = frozenset({"errors"})
# The column a claimed row carries when one of its timestamps is outside the
# range a datetime holds: what each such column holds, else NULL.
INVALID = "invalid_timestamps"
ERRORS_DROPPED = "awa_django.exceptions.ErrorsDropped"


# ``values`` is any row sequence a cursor returns (a tuple from psycopg or
# Django's cursor), and the dict's values are whatever the columns hold: the
# leader's fire statement keeps such dicts (args deferred); JobRow types them.
def job_row(columns: Sequence[str], values: Any, defer_args: bool = False) -> dict[str, Any]:
    """A raw ``awa_jobs`` row as a dict, with JSON columns decoded.

    Django's psycopg adapters hand jsonb to Python as text (JSONField decodes it
    itself), so raw cursors must decode it here, through :func:`jsonb.decode`:
    a value too large, too deep or invalid never raises. ``args`` then holds an
    :class:`~awa_django.db.jsonb.Undecodable` naming the column (the worker
    fails such a job with that reason); so does a ``metadata`` that is not an
    object, which then reads as empty, so the row's other readers go on.
    ``errors`` that cannot be read (not an array, too deep, too large) read as
    empty and do not stop the job: the next attempt always runs. With
    ``defer_args``, ``args`` stays a :class:`~awa_django.db.jsonb.Deferred`
    (decoded when the leader's announcer reads it).
    """
    job = dict(zip(columns, values, strict=True))
    for key in JOB_JSON_COLUMNS:
        value = job.get(key)
        if isinstance(value, str):
            job[key] = (
                jsonb.Deferred(value, key) if defer_args and key == "args" else jsonb.decode(value, key)
            )
    for key, empty in _EMPTY.items():
        value = job.get(key)
        if key in job and value is not None and not isinstance(value, (type(empty), jsonb.Undecodable)):
            value = jsonb.Undecodable(key, f"is {jsonb.type_name(value)}, not {jsonb.type_name(empty)}")
        if isinstance(value, jsonb.Undecodable):
            job[key] = empty
            if key not in _RECORD_ONLY and not isinstance(job.get("args"), jsonb.Undecodable):
                job["args"] = value
    return job


@dataclass(frozen=True, slots=True)
class JobRow:
    """One ``awa_jobs`` row (every column the code reads), JSON decoded.

    A statement that does not return a column leaves its default: a completed
    row of the combined complete-and-claim holds only ``id``, ``attempt``,
    ``state`` and ``finished_at``. A timestamp the claim could not load is None
    and :attr:`invalid_timestamps` says why.
    """

    id: int
    attempt: int = 0
    state: str = ""
    kind: str = ""
    queue: str = ""
    # Decoded JSON: any JSON value, an Undecodable saying why it is not, or a
    # Deferred (the fire statement's rows, decoded when announced).
    args: Any = None
    priority: int = 0
    max_attempts: int = 0
    run_at: datetime | None = None
    created_at: datetime | None = None
    attempted_at: datetime | None = None
    started_at: datetime | None = None
    heartbeat_at: datetime | None = None
    finished_at: datetime | None = None
    # Each entry is a JSON value a writer (awa_errors_append_v1, raw SQL) put there.
    errors: list[Any] = field(default_factory=list)
    # A task's return value: any JSON value.
    result: Any = None
    tags: list[str] = field(default_factory=list)
    # JSON object: its values are any JSON value.
    metadata: dict[str, Any] = field(default_factory=dict)
    worker_ids: list[str] = field(default_factory=list)
    unique_key: str | None = None
    concurrency_key: str | None = None
    concurrency_limit: int | None = None
    invalid_timestamps: str | None = None

    @classmethod
    def from_row(cls, columns: Sequence[str], values: Any) -> JobRow:
        """The row of a cursor's ``columns`` and ``values`` (a row tuple), JSON decoded."""
        return cls.from_dict(job_row(columns, values))

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> JobRow:
        """The row of a dict :func:`job_row` decoded (columns it does not know are ignored)."""
        known = {k: v for k, v in row.items() if k in _FIELDS}
        for key in ("errors", "tags", "metadata", "worker_ids"):
            if known.get(key, 0) is None:  # NULL in a nullable column reads as empty
                del known[key]
        return cls(**known)

    @property
    def key(self) -> tuple[int, int]:
        """``(id, attempt)``: what every report on this attempt is fenced by."""
        return (self.id, self.attempt)

    def dropped_errors(self) -> str | None:
        """What ``awa_errors_append_v1`` said it dropped from this row's errors
        when its latest attempt's error was appended, or None."""
        for entry in self.errors[:1]:  # the note, when there is one, comes first
            if (
                isinstance(entry, dict)
                and entry.get("exception_class_path") == ERRORS_DROPPED
                and entry.get("attempt") == self.attempt
            ):
                return str(entry.get("traceback", ""))
        return None


_FIELDS = frozenset(f.name for f in fields(JobRow))
