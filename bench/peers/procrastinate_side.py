"""procrastinate's side of the benchmark, through its public API: ``defer``,
``batch_defer``, ``App.run_worker`` and its periodic deferrer (``@app.periodic``).

Run in the benchmark's own virtualenv by ``bench/run.py`` as
``python -m bench.peers.procrastinate_side WORKLOAD JSON-ARGS``; prints one
JSON object. Internal entry points (``_worker``, ``_deferrer``) are the child
processes it starts. No Django here: procrastinate's own psycopg connector.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psycopg

from bench.peers.procrastinate_app import CONNINFO, app, noop, tick
from bench.timing import cpu_cost, db_cost, peak_rss, per_unit, worker_cpu
from bench.timing import enqueue_rates as timed_enqueue

ROOT = Path(__file__).resolve().parents[2]


class Db:
    """The side's own connection (autocommit), for setup and measurements."""

    def __init__(self) -> None:
        self.conn: psycopg.Connection[Any] | None = None
        self.statements = 0

    def sql(self, statement: str, params: Any = None) -> list[tuple[Any, ...]]:
        if self.conn is None or self.conn.closed:
            self.conn = psycopg.connect(CONNINFO, autocommit=True)
        self.statements += 1
        cursor = self.conn.execute(statement, params)  # type: ignore[arg-type]
        return cursor.fetchall() if cursor.description else []

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()


DB = Db()


def reset() -> None:
    DB.sql("TRUNCATE procrastinate_periodic_defers, procrastinate_events, procrastinate_jobs CASCADE")


def setup() -> dict[str, Any]:
    with app.open():
        app.schema_manager.apply_schema()
    return {"ok": True}


def enqueue_rates(count: int) -> dict[str, Any]:
    reset()
    with app.open():
        return timed_enqueue(count, noop.defer, bulk=lambda n: noop.batch_defer(*({} for _ in range(n))))


def child(entry: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "bench.peers.procrastinate_side", entry, "{}"],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT), **(env or {})),
    )


def run_workers(processes: int, concurrency: int) -> None:
    workers = [child("_worker", {"BENCH_CONCURRENCY": str(concurrency)}) for _ in range(processes)]
    for worker in workers:
        worker.wait(900)


def w3_worker(jobs: int, processes: int, concurrency: int) -> dict[str, Any]:
    reset()
    idle: dict[str, Any] = {}
    with cpu_cost(idle):  # the same processes on an empty queue: their start-up and exit
        run_workers(processes, concurrency)
    reset()
    with app.open():
        noop.batch_defer(*({} for _ in range(jobs)))
    cost: dict[str, Any] = {}
    cpu: dict[str, Any] = {}
    with db_cost(DB.sql, DB.close, cost):
        start = time.monotonic()
        with cpu_cost(cpu):
            run_workers(processes, concurrency)
        wall = time.monotonic() - start
    done, span = DB.sql(
        "SELECT count(*) FILTER (WHERE type = 'succeeded'), EXTRACT(EPOCH FROM max(at) FILTER (WHERE type ="
        " 'succeeded') - min(at) FILTER (WHERE type = 'started')) FROM procrastinate_events"
    )[0]
    assert done == jobs, f"{done} of {jobs} jobs succeeded"
    return {
        "jobs": jobs,
        "processes": processes,
        "concurrency": concurrency,
        "jobs_per_s": jobs / float(span),
        "span_s": float(span),
        "wall_s": wall,
        **per_unit(cost, jobs),
        **worker_cpu(cpu, idle, jobs, jobs / float(span)),
    }


def _worker() -> None:
    app.run_worker(
        queues=["default"],
        wait=False,
        concurrency=int(os.environ.get("BENCH_CONCURRENCY", "1")),
        install_signal_handlers=False,
    )


def _deferrer() -> None:
    """The periodic deferrer of ``BENCH_PERIODIC_N`` schedules of ``BENCH_PERIODIC_CRON``,
    inside a worker that listens on a queue nothing is deferred to."""
    cron = os.environ["BENCH_PERIODIC_CRON"]
    for i in range(int(os.environ["BENCH_PERIODIC_N"])):
        app.periodic(cron=cron, periodic_id=f"bench-{i:06d}")(tick)
    app.run_worker(queues=["bench-none"], wait=True, concurrency=1)


def lateness(since: int = 0, until: int | None = None) -> dict[str, Any]:
    """Over the periodic jobs of slots in (since, until]: the slot is the job's
    ``timestamp`` argument (procrastinate keeps only the latest row per schedule
    in ``procrastinate_periodic_defers``), the insertion its ``deferred`` event."""
    row = DB.sql(
        "SELECT count(*), percentile_cont(0.5) WITHIN GROUP (ORDER BY l), percentile_cont(0.99) WITHIN GROUP"
        " (ORDER BY l), max(l) FROM (SELECT EXTRACT(EPOCH FROM e.at - to_timestamp(t.ts)) * 1000 AS l"
        " FROM (SELECT id, (args->>'timestamp')::bigint AS ts FROM procrastinate_jobs"
        "       WHERE task_name = 'bench.tick') t"
        " JOIN procrastinate_events e ON e.job_id = t.id AND e.type = 'deferred'"
        " WHERE t.ts > %s AND t.ts <= %s) s",
        [since, until if until is not None else 2**62],
    )[0]
    return {"jobs": row[0], "ms_p50": row[1], "ms_p99": row[2], "ms_max": row[3]}


def run_deferrer(n: int, cron: str, until_done: Any, timeout: float) -> tuple[float | None, int]:
    """Starts the deferrer, polls ``until_done()`` (every 0.2 s) until it is
    true or ``timeout``; stops it. (peak RSS in MB, own polling statements)."""
    statements = DB.statements
    deferrer = child("_deferrer", {"BENCH_PERIODIC_N": str(n), "BENCH_PERIODIC_CRON": cron})
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not until_done():
            time.sleep(0.2)
        rss = peak_rss(deferrer.pid)
    finally:
        deferrer.send_signal(signal.SIGTERM)
        try:
            deferrer.wait(30)
        except subprocess.TimeoutExpired:
            deferrer.kill()
            deferrer.wait()
    return rss, DB.statements - statements


def w2_burst(n: int, lead: float, timeout: float) -> dict[str, Any]:
    """``n`` daily schedules all due at one second ``lead`` s ahead (croniter's
    sixth field is the second); started before the slot, cut off at ``timeout``."""
    reset()
    slot = DB.sql(f"SELECT date_trunc('second', statement_timestamp()) + interval '{lead} seconds'")[0][0]
    cron = f"{slot.minute} {slot.hour} * * * {slot.second}"

    def done() -> bool:
        return (
            int(DB.sql("SELECT count(*) FROM procrastinate_jobs WHERE task_name = 'bench.tick'")[0][0]) >= n
        )

    cost: dict[str, Any] = {}
    with db_cost(DB.sql, DB.close, cost):
        rss, own = run_deferrer(n, cron, done, lead + timeout)
    result = lateness()
    result.update(n=n, peak_rss_mb=rss, dropped=n - result["jobs"], **per_unit(cost, result["jobs"], own))
    return result


def w4_every_second(n: int, seconds: float, warmup: float = 5) -> dict[str, Any]:
    reset()
    marks: list[int] = []

    def window() -> bool:
        now = int(DB.sql("SELECT extract(epoch FROM statement_timestamp())::bigint")[0][0])
        if not marks:
            marks.append(now)
        return now - marks[0] >= seconds + warmup  # start-up first

    run_deferrer(n, "* * * * * *", window, seconds + 60)
    first = marks[0] + int(warmup)
    last = first + int(seconds)
    result = lateness(first + 1, last - 2)
    expected = max(0, last - first - 3) * n
    result.update(
        n=n,
        seconds=seconds,
        expected_fires=expected,
        fired_in_window=result["jobs"],
        skipped=max(0, expected - result["jobs"]),
        doubled=0,
    )  # a unique key forbids doubles
    return result


WORKLOADS = {
    "setup": setup,
    "enqueue_rates": enqueue_rates,
    "w3_worker": w3_worker,
    "w2_burst": w2_burst,
    "w4_every_second": w4_every_second,
}

if __name__ == "__main__":
    if sys.argv[1] == "_worker":
        _worker()
    elif sys.argv[1] == "_deferrer":
        _deferrer()
    else:
        print(json.dumps(WORKLOADS[sys.argv[1]](**json.loads(sys.argv[2])), default=str))
