"""Prometheus metrics: database gauges, process counters, scraped over real HTTP."""

from __future__ import annotations

import signal
import socket
import urllib.request
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.db.models import Count
from django.test import RequestFactory
from django.utils import timezone
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from awa_django import metrics, operations
from awa_django.models import CronJob, Job
from tests.conftest import operator_context, wait_for
from tests.factories import CronJobFactory, JobFactory

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def parse(text: str) -> Samples:
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def scrape(port: int) -> Samples:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as response:
        assert response.status == 200
        return parse(response.read().decode())


def scrape_until(port: int, ready: Any, timeout: float = 30) -> Samples:
    """Scrape until ``ready(samples)``: a counter moves just after the row it counts commits."""
    found: list[Samples] = []

    def attempt() -> bool:
        found[:] = [scrape(port)]
        return bool(ready(found[0]))

    wait_for(attempt, timeout=timeout, interval=0.2)
    return found[0]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def jobs_by_queue_and_state() -> dict[tuple[str, str], int]:
    rows = Job.objects.values("queue", "state").annotate(n=Count("id"))
    return {(r["queue"], r["state"]): r["n"] for r in rows}


@pytest.mark.django_db
def test_database_gauges__match_the_tables() -> None:
    JobFactory.create_batch(3, queue="default", state="available")
    JobFactory.create_batch(2, queue="mail", state="completed", finished_at=timezone.now())
    JobFactory(queue="mail", state="failed", finished_at=timezone.now())
    now = timezone.now()
    with operator_context():
        CronJobFactory(name="due")
        CronJobFactory(name="paused", paused_at=now)
        CronJobFactory(name="retired", retired_at=now)
        CronJobFactory(name="future")
        CronJobFactory(name="parked")
    with connection.cursor() as cursor:
        cursor.execute("UPDATE awa_cron_jobs SET next_fire_at = %s WHERE name = 'due'", [now - timedelta(seconds=90)])
        cursor.execute("UPDATE awa_cron_jobs SET next_fire_at = %s WHERE name = 'future'", [now + timedelta(hours=1)])
        cursor.execute("UPDATE awa_cron_jobs SET next_fire_at = '9999-12-31T00:00:00+00:00' WHERE name = 'parked'")
    samples = parse(generate_latest(metrics.REGISTRY).decode())
    assert value(samples, "awa_metrics_database_up") == 1
    expected = jobs_by_queue_and_state()
    exported = {(dict(k[1])["queue"], dict(k[1])["state"]): v for k, v in samples.items() if k[0] == "awa_jobs"}
    assert exported == expected == {("default", "available"): 3, ("mail", "completed"): 2, ("mail", "failed"): 1}
    assert value(samples, "awa_cron_schedules", state="active") == CronJob.objects.filter(
        paused_at=None, retired_at=None).count() == 3
    assert value(samples, "awa_cron_schedules", state="paused") == 1
    assert value(samples, "awa_cron_schedules", state="retired") == 1
    assert value(samples, "awa_cron_due_backlog") == 1
    assert value(samples, "awa_cron_due_backlog_age_seconds") >= 90
    assert value(samples, "awa_cron_parked_schedules") == 1


@pytest.mark.django_db
def test_database_gauges__a_failing_query_reports_database_down_not_an_error() -> None:
    collector = metrics.DatabaseCollector(using="default")
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE awa_jobs RENAME TO awa_jobs_hidden")
    try:
        families = list(collector.collect())
    finally:
        with connection.cursor() as cursor:
            cursor.execute("ALTER TABLE awa_jobs_hidden RENAME TO awa_jobs")
    assert [f.name for f in families] == ["awa_metrics_database_up"]
    assert families[0].samples[0].value == 0


@pytest.mark.django_db
def test_metrics_view__serves_the_registry_to_the_web_process() -> None:
    JobFactory.create_batch(2, queue="reports", state="available")
    response = metrics.metrics_view(RequestFactory().get("/metrics"))
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    samples = parse(response.content.decode())
    assert value(samples, "awa_jobs", queue="reports", state="available") == 2


def test_runcron__metrics_port_rejects_a_bad_port() -> None:
    from django.core.management import call_command
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="a port is 1-65535"):
        call_command("runcron", "--metrics-port", "70000")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_metrics__scraped_from_runcron_and_runtasks_match_the_database(runcron: Any, runtasks: Any) -> None:
    # A stale running attempt for the worker to rescue.
    JobFactory(state="running", attempt=1, max_attempts=3, worker_ids=["dead:1:x"],
               attempted_at=timezone.now() - timedelta(minutes=5),
               heartbeat_at=timezone.now() - timedelta(minutes=5))
    schedules = {
        "m-tick": {"cron": "* * * * * *", "task": "tests.testapp.tasks.record"},
        "m-fail": {"cron": "* * * * * *", "task": "tests.testapp.tasks.always_fails", "max_attempts": 2},
    }
    cron_port, tasks_port = free_port(), free_port()
    cron = runcron(schedules, "--metrics-port", str(cron_port), "--metrics-host", "127.0.0.1")
    tasks = runtasks("--concurrency", "2", "--metrics-port", str(tasks_port), "--metrics-host", "127.0.0.1")
    wait_for(lambda: Job.objects.filter(metadata__cron_name="m-fail", state="failed").count() >= 2, timeout=60)
    wait_for(lambda: Job.objects.filter(metadata__cron_name="m-tick", state="completed").count() >= 3, timeout=60)
    for name in schedules:
        operations.pause(name, "test")
    # Quiescence: nothing left to run (retries have a short backoff in tests).
    wait_for(lambda: not Job.objects.exclude(state__in=["completed", "failed"]).exists(), timeout=60)

    fired = Counter(Job.objects.filter(metadata__has_key="cron_fire_at").values_list("metadata__cron_name", flat=True))
    cron_samples = scrape_until(cron_port, lambda s: value(s, "awa_cron_fire_lateness_seconds_count")
                                == sum(fired.values()))
    for name in schedules:
        assert value(cron_samples, "awa_cron_fires_total", schedule=name) == fired[name] > 0
    assert value(cron_samples, "awa_cron_fire_lateness_seconds_count") == sum(fired.values())
    assert value(cron_samples, "awa_cron_pass_duration_seconds_count") >= 1
    assert value(cron_samples, "awa_cron_passes_total", outcome="ok") >= 1
    assert value(cron_samples, "awa_cron_leader") == 1

    jobs = list(Job.objects.all())
    tasks_samples = scrape_until(tasks_port, lambda s: sum(v for k, v in s.items() if k[0] == "awa_jobs_finished_total")
                                 == sum(j.attempt for j in jobs) - 1)
    attempts = sum(j.attempt for j in jobs) - 1  # the rescued job's first attempt was the dead worker's
    failed = [j for j in jobs if j.state == "failed"]
    completed = [j for j in jobs if j.state == "completed"]
    assert value(tasks_samples, "awa_jobs_claimed_total", queue="default") == attempts
    assert value(tasks_samples, "awa_jobs_finished_total", queue="default", outcome="completed") == len(completed)
    assert value(tasks_samples, "awa_jobs_finished_total", queue="default", outcome="failed") == len(failed)
    # Every failed job used 2 attempts: the first was retried.
    assert value(tasks_samples, "awa_jobs_finished_total", queue="default", outcome="retryable") == len(failed)
    assert value(tasks_samples, "awa_jobs_rescued_total", state="retryable") == 1
    assert value(tasks_samples, "awa_worker_slots") == 2
    assert value(tasks_samples, "awa_worker_busy_slots") == 0
    for samples in (cron_samples, tasks_samples):
        exported = {(dict(k[1])["queue"], dict(k[1])["state"]): v
                    for k, v in samples.items() if k[0] == "awa_jobs"}
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
    assert cron.wait(timeout=30) == 0 and tasks.wait(timeout=30) == 0
