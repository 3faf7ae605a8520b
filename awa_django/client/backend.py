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

import re
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from django.apps import apps
from django.core.checks import CheckMessage, Error, Warning
from django.db import connections, transaction

from ..conf import conf
from ..store import jobs
from ..store.job_rows import JobRow
from ..validation import queue_problem, run_after_problem
from . import tracing
from .compat import (
    BaseTaskBackend,
    InvalidTask,
    Task,
    TaskResult,
    TaskResultDoesNotExist,
    task_enqueued,
)
from .limits import claim_limits, queue_limits_problems, unlisted_queues
from .paths import require_runnable_here, resolve_task
from .payloads import call_parts, checked_payload, enqueue_calls, naming_call
from .results import to_task_result

# A result id: a job id (bigint identity) in canonical decimal form.
RESULT_ID = re.compile(r"[1-9][0-9]{0,18}")
BIGINT_MAX = 2**63 - 1


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
        any it can store (:func:`~awa_django.validation.queue_problem`).
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
        new: list[jobs.NewJob] = []
        payloads: list[Any] = []  # each call's args as JSON values (any JSON value)
        for index, call in enumerate(calls, 1):
            with naming_call(index, len(calls), call):
                task, args, kwargs = call_parts(call, self.alias)
                if id(task) not in checked:
                    self.validate_task(task)
                    require_runnable_here(task)
                    checked.add(id(task))
                payload, text = checked_payload(args, kwargs)
            run_after = task.run_after
            metadata = {"run_after": run_after.isoformat()} if run_after is not None else {}
            new.append(
                jobs.NewJob(task.module_path, task.queue_name, text, task.priority, metadata, run_after)
            )
            payloads.append(payload)
        tracing.stamp_jobs(job.metadata for job in new)
        with connections[self.database].cursor() as cursor:
            inserted = jobs.insert(cursor, new, self.max_attempts)
        if len(inserted) != len(new):  # pragma: no cover - the INSERT has no WHERE
            raise RuntimeError(f"{len(inserted)} rows inserted for {len(new)} jobs")
        results = [
            to_task_result(_new_row(job, payload, self.max_attempts, done), self.alias, task)
            for (task, _, _), job, payload, done in zip(calls, new, payloads, inserted, strict=True)
        ]
        self.announce(results)
        return results

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
        with connections[self.database].cursor() as cursor:
            # A timestamp no datetime holds (raw SQL) reads as None, not a DataError.
            row = jobs.fetch_result(cursor, int(result_id))
        if row is None:
            raise TaskResultDoesNotExist(result_id)
        return to_task_result(row, self.alias)

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


# ``payload``: the call's args, any JSON value.
def _new_row(job: jobs.NewJob, payload: Any, max_attempts: int, done: jobs.Inserted) -> JobRow:
    """The row of a job just inserted, as the database holds it (``payload``:
    its args as JSON values), without reading it back."""
    return JobRow(
        id=done.id,
        state=done.state,
        kind=job.kind,
        queue=job.queue,
        args=payload,
        priority=job.priority,
        max_attempts=max_attempts,
        run_at=done.run_at,
        created_at=done.created_at,
        metadata=job.metadata,
    )


# ``rows``: the fire statement's job rows as the leader keeps them (dicts of
# store.job_rows.job_row, args decoded); ``send``: the announcer's signal sender.
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
            result = to_task_result(JobRow.from_dict(row), backend.alias, task)
            if send is None:
                task_enqueued.send(type(backend), task_result=result)
            else:
                send(task_enqueued, type(backend), task_result=result)
