"""awa_django's side of the benchmark: every workload through its public API.

Run by ``bench/run.py`` in the project's virtualenv as
``python -m bench.awa_side WORKLOAD JSON-ARGS``; prints one JSON object.
Schedules are inserted with SQL (nothing is declared, so ``runcron``'s sync
leaves them alone); fires go through the real evaluator or a real ``runcron``
process, jobs through ``Task.enqueue`` and real ``runtasks`` processes.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")
django.setup()

from django.db import connection, transaction  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from awa_django.leader.evaluator import evaluate  # noqa: E402
from bench.benchapp.tasks import noop  # noqa: E402
from bench.timing import call_cpu, cpu_cost, db_cost, peak_rss, per_unit, worker_cpu  # noqa: E402
from bench.timing import enqueue_rates as timed_enqueue  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
KIND = "bench.benchapp.tasks.noop"


OWN = {"statements": 0}  # this process's own statements (polls) inside measured windows


def sql(statement: str, params: Any = None) -> list[tuple[Any, ...]]:
    OWN["statements"] += 1
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return cursor.fetchall() if cursor.description else []


def reset() -> None:
    sql("TRUNCATE awa_cron_jobs, awa_jobs, awa_cron_slot_outcomes, awa_cron_slot_counts")


class Statements:
    """Counts the statements the child processes send (``bench.benchapp``'s
    hook, written when each exits): ``env`` goes to the children."""

    def __init__(self, **extra: str) -> None:
        self.directory = tempfile.mkdtemp(prefix="awa-bench-sql-")
        self.env = {"BENCH_SQL_DIR": self.directory, **extra}

    def files(self) -> list[dict[str, Any]]:
        return [json.loads(p.read_text()) for p in sorted(Path(self.directory).glob("*.json"))]

    def count(self) -> int | None:
        files = self.files()
        return sum(f["statements"] for f in files) if files else None


def insert_schedules(n: int, cron_expr: str, next_fire_sql: str | None) -> None:
    """``n`` schedules named bench-000000...; ``next_fire_sql`` stored as their next fire
    (NULL: the evaluator computes it on its next pass, as after a deploy)."""
    sql(
        "INSERT INTO awa_cron_jobs (name, cron_expr, kind, args, metadata, missed_fire_policy, "
        " queue, priority, max_attempts, tags, overlap) "
        "SELECT 'bench-' || lpad(i::text, 6, '0'), %s, %s, '{\"args\": [], \"kwargs\": {}}', '{}', "
        " 'coalesce', 'default', 0, 3, '{}', %s FROM generate_series(1, %s) AS i",
        # BENCH_OVERLAP=skip: every schedule with overlap 'skip' (the policy's cost).
        [cron_expr, KIND, os.environ.get("BENCH_OVERLAP", "allow"), n],
    )
    if next_fire_sql is not None:
        sql(f"UPDATE awa_cron_jobs SET next_fire_at = {next_fire_sql}")
    sql("VACUUM ANALYZE awa_cron_jobs")


def env_for_processes() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT)
    env["DJANGO_SETTINGS_MODULE"] = "bench.settings"
    return env


def manage(
    *args: str, env: dict[str, str] | None = None, prefix: tuple[str, ...] = ()
) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [*prefix, sys.executable, "-m", "django", *args], cwd=ROOT, env={**env_for_processes(), **(env or {})}
    )


def per_fire(cost: dict[str, Any], units: int, own: int, statements: int | None) -> dict[str, Any]:
    out = per_unit(cost, units, own)
    out["statements_per_unit"] = statements / units if statements is not None and units else None
    return out


# -- W1: idle pass, and the planning pass (per-row cost) -----------------------
def w1_idle(n: int, reps: int) -> dict[str, Any]:
    reset()
    insert_schedules(n, "0 0 1 1 *", "now() + interval '300 days'")
    evaluate()  # warm the connection and caches
    times, queries = [], []
    for _ in range(reps):
        with CaptureQueriesContext(connection) as captured:
            start = time.perf_counter()
            result = evaluate()
            times.append((time.perf_counter() - start) * 1000)
        assert result.evaluated == 0 and not result.jobs, "an idle pass fired something"
        queries.append(len(captured.captured_queries))
    return {
        "n": n,
        "ms_p50": statistics.median(times),
        "ms_min": min(times),
        "queries": statistics.median(queries),
    }


def w1_plan(n: int) -> dict[str, Any]:
    """One pass over ``n`` rows awaiting computation (after a deploy or a sync):
    every row is read and planned, none fires. Its cost per row is the
    evaluator's Python per row."""
    reset()
    insert_schedules(n, "0 0 1 1 *", None)
    start = time.perf_counter()
    result = evaluate()
    elapsed = time.perf_counter() - start
    assert result.evaluated == n and not result.jobs
    return {"n": n, "s": elapsed, "us_per_row": elapsed / n * 1e6}


# -- W2: a due burst, fired by a real runcron -----------------------------------
def lateness(since_id: int = 0) -> dict[str, Any]:
    row = sql(
        "SELECT count(*), "
        " percentile_cont(0.5) WITHIN GROUP (ORDER BY l), percentile_cont(0.99) WITHIN GROUP (ORDER BY l),"
        " max(l) FROM (SELECT EXTRACT(EPOCH FROM created_at - (metadata->>'cron_fire_at')::timestamptz)"
        " * 1000 AS l FROM awa_jobs WHERE id > %s AND metadata ? 'cron_fire_at') s",
        [since_id],
    )[0]
    return {"jobs": row[0], "ms_p50": row[1], "ms_p99": row[2], "ms_max": row[3]}


def prepare_burst(n: int, lead: float) -> Any:
    """``n`` daily schedules, all due at the slot ``lead`` s from now (plus time
    to insert them: 50 µs a row), so the scheduler starts before it; the slot."""
    reset()
    ahead = int(lead + n / 20_000 + 0.999)  # whole seconds: the slot is a whole second
    slot = sql(f"SELECT date_trunc('second', statement_timestamp()) + interval '{ahead} seconds'")[0][0]
    expr = f"{slot.second} {slot.minute} {slot.hour} * * *"  # daily, at the slot (UTC)
    insert_schedules(n, expr, f"'{slot.isoformat()}'::timestamptz")
    return slot


def insert_jobs(jobs: int) -> None:
    """``jobs`` available no-op jobs, inserted with SQL (the worker's input)."""
    reset()
    sql(
        "INSERT INTO awa_jobs (kind, queue, args, state, priority, max_attempts, metadata, tags) "
        "SELECT %s, 'default', '{\"args\": [], \"kwargs\": {}}', 'available', 0, 3, '{}', '{}' "
        "FROM generate_series(1, %s)",
        [KIND, jobs],
    )


def w2_burst(n: int, lead: float, timeout: float) -> dict[str, Any]:
    """``n`` schedules all due at one slot ``lead`` seconds ahead; a real
    ``runcron`` (started before the slot) fires them. Lateness = job
    created_at - slot; dropped = schedules without their job by ``timeout``."""
    prepare_burst(n, lead)
    counted = Statements()
    cost: dict[str, Any] = {}
    with db_cost(sql, connection.close, cost):
        own = OWN["statements"]
        runcron = manage("runcron", env=counted.env)
        peak_rss_mb = wait_for_jobs(runcron, n, lead + timeout)
        own = OWN["statements"] - own
    result = lateness()
    result.update(
        n=n,
        runcron_peak_rss_mb=peak_rss_mb,
        dropped=n - result["jobs"],
        **per_fire(cost, result["jobs"], own, counted.count()),
    )
    return result


def wait_for_jobs(process: subprocess.Popen[bytes], n: int, timeout: float) -> float | None:
    """Polls until ``n`` jobs exist or ``timeout``; stops ``process``; its peak RSS."""
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and process.poll() is None:
            if sql("SELECT count(*) FROM awa_jobs")[0][0] >= n:
                break
            time.sleep(0.2)
        return peak_rss(process.pid)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(60)


# -- W4: lateness of many every-second schedules --------------------------------
def w4_every_second(n: int, seconds: float, warmup: float = 5, complete_every: float = 0) -> dict[str, Any]:
    """``n`` every-second schedules fired by a real ``runcron`` for ``seconds``.
    ``complete_every`` > 0: the fired jobs are marked completed that often (one
    UPDATE, no worker), so an ``overlap="skip"`` schedule (``BENCH_OVERLAP=skip``)
    finds its last job finished and fires each slot: the check's cost, not its
    skips, is what such a run measures."""
    reset()
    insert_schedules(n, "* * * * * *", None)
    runcron = manage("runcron")
    completer = Completer(complete_every) if complete_every > 0 else None
    try:
        time.sleep(warmup)  # start-up, and the first pass that plans every row
        first = sql("SELECT coalesce(max(id), 0), statement_timestamp() FROM awa_jobs")[0]
        time.sleep(seconds)
        last = sql("SELECT statement_timestamp()")[0][0]
    finally:
        runcron.send_signal(signal.SIGTERM)
        runcron.wait(60)
        if completer is not None:
            completer.stop()
    result = lateness(first[0])
    # Slots strictly inside the window that every schedule should have fired.
    slots = sql(
        "SELECT count(DISTINCT metadata->>'cron_fire_at'), count(*) FROM awa_jobs WHERE id > %s"
        " AND (metadata->>'cron_fire_at')::timestamptz > %s + interval '1 second'"
        " AND (metadata->>'cron_fire_at')::timestamptz <= %s - interval '2 seconds'",
        [first[0], first[1], last],
    )[0]
    expected = max(0, int((last - first[1]).total_seconds()) - 3) * n
    doubled = sql(
        "SELECT count(*) FROM (SELECT 1 FROM awa_jobs WHERE metadata ? 'cron_fire_at'"
        " GROUP BY metadata->>'cron_name', metadata->>'cron_fire_at' HAVING count(*) > 1) d"
    )[0][0]
    result.update(
        n=n,
        seconds=seconds,
        warmup=warmup,
        overlap=os.environ.get("BENCH_OVERLAP", "allow"),
        expected_fires=expected,
        fired_in_window=slots[1],
        skipped=max(0, expected - slots[1]),
        skipped_overlap=sql(
            "SELECT coalesce(sum(count), 0) FROM awa_cron_slot_counts WHERE reason = 'overlap'"
        )[0][0],
        doubled=doubled,
    )
    return result


class Completer:
    """Marks available jobs completed every ``interval`` s on its own connection
    (a thread), standing in for a worker that finishes them at once."""

    def __init__(self, interval: float) -> None:
        import threading

        import psycopg

        self.interval = interval
        self.stopped = threading.Event()
        self.conn = psycopg.connect(os.environ["BENCH_DATABASE_URL"], autocommit=True)
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        while not self.stopped.wait(self.interval):
            self.conn.execute(
                "UPDATE awa_jobs SET state = 'completed', finished_at = clock_timestamp() WHERE state = 'available'"
            )

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join(30)
        self.conn.close()


# -- W3: worker throughput and enqueue rates -------------------------------------
def enqueue_rates(count: int) -> dict[str, Any]:
    reset()
    backend = noop.get_backend()
    bulk = None
    if hasattr(backend, "enqueue_many"):  # the bulk path of issue 10, where it exists

        def bulk(n: int) -> Any:
            return backend.enqueue_many([(noop, (), {})] * n)

    return timed_enqueue(count, noop.enqueue, transaction.atomic, bulk)


def commit_rate(count: int) -> dict[str, Any]:
    """Single-row INSERTs, each its own commit, from one connection: the rate
    this machine's PostgreSQL commits at (a bound for one-commit-per-item work),
    and the CPU per commit (this process's, PostgreSQL's)."""
    sql("CREATE TABLE IF NOT EXISTS bench_commit_rate (v int)")
    cpu: dict[str, Any] = {}
    with cpu_cost(cpu):
        start = time.perf_counter()
        for i in range(count):
            sql("INSERT INTO bench_commit_rate VALUES (%s)", [i])
        rate = count / (time.perf_counter() - start)
    sql("DROP TABLE bench_commit_rate")
    return {"commits_per_s": rate, **call_cpu(cpu, count, "commit")}


def run_workers(processes: int, concurrency: int, env: dict[str, str] | None = None) -> None:
    """``processes`` ``runtasks --burst`` at once; returns when all have exited."""
    workers = [
        manage("runtasks", "--burst", "--concurrency", str(concurrency), env=env) for _ in range(processes)
    ]
    for worker in workers:
        worker.wait(600)


def w3_worker(jobs: int, processes: int, concurrency: int) -> dict[str, Any]:
    reset()
    idle: dict[str, Any] = {}
    with cpu_cost(idle):  # the same processes on an empty queue: their start-up and exit
        run_workers(processes, concurrency)
    insert_jobs(jobs)
    counted = Statements()
    cost: dict[str, Any] = {}
    cpu: dict[str, Any] = {}
    with db_cost(sql, connection.close, cost):
        start = time.monotonic()
        with cpu_cost(cpu):
            run_workers(processes, concurrency, counted.env)
        wall = time.monotonic() - start
    done, span = sql(
        "SELECT count(*), EXTRACT(EPOCH FROM max(finished_at) - min(attempted_at)) FROM awa_jobs"
        " WHERE state = 'completed'"
    )[0]
    assert done == jobs, f"{done} of {jobs} jobs completed"
    return {
        "jobs": jobs,
        "processes": processes,
        "concurrency": concurrency,
        "jobs_per_s": jobs / float(span),
        "span_s": float(span),
        "wall_s": wall,
        **per_fire(cost, jobs, 0, counted.count()),
        **worker_cpu(cpu, idle, jobs, jobs / float(span)),
    }


# -- W3 with flow control: keyed jobs and a rate-limited queue -------------------
# Each variant's jobs, inserted with SQL like insert_jobs: no keys; 10
# concurrency keys at limit 1; 1,000 distinct keys at limit 1; every job in a
# queue with a rate and a concurrency limit that never bind (their checking is
# what is measured).
FLOW_KEYS = {
    "unkeyed": "NULL",
    "keys_10": "'k' || mod(i, 10)",
    "keys_1000": "'k' || mod(i, 1000)",
    "rate": "NULL",
}
FLOW_RATE = {"limited": {"rate": "1000000/m", "concurrency": 1000}}


def w3_flow(jobs: int, processes: int, concurrency: int, variant: str) -> dict[str, Any]:
    reset()
    key = FLOW_KEYS[variant]
    queue = "limited" if variant == "rate" else "default"
    sql(
        "INSERT INTO awa_jobs (kind, queue, args, state, priority, max_attempts, metadata, tags,"
        " concurrency_key, concurrency_limit) "
        f"SELECT %s, %s, '{{\"args\": [], \"kwargs\": {{}}}}', 'available', 0, 3, '{{}}', '{{}}', {key},"
        f" CASE WHEN {key} IS NULL THEN NULL ELSE 1 END FROM generate_series(1, %s) AS i",
        [KIND, queue, jobs],
    )
    env = {"BENCH_QUEUE_LIMITS": json.dumps(FLOW_RATE)}
    start = time.monotonic()
    run_workers(processes, concurrency, env)
    wall = time.monotonic() - start
    done, span = sql(
        "SELECT count(*), EXTRACT(EPOCH FROM max(finished_at) - min(attempted_at)) FROM awa_jobs"
        " WHERE state = 'completed'"
    )[0]
    assert done == jobs, f"{variant}: {done} of {jobs} jobs completed"
    # Most jobs of one key running at once (from their recorded start and end): 1 when the limit held.
    overlap = sql(
        "SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM awa_jobs AS a JOIN awa_jobs AS b"
        " ON a.concurrency_key = b.concurrency_key AND b.attempted_at <= a.attempted_at"
        " AND b.finished_at > a.attempted_at GROUP BY a.id) AS o"
    )[0][0]
    return {
        "variant": variant,
        "jobs": jobs,
        "processes": processes,
        "concurrency": concurrency,
        "jobs_per_s": jobs / float(span),
        "span_s": float(span),
        "wall_s": wall,
        "most_running_per_key": int(overlap),
    }


# -- W5: runcron start-up with N declared schedules -----------------------------
def w5_startup(n: int) -> dict[str, Any]:
    """``runcron --once`` with ``n`` schedules declared in settings: first on an
    empty table (every row inserted), then again (every row unchanged).
    Wall time of the whole command, and its peak RSS."""
    reset()
    env = dict(env_for_processes(), BENCH_DECLARED=str(n))
    out: dict[str, Any] = {"n": n}
    for label in ("first", "unchanged"):
        start = time.monotonic()
        proc = subprocess.run(
            ["/usr/bin/time", "-f", "%M", sys.executable, "-m", "django", "runcron", "--once"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        out[f"{label}_s"] = time.monotonic() - start
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr[-2000:])
        out[f"{label}_peak_rss_mb"] = int(proc.stderr.strip().splitlines()[-1]) / 1024
    rows = sql("SELECT count(*) FROM awa_cron_jobs")[0][0]
    assert rows == n, f"{rows} of {n} declared schedules stored"
    return out


WORKLOADS = {
    "w5_startup": w5_startup,
    "w1_idle": w1_idle,
    "w1_plan": w1_plan,
    "w2_burst": w2_burst,
    "w4_every_second": w4_every_second,
    "enqueue_rates": enqueue_rates,
    "w3_worker": w3_worker,
    "w3_flow": w3_flow,
    "commit_rate": commit_rate,
}

if __name__ == "__main__":
    print(json.dumps(WORKLOADS[sys.argv[1]](**json.loads(sys.argv[2])), default=str))
