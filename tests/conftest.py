"""Shared fixtures: real PostgreSQL only (the test database of pytest-django).

Fixtures only: the helpers they use live in ``tests/helpers/``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

# Before the helpers are imported: their asserts report like a test's own.
pytest.register_assert_rewrite("tests.helpers")

from awa_django.declarations.declaration import registry  # noqa: E402
from tests.helpers.database import raw_connection  # noqa: E402
from tests.helpers.processes import Runcron, Runtasks  # noqa: E402


@pytest.fixture
def second_connection() -> Iterator[psycopg.Connection[Any]]:
    conn = raw_connection()
    try:
        yield conn
    finally:
        conn.close()


@pytest.fixture(autouse=True)
def _isolated_registry() -> Iterator[None]:
    """Tests may declare schedules; restore the autodiscovered set afterwards."""
    saved = dict(registry._schedules)
    yield
    registry._schedules.clear()
    registry._schedules.update(saved)


@pytest.fixture(autouse=True)
def _restored_connection_options() -> Iterator[None]:
    """``runcron``/``runtasks`` run in-process add keepalives to every alias's
    ``OPTIONS`` (``guard_process_connections``): keep them out of later tests."""
    from django.db import connections

    saved = {alias: dict(connections[alias].settings_dict.get("OPTIONS", {})) for alias in connections}
    yield
    for alias, options in saved.items():
        connections[alias].settings_dict["OPTIONS"] = options


@pytest.fixture
def spans() -> Iterator[Any]:
    """An OpenTelemetry SDK tracer provider for the test; yields its InMemorySpanExporter."""
    from tests.helpers.tracing import recording

    with recording() as exporter:
        yield exporter


@pytest.fixture
def otel_missing() -> Iterator[None]:
    """``awa_django.client.tracing`` as loaded where the ``otel`` extra is not installed."""
    from tests.helpers.tracing import without_otel

    with without_otel():
        yield


@pytest.fixture
def _processes() -> Iterator[list[Runcron]]:
    """Every subprocess a test started; at teardown each one still running is
    killed, and every one is reaped and has its log file closed."""
    started: list[Runcron] = []
    yield started
    for proc in started:
        proc.close()


@pytest.fixture
def runcron(_processes: list[Runcron]) -> Callable[..., Runcron]:
    """Start ``runcron`` subprocesses with the given AWA_SCHEDULES."""

    def start(
        schedules: dict[str, Any] | None = None, *args: str, env: dict[str, str] | None = None
    ) -> Runcron:
        _processes.append(proc := Runcron(schedules or {}, env or {}, list(args)))
        return proc

    return start


@pytest.fixture
def runtasks(_processes: list[Runcron]) -> Callable[..., Runtasks]:
    """Start ``runtasks`` subprocesses."""

    def start(*args: str, env: dict[str, str] | None = None) -> Runtasks:
        _processes.append(proc := Runtasks({}, env or {}, list(args)))
        return proc

    return start


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Captured output stays sendable: pytest-xdist workers send reports as UTF-8,
    and some tests log messages with lone surrogates (shown escaped instead)."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    report.sections = [
        (title, text.encode("utf-8", "backslashreplace").decode("utf-8")) for title, text in report.sections
    ]
