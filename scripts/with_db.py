"""Run a command with DATABASE_URL pointing at a PostgreSQL server.

If DATABASE_URL is already set, the command runs against that server unchanged.
Otherwise an embedded PostgreSQL (PyPI ``pgserver``) is started with its data in
``.pgdata/`` (git-ignored), a database named ``awa`` is created in it, and the
server is stopped again when the command ends. This is what lets ``make test``
and ``make demo`` work on a fresh machine with no database installed.

Usage: python scripts/with_db.py COMMAND [ARGS...]
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = ROOT / ".pgdata"
DB_NAME = "awa"


def embedded_database_url() -> str:
    import warnings

    # platformdirs (used by pgserver) warns when XDG_RUNTIME_DIR is unset, as on CI.
    warnings.filterwarnings("ignore", module="platformdirs")
    import pgserver  # dev/demo extra only

    server = pgserver.get_server(DATA_DIR, cleanup_mode="stop")
    exists = server.psql(f"SELECT 1 FROM pg_database WHERE datname = '{DB_NAME}';")
    if "(1 row)" not in exists:
        server.psql(f"CREATE DATABASE {DB_NAME};")
    # The server listens on a unix socket in DATA_DIR; django-environ passes the
    # ``host`` query parameter through to psycopg.
    return f"postgres://postgres@/{DB_NAME}?host={DATA_DIR}"


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    env = dict(os.environ)
    if not env.get("DATABASE_URL"):
        env["DATABASE_URL"] = embedded_database_url()
        print(f"with_db: embedded PostgreSQL at {env['DATABASE_URL']}", flush=True)
    child = subprocess.Popen(argv, env=env)
    # Forward termination signals so the child can shut down cleanly; the
    # embedded server is stopped by pgserver when this process exits.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda signum, _frame: child.send_signal(signum))
    while True:
        try:
            return child.wait()
        except InterruptedError:  # pragma: no cover - PEP 475 makes this rare
            continue


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
