"""Prometheus metrics: database gauges, process counters, scraped over real HTTP."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test import RequestFactory
from django.utils import timezone
from prometheus_client import generate_latest

from awa_django import metrics
from awa_django.models import CronJob
from tests.factories import CronJobFactory, JobFactory
from tests.helpers.database import operator_context
from tests.helpers.metrics import jobs_by_queue_and_state, parse, value


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
        cursor.execute(
            "UPDATE awa_cron_jobs SET next_fire_at = %s WHERE name = 'due'", [now - timedelta(seconds=90)]
        )
        cursor.execute(
            "UPDATE awa_cron_jobs SET next_fire_at = %s WHERE name = 'future'", [now + timedelta(hours=1)]
        )
        cursor.execute(
            "UPDATE awa_cron_jobs SET next_fire_at = '9999-12-31T00:00:00+00:00' WHERE name = 'parked'"
        )
    samples = parse(generate_latest(metrics.REGISTRY).decode())
    assert value(samples, "awa_metrics_database_up") == 1
    expected = jobs_by_queue_and_state()
    exported = {
        (dict(k[1])["queue"], dict(k[1])["state"]): v for k, v in samples.items() if k[0] == "awa_jobs"
    }
    assert (
        exported == expected == {("default", "available"): 3, ("mail", "completed"): 2, ("mail", "failed"): 1}
    )
    assert (
        value(samples, "awa_cron_schedules", state="active")
        == CronJob.objects.filter(paused_at=None, retired_at=None).count()
        == 3
    )
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
