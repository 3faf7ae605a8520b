"""``make demo`` (scripts/demo.py under scripts/with_db.py) as a person runs it in a
terminal: one Ctrl-C (SIGINT to the whole process group, as a terminal sends it)
stops runcron and runtasks gracefully, each once, and the demo exits 0 with no
traceback; the real ``make demo`` on a pseudo-terminal, Ctrl-C typed into it,
exits 0 as well (make is not interrupted); a second run on the same database
reports only its own fires and jobs.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection

from tests.helpers.database import database_url, raw_connection
from tests.helpers.processes import ROOT
from tests.helpers.waiting import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

FIRED = re.compile(r"^demo: fired \S+ for \S+ -> job (\d+) ", re.MULTILINE)
COMPLETED = re.compile(r"^demo: job (\d+) completed", re.MULTILINE)
SUMMARY = re.compile(r"^demo: (\d+) fire\(s\) seen, (\d+) job\(s\) completed$", re.MULTILINE)


@pytest.fixture
def demo_url() -> Iterator[str]:
    """The URL of a new, empty database on the test server for the demo's example
    project (its own migrations), dropped afterwards."""
    name = f"{connection.settings_dict['NAME']}_demo"
    with raw_connection() as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    test_name = str(connection.settings_dict["NAME"])
    url = database_url()
    head, _, tail = url.rpartition(f"/{test_name}")
    try:
        yield f"{head}/{name}{tail}"
    finally:
        with raw_connection() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def run_until_ctrl_c(url: str, log_path: Path) -> tuple[int, str]:
    """Start the demo in a process group of its own, as a shell starts a foreground
    job; once it has shown a completed job, send SIGINT to the group, as Ctrl-C in
    the terminal does. Returns its exit status and output."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "AWA_TEST_DATABASE_TCP")
    }
    env.update(DATABASE_URL=url, PYTHONUNBUFFERED="1")
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "scripts/with_db.py", sys.executable, "scripts/demo.py"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            process_group=0,
        )
        try:
            wait_for(lambda: COMPLETED.search(log_path.read_text()) or proc.poll() is not None, timeout=120)
            os.killpg(proc.pid, signal.SIGINT)
            code = proc.wait(timeout=90)
        finally:
            if proc.poll() is None:
                # A failed test: one SIGTERM lets the demo stop its children, then the group goes.
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=60)
                finally:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
    return code, log_path.read_text()


# The session's first process, a shell without job control: the pseudo-terminal
# on its stdin becomes its controlling terminal, and it runs make in its own
# process group, the terminal's foreground group a typed Ctrl-C reaches. When make
# has ended it says whether that group has the terminal back, and exits as a shell
# does (128 + the signal that killed make).
SESSION_LEADER = """
import fcntl, os, signal, subprocess, sys, termios
fcntl.ioctl(0, termios.TIOCSCTTY, 0)
signal.signal(signal.SIGINT, lambda signum, frame: None)  # a handler: make gets the default
code = subprocess.call(sys.argv[1:])
restored = os.tcgetpgrp(0) == os.getpgrp()
print("session: the terminal's foreground group is", "back" if restored else "lost", flush=True)
sys.exit(128 - code if code < 0 else code)
"""


class Terminal:
    """The master side of a pseudo-terminal: what was written to it, read as it comes."""

    def __init__(self, master: int) -> None:
        self.master = master
        self.chunks: list[bytes] = []
        self.reader = threading.Thread(target=self.read, daemon=True)
        self.reader.start()

    def read(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 4096)
            except OSError:  # EIO: every process holding the terminal has ended
                return
            if not chunk:
                return
            self.chunks.append(chunk)

    @property
    def output(self) -> str:
        return b"".join(self.chunks).decode(errors="replace").replace("\r\n", "\n")


def make_demo_until_ctrl_c(url: str) -> tuple[int, str]:
    """Run the real ``make demo`` on a pseudo-terminal (the venv step skipped:
    ``-o`` its stamp, PY this interpreter); once it has shown a completed job, type
    Ctrl-C into the terminal. Returns make's exit status, as a shell gives it, and
    the output."""
    make = shutil.which("make")
    assert make, "GNU make is needed: apt-get install make"
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DJANGO_SETTINGS_MODULE", "AWA_TEST_DATABASE_TCP")
        and k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")
    }
    env.update(DATABASE_URL=url, PYTHONUNBUFFERED="1")
    master, slave = os.openpty()
    stamp = ".venv/.installed"
    try:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                SESSION_LEADER,
                make,
                "-o",
                stamp,
                "demo",
                f"PY={sys.executable}",
                "DEMO_SECONDS=0",
            ],
            cwd=ROOT,
            env=env,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
        )
    finally:
        os.close(slave)
    terminal = Terminal(master)
    try:
        wait_for(lambda: COMPLETED.search(terminal.output) or proc.poll() is not None, timeout=120)
        os.write(master, b"\x03")
        code = proc.wait(timeout=90)
        terminal.reader.join(timeout=60)
    finally:
        if proc.poll() is None:
            # A failed test: SIGTERM lets each process stop its children; then the session goes.
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            finally:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        os.close(master)
    return code, terminal.output


def test_make_demo__one_ctrl_c_in_a_terminal_exits_0(demo_url: str) -> None:
    code, output = make_demo_until_ctrl_c(demo_url)
    assert COMPLETED.search(output), output
    assert code == 0, output
    assert "Traceback" not in output, output
    assert "Interrupt" not in output, output
    assert "second signal" not in output, output
    assert output.count("finishing the pass, then releasing leadership") == 1, output
    assert output.count("no new claims, finishing running tasks") == 1, output
    assert "runcron: stopped" in output, output
    assert "runtasks: stopped after" in output, output
    assert SUMMARY.search(output), output
    assert "session: the terminal's foreground group is back" in output, output


def test_demo__one_ctrl_c_stops_both_processes_gracefully(demo_url: str, tmp_path: Path) -> None:
    code, output = run_until_ctrl_c(demo_url, tmp_path / "demo.log")
    assert code == 0, output
    assert "Traceback" not in output, output
    assert "second signal" not in output, output
    # Each process got one signal: the graceful stop, to its end.
    assert output.count("finishing the pass, then releasing leadership") == 1, output
    assert output.count("no new claims, finishing running tasks") == 1, output
    assert "runcron: stopped" in output, output
    assert "runtasks: stopped after" in output, output
    assert SUMMARY.search(output), output


def test_demo__a_rerun_reports_only_its_own_fires_and_jobs(demo_url: str, tmp_path: Path) -> None:
    first_code, first = run_until_ctrl_c(demo_url, tmp_path / "first.log")
    assert first_code == 0, first
    code, second = run_until_ctrl_c(demo_url, tmp_path / "second.log")
    assert code == 0, second
    earlier = {int(n) for n in FIRED.findall(first)} | {int(n) for n in COMPLETED.findall(first)}
    fired = {int(n) for n in FIRED.findall(second)}
    completed = [int(n) for n in COMPLETED.findall(second)]
    assert completed, second
    assert set(completed) <= fired, second  # only jobs of this run's fires
    assert not fired & earlier, second
    summary = SUMMARY.search(second)
    assert summary, second
    assert (int(summary[1]), int(summary[2])) == (len(fired), len(completed)), second
