"""Logs and metrics of real ``runcron`` and ``runtasks`` processes."""

from __future__ import annotations

import json
import signal
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from awa_django.models import Job, RuntimeInstance
from awa_django.operations import schedules as operations
from tests.factories import JobFactory
from tests.helpers.metrics import jobs_by_queue_and_state, scrape, scrape_until, value
from tests.helpers.servers import free_port
from tests.helpers.waiting import wait_for


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_json_logs__follow_one_fire_from_slot_to_completion(runcron: Any, runtasks: Any) -> None:
    env = {"AWA_JSON_LOGS": "1", "AWA_LOG_LEVEL": "INFO"}
    cron = runcron(
        {"json-tick": {"cron": "* * * * * *", "task": "tests.testapp.tasks.logs_progress"}}, env=env
    )
    tasks = runtasks(env=env)
    wait_for(
        lambda: Job.objects.filter(metadata__cron_name="json-tick", state="completed").count() >= 2,
        timeout=60,
    )
    for proc in (cron, tasks):
        proc.signal(signal.SIGTERM)
    assert cron.wait() == 0 and tasks.wait() == 0

    def json_lines(text: str) -> list[dict[str, Any]]:
        return [json.loads(line) for line in text.splitlines() if line.startswith("{")]

    cron_lines, task_lines = json_lines(cron.output()), json_lines(tasks.output())
    # Every line is JSON, the commands' start and stop lines included.
    for proc in (cron, tasks):
        for line in proc.output().splitlines():
            assert line.startswith("{"), line
    for line in cron_lines + task_lines:
        if line["logger"].startswith("awa_django"):
            assert line.get("event"), line
    instances = {str(r.instance_id): r.role for r in RuntimeInstance.objects.all()}
    # The start line comes before the process has a runtime row (and an instance_id).
    started = ("runcron.started", "runtasks.started")
    assert {line.get("instance_id") for line in cron_lines if line.get("event") not in started} <= {
        i for i, r in instances.items() if r == "runcron"
    }
    assert {line.get("instance_id") for line in task_lines if line.get("event") not in started} <= {
        i for i, r in instances.items() if r == "runtasks"
    }

    job = Job.objects.filter(metadata__cron_name="json-tick", state="completed").order_by("id").first()
    assert job is not None
    fired = [line for line in cron_lines if line.get("event") == "cron.fired" and line["job_id"] == job.id]
    assert len(fired) == 1
    assert fired[0]["schedule"] == "json-tick" and fired[0]["fire_at"] == job.metadata["cron_fire_at"]
    in_task = [
        line for line in task_lines if line.get("event") == "test.task_log" and line["job_id"] == job.id
    ]
    assert len(in_task) == 1
    assert in_task[0]["schedule"] == "json-tick" and in_task[0]["fire_at"] == job.metadata["cron_fire_at"]
    completed = [
        line for line in task_lines if line.get("event") == "job.completed" and line["job_id"] == job.id
    ]
    assert len(completed) == 1 and instances[completed[0]["instance_id"]] == "runtasks"


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_metrics__scraped_from_runcron_and_runtasks_match_the_database(runcron: Any, runtasks: Any) -> None:
    # A stale running attempt for the worker to rescue.
    JobFactory(
        state="running",
        attempt=1,
        max_attempts=3,
        worker_ids=["dead:1:x"],
        attempted_at=timezone.now() - timedelta(minutes=5),
        heartbeat_at=timezone.now() - timedelta(minutes=5),
    )
    schedules = {
        "m-tick": {"cron": "* * * * * *", "task": "tests.testapp.tasks.record"},
        "m-fail": {"cron": "* * * * * *", "task": "tests.testapp.tasks.always_fails", "max_attempts": 2},
    }
    cron_port, tasks_port = free_port(), free_port()
    cron = runcron(schedules, "--metrics-port", str(cron_port), "--metrics-host", "127.0.0.1")
    tasks = runtasks("--concurrency", "2", "--metrics-port", str(tasks_port), "--metrics-host", "127.0.0.1")
    wait_for(
        lambda: Job.objects.filter(metadata__cron_name="m-fail", state="failed").count() >= 2, timeout=60
    )
    wait_for(
        lambda: Job.objects.filter(metadata__cron_name="m-tick", state="completed").count() >= 3, timeout=60
    )
    for name in schedules:
        operations.pause(name, "test")
    # Quiescence: nothing left to run (retries have a short backoff in tests).
    wait_for(lambda: not Job.objects.exclude(state__in=["completed", "failed"]).exists(), timeout=60)

    fired = Counter(
        Job.objects.filter(metadata__has_key="cron_fire_at").values_list("metadata__cron_name", flat=True)
    )
    cron_samples = scrape_until(
        cron_port, lambda s: value(s, "awa_cron_fire_lateness_seconds_count") == sum(fired.values())
    )
    for name in schedules:
        assert value(cron_samples, "awa_cron_fires_total", schedule=name) == fired[name] > 0
    assert value(cron_samples, "awa_cron_fire_lateness_seconds_count") == sum(fired.values())
    assert value(cron_samples, "awa_cron_pass_duration_seconds_count") >= 1
    assert value(cron_samples, "awa_cron_passes_total", outcome="ok") >= 1
    assert value(cron_samples, "awa_cron_leader") == 1

    jobs = list(Job.objects.all())
    tasks_samples = scrape_until(
        tasks_port,
        lambda s: (
            sum(v for k, v in s.items() if k[0] == "awa_jobs_finished_total")
            == sum(j.attempt for j in jobs) - 1
        ),
    )
    attempts = sum(j.attempt for j in jobs) - 1  # the rescued job's first attempt was the dead worker's
    failed = [j for j in jobs if j.state == "failed"]
    completed = [j for j in jobs if j.state == "completed"]
    assert value(tasks_samples, "awa_jobs_claimed_total", queue="default") == attempts
    assert value(tasks_samples, "awa_jobs_finished_total", queue="default", outcome="completed") == len(
        completed
    )
    assert value(tasks_samples, "awa_jobs_finished_total", queue="default", outcome="failed") == len(failed)
    # Every failed job used 2 attempts: the first was retried.
    assert value(tasks_samples, "awa_jobs_finished_total", queue="default", outcome="retryable") == len(
        failed
    )
    assert value(tasks_samples, "awa_jobs_rescued_total", state="retryable") == 1
    assert value(tasks_samples, "awa_worker_slots") == 2
    assert value(tasks_samples, "awa_worker_busy_slots") == 0
    for samples in (cron_samples, tasks_samples):
        exported = {
            (dict(k[1])["queue"], dict(k[1])["state"]): v for k, v in samples.items() if k[0] == "awa_jobs"
        }
        assert exported == jobs_by_queue_and_state()
        assert value(samples, "awa_runtime_instances", role="runcron") == 1
        assert value(samples, "awa_runtime_instances", role="runtasks") == 1

    # Busy slots while a task runs.
    from tests.testapp.models import Effect
    from tests.testapp.tasks import slow_effect

    slow_effect.enqueue(label="busy", seconds=4)
    wait_for(lambda: Effect.objects.filter(label="busy", phase="started").exists(), timeout=60)
    assert value(scrape(tasks_port), "awa_worker_busy_slots") == 1

    for proc in (cron, tasks):
        proc.signal(signal.SIGTERM)
    assert cron.wait() == 0 and tasks.wait() == 0
