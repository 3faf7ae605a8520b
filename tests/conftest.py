"""Shared fixtures: real PostgreSQL only (the test database of pytest-django)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.db import connection, transaction

from awa_django.schedules.declaration import registry

ROOT = Path(__file__).resolve().parent.parent


def database_url() -> str:
    """A URL for the *test* database, for subprocesses and raw connections."""
    s = connection.settings_dict
    host = s.get("HOST") or ""
    port = f":{s['PORT']}" if s.get("PORT") else ""
    socket = s.get("OPTIONS", {}).get("host")
    query = f"?host={socket}" if socket else ""
    return f"postgres://{database_user()}@{host}{port}/{s['NAME']}{query}"


def tcp_address() -> tuple[str, int]:
    """A TCP address ``(host, port)`` of the server under test, for what needs TCP
    in front of it (PgBouncer, a TCP proxy, keepalives): the test database's own
    when it is reached over TCP, else ``AWA_TEST_DATABASE_TCP`` (``host:port``;
    scripts/with_db.py sets it for the embedded server on its Unix socket)."""
    s = connection.settings_dict
    options = s.get("OPTIONS", {})
    host = s.get("HOST") or options.get("host") or ""
    if host and not host.startswith("/"):
        return host, int(s.get("PORT") or options.get("port") or os.environ.get("PGPORT") or 5432)
    given = os.environ.get("AWA_TEST_DATABASE_TCP", "")
    if not given:
        pytest.fail(
            f"the test server is reached through the Unix socket in {host or 'the default directory'}; "
            "this test needs a TCP address for it: set AWA_TEST_DATABASE_TCP=host:port"
        )
    given_host, given_port = given.rsplit(":", 1)
    return given_host, int(given_port)


def database_user() -> str:
    """The role the tests connect as (the test database's ``USER``)."""
    return str(connection.settings_dict.get("USER") or os.environ.get("PGUSER") or "postgres")


def manage(*args: str, **env: str | None) -> subprocess.CompletedProcess[str]:
    """``python -m django ARGS`` with tests.settings from the project root, as a
    shell user runs it. ``env`` overrides the environment (None removes a name)."""
    environ = dict(os.environ, DJANGO_SETTINGS_MODULE="tests.settings")
    for name, value in env.items():
        if value is None:
            environ.pop(name, None)
        else:
            environ[name] = value
    return subprocess.run(
        [sys.executable, "-m", "django", *args],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )


@contextmanager
def operator_context() -> Iterator[None]:
    """A transaction in which the schedule fence lets lifecycle columns change,
    as awa_django's operator actions do (tests use it to set up rows)."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT set_config('awa.cron_admin', 'on', true)")
        yield


def raw_connection(autocommit: bool = True) -> psycopg.Connection[Any]:
    """A second, independent session on the test database."""
    params = dict(connection.get_connection_params())
    for key in ("cursor_factory", "context", "prepare_threshold"):
        params.pop(key, None)
    return psycopg.connect(autocommit=autocommit, **params)


@pytest.fixture
def second_connection() -> Iterator[psycopg.Connection[Any]]:
    conn = raw_connection()
    try:
        yield conn
    finally:
        conn.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Captured output stays sendable: pytest-xdist workers send reports as UTF-8,
    and some tests log messages with lone surrogates (shown escaped instead)."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    report.sections = [
        (title, text.encode("utf-8", "backslashreplace").decode("utf-8")) for title, text in report.sections
    ]


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


class Runcron:
    """A real ``manage.py runcron`` (or ``runtasks``) subprocess on the test database."""

    command = "runcron"
    # Printed right after the command installs its SIGTERM/SIGINT handlers.
    started_line = "waiting for leadership"

    def __init__(self, schedules: dict[str, Any], extra_env: dict[str, str], args: list[str]) -> None:
        env = dict(os.environ)
        env.update(
            {
                "DJANGO_SETTINGS_MODULE": "tests.settings",
                "DATABASE_URL": database_url(),
                "AWA_TEST_SCHEDULES": json.dumps(schedules),
                "AWA_EVALUATE_INTERVAL": "0.2",
                "AWA_ELECTION_INTERVAL": "0.2",
                "AWA_LEADER_CHECK_INTERVAL": "0.5",
                "AWA_SYNC_INTERVAL": "5",
                "AWA_LOG_LEVEL": "INFO",
                "AWA_HEARTBEAT_INTERVAL": "0.2",
                "AWA_RESCUE_AFTER": "1.0",
                "AWA_POLL_INTERVAL": "0.5",
                "AWA_RETRY_BACKOFF": "0.05",
                "PYTHONUNBUFFERED": "1",
            }
        )
        env.update(extra_env)
        self.log_path = (
            Path(os.environ.get("TMPDIR", "/tmp")) / f"{self.command}-{os.getpid()}-{time.monotonic_ns()}.log"
        )
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in wait()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "django", self.command, *args],
            cwd=ROOT,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def output(self) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(errors="replace")

    def signal(self, signum: int) -> None:
        if signum in (signal.SIGTERM, signal.SIGINT):
            # Sent before the handlers are installed (Django still starting on a
            # loaded machine), it would kill the process instead of stopping it.
            wait_for(lambda: self.started_line in self.output() or self.proc.poll() is not None, timeout=60)
        if self.proc.poll() is None:
            self.proc.send_signal(signum)

    def kill(self) -> None:
        self.signal(signal.SIGKILL)
        self.wait()

    def wait(self, timeout: float = 60) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            self._log.close()

    def close(self) -> None:
        """Kill the process if it still runs, reap it and close its log file."""
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(timeout=60)
        finally:
            self._log.close()


class Runtasks(Runcron):
    """A real ``manage.py runtasks`` subprocess on the test database."""

    command = "runtasks"
    started_line = "runtasks: worker"


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


def leader_pid() -> int | None:
    """The pid of the backend session holding the runcron leader lock, if any."""
    from awa_django.scheduler.leader import LEADER_LOCK_KEY

    key = LEADER_LOCK_KEY & 0xFFFFFFFFFFFFFFFF
    with raw_connection() as conn:
        row = conn.execute(
            "SELECT a.pid FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE l.locktype = 'advisory' AND l.granted "
            # Advisory locks are per database; other test databases may have leaders too.
            "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
            "AND l.classid::bigint = %s AND l.objid::bigint = %s",
            [key >> 32, key & 0xFFFFFFFF],
        ).fetchone()
    return row[0] if row else None


def wait_for(predicate: Callable[[], Any], timeout: float = 60, interval: float = 0.05) -> Any:
    """Poll ``predicate`` until truthy; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(interval)
