"""procrastinate's app and tasks for the benchmark (imported, not run as
``__main__``, as procrastinate asks)."""

from __future__ import annotations

import os

import procrastinate

CONNINFO = (
    f"host={os.environ.get('BENCH_PGHOST', '127.0.0.1')} port={os.environ.get('BENCH_PGPORT', '5432')}"
    f" user=postgres dbname={os.environ['BENCH_PEER_DATABASE']}"
)
app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=CONNINFO))


@app.task(name="bench.noop", queue="default")
def noop() -> None:
    """Return at once."""


@app.task(name="bench.tick", queue="periodic")
def tick(timestamp: int) -> None:
    """The periodic task; never run (no worker listens on its queue)."""
