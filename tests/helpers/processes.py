"""Real subprocesses on the test database: ``manage.py`` commands and their logs.

``manage()`` runs a command to completion, as an operator's shell does;
:class:`Runcron` and :class:`Runtasks` are long-running ``runcron`` and
``runtasks`` processes whose output goes to a log file (the ``runcron`` and
``runtasks`` fixtures start, reap and close them); ``open_files()`` lists the
files this process holds open, so a fixture can fail a test that leaks one.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.helpers.database import database_url, leader_pid, raw_connection
from tests.helpers.waiting import wait_for

ROOT = Path(__file__).resolve().parent.parent.parent


def manage(*args: str, **env: str | None) -> subprocess.CompletedProcess[str]:
    """``python -m django ARGS`` with tests.settings from the project root, as a
    shell user runs it. ``env`` overrides the environment (None removes a name)."""
    return manage_with(env, *args)


def manage_with(
    env: Mapping[str, str | None], *args: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """:func:`manage` with the environment overrides given as a mapping first
    (a server's URLs), and a longer ``timeout`` where a command needs one."""
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
        timeout=timeout,
    )


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


def leader_process_pid() -> int | None:
    """OS pid of the runcron process holding the lock (from its application_name)."""
    backend = leader_pid()
    if backend is None:
        return None
    with raw_connection() as conn:
        row = conn.execute(
            "SELECT application_name FROM pg_stat_activity WHERE pid = %s", [backend]
        ).fetchone()
    if not row or "pid=" not in row[0]:
        return None
    return int(row[0].rsplit("pid=", 1)[1])


def open_files() -> dict[int, str]:
    """This process's descriptors on regular files (not sockets, pipes or devices)."""
    found: dict[int, str] = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:  # closed between listdir and readlink (the listdir fd itself)
            continue
        if target.startswith("/") and not target.startswith(("/dev/", "/proc/")):
            found[int(name)] = target
    return found
