"""tasks/tracing.py: a job carries its OpenTelemetry trace from enqueue or a cron
fire to the span its attempt runs in; without OpenTelemetry nothing changes.

Spans are read from the SDK's ``InMemorySpanExporter`` (the ``spans`` fixture).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from opentelemetry import trace

import awa_django
from awa_django.client import tracing
from awa_django.leader.evaluator import evaluate
from awa_django.leader.firing import fire_plan
from awa_django.models import Job
from awa_django.worker.loop import Worker
from tests.factories import CronJobFactory
from tests.helpers.database import db_now
from tests.helpers.fires import T0, fresh, planned
from tests.helpers.tracing import span_record
from tests.testapp import audit_tasks, tasks

pytestmark = pytest.mark.django_db(transaction=True)


def finished(exporter: Any, prefix: str = "") -> list[dict[str, Any]]:
    return [span_record(s) for s in exporter.get_finished_spans() if s.name.startswith(prefix)]


def hex_ids(span: trace.Span) -> tuple[str, str]:
    context = span.get_span_context()
    return format(context.trace_id, "032x"), format(context.span_id, "016x")


def parent_of(metadata: dict[str, Any]) -> tuple[str, str]:
    """(trace id, span id) of the ``traceparent`` a job carries."""
    _version, trace_id, span_id, _flags = metadata[tracing.METADATA_KEY]["traceparent"].split("-")
    return trace_id, span_id


def burst() -> Worker:
    worker = Worker(burst=True)
    worker.run()
    return worker


def test_enqueue__writes_the_current_trace_context_into_the_job(spans: Any) -> None:
    with trace.get_tracer("test").start_as_current_span("request") as span:
        result = tasks.write_effect.enqueue("traced")
    assert parent_of(Job.objects.get(id=int(result.id)).metadata) == hex_ids(span)


def test_keyed_enqueue__writes_the_current_trace_context_into_the_job(spans: Any) -> None:
    with trace.get_tracer("test").start_as_current_span("request") as span:
        result = awa_django.enqueue(tasks.write_effect, args=["traced"], unique_key="u", concurrency_key="c")
    assert parent_of(Job.objects.get(id=int(result.id)).metadata) == hex_ids(span)


def test_enqueue_many__stamps_every_job_and_no_span_stamps_none(spans: Any) -> None:
    with trace.get_tracer("test").start_as_current_span("request") as span:
        results = tasks.write_effect.get_backend().enqueue_many(
            [(tasks.write_effect, ["a"], {}), (tasks.record, ["b"], {})]
        )
    untraced = tasks.write_effect.enqueue("outside any span")
    assert [parent_of(Job.objects.get(id=int(r.id)).metadata) for r in results] == [hex_ids(span)] * 2
    assert tracing.METADATA_KEY not in Job.objects.get(id=int(untraced.id)).metadata


def test_worker__runs_the_attempt_in_a_child_of_the_enqueuing_span(spans: Any) -> None:
    with trace.get_tracer("test").start_as_current_span("request") as span:
        result = tasks.write_effect.using(queue_name="mail").enqueue("traced")
    assert burst().completed == 1
    (run,) = finished(spans, "run ")
    assert (run["trace_id"], run["parent_id"]) == hex_ids(span)
    assert run["name"] == "run tests.testapp.tasks.write_effect"
    assert (run["kind"], run["status"]) == ("CONSUMER", "UNSET")
    attributes = run["attributes"]
    assert attributes["awa.task.path"] == "tests.testapp.tasks.write_effect"
    assert (attributes["awa.job.id"], attributes["awa.job.queue"]) == (int(result.id), "mail")
    assert (attributes["awa.job.attempt"], attributes["awa.job.max_attempts"]) == (1, 3)
    assert "awa.cron.name" not in attributes


@pytest.mark.parametrize(
    ("task", "args", "exception"),
    [
        (tasks.always_fails, ["boom"], "RuntimeError"),
        (tasks.raises_base_exception, ["system_exit"], "SystemExit"),
        (tasks.returns_nul, [], "UnstorableResult"),
        (audit_tasks.raises_unprintable, [], "UnprintableError"),
        (audit_tasks.raises_unprintable_base, [], "UnprintableBaseError"),
    ],
)
def test_worker__a_failing_attempt_ends_its_span_in_error(
    spans: Any, task: Any, args: list[Any], exception: str
) -> None:
    task.enqueue(*args)
    burst()
    run = finished(spans, "run ")[0]
    assert run["status"] == "ERROR"
    assert run["events"] == ["exception"]
    (event,) = next(s for s in spans.get_finished_spans() if s.name.startswith("run ")).events
    assert exception in str((event.attributes or {})["exception.type"])


def test_worker__a_job_without_a_context_starts_a_trace_of_its_own(spans: Any) -> None:
    result = tasks.write_effect.enqueue("untraced")
    Job.objects.filter(id=int(result.id)).update(metadata={tracing.METADATA_KEY: {"traceparent": 7}})
    assert burst().completed == 1
    (run,) = finished(spans, "run ")
    assert run["parent_id"] is None and run["status"] == "UNSET"


def test_fire__each_schedule_fires_in_a_new_trace_carried_to_its_jobs(spans: Any) -> None:
    now = db_now()
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    CronJobFactory(
        name="nightly",
        cron_expr="0 0 * * *",
        missed_fire_policy="catch_up",
        last_enqueued_at=midnight - timedelta(days=2),
    )
    CronJobFactory(name="other", cron_expr="0 0 * * *", last_enqueued_at=midnight - timedelta(days=1))
    # A span current in the leader is no parent of a fire.
    with trace.get_tracer("test").start_as_current_span("unrelated"):
        evaluate()
    fires = {s["attributes"]["awa.cron.name"]: s for s in finished(spans, "fire ")}
    assert sorted(fires) == ["nightly", "other"]
    nightly = fires["nightly"]
    assert (nightly["name"], nightly["kind"], nightly["parent_id"]) == ("fire nightly", "PRODUCER", None)
    assert nightly["trace_id"] != fires["other"]["trace_id"]
    jobs = list(Job.objects.filter(metadata__cron_name="nightly").order_by("id"))
    assert nightly["attributes"]["awa.cron.jobs"] == len(jobs) == 2
    assert nightly["attributes"]["awa.job.ids"] == [j.id for j in jobs]
    assert nightly["attributes"]["awa.cron.fire_at"] == [j.metadata["cron_fire_at"] for j in jobs]
    parent = (nightly["trace_id"], nightly["span_id"])
    assert [parent_of(j.metadata) for j in jobs] == [parent, parent]

    assert burst().completed == 3
    runs = [s for s in finished(spans, "run ") if s["attributes"].get("awa.cron.name") == "nightly"]
    assert [(r["trace_id"], r["parent_id"]) for r in runs] == [parent, parent]
    assert sorted(r["attributes"]["awa.cron.fire_at"] for r in runs) == sorted(
        j.metadata["cron_fire_at"] for j in jobs
    )


def test_fire__a_slot_another_leader_fired_ends_its_span_with_no_jobs(spans: Any) -> None:
    entry = planned(fresh(CronJobFactory(name="nightly").name), [T0])
    with connection.cursor() as cursor:
        assert len(fire_plan(cursor, [entry])) == 1
        # The same plan again, as a deposed leader sends it: the compare-and-swap refuses it.
        assert fire_plan(cursor, [entry]) == []
    assert [s["attributes"]["awa.cron.jobs"] for s in finished(spans, "fire ")] == [1, 0]


def test_without_otel__enqueue_fires_and_attempts_are_untouched(otel_missing: None) -> None:
    assert tracing.ENABLED is False
    now = db_now()
    CronJobFactory(name="nightly", cron_expr="0 0 * * *", last_enqueued_at=now - timedelta(days=1))
    result = tasks.write_effect.enqueue("plain")
    evaluate()
    assert burst().completed == 2
    assert [j.metadata.get(tracing.METADATA_KEY) for j in Job.objects.all()] == [None, None]
    assert Job.objects.get(id=int(result.id)).state == "completed"
