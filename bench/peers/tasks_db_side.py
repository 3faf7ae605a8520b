"""django-tasks-db's side of the worker benchmark (W3), through its public API:
``Task.enqueue`` and the ``db_worker`` command. Run in the benchmark's own
virtualenv by ``bench/run.py``; prints one JSON object."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.peers.tasks_db_settings")
django.setup()

from django.db import connection, transaction  # noqa: E402

from bench.benchapp.tasks import noop  # noqa: E402
from bench.timing import cpu_cost, db_cost, per_unit, worker_cpu  # noqa: E402
from bench.timing import enqueue_rates as timed_enqueue  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def sql(statement: str, params: Any = None) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return cursor.fetchall() if cursor.description else []


def reset() -> None:
    sql("TRUNCATE django_tasks_database_dbtaskresult")


def enqueue_rates(count: int) -> dict[str, Any]:
    reset()
    return timed_enqueue(count, noop.enqueue, transaction.atomic)


def run_workers(processes: int, env: dict[str, str]) -> None:
    command = [
        sys.executable,
        "-m",
        "django",
        "db_worker",
        "--batch",
        "--no-startup-delay",
        "--interval",
        "0.1",
    ]
    workers = [subprocess.Popen(command, cwd=ROOT, env=env) for _ in range(processes)]
    for worker in workers:
        worker.wait(900)


def w3_worker(jobs: int, processes: int, concurrency: int) -> dict[str, Any]:
    del concurrency  # db_worker runs one task at a time per process
    reset()
    idle: dict[str, Any] = {}
    with cpu_cost(idle):  # the same processes on an empty queue: their start-up and exit
        run_workers(processes, dict(os.environ, PYTHONPATH=str(ROOT)))
    with transaction.atomic():
        for _ in range(jobs):
            noop.enqueue()
    counted = tempfile.mkdtemp(prefix="tasks-db-bench-sql-")
    cost: dict[str, Any] = {}
    cpu: dict[str, Any] = {}
    with db_cost(sql, connection.close, cost):
        start = time.monotonic()
        with cpu_cost(cpu):
            run_workers(processes, dict(os.environ, PYTHONPATH=str(ROOT), BENCH_SQL_DIR=counted))
        wall = time.monotonic() - start
    statements = sum(json.loads(p.read_text())["statements"] for p in Path(counted).glob("*.json"))
    done, span = sql(
        "SELECT count(*), EXTRACT(EPOCH FROM max(finished_at) - min(started_at))"
        " FROM django_tasks_database_dbtaskresult WHERE status = 'SUCCESSFUL'"
    )[0]
    assert done == jobs, f"{done} of {jobs} tasks succeeded"
    return {
        "jobs": jobs,
        "processes": processes,
        "concurrency": 1,
        "jobs_per_s": jobs / float(span),
        "span_s": float(span),
        "wall_s": wall,
        **per_unit(cost, jobs),
        "statements_per_unit": statements / jobs,
        **worker_cpu(cpu, idle, jobs, jobs / float(span)),
    }


WORKLOADS = {"enqueue_rates": enqueue_rates, "w3_worker": w3_worker}

if __name__ == "__main__":
    print(json.dumps(WORKLOADS[sys.argv[1]](**json.loads(sys.argv[2])), default=str))
