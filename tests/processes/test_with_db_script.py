"""scripts/with_db.py (what ``make test`` and ``make demo`` run under) passes a
SIGTERM on to its command, and never a SIGINT: Ctrl-C reaches the terminal's
whole foreground group, the command included, so a forwarded copy would be the
command's second signal and cut its graceful stop short. Either way with_db.py
waits for the command and exits with its status, without a traceback. A Ctrl-C
while it starts the embedded PostgreSQL lets the start finish, stops that server
again and ends with status 130 before the command, without a traceback.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.database import database_url
from tests.helpers.processes import ROOT
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.django_db

# The command: records each signal it gets; a SIGTERM ends it (status 3).
COMMAND = """
import signal, sys, time
log = open(sys.argv[1], "a", buffering=1)
def record(signum, frame):
    log.write(signal.Signals(signum).name + "\\n")
    if signum == signal.SIGTERM:
        sys.exit(3)
signal.signal(signal.SIGINT, record)
signal.signal(signal.SIGTERM, record)
log.write("ready\\n")
while True:
    time.sleep(0.1)
"""


def test_with_db__passes_sigterm_on_and_not_sigint(tmp_path: Path) -> None:
    script = tmp_path / "command.py"
    script.write_text(COMMAND)
    log = tmp_path / "signals.log"
    proc = subprocess.Popen(
        [sys.executable, "scripts/with_db.py", sys.executable, str(script), str(log)],
        cwd=ROOT,
        env={**os.environ, "DATABASE_URL": database_url()},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        process_group=0,
    )
    try:
        wait_for(lambda: log.exists() and "ready" in log.read_text(), timeout=60)
        # To with_db.py alone, one after the other: a forwarded SIGINT would reach the
        # command before the forwarded SIGTERM that ends it.
        proc.send_signal(signal.SIGINT)
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert log.read_text().split() == ["ready", "SIGTERM"]
    assert proc.returncode == 3
    assert b"Traceback" not in output, output


# The server commands with_db.py runs while it starts the embedded PostgreSQL.
STARTING = {"initdb", "pg_ctl", "psql", "postgres"}


def starting_command(pid: int) -> int | None:
    """A child of ``pid`` that is one of the server's commands, if any."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return None
    for child in children:
        try:
            if Path(f"/proc/{child}/comm").read_text().strip() in STARTING:
                return int(child)
        except OSError:
            continue
    return None


def test_with_db__ctrl_c_while_the_embedded_server_starts(tmp_path: Path) -> None:
    # A copy of the scripts: its embedded server's data is tmp_path/.pgdata, not the checkout's.
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    for name in ("with_db.py", "pgcluster.py"):
        shutil.copy(ROOT / "scripts" / name, scripts / name)
    marker = tmp_path / "command-ran"
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    proc = subprocess.Popen(
        [sys.executable, str(scripts / "with_db.py"), sys.executable, "-c", f"open({str(marker)!r}, 'w')"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        process_group=0,
    )
    pid_file = tmp_path / ".pgdata" / "postmaster.pid"
    try:
        command = wait_for(lambda: starting_command(proc.pid), timeout=120, interval=0.005)
        # Held still while the Ctrl-C reaches the group: with_db.py is surely still starting.
        os.kill(command, signal.SIGSTOP)
        os.killpg(proc.pid, signal.SIGINT)
        os.kill(command, signal.SIGCONT)
        output, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
        if pid_file.exists():  # a failed test: the server goes at once
            os.kill(int(pid_file.read_text().split()[0]), signal.SIGQUIT)
    assert b"Traceback" not in output, output
    assert proc.returncode == 130, output
    assert b"with_db: interrupted before the command started" in output, output
    assert not marker.exists()
    assert not pid_file.exists(), output  # the server it started is stopped again
