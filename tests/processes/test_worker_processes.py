"""Cron fires and tasks run by real ``runtasks`` processes."""

from __future__ import annotations

import signal
import time
from collections import Counter
from typing import Any

import pytest

from awa_django.models import Job
from awa_django.operations import queues
from tests.helpers.waiting import wait_for
from tests.testapp import tasks
from tests.testapp.models import Effect

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def test_end_to_end__each_slot_runs_the_function_exactly_once(runcron: Any, runtasks: Any) -> None:
    schedules = {
        "e2e": {
            "cron": "* * * * * *",
            "task": "tests.testapp.tasks.write_effect",
            "kwargs": {"label": "e2e"},
            "missed_fire_policy": "catch_up",
        }
    }
    leaders = [runcron(schedules), runcron(schedules)]
    workers = [runtasks("--concurrency", "2"), runtasks("--concurrency", "2")]
    wait_for(lambda: Effect.objects.filter(schedule="e2e").count() >= 5, timeout=60)
    for p in leaders:
        p.signal(signal.SIGTERM)
    assert [p.wait() for p in leaders] == [0, 0]
    wait_for(lambda: not Job.objects.exclude(state="completed").exists(), timeout=60)
    for p in workers:
        p.signal(signal.SIGTERM)
    assert [p.wait() for p in workers] == [0, 0]
    jobs = Job.objects.filter(metadata__cron_name="e2e")
    effects = list(Effect.objects.filter(schedule="e2e").values_list("fire_at", flat=True))
    assert len(effects) == jobs.count() == len(set(effects))  # once per slot, one run per job
    assert {j.attempt for j in jobs} == {1}


def test_sigkill_of_a_worker_mid_task__rescued_and_completed_exactly_once(runtasks: Any) -> None:
    # Long enough that the task cannot finish before the kill, however loaded the machine.
    result = tasks.slow_effect.enqueue("crash", seconds=60.0)
    first = runtasks()
    wait_for(lambda: Effect.objects.filter(label="crash", phase="started").exists(), timeout=60)
    first.kill()  # SIGKILL: no chance to report anything
    assert Job.objects.get(id=int(result.id)).state == "running"
    Job.objects.filter(id=int(result.id)).update(args={"args": ["crash"], "kwargs": {"seconds": 0}})
    second = runtasks()
    wait_for(lambda: Job.objects.get(id=int(result.id)).state == "completed", timeout=60)
    second.signal(signal.SIGTERM)
    assert second.wait() == 0
    row = Job.objects.get(id=int(result.id))
    assert row.attempt == 2 and len(row.worker_ids) == 2
    assert row.errors[0]["exception_class_path"] == "awa_django.exceptions.WorkerLost"
    phases = Counter(Effect.objects.filter(label="crash").values_list("phase", flat=True))
    assert phases == {"started": 2, "done": 1}


def test_several_workers__never_run_the_same_attempt(runtasks: Any) -> None:
    # Five rendezvous jobs first: one worker's four slots cannot take them all,
    # so at least two workers take part, however fast the first one starts.
    for _ in range(5):
        tasks.meets.enqueue("meet", 2)
    for i in range(300):
        tasks.write_effect.enqueue(f"job-{i}")
    procs = [runtasks("--burst", "--concurrency", "4") for _ in range(3)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    assert Job.objects.filter(state="completed").count() == 305
    ran = list(Effect.objects.filter(phase="done").values_list("job_id", flat=True))
    assert len(ran) == 305 and len(set(ran)) == 305
    assert set(Job.objects.values_list("attempt", flat=True)) == {1}
    assert len(set(Effect.objects.values_list("pid", flat=True))) >= 2  # the work was shared


def test_queue_pause__holds_jobs_until_resume(runtasks: Any) -> None:
    queues.pause_queue("mail", "ops")
    held = tasks.send_mail.enqueue("held@example.com")
    free = tasks.write_effect.enqueue("free")
    worker = runtasks()
    wait_for(lambda: Job.objects.get(id=int(free.id)).state == "completed", timeout=60)
    time.sleep(1.0)
    assert Job.objects.get(id=int(held.id)).state == "available"
    queues.resume_queue("mail", "ops")  # NOTIFY wakes the worker
    wait_for(lambda: Job.objects.get(id=int(held.id)).state == "completed", timeout=60)
    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0


def test_first_sigterm__lets_the_running_task_finish(runtasks: Any) -> None:
    result = tasks.slow_effect.enqueue("drain", seconds=1.5)
    worker = runtasks()
    wait_for(lambda: Effect.objects.filter(label="drain", phase="started").exists(), timeout=60)
    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0
    assert Job.objects.get(id=int(result.id)).state == "completed"
    assert "stopped after 1 completed job(s)" in worker.output()


def test_second_sigterm__exits_at_once(runtasks: Any) -> None:
    result = tasks.slow_effect.enqueue("abandon", seconds=30)
    worker = runtasks()
    wait_for(lambda: Effect.objects.filter(label="abandon", phase="started").exists(), timeout=60)
    worker.signal(signal.SIGTERM)
    wait_for(lambda: f"signal {int(signal.SIGTERM)}:" in worker.output(), timeout=60)  # first one handled
    assert worker.proc.poll() is None  # draining
    worker.signal(signal.SIGTERM)
    assert worker.wait(timeout=60) == 1
    assert Job.objects.get(id=int(result.id)).state == "running"  # left for rescue


def test_retries_then_failed_in_a_real_worker(runtasks: Any) -> None:
    result = tasks.always_fails.enqueue("proc-boom")
    worker = runtasks()
    wait_for(lambda: Job.objects.get(id=int(result.id)).state == "failed", timeout=60)
    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0
    assert Effect.objects.filter(label="proc-boom").count() == 3


def test_shutdown_timeout__bounds_the_drain_and_abandoned_work_is_rescued(runtasks: Any) -> None:
    result = tasks.slow_effect.enqueue("overrun", seconds=30)
    worker = runtasks(env={"AWA_SHUTDOWN_TIMEOUT": "1"})
    wait_for(lambda: Effect.objects.filter(label="overrun", phase="started").exists(), timeout=60)
    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0
    # The timeout bounded the drain: the worker left the 30 s task running
    # instead of waiting for it (no duration is measured).
    assert "abandoning 1 running task(s)" in worker.output()
    assert Job.objects.get(id=int(result.id)).state == "running"
    assert not Effect.objects.filter(label="overrun", phase="done").exists()
    Job.objects.filter(id=int(result.id)).update(max_attempts=2)
    Job.objects.filter(id=int(result.id)).update(args={"args": ["overrun"], "kwargs": {"seconds": 0}})
    rescuer = runtasks()
    wait_for(lambda: Job.objects.get(id=int(result.id)).state == "completed", timeout=60)
    rescuer.signal(signal.SIGTERM)
    assert rescuer.wait() == 0
    assert Job.objects.get(id=int(result.id)).attempt == 2


def test_notify__wakes_an_idle_worker_long_before_its_poll(runtasks: Any) -> None:
    # Polling every hour: within the 60 s deadlines below only NOTIFY can wake it.
    worker = runtasks(env={"AWA_POLL_INTERVAL": "3600"})
    wait_for(lambda: "started" in worker.output(), timeout=60)
    time.sleep(1.0)  # the worker is now idle in its wait
    first = tasks.write_effect.enqueue("wake")
    wait_for(lambda: Job.objects.get(id=int(first.id)).state == "completed", timeout=60)
    queues.pause_queue("mail", "ops")
    held = tasks.send_mail.enqueue("later@example.com")
    time.sleep(1.0)
    assert Job.objects.get(id=int(held.id)).state == "available"
    queues.resume_queue("mail", "ops")  # awa_queue_meta NOTIFY
    wait_for(lambda: Job.objects.get(id=int(held.id)).state == "completed", timeout=60)
    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0
