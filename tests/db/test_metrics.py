"""Prometheus metrics: database gauges, process counters, scraped over real HTTP."""

from __future__ import annotations

import gc
import threading
import urllib.request
from datetime import timedelta

import pytest
from django.db import connection
from django.test import RequestFactory
from django.test.utils import override_settings
from django.utils import timezone
from prometheus_client import CollectorRegistry, generate_latest

from awa_django import metrics
from awa_django.db import sessions
from awa_django.models import CronJob
from tests.factories import CronJobFactory, JobFactory
from tests.helpers.database import operator_context
from tests.helpers.metrics import Samples, jobs_by_queue_and_state, parse, scrape, scrape_until, value
from tests.helpers.servers import free_port
from tests.helpers.waiting import wait_for


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


def connections_to_this_database() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")
        count: int = cursor.fetchone()[0]
        return count


def gauge_reads_waiting_on_a_lock() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        count: int = cursor.fetchone()[0]
        return count


def scrapes_being_served() -> int:
    return sum(1 for t in threading.enumerate() if "process_request_thread" in t.name)


@pytest.mark.django_db(transaction=True)
def test_exporter__concurrent_scrapes_share_one_connection_while_the_gauge_query_is_held() -> None:
    JobFactory.create_batch(2, queue="flood", state="available")
    with override_settings(AWA_METRICS_QUERY_TIMEOUT=300, AWA_METRICS_INTERVAL=3600):
        port = free_port()
        exporter = metrics.start_exporter(port)
        locker = sessions.dedicated_connection("default", "test locker")
        results: list[Samples] = []
        scrapers = []
        try:
            with locker.transaction():
                locker.execute("LOCK TABLE awa_jobs IN ACCESS EXCLUSIVE MODE")
                before = connections_to_this_database()

                def scrape_once() -> None:
                    url = f"http://127.0.0.1:{port}/metrics"
                    with urllib.request.urlopen(url, timeout=300) as response:
                        results.append(parse(response.read().decode()))

                scrapers = [threading.Thread(target=scrape_once) for _ in range(40)]
                for scraper in scrapers:
                    scraper.start()
                wait_for(lambda: scrapes_being_served() >= 40 and gauge_reads_waiting_on_a_lock() >= 1)
                assert connections_to_this_database() == before + 1
            for scraper in scrapers:
                scraper.join(300)
        finally:
            locker.close()
            exporter.shutdown()
    assert len(results) == 40
    for samples in results:
        assert value(samples, "awa_metrics_database_up") == 1
        assert value(samples, "awa_jobs", queue="flood", state="available") == 2


@pytest.mark.django_db(transaction=True)
def test_exporter__reads_the_database_gauges_at_most_once_per_interval() -> None:
    JobFactory(queue="cached", state="available")
    port = free_port()
    exporter = metrics.start_exporter(port)
    try:
        with override_settings(AWA_METRICS_INTERVAL=3600):
            assert value(scrape(port), "awa_jobs", queue="cached", state="available") == 1
            JobFactory(queue="cached", state="available")
            assert value(scrape(port), "awa_jobs", queue="cached", state="available") == 1
        with override_settings(AWA_METRICS_INTERVAL=0.001):
            scrape_until(port, lambda s: value(s, "awa_jobs", queue="cached", state="available") == 2)
    finally:
        exporter.shutdown()


@pytest.mark.django_db(transaction=True)
def test_exporter__reports_database_down_and_recovers_on_a_new_connection() -> None:
    port = free_port()
    exporter = metrics.start_exporter(port)
    try:
        with override_settings(AWA_METRICS_INTERVAL=0.001):
            assert value(scrape(port), "awa_metrics_database_up") == 1
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT pg_terminate_backend(pid, 60000) FROM pg_stat_activity"
                    " WHERE application_name LIKE 'awa_django metrics exporter%%'"
                )
            assert value(scrape(port), "awa_metrics_database_up") == 0
            scrape_until(port, lambda s: value(s, "awa_metrics_database_up") == 1)
    finally:
        exporter.shutdown()


def test_exporter__listens_on_127_0_0_1_unless_a_host_is_given() -> None:
    from awa_django.management.commands.runcron import Command as Runcron
    from awa_django.management.commands.runtasks import Command as Runtasks

    for command in (Runcron(), Runtasks()):
        parser = command.create_parser("manage.py", "run")
        assert parser.parse_args(["--metrics-port", "9400"]).metrics_host == "127.0.0.1"
        assert parser.parse_args(["--metrics-port", "9400", "--metrics-host", "::"]).metrics_host == "::"
    exporter = metrics.serve_from_options({"metrics_port": free_port()})
    try:
        assert exporter.address[0] == "127.0.0.1"
    finally:
        exporter.shutdown()


class StandInSource:
    def __init__(self, gauges: metrics.ProcessGauges) -> None:
        self.gauges = gauges

    def process_gauges(self) -> metrics.ProcessGauges:
        return self.gauges


def test_process_gauges__report_each_registered_source_while_it_exists() -> None:
    registry = CollectorRegistry()
    registry.register(metrics.PROCESS)

    def exported() -> Samples:
        return parse(generate_latest(registry).decode())

    gc.collect()
    before = exported()
    source = StandInSource(metrics.ProcessGauges(leading=True, busy_slots=2, slots=3))
    metrics.add_gauge_source(source)
    during = exported()
    assert value(during, "awa_cron_leader") == 1
    assert value(during, "awa_worker_busy_slots") == value(before, "awa_worker_busy_slots") + 2
    assert value(during, "awa_worker_slots") == value(before, "awa_worker_slots") + 3
    del source
    gc.collect()
    assert exported() == before
