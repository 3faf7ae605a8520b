"""OpenTelemetry traces: a job carries its trace context from enqueue to its attempts.

With the ``otel`` extra installed (``pip install "awa-django[otel]"``, the
OpenTelemetry API) and a tracer provider configured by the application:

- ``enqueue()`` / ``enqueue_many()`` write the current trace context (W3C
  ``traceparent``, through the globally configured propagator) into each job's
  metadata under :data:`METADATA_KEY`;
- ``runcron`` starts a new trace for each schedule it fires: one ``fire
  <schedule>`` span (kind PRODUCER) per plan entry of a fire statement, whose
  context goes into the jobs of that fire (see ``awa_cron_fire_v4``);
- the worker runs each attempt inside a ``run <task path>`` span (kind
  CONSUMER), the child of the context its job carries, with the task path,
  queue, attempt and job id (and the schedule name and slot of a fire) as
  attributes; a task that raises sets its status to ERROR with the exception
  recorded.

Without the API installed every function here is a no-op (the import is tried
once, when this module loads). With the API but no tracer provider set, an
attempt gets no span, a fire's span is invalid and carries nothing, and an
enqueue writes a context only if one is current.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from .. import contract
from ..store.job_rows import JobRow

try:
    from opentelemetry import context as otel_context
    from opentelemetry import propagate, trace
except ImportError:  # the otel extra is not installed: tracing is off
    ENABLED = False
else:
    ENABLED = True

__all__ = ["ENABLED", "METADATA_KEY", "attempt_span", "fire_traced", "stamp_jobs"]

# The job metadata key holding the propagated context (a dict of text headers).
METADATA_KEY = "otel"
# The instrumentation scope name of every span.
TRACER_NAME = "awa_django"
MESSAGING_SYSTEM = "awa_django"

_OFF: contextlib.nullcontext[None] = contextlib.nullcontext()


def stamp_jobs(metadatas: Iterable[dict[str, Any]]) -> None:
    """Write the current trace context into each job metadata dict (if there is one)."""
    if not ENABLED:
        return
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    if carrier:  # no active span (or no SDK): nothing to carry
        for metadata in metadatas:
            metadata[METADATA_KEY] = carrier


def attempt_span(row: JobRow) -> contextlib.AbstractContextManager[None]:
    """The span an attempt of claimed job ``row`` runs in, continuing its job's trace."""
    if not ENABLED or not _configured():
        return _OFF
    return _attempt_span(row)


def _configured() -> bool:
    """Whether the application has set a tracer provider: without one, an
    attempt's span would record nothing, and skipping it saves most of its cost."""
    provider = trace.get_tracer_provider()
    return not isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider))


@contextlib.contextmanager
def _attempt_span(row: JobRow) -> Iterator[None]:
    metadata = row.metadata
    carrier = metadata.get(METADATA_KEY)
    # A hand-written or damaged value starts a trace of its own instead.
    parent = propagate.extract(_text_headers(carrier)) if isinstance(carrier, dict) else None
    attributes: dict[str, str | int] = {
        "messaging.system": MESSAGING_SYSTEM,
        "messaging.operation.type": "process",
        "messaging.destination.name": row.queue,
        "messaging.message.id": str(row.id),
        "awa.task.path": row.kind,
        "awa.job.id": row.id,
        "awa.job.queue": row.queue,
        "awa.job.attempt": row.attempt,
        "awa.job.max_attempts": row.max_attempts,
    }
    for key, name in (
        (contract.CRON_NAME_KEY, "awa.cron.name"),
        (contract.CRON_FIRE_AT_KEY, "awa.cron.fire_at"),
    ):
        if isinstance(metadata.get(key), str):
            attributes[name] = metadata[key]
    tracer = trace.get_tracer(TRACER_NAME)
    span = tracer.start_span(
        f"run {row.kind}", context=parent, kind=trace.SpanKind.CONSUMER, attributes=attributes
    )
    with _recording(span):
        yield


@contextlib.contextmanager
def _recording(span: trace.Span) -> Iterator[None]:
    """``span`` current and ended on exit; any ``BaseException`` (a task may raise
    ``SystemExit``) recorded with an ERROR status, which OpenTelemetry's own
    ``use_span`` does only for ``Exception``."""
    with trace.use_span(span, end_on_exit=True, record_exception=False, set_status_on_exception=False):
        try:
            yield
        except BaseException as exc:
            _record_failure(span, exc)
            raise


def _record_failure(span: trace.Span, exc: BaseException) -> None:
    """Status ERROR with ``exc`` recorded as an ``exception`` event; an exception
    whose ``str()`` raises (anything, even ``SystemExit``) is recorded by its class name."""
    if not span.is_recording():
        return
    name = type(exc).__name__
    try:
        description = f"{name}: {exc}"
    except BaseException:
        span.add_event("exception", {"exception.type": name})
        description = name
    else:
        span.record_exception(exc)
    span.set_status(trace.Status(trace.StatusCode.ERROR, description))


def _text_headers(carrier: dict[Any, Any]) -> dict[str, str]:
    return {k: v for k, v in carrier.items() if isinstance(k, str) and isinstance(v, str)}


FireRows = list[dict[str, Any]]


def fire_traced(plan: list[dict[str, Any]], send: Callable[[list[dict[str, Any]]], FireRows]) -> FireRows:
    """``send(plan)`` (the fire statement), each firing entry in a new trace of its own.

    Each entry with slots to fire gets a root ``fire <schedule>`` span whose
    context rides in the entry's ``job_metadata``, so the statement writes it
    into every job of that fire. The spans end when the statement returns
    (with the number of jobs it inserted for the entry: 0 when another leader
    fired the slot first) or raises (status ERROR).
    """
    if not ENABLED:
        return send(plan)
    tracer = trace.get_tracer(TRACER_NAME)
    spans: dict[str, trace.Span] = {}
    sent: list[dict[str, Any]] = []
    for entry in plan:
        if entry.get("park") is not None or not entry.get("fires"):
            sent.append(entry)
            continue
        span = _fire_span(tracer, entry)
        if not span.get_span_context().is_valid:  # no SDK configured: nothing to record or carry
            if not spans:
                return send(plan)
            sent.append(entry)
            continue
        carrier: dict[str, str] = {}
        propagate.inject(carrier, context=trace.set_span_in_context(span))
        spans[entry["name"]] = span
        sent.append({**entry, "job_metadata": {METADATA_KEY: carrier}})
    try:
        jobs = send(sent)
    except BaseException as exc:
        for span in spans.values():
            _record_failure(span, exc)
            span.end()
        raise
    _end_fire_spans(spans, jobs)
    return jobs


def _fire_span(tracer: trace.Tracer, entry: Mapping[str, Any]) -> trace.Span:
    # A root span: a fire belongs to no request, whatever is current in the leader.
    return tracer.start_span(
        f"fire {entry['name']}",
        context=otel_context.Context(),
        kind=trace.SpanKind.PRODUCER,
        attributes={
            "messaging.system": MESSAGING_SYSTEM,
            "messaging.operation.type": "send",
            "awa.cron.name": str(entry["name"]),
            "awa.cron.fire_at": [_slot_text(f) for f in entry["fires"]],
        },
    )


def _slot_text(fire_at: Any) -> str:
    """A planned slot as its jobs' ``cron_fire_at`` reads: ISO-8601 UTC, whole seconds."""
    try:
        return datetime.fromisoformat(str(fire_at)).astimezone(UTC).isoformat(timespec="seconds")
    except ValueError:
        return str(fire_at)


def _end_fire_spans(spans: Mapping[str, trace.Span], jobs: FireRows) -> None:
    fired: dict[str, list[int]] = {name: [] for name in spans}
    for job in jobs:
        metadata = job.get("metadata")
        name = metadata.get(contract.CRON_NAME_KEY) if isinstance(metadata, dict) else None
        if name in fired:
            fired[name].append(int(job["id"]))
    for name, span in spans.items():
        span.set_attribute("awa.cron.jobs", len(fired[name]))
        if fired[name]:
            span.set_attribute("awa.job.ids", fired[name])
        span.end()
