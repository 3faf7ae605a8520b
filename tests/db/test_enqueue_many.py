"""``enqueue()`` in one statement and ``AwaBackend.enqueue_many``."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from awa_django.client.backend import AwaBackend
from awa_django.client.compat import task_backends, task_enqueued
from awa_django.models import Job, JobState
from tests.testapp.backend_tasks import echo, report

pytestmark = pytest.mark.django_db


def backend() -> AwaBackend:
    backend = task_backends["default"]
    assert isinstance(backend, AwaBackend)
    return backend


def test_enqueue__is_one_statement_with_the_database_computed_columns() -> None:
    with CaptureQueriesContext(connection) as queries:
        result = echo.enqueue(1, a=2)
    assert len(queries.captured_queries) == 1, [q["sql"] for q in queries.captured_queries]
    job = Job.objects.get(id=int(result.id))
    assert result.enqueued_at == job.created_at and job.state == JobState.AVAILABLE


def test_enqueue_many__inserts_every_call_in_one_statement() -> None:
    later = timezone.now() + timedelta(hours=1)
    calls: list[tuple[Any, Any, Any]] = [
        (echo, (1,), {"k": "v"}),
        (report, ("r",), {}),
        (echo.using(run_after=later), (), {}),
    ]
    with CaptureQueriesContext(connection) as queries:
        results = backend().enqueue_many(calls)
    assert len(queries.captured_queries) == 1
    jobs = {str(j.id): j for j in Job.objects.all()}
    assert [r.id for r in results] == sorted(jobs, key=int)
    first, second, third = (jobs[r.id] for r in results)
    assert first.args == {"args": [1], "kwargs": {"k": "v"}} and first.state == JobState.AVAILABLE
    assert second.queue == "reports" and second.priority == -7
    assert third.state == JobState.SCHEDULED and third.run_at == later
    assert results[0].enqueued_at == first.created_at


def test_enqueue_many__one_bad_call_inserts_nothing() -> None:
    with pytest.raises(TypeError):
        backend().enqueue_many([(echo, (1,), {}), (echo, (object(),), {})])
    assert Job.objects.count() == 0


def test_enqueue_many__nothing_to_enqueue_is_no_statement() -> None:
    with CaptureQueriesContext(connection) as queries:
        assert backend().enqueue_many([]) == []
    assert queries.captured_queries == []


def test_enqueue_many__task_enqueued_is_sent_for_each_on_commit(
    django_capture_on_commit_callbacks: Any,
) -> None:
    sent: list[str] = []

    def receiver(sender: Any, task_result: Any, **kwargs: Any) -> None:
        sent.append(task_result.id)

    task_enqueued.connect(receiver)
    try:
        with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
            results = backend().enqueue_many([(echo, (), {}), (echo, (2,), {})])
            assert sent == []
    finally:
        task_enqueued.disconnect(receiver)
    assert sent == [r.id for r in results]


ROW_FIELDS = ("kind", "queue", "args", "priority", "max_attempts", "metadata", "state", "attempt")


@pytest.mark.parametrize("run_after", [None, "past", "future"])
def test_enqueue__one_call_stores_the_row_enqueue_many_stores(run_after: str | None) -> None:
    # enqueue() has its own single-row INSERT; the rows must not differ.
    now = timezone.now()
    when = {None: None, "past": now - timedelta(hours=1), "future": now + timedelta(hours=1)}[run_after]
    task = echo.using(run_after=when) if when is not None else echo
    single = Job.objects.get(id=int(task.enqueue(1, a=[2, "x"]).id))
    bulk = Job.objects.get(id=int(backend().enqueue_many([(task, (1,), {"a": [2, "x"]})])[0].id))
    assert [getattr(single, f) for f in ROW_FIELDS] == [getattr(bulk, f) for f in ROW_FIELDS]
    expected_state = JobState.SCHEDULED if run_after == "future" else JobState.AVAILABLE
    assert single.state == expected_state
    if when is None:
        assert single.run_at == single.created_at
    else:
        assert single.run_at == bulk.run_at == when
