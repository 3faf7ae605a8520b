"""client/tracing.py without the ``otel`` extra: awa_django imports and runs with
OpenTelemetry absent, and every tracing call is a no-op."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import textwrap

from awa_django.client import tracing
from awa_django.store.job_rows import JobRow
from tests.helpers.processes import ROOT

# Run in a fresh interpreter where "import opentelemetry" raises ImportError.
WITHOUT_OTEL = textwrap.dedent(
    """
    import contextlib, os, sys
    sys.modules["opentelemetry"] = None
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"
    import django
    django.setup()
    import awa_django.leader.firing, awa_django.client.backend, awa_django.worker.runner
    from awa_django.client import tracing
    assert tracing.ENABLED is False
    metadata = {}
    tracing.stamp_jobs([metadata])
    assert metadata == {}
    from awa_django.store.job_rows import JobRow
    assert isinstance(tracing.attempt_span(JobRow(id=1)), contextlib.nullcontext)
    plan = [{"name": "nightly", "fires": ["2026-03-01T12:00:00+00:00"]}]
    assert tracing.fire_traced(plan, lambda sent: [sent]) == [plan]
    assert not any(name.startswith("opentelemetry") for name in sys.modules if sys.modules[name])
    print("untraced")
    """
)


def test_tracing__is_off_and_imports_nothing_without_opentelemetry() -> None:
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_OTEL], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert (done.returncode, done.stdout.strip()) == (0, "untraced"), done.stderr


def test_tracing__is_on_where_opentelemetry_is_installed() -> None:
    assert tracing.ENABLED is True


def test_fire_traced__sends_the_plan_unchanged_without_a_configured_sdk() -> None:
    """With the API but no tracer provider, spans are invalid: nothing rides in the plan."""
    plan = [{"name": "nightly", "fires": ["2026-03-01T12:00:00+00:00"], "park": None}]
    sent: list[list[dict[str, object]]] = []
    assert tracing.fire_traced(plan, lambda p: sent.append(p) or []) == []
    assert sent == [plan]


def test_attempt_span__without_a_configured_sdk_is_skipped() -> None:
    """No tracer provider set: the attempt runs without a span (and its cost)."""
    row = JobRow(id=1, kind="tests.testapp.tasks.record", queue="default", attempt=1, max_attempts=3)
    assert isinstance(tracing.attempt_span(row), contextlib.nullcontext)
    ran = []
    with contextlib.suppress(RuntimeError), tracing.attempt_span(row):
        ran.append(1)
        raise RuntimeError("the task's failure goes on to the worker")
    assert ran == [1]
