"""Prometheus metrics: scraping a process's ``/metrics`` and reading samples.

A scrape is parsed into ``Samples`` keyed by metric name and sorted labels;
``value`` reads one (0 when absent). ``jobs_by_queue_and_state`` counts the
table the job gauges describe, to compare with them.
"""

from __future__ import annotations

import urllib.request
from typing import Any

from django.db.models import Count
from prometheus_client.parser import text_string_to_metric_families

from awa_django.models import Job
from tests.helpers.waiting import wait_for

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


def jobs_by_queue_and_state() -> dict[tuple[str, str], int]:
    rows = Job.objects.values("queue", "state").annotate(n=Count("id"))
    return {(r["queue"], r["state"]): r["n"] for r in rows}
