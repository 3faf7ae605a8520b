"""``runtasks`` exit status after failures, --max-tasks, --worker-id, AWA_TASK_TIMEOUT."""

from __future__ import annotations

from typing import Any

import pytest
from django.test.utils import override_settings

from awa_django.models import Job
from awa_django.worker.loop import Worker
from tests.helpers.waiting import wait_for
from tests.testapp import tasks
from tests.testapp.models import Effect

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.slow
def test_runtasks_burst__exits_0_after_tasks_fail_with_system_exit_and_keyboard_interrupt(
    runtasks: Any,
) -> None:
    exited = tasks.raises_base_exception.enqueue("system_exit")
    interrupted = tasks.raises_base_exception.enqueue("keyboard_interrupt")
    fine = tasks.write_effect.enqueue("fine")
    Job.objects.filter(id__in=[int(exited.id), int(interrupted.id)]).update(max_attempts=1)
    worker = runtasks("--burst")
    assert worker.wait(timeout=60) == 0
    states = {int(j.id): j.state for j in Job.objects.all()}
    assert states == {int(exited.id): "failed", int(interrupted.id): "failed", int(fine.id): "completed"}
    out = worker.output()
    assert "stopped after 1 completed job(s), 2 failed attempt(s)" in out
    assert "builtins.SystemExit" in out and "builtins.KeyboardInterrupt" in out


@pytest.mark.slow
def test_runtasks__max_tasks_and_worker_id(runtasks: Any) -> None:
    for i in range(3):
        tasks.write_effect.enqueue(f"job-{i}")
    worker = runtasks("--max-tasks", "2", "--worker-id", "ops-box-1")
    assert worker.wait(timeout=60) == 0
    assert Job.objects.filter(state="completed").count() == 2
    assert Job.objects.filter(state="available").count() == 1
    assert {tuple(j.worker_ids) for j in Job.objects.filter(state="completed")} == {("ops-box-1",)}


@pytest.mark.slow
def test_runtasks__invalid_worker_id_is_a_usage_error(runtasks: Any) -> None:
    worker = runtasks("--worker-id", " ")
    assert worker.wait(timeout=60) == 2
    assert "worker id" in worker.output()


def test_worker__max_tasks_bounds_the_claims() -> None:
    for i in range(3):
        tasks.write_effect.enqueue(f"m-{i}")
    worker = Worker(max_tasks=2, concurrency=4)
    worker.run()  # returns once its 2 jobs finished, without --burst
    assert worker.claimed_total == 2 and worker.completed == 2
    assert Job.objects.filter(state="available").count() == 1


@override_settings(AWA_TASK_TIMEOUT=0.5, AWA_POLL_INTERVAL=0.05)
def test_worker__task_timeout_fails_the_attempt_and_frees_the_slot() -> None:
    tasks.GATE.clear()  # the overdue task runs until the test lets it finish
    slow = tasks.gated.enqueue("overdue")
    Job.objects.filter(id=int(slow.id)).update(max_attempts=1)
    quick = tasks.write_effect.using(priority=-10).enqueue("next")  # claimed after the slow one
    worker = Worker(burst=True, concurrency=1)
    try:
        worker.run()
        row = Job.objects.get(id=int(slow.id))
        assert row.state == "failed"
        assert row.errors[0]["exception_class_path"] == "awa_django.exceptions.TaskTimeout"
        assert "AWA_TASK_TIMEOUT" in row.errors[0]["traceback"]
        # The one slot was freed: the next job ran while the overdue task still ran.
        assert Job.objects.get(id=int(quick.id)).state == "completed"
        assert not Effect.objects.filter(label="overdue", phase="done").exists()
    finally:
        tasks.GATE.set()
    # The abandoned thread finishes later; its report is ignored (the attempt is over).
    wait_for(lambda: Effect.objects.filter(label="overdue", phase="done").exists(), timeout=60)
    assert Job.objects.get(id=int(slow.id)).state == "failed"


def test_worker__task_timeout_is_off_by_default() -> None:
    from awa_django.conf import conf

    assert conf.TASK_TIMEOUT is None
    result = tasks.sleeps.enqueue(0.3, "in-time")
    Worker(burst=True).run()
    assert Job.objects.get(id=int(result.id)).state == "completed"
