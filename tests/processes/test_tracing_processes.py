"""Traces across real processes: a job enqueued in a span here is run by a
``runtasks`` process in a child of that span, and a ``runcron`` fire starts a
trace of its own that the worker continues.

The subprocesses install an OpenTelemetry SDK exporting to a file
(``AWA_TEST_TRACE_FILE``, see ``tests.helpers.tracing.export_to_file``).
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace

from awa_django.models import Job
from tests.helpers.tracing import read_spans
from tests.helpers.waiting import wait_for
from tests.testapp import tasks

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def test_runtasks__runs_the_job_in_a_child_of_the_enqueuing_span(
    runtasks: Any, spans: Any, tmp_path: Path
) -> None:
    with trace.get_tracer("test").start_as_current_span("request") as span:
        result = tasks.write_effect.using(queue_name="mail").enqueue("traced")
    trace_file = tmp_path / "spans.jsonl"
    worker = runtasks("--burst", env={"AWA_TEST_TRACE_FILE": str(trace_file)})
    assert worker.wait() == 0, worker.output()
    (run,) = read_spans(trace_file)
    context = span.get_span_context()
    assert (run["trace_id"], run["parent_id"]) == (
        format(context.trace_id, "032x"),
        format(context.span_id, "016x"),
    )
    assert (run["name"], run["kind"], run["status"]) == (
        "run tests.testapp.tasks.write_effect",
        "CONSUMER",
        "UNSET",
    )
    assert run["attributes"] == {
        "messaging.system": "awa_django",
        "messaging.operation.type": "process",
        "messaging.destination.name": "mail",
        "messaging.message.id": result.id,
        "awa.task.path": "tests.testapp.tasks.write_effect",
        "awa.job.id": int(result.id),
        "awa.job.queue": "mail",
        "awa.job.attempt": 1,
        "awa.job.max_attempts": 3,
    }


def test_runcron__a_fire_starts_a_trace_the_worker_continues(
    runcron: Any, runtasks: Any, tmp_path: Path
) -> None:
    schedules = {"traced": {"cron": "* * * * * *", "task": "tests.testapp.tasks.write_effect"}}
    cron_file, worker_file = tmp_path / "cron.jsonl", tmp_path / "worker.jsonl"
    leader = runcron(schedules, env={"AWA_TEST_TRACE_FILE": str(cron_file)})
    wait_for(lambda: Job.objects.filter(metadata__cron_name="traced").exists(), timeout=60)
    leader.signal(signal.SIGTERM)
    assert leader.wait() == 0, leader.output()
    worker = runtasks("--burst", env={"AWA_TEST_TRACE_FILE": str(worker_file)})
    assert worker.wait() == 0, worker.output()
    fires = {s["span_id"]: s for s in read_spans(cron_file) if s["name"] == "fire traced"}
    runs = read_spans(worker_file)
    jobs = Job.objects.filter(metadata__cron_name="traced")
    assert len(runs) == jobs.count() >= 1
    for run in runs:
        fire = fires[run["parent_id"]]
        assert (fire["parent_id"], fire["kind"], fire["trace_id"]) == (None, "PRODUCER", run["trace_id"])
        assert run["attributes"]["awa.cron.name"] == "traced"
        assert run["attributes"]["awa.cron.fire_at"] in fire["attributes"]["awa.cron.fire_at"]
        assert run["attributes"]["awa.job.id"] in fire["attributes"]["awa.job.ids"]
