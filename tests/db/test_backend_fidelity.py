"""TaskResult and get_result follow django.tasks' documented meaning."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import IntegrityError, connection, transaction
from django.test.utils import modify_settings, override_settings
from django.utils import timezone

from awa_django.client.compat import TaskResultStatus, task_backends
from awa_django.models import Job
from awa_django.worker.loop import Worker
from tests.testapp import tasks
from tests.testapp.backend_tasks import report

pytestmark = pytest.mark.django_db(transaction=True)

TWO_BACKENDS = {
    "default": {"BACKEND": "awa_django.client.backend.AwaBackend", "QUEUES": ["default", "mail", "reports"]},
    "other": {"BACKEND": "awa_django.client.backend.AwaBackend", "QUEUES": ["default", "mail", "reports"]},
}


def test_get_result__task_keeps_the_using_overrides() -> None:
    run_after = timezone.now() + timedelta(hours=1)
    modified = report.using(priority=42, queue_name="mail", run_after=run_after)
    result = modified.enqueue("x")
    fetched = report.get_backend().get_result(result.id)
    assert fetched.task.priority == 42 and fetched.task.queue_name == "mail"
    assert fetched.task.run_after == run_after
    assert fetched.task == result.task
    plain = report.get_backend().get_result(report.enqueue("y").id)
    assert plain.task == report  # no overrides: the declared task itself


@override_settings(TASKS=TWO_BACKENDS)
def test_get_result__task_keeps_the_backend_override() -> None:
    result = tasks.write_effect.using(backend="other").enqueue("b")
    fetched = task_backends["other"].get_result(result.id)
    assert fetched.task.backend == "other" and fetched.backend == "other"


def test_get_result__run_after_survives_a_retry() -> None:
    run_after = timezone.now() - timedelta(seconds=1)
    result = tasks.always_fails.using(run_after=run_after).enqueue("r")
    worker = Worker()
    (row,) = worker.claim(1)
    with override_settings(AWA_RETRY_BACKOFF=3600):
        worker.execute(row)
    fetched = tasks.always_fails.get_backend().get_result(result.id)
    assert fetched.task.run_after == run_after  # run_at moved, the override did not


@override_settings(AWA_RETRY_BACKOFF=0.0)
def test_task_result__started_at_is_the_first_attempt_last_attempted_at_the_latest() -> None:
    result = tasks.always_fails.enqueue("twice")
    worker = Worker()
    (first,) = worker.claim(1)
    worker.execute(first)
    (second,) = worker.claim(1)
    assert second.attempt == 2
    fetched = tasks.always_fails.get_backend().get_result(result.id)
    assert fetched.started_at == first.attempted_at
    assert fetched.last_attempted_at == second.attempted_at > first.attempted_at
    assert fetched.worker_ids == [worker.worker_id, worker.worker_id] and fetched.attempts == 2
    assert fetched.status == TaskResultStatus.RUNNING
    assert len(fetched.errors) == 1 and "Traceback" in fetched.errors[0].traceback


def test_task_result__started_at_forgotten_when_the_only_attempt_is_handed_back() -> None:
    ghost = Job.objects.create(kind="tests.testapp.not_deployed_here.task", args={"args": [], "kwargs": {}})
    worker = Worker()
    (row,) = worker.claim(1)
    assert Job.objects.get(id=ghost.id).started_at is not None
    worker.execute(row)
    assert Job.objects.get(id=ghost.id).started_at is None


def test_task_result__never_started_has_no_start_times() -> None:
    result = tasks.write_effect.enqueue("waiting")
    fetched = tasks.write_effect.get_result(result.id)
    assert (fetched.started_at, fetched.last_attempted_at, fetched.finished_at) == (None, None, None)
    assert fetched.worker_ids == [] and fetched.errors == []


@pytest.mark.parametrize("priority", [-101, 101, 10_000])
def test_jobs_table__priority_outside_djangos_range_is_refused(priority: int) -> None:
    with pytest.raises(IntegrityError, match="awa_jobs_priority_check"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("INSERT INTO awa_jobs (kind, priority) VALUES ('x.y', %s)", [priority])


def test_jobs_table__priority_bounds_are_accepted() -> None:
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO awa_jobs (kind, priority) VALUES ('x.y', -100), ('x.y', 100)")
    assert Job.objects.count() == 2


def test_backend_check__awa_django_missing_from_installed_apps_is_e070() -> None:
    with modify_settings(INSTALLED_APPS={"remove": ["awa_django"]}):
        messages = task_backends["default"].check()
    assert [m.id for m in messages] == ["awa_django.E070"]
    assert "INSTALLED_APPS" in messages[0].msg and len(messages[0].msg) < 120


def test_backend_check__clean_when_installed() -> None:
    assert [m.id for m in task_backends["default"].check()] == []
