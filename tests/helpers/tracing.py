"""OpenTelemetry in tests: an SDK tracer provider installed for one test, and
spans written to a file by a subprocess.

``recording()`` installs a global SDK ``TracerProvider`` whose spans go to an
``InMemorySpanExporter`` and removes it afterwards (OpenTelemetry sets its
global provider once per process; tests reset it). ``without_otel()`` reloads
``awa_django.client.tracing`` as if the ``otel`` extra were not installed.
``export_to_file(path)`` is what ``tests.settings`` calls in a ``runtasks`` or
``runcron`` subprocess started with ``AWA_TEST_TRACE_FILE``: each ended span
becomes one JSON line there, read back by ``read_spans``.
"""

from __future__ import annotations

import importlib
import json
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.util._once import Once

from awa_django.client import tracing


def _set_global_provider(provider: TracerProvider | None) -> None:
    # OpenTelemetry allows one set_tracer_provider per process; tests start afresh.
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace._TRACER_PROVIDER = None
    if provider is not None:
        trace.set_tracer_provider(provider)


@contextmanager
def recording() -> Iterator[InMemorySpanExporter]:
    """A global SDK tracer provider exporting to memory, for the ``with`` block."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    _set_global_provider(provider)
    try:
        yield exporter
    finally:
        provider.shutdown()
        _set_global_provider(None)


@contextmanager
def without_otel() -> Iterator[None]:
    """``awa_django.client.tracing`` reloaded with ``opentelemetry`` unimportable."""
    hidden = {name: module for name, module in sys.modules.items() if name.split(".")[0] == "opentelemetry"}
    for name in hidden:
        del sys.modules[name]
    sys.modules["opentelemetry"] = None  # type: ignore[assignment]  # import raises ImportError
    try:
        importlib.reload(tracing)
        yield
    finally:
        del sys.modules["opentelemetry"]
        sys.modules.update(hidden)
        importlib.reload(tracing)


def span_record(span: ReadableSpan) -> dict[str, Any]:
    """What the tests read of a finished span, as JSON-ready data (ids in hex)."""
    context = span.get_span_context()
    assert context is not None
    return {
        "name": span.name,
        "kind": span.kind.name,
        "trace_id": format(context.trace_id, "032x"),
        "span_id": format(context.span_id, "016x"),
        "parent_id": format(span.parent.span_id, "016x") if span.parent else None,
        "attributes": {k: list(v) if isinstance(v, tuple) else v for k, v in (span.attributes or {}).items()},
        "status": span.status.status_code.name,
        "events": [event.name for event in span.events],
    }


class FileSpanExporter(SpanExporter):
    """Each exported span as one JSON line appended to ``path``."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        lines = "".join(json.dumps(span_record(span)) + "\n" for span in spans)
        with self.lock, open(self.path, "a", encoding="utf-8") as out:
            out.write(lines)
        return SpanExportResult.SUCCESS


def export_to_file(path: str) -> None:
    """Install a global SDK tracer provider writing every span to ``path`` (a subprocess's settings)."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(FileSpanExporter(path)))
    trace.set_tracer_provider(provider)


def read_spans(path: Path) -> list[dict[str, Any]]:
    """The spans a subprocess has written to ``path`` so far."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.endswith("}")]
