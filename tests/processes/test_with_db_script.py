"""scripts/with_db.py (what ``make test`` and ``make demo`` run under) passes a
SIGTERM on to its command, and never a SIGINT: Ctrl-C reaches the terminal's
whole foreground group, the command included, so a forwarded copy would be the
command's second signal and cut its graceful stop short. Either way with_db.py
waits for the command and exits with its status, without a traceback.
"""

from __future__ import annotations

import os
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
