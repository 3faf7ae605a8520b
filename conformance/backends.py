"""The AwaBackend that stands in for Django's ``ImmediateBackend`` in the tests.

``ImmediateBackend`` runs a task inside ``enqueue()``. Here ``enqueue()``
inserts the row like AwaBackend always does, then hands exactly that row to
the real worker code (``Worker.execute``: the one that records outcomes), and
returns the stored result. What Django's tests then check is what
``runtasks`` records.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.db import connections

from awa_django.client.backend import AwaBackend
from awa_django.client.compat import Task, TaskResult
from awa_django.store.job_rows import JobRow
from awa_django.worker.loop import Worker

# One claim of one job by id, like awa_claim_v1 for a single row: a test must
# not run another test's leftover jobs.
CLAIM_ONE = """
    UPDATE awa_jobs
       SET state = 'running', attempt = attempt + 1, attempted_at = clock_timestamp(),
           heartbeat_at = clock_timestamp(), worker_ids = array_append(worker_ids, %s)
     WHERE id = %s AND state IN ('available', 'scheduled', 'retryable')
    RETURNING *
"""


class ImmediateAwaBackend(AwaBackend):
    """AwaBackend whose ``enqueue()`` also runs the job through the worker at once."""

    @property
    def max_attempts(self) -> int:
        """One attempt: like ImmediateBackend, a failure is final."""
        return 1

    def enqueue(self, task: Task[Any, Any], args: Any, kwargs: Any) -> TaskResult[Any, Any]:
        result = super().enqueue(task, args, kwargs)
        worker = Worker(backend=self.alias, worker_id=f"conformance-{self.alias}")
        with connections[self.database].cursor() as cursor:
            cursor.execute(CLAIM_ONE, [worker.worker_id, int(result.id)])
            columns = [c.name for c in cursor.description]
            rows = [JobRow.from_row(columns, r) for r in cursor.fetchall()]
        for row in rows:
            worker.execute(row)
        fresh = self.get_result(result.id)
        return fresh


class RecordingAwaBackend(AwaBackend):
    """AwaBackend with the inspection helpers Django's tests use on ``DummyBackend``.

    ``results`` reads every job enqueued through this backend back from the
    database (so tests compare what AwaBackend stored, not a copy in memory);
    ``clear()`` deletes those jobs.
    """

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        super().__init__(alias, params)
        self._ids: list[str] = []

    def enqueue(self, task: Task[Any, Any], args: Any, kwargs: Any) -> TaskResult[Any, Any]:
        result = super().enqueue(task, args, kwargs)
        self._ids.append(result.id)
        return result

    @property
    def results(self) -> list[TaskResult[Any, Any]]:
        ids = list(self._ids)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return [self.get_result(result_id) for result_id in ids]
        # Read from an async test: query from a thread (the rows are committed).
        with ThreadPoolExecutor(1) as pool:
            return pool.submit(lambda: [self.get_result(result_id) for result_id in ids]).result()

    def clear(self) -> None:
        from awa_django.models import Job

        Job.objects.using(self.database).filter(id__in=[int(i) for i in self._ids]).delete()
        self._ids.clear()
