"""``AwaBackend``: a ``django.tasks`` backend over the ``awa_jobs`` table.

``Task.enqueue()`` inserts a row in the caller's transaction (so the job
commits or rolls back with the caller's data), ``get_result()`` reads it back
from any process, and ``manage.py runtasks`` runs it. Cron fires land in the
same table and are indistinguishable from enqueued tasks once inserted.

    TASKS = {"default": {"BACKEND": "awa_django.backend.AwaBackend",
                         "QUEUES": ["default", "mail"],
                         "OPTIONS": {"DATABASE": "default", "MAX_ATTEMPTS": 3}}}
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from django.apps import apps
from django.core.checks import CheckMessage, Error, Warning
from django.db import connections, transaction
from django.db.models.base import ModelState

from ..conf import conf
from ..db.timestamps import with_safe_timestamps
from ..models import Job, JobState
from ..schedules.validation import queue_problem, run_after_problem
from . import tracing
from .compat import (
    BaseTaskBackend,
    InvalidTask,
    Task,
    TaskError,
    TaskResult,
    TaskResultDoesNotExist,
    TaskResultStatus,
    task_enqueued,
)
from .limits import claim_limits, queue_limits_problems, unlisted_queues
from .paths import require_runnable_here, resolve_task
from .payloads import call_parts, checked_payload, enqueue_calls, naming_call

# A result id: a job id (bigint identity) in canonical decimal form.
RESULT_ID = re.compile(r"[1-9][0-9]{0,18}")
BIGINT_MAX = 2**63 - 1

STATUS = {
    JobState.AVAILABLE: TaskResultStatus.READY,
    JobState.SCHEDULED: TaskResultStatus.READY,
    JobState.RETRYABLE: TaskResultStatus.READY,
    JobState.RUNNING: TaskResultStatus.RUNNING,
    JobState.COMPLETED: TaskResultStatus.SUCCESSFUL,
    JobState.FAILED: TaskResultStatus.FAILED,
    JobState.CANCELLED: TaskResultStatus.FAILED,
}


class AwaBackend(BaseTaskBackend):
    """Durable PostgreSQL task backend; run the jobs with ``manage.py runtasks``."""

    supports_defer = True
    supports_async_task = True
    supports_get_result = True
    supports_priority = True

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        super().__init__(alias, params)
        self.database: str = self.options.get("DATABASE", "default")
        self._max_attempts: int | None = self.options.get("MAX_ATTEMPTS")
        # OPTIONS["QUEUE_LIMITS"] as the claim takes it ({} if unset or invalid: E032).
        self.queue_limits: dict[str, dict[str, int]] = claim_limits(self.options.get("QUEUE_LIMITS"))

    @property
    def max_attempts(self) -> int:
        """Attempts per enqueued job: ``OPTIONS["MAX_ATTEMPTS"]`` or ``AWA_MAX_ATTEMPTS``."""
        return int(self._max_attempts if self._max_attempts is not None else conf.MAX_ATTEMPTS)

    def validate_task(self, task: Task[Any, Any]) -> None:
        """Django's rules, and what ``awa_jobs`` can store: the queue name, ``run_after``.

        As in Django, an empty ``QUEUES`` allows any queue name; for this backend,
        any it can store (:func:`~awa_django.schedules.validation.queue_problem`).
        """
        problem = queue_problem(task.queue_name)
        if problem:
            raise InvalidTask(f"queue_name {task.queue_name!r:.100} {problem}")
        run_after = task.run_after
        if run_after is not None and not isinstance(run_after, datetime):
            raise InvalidTask(f"run_after must be a datetime, not {type(run_after).__name__}")
        super().validate_task(task)
        problem = run_after_problem(run_after) if run_after is not None else None
        if problem:
            raise InvalidTask(f"run_after {run_after} {problem}")

    # -- enqueue -------------------------------------------------------------
    def enqueue(self, task: Task[Any, Any], args: Any, kwargs: Any) -> TaskResult[Any, Any]:
        """Insert a job in the current transaction; ``task_enqueued`` is sent on commit."""
        # The bulk path with one call: one fixed INSERT ... RETURNING (the columns
        # the database computed: no refresh SELECT), and no ORM save, whose SQL
        # compilation would be half of an enqueue's time.
        return self.enqueue_many([(task, args, kwargs)])[0]

    def enqueue_many(self, calls: Iterable[tuple[Task[Any, Any], Any, Any]]) -> list[TaskResult[Any, Any]]:
        """Enqueue many ``(task, args, kwargs)`` calls in one INSERT statement.

        Every call is validated first, as by ``enqueue``: one bad call raises,
        naming its position and task, and nothing is inserted.
        ``task_enqueued`` is sent for each on commit.
        """
        calls = enqueue_calls(calls)
        if not calls:
            return []
        checked: set[int] = set()  # tasks validated already (by identity)
        jobs: list[Job] = []
        encoded: list[str] = []
        for index, call in enumerate(calls, 1):
            with naming_call(index, len(calls), call):
                task, args, kwargs = call_parts(call, self.alias)
                if id(task) not in checked:
                    self.validate_task(task)
                    require_runnable_here(task)
                    checked.add(id(task))
                payload, text = checked_payload(args, kwargs)
            run_after = task.run_after
            jobs.append(
                _unsaved_job(
                    kind=task.module_path,
                    queue=task.queue_name,
                    args=payload,
                    priority=task.priority,
                    max_attempts=self.max_attempts,
                    metadata={"run_after": run_after.isoformat()} if run_after is not None else {},
                )
            )
            encoded.append(text)
        tracing.stamp_jobs(job.metadata for job in jobs)
        self._insert_many(jobs, encoded, [task.run_after for task, _, _ in calls])
        results = [self.result_for(job, task) for (task, _, _), job in zip(calls, jobs, strict=True)]
        self.announce(results)
        return results

    def _insert_many(self, jobs: list[Job], encoded: list[str], run_afters: list[datetime | None]) -> None:
        """INSERT ``jobs`` in one statement (arrays unnested); fill in what the database computed."""
        with connections[self.database].cursor() as cursor:
            if len(jobs) == 1:  # enqueue(): plain VALUES, no arrays to build and unnest
                one = jobs[0]
                cursor.execute(
                    INSERT_ONE,
                    {
                        "kind": one.kind,
                        "queue": one.queue,
                        "args": encoded[0],
                        "priority": one.priority,
                        "max_attempts": self.max_attempts,
                        "metadata": json.dumps(one.metadata),
                        "run_after": run_afters[0],
                    },
                )
            else:
                cursor.execute(
                    INSERT_MANY,
                    [
                        self.max_attempts,
                        [j.kind for j in jobs],
                        [j.queue for j in jobs],
                        encoded,
                        [j.priority for j in jobs],
                        [json.dumps(j.metadata) for j in jobs],
                        run_afters,
                    ],
                )
            rows = cursor.fetchall()
        if len(rows) != len(jobs):  # pragma: no cover - the INSERT has no WHERE
            raise RuntimeError(f"{len(rows)} rows inserted for {len(jobs)} jobs")
        for job, (job_id, state, run_at, created_at) in zip(jobs, sorted(rows), strict=True):
            job.id, job.state, job.run_at, job.created_at = job_id, state, run_at, created_at
            job._state.db = self.database

    def announce(self, results: Iterable[TaskResult[Any, Any]]) -> None:
        """Send ``task_enqueued`` for ``results`` once their transaction commits."""
        results = list(results)

        def send() -> None:
            for result in results:
                task_enqueued.send(type(self), task_result=result)

        transaction.on_commit(send, using=self.database)

    # -- results -------------------------------------------------------------
    def get_result(self, result_id: str) -> TaskResult[Any, Any]:
        """The current state of job ``result_id`` (from any process).

        ``result_id`` is a ``TaskResult.id``: the job id as a string (an int
        job id is taken too). Anything else
        (``True``, ``" 7"``, ``"07"``, text) is no result's id.
        """
        if isinstance(result_id, int) and not isinstance(result_id, bool):
            result_id = str(result_id)
        if (
            not isinstance(result_id, str)
            or not RESULT_ID.fullmatch(result_id)
            or int(result_id) > BIGINT_MAX
        ):
            raise TaskResultDoesNotExist(f"{result_id!r:.100} is not a result id of this backend")
        try:
            # A timestamp no datetime holds (raw SQL) reads as None, not a DataError.
            job = with_safe_timestamps(Job.objects.using(self.database)).get(id=int(result_id))
        except Job.DoesNotExist:
            raise TaskResultDoesNotExist(result_id) from None
        return self.result_for(job)

    def result_for(self, job: Job, task: Task[Any, Any] | None = None) -> TaskResult[Any, Any]:
        """Build the ``TaskResult`` of a job row."""
        return self.result_from_row({name: getattr(job, name) for name in RESULT_COLUMNS}, task)

    def result_from_row(
        self, row: dict[str, Any], task: Task[Any, Any] | None = None
    ) -> TaskResult[Any, Any]:
        """Build the ``TaskResult`` of a raw ``awa_jobs`` row dict (JSON decoded), without a model instance."""
        if task is None:
            task = resolve_task(row["kind"])
            if task is None:
                raise TaskResultDoesNotExist(f"{row['id']}: {row['kind']!r} is not an importable Task")
        task = self._as_enqueued(task, row)
        # A value that could not be decoded (see db.jsonb) reads as empty here.
        args = row["args"] if isinstance(row["args"], dict) else {}
        state = row["state"]
        result: TaskResult[Any, Any] = TaskResult(
            task=task,
            id=str(row["id"]),
            status=STATUS[JobState(state)],
            enqueued_at=row["created_at"],
            started_at=row["started_at"],
            finished_at=row["finished_at"],
            last_attempted_at=row["attempted_at"],
            # Set below: normalize_json (TaskResult's own) would walk the
            # decoded JSON again in Python, seconds for a megabyte of args.
            args=[],
            kwargs={},
            backend=self.alias,
            errors=[
                TaskError(
                    exception_class_path=str(e.get("exception_class_path", "builtins.Exception")),
                    traceback=str(e.get("traceback", "")),
                )
                for e in (row["errors"] if isinstance(row["errors"], list) else [])
                if isinstance(e, dict)
            ],
            worker_ids=list(row["worker_ids"] or []),
        )
        # Decoded from jsonb: lists, dicts, strings, numbers, booleans and None
        # already, which is what normalize_json would make of them.
        object.__setattr__(result, "args", list(args.get("args", [])))
        object.__setattr__(result, "kwargs", dict(args.get("kwargs", {})))
        if state == JobState.COMPLETED:
            object.__setattr__(result, "_return_value", row["result"])
        return result

    def _as_enqueued(self, task: Task[Any, Any], row: dict[str, Any]) -> Task[Any, Any]:
        """``task`` with the ``.using()`` overrides job ``row`` was enqueued with."""
        overrides: dict[str, Any] = {}
        if row["priority"] != task.priority:
            overrides["priority"] = row["priority"]
        if row["queue"] != task.queue_name:
            overrides["queue_name"] = row["queue"]
        if task.backend != self.alias:
            overrides["backend"] = self.alias
        metadata = row["metadata"]
        run_after = metadata.get("run_after") if isinstance(metadata, dict) else None
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

    def _unlisted_limit_warnings(self) -> list[CheckMessage]:
        """W105: a ``QUEUE_LIMITS`` queue that ``QUEUES`` does not list never applies."""
        return [
            Warning(
                f"task backend {self.alias!r}: QUEUE_LIMITS queue {queue!r} is not in its QUEUES",
                hint=f"No task can use that queue, so its limits never apply: fix the name, or add it "
                f"to QUEUES ({', '.join(sorted(map(repr, self.queues)))}).",
                id="awa_django.W105",
            )
            for queue in unlisted_queues(self.options.get("QUEUE_LIMITS"), self.queues)
        ]

    def check(self, **kwargs: Any) -> list[CheckMessage]:
        """The backend's database must be PostgreSQL; MAX_ATTEMPTS must be 1-1000."""
        messages: list[CheckMessage] = list(super().check(**kwargs))
        if not apps.is_installed("awa_django"):
            # Our own checks are registered by the app: this one is the only
            # place the mistake can be reported.
            messages.append(
                Error(
                    f"task backend {self.alias!r} is an AwaBackend but 'awa_django' is not in INSTALLED_APPS",
                    hint="Add 'awa_django' to INSTALLED_APPS and run manage.py migrate.",
                    id="awa_django.E070",
                )
            )
        attempts = self._max_attempts
        if attempts is not None and (
            isinstance(attempts, bool) or not isinstance(attempts, int) or not 1 <= attempts <= 1000
        ):
            messages.append(
                Error(
                    f"task backend {self.alias!r}: OPTIONS['MAX_ATTEMPTS'] must be a whole number "
                    f"1-1000, got {attempts!r}",
                    hint="Leave it out to use AWA_MAX_ATTEMPTS (default 3).",
                    id="awa_django.E031",
                )
            )
        messages += [
            Error(
                f"task backend {self.alias!r}: OPTIONS {problem}",
                hint="e.g. {'emails': {'rate': '100/m', 'concurrency': 5}}: rate '<count>/<period>' "
                "(period s, m, h, d, or '30s'), concurrency a whole number.",
                id="awa_django.E032",
            )
            for problem in queue_limits_problems(self.options.get("QUEUE_LIMITS"))
        ]
        messages += self._unlisted_limit_warnings()
        if self.database not in connections.settings:
            messages.append(
                Error(
                    f"task backend {self.alias!r}: DATABASE {self.database!r} is not in DATABASES",
                    hint="Set OPTIONS['DATABASE'] to a PostgreSQL alias of settings.DATABASES.",
                    id="awa_django.E030",
                )
            )
        elif connections[self.database].vendor != "postgresql":
            messages.append(
                Error(
                    f"task backend {self.alias!r} needs PostgreSQL, database "
                    f"{self.database!r} is {connections[self.database].vendor}",
                    hint="awa_django stores jobs in PostgreSQL tables with triggers.",
                    id="awa_django.E030",
                )
            )
        return messages


# One INSERT for a whole batch: parallel arrays unnested in call order (the
# ids, from the identity, follow that order). Like enqueue(), "deferred" and
# run_at are decided by the database clock.
# The columns a TaskResult is built from (result_from_row).
RESULT_COLUMNS = (
    "id",
    "kind",
    "state",
    "created_at",
    "started_at",
    "finished_at",
    "attempted_at",
    "args",
    "errors",
    "worker_ids",
    "result",
    "priority",
    "queue",
    "metadata",
)

INSERT_MANY = """
    INSERT INTO awa_jobs (kind, queue, args, priority, max_attempts, metadata, state, run_at)
    SELECT u.kind, u.queue, u.args, u.priority, %s, u.metadata,
           CASE WHEN u.run_after > statement_timestamp() THEN 'scheduled' ELSE 'available' END,
           coalesce(u.run_after, statement_timestamp())
      FROM unnest(%s::text[], %s::text[], %s::jsonb[], %s::integer[], %s::jsonb[], %s::timestamptz[])
           WITH ORDINALITY AS u(kind, queue, args, priority, metadata, run_after, n)
     ORDER BY u.n
    RETURNING id, state, run_at, created_at
"""


# One job (enqueue()): the same row as INSERT_MANY's, from scalar parameters.
# Half the time of a one-element unnest, client and server.
INSERT_ONE = """
    INSERT INTO awa_jobs (kind, queue, args, priority, max_attempts, metadata, state, run_at)
    VALUES (%(kind)s, %(queue)s, %(args)s::jsonb, %(priority)s, %(max_attempts)s, %(metadata)s::jsonb,
            CASE WHEN %(run_after)s::timestamptz > statement_timestamp() THEN 'scheduled' ELSE 'available' END,
            coalesce(%(run_after)s::timestamptz, statement_timestamp()))
    RETURNING id, state, run_at, created_at
"""


def _unsaved_job(**values: Any) -> Job:
    """A ``Job`` of a new row, without ``Model.__init__`` (most of a bulk enqueue's
    time); the database-computed columns are filled in after the INSERT."""
    job = Job.__new__(Job)
    job._state = ModelState()
    job._state.adding = False
    job.__dict__.update(_NEW_JOB_DEFAULTS, errors=[], worker_ids=[], tags=[], **values)
    return job


_NEW_JOB_DEFAULTS: dict[str, Any] = {
    "id": None,
    "state": JobState.AVAILABLE,
    "attempt": 0,
    "run_at": None,
    "created_at": None,
    "attempted_at": None,
    "started_at": None,
    "finished_at": None,
    "heartbeat_at": None,
    "result": None,
}


def job_from_row(row: dict[str, Any]) -> Job:
    """An unsaved ``Job`` instance from a raw ``awa_jobs`` row dict."""
    fields = {f.attname for f in Job._meta.concrete_fields}
    return Job(**{k: v for k, v in row.items() if k in fields})


def announce_fires(rows: Iterable[dict[str, Any]], send: Callable[..., Any] | None = None) -> None:
    """Send ``task_enqueued`` for committed cron-fire job rows.

    Only jobs whose task uses an :class:`AwaBackend` are announced (another
    backend never sees these rows). Called once the fire statement has
    committed: by the leader's announcer thread (``leader.announce_each``,
    whose ``send(signal, sender, **named)`` calls the receivers one by one)
    and after an operator's trigger (``actions.schedules.trigger``).
    """
    for row in rows:
        task = resolve_task(row["kind"])
        if task is None:
            continue
        backend = task.get_backend()
        if isinstance(backend, AwaBackend):
            result = backend.result_from_row(row, task)
            if send is None:
                task_enqueued.send(type(backend), task_result=result)
            else:
                send(task_enqueued, type(backend), task_result=result)
