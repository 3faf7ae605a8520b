"""The soak benchmark: ``make soak`` (``SOAK_MINUTES``, default 60) or ``make soak-quick`` (3 minutes).

Hours of steady work rather than seconds of bursts, to see what the benchmark
cannot: a jobs table that grows, bloat held back by a long transaction, and
whether throughput and fire lateness come back once it ends.

What it runs, on a private PostgreSQL cluster started as ``bench/chaos.py``
starts one (PyPI ``pgserver``, unix socket only, deleted afterwards; default
server settings, autovacuum on):

* one ``runcron`` with ``--schedules`` (1,000) every-second schedules of a
  no-op task: 1,000 jobs a second;
* an enqueuer (a thread of this process) calling ``Task.enqueue()`` at
  ``--enqueue-rate`` (100) jobs a second, paced;
* ``WORKERS`` ``runtasks`` processes (``CONCURRENCY`` 16 each) running them all;
* pruning as the leader does it by default (its maintenance, every
  ``AWA_SYNC_INTERVAL``), with ``AWA_JOB_RETENTION`` scaled to the run
  (``SOAK_RETENTION``; the 7-day default would prune nothing in an hour);
* a ``REPEATABLE READ`` transaction that reads ``awa_jobs`` and stays open,
  from 40 % of the run for 10 minutes (the quick run: for a fifth of the run).

The quick run (3 minutes, for CI) scales the load down to what a shared
2-core CI machine holds beside other work: 100 schedules and 50 enqueues a
second, a 60 s retention.

Every ``SAMPLE`` (10 s) it records: jobs completed per second, the lateness
(p50, p99, max) of the fires created in the interval, ``awa_jobs`` heap,
index and total size, live and dead tuples, autovacuum and autoanalyze runs so
far (``awa_jobs`` and ``awa_cron_jobs``), the leader's catch-up vacuums and index
rebuilds of ``awa_jobs`` so far, and the CPU the workers, ``runcron``
and PostgreSQL (the private cluster's processes only) used in the interval.
It writes ``soak-<mode>.csv`` and ``.json`` under ``.cache/soak`` and, in the
benchmark's virtualenv (which has matplotlib), ``soak-<mode>.png``;
``--publish`` also writes the soak section of ``docs/benchmarks.md`` and its
plot (``docs/images/soak-<mode>.png``).

It fails (exit 1) only on a broken run: a process exited, nothing completed
in the last third of the run, or the harness itself failed. Never on a timing.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.chaos import Campaign, Proc, exit_on_sigterm  # noqa: E402
from bench.timing import PROC, parse_stat, scan  # noqa: E402

WORKERS = 2
# Slots per runtasks: with 4, each claim-and-complete statement carries one or two
# jobs and the workers fall behind 1,100 jobs/s on commits (550/s measured); 16
# lets one commit carry several and holds the load.
CONCURRENCY = 16
SAMPLE = 10.0
TASK = "tests.testapp.tasks.record"
PROCESS_ENV = {
    "DJANGO_SETTINGS_MODULE": "tests.settings",
    "AWA_LOG_LEVEL": "WARNING",
    "AWA_SYNC_INTERVAL": "60",  # the default: pruning runs with the leader's maintenance
    "AWA_EVALUATE_INTERVAL": "1",
    "AWA_ELECTION_INTERVAL": "5",
    "AWA_LEADER_CHECK_INTERVAL": "30",
    "PYTHONUNBUFFERED": "1",
}
COLUMNS = [
    "t_s", "completed_per_s", "offered_per_s", "fires", "late_p50_ms", "late_p99_ms", "late_max_ms",
    "jobs_rows", "heap_mb", "index_mb", "total_mb", "dead_tuples", "autovacuum_runs", "autoanalyze_runs",
    "cron_dead_tuples", "cron_autovacuum_runs", "worker_cpu", "runcron_cpu", "postgres_cpu",
    "long_reader_open", "index_rebuilds", "vacuum_runs", "fires_over_100ms",
]  # fmt: skip


@dataclass
class Plan:
    mode: str
    seconds: float
    retention: float
    reader_at: float
    reader_for: float
    schedules: int = 1000
    enqueue_rate: float = 100.0  # jobs/s offered by the enqueuer, besides one fire a second per schedule
    recovery: float = 120.0  # after the long reader ends, the samples left out of "outside the reader"
    # autovacuum_vacuum_cost_limit of awa_jobs (None: the server's default pace).
    jobs_autovacuum_cost_limit: int | None = None

    @classmethod
    def of(cls, args: argparse.Namespace) -> Plan:
        quick = bool(args.quick)
        seconds = 180.0 if quick else args.minutes * 60
        hold = seconds / 5 if quick else min(600.0, seconds / 5)
        default_retention = 60.0 if quick else 600.0
        return cls(
            "quick" if quick else "full",
            seconds,
            args.retention if args.retention is not None else default_retention,
            reader_at=seconds * 0.4,
            reader_for=hold,
            schedules=args.schedules or (100 if quick else 1000),
            enqueue_rate=args.enqueue_rate or (50.0 if quick else 100.0),
            recovery=30.0 if quick else 120.0,
            jobs_autovacuum_cost_limit=args.jobs_autovacuum_cost_limit,
        )


@dataclass
class Soak:
    plan: Plan
    campaign: Campaign
    procs: list[Proc] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    enqueued: int = 0
    enqueue_errors: int = 0
    stop: threading.Event = field(default_factory=threading.Event)
    # The awa_jobs indexes by name, as last sampled (a concurrent rebuild
    # gives the name to a new index), and the rebuilds seen so far.
    index_oids: dict[str, int] = field(default_factory=dict)
    index_rebuilds: int = 0

    # -- set-up ---------------------------------------------------------------
    def start_processes(self) -> None:
        schedules = {
            f"soak-{i:04d}": {"cron": "* * * * * *", "task": TASK} for i in range(self.plan.schedules)
        }
        env = dict(
            os.environ,
            **PROCESS_ENV,
            DATABASE_URL=self.campaign.direct_url,
            AWA_JOB_RETENTION=str(self.plan.retention),
            AWA_TEST_SCHEDULES=json.dumps(schedules),
        )
        logs = self.campaign.workdir / "logs"
        logs.mkdir(exist_ok=True)
        self.procs.append(Proc("runcron", 0, env, logs))
        self.procs += [Proc("runtasks", i, env, logs, concurrency=CONCURRENCY) for i in range(WORKERS)]
        for proc in self.procs:
            proc.start()

    def enqueue_loop(self) -> None:
        """``enqueue_rate`` single enqueues a second, paced against the clock."""
        from django.db import DatabaseError, connections

        from tests.testapp.tasks import record

        started = time.monotonic()
        try:
            while not self.stop.is_set():
                due = started + self.enqueued / self.plan.enqueue_rate
                if (wait := due - time.monotonic()) > 0:
                    self.stop.wait(wait)
                    continue
                try:
                    record.enqueue(label="offered")
                    self.enqueued += 1
                except DatabaseError:
                    self.enqueue_errors += 1
                    connections["default"].close()
                    time.sleep(0.1)
        finally:
            connections.close_all()

    def long_reader(self) -> None:
        """A REPEATABLE READ transaction holding its snapshot for ``reader_for`` seconds."""
        if self.stop.wait(self.plan.reader_at):
            return
        with psycopg.connect(self.campaign.conninfo) as conn:
            conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
            conn.execute("SELECT count(*) FROM awa_jobs")  # takes the snapshot
            self.reader_open = True
            self.stop.wait(self.plan.reader_for)
            conn.rollback()
        self.reader_open = False

    reader_open = False

    # -- sampling -------------------------------------------------------------
    def cpu(self) -> dict[str, float]:
        """CPU seconds so far: the workers, runcron, and the private cluster's postgres processes."""
        out = {"worker_cpu": 0.0, "runcron_cpu": 0.0}
        for proc in self.procs:
            try:
                seconds = parse_stat((PROC / str(proc.pid) / "stat").read_text())[2]
            except (OSError, ValueError, IndexError):
                continue
            out["worker_cpu" if proc.role == "runtasks" else "runcron_cpu"] += seconds
        postmaster = self.campaign.server.get_postmaster_info().pid
        stats = scan()
        own = [s[2] for pid, s in stats.items() if pid == postmaster or s[1] == postmaster]
        out["postgres_cpu"] = sum(own) + (stats[postmaster][3] if postmaster in stats else 0.0)
        return out

    def sample(self, conn: psycopg.Connection[Any], since: float, until: float) -> dict[str, Any]:
        """One row of the CSV for the interval [since, until) (database epochs)."""
        completed = conn.execute(
            "SELECT count(*) FROM awa_jobs WHERE state IN ('completed', 'failed', 'cancelled') "
            "AND finished_at >= to_timestamp(%s) AND finished_at < to_timestamp(%s)",
            [since, until],
        ).fetchone()
        late = conn.execute(
            "SELECT count(*), percentile_cont(0.5) WITHIN GROUP (ORDER BY l), "
            "percentile_cont(0.99) WITHIN GROUP (ORDER BY l), max(l), count(*) FILTER (WHERE l > 100) FROM ("
            " SELECT EXTRACT(EPOCH FROM created_at - (metadata->>'cron_fire_at')::timestamptz) * 1000 AS l"
            " FROM awa_jobs WHERE metadata ? 'cron_fire_at'"
            " AND created_at >= to_timestamp(%s) AND created_at < to_timestamp(%s)) s",
            [since, until],
        ).fetchone()
        size = conn.execute(
            "SELECT pg_relation_size('awa_jobs'), pg_indexes_size('awa_jobs'), pg_total_relation_size('awa_jobs')"
        ).fetchone()
        conn.execute("SELECT pg_stat_clear_snapshot()")
        tables = {
            r[0]: r[1:]
            for r in conn.execute(
                "SELECT relname, n_live_tup, n_dead_tup, autovacuum_count, autoanalyze_count, vacuum_count "
                "FROM pg_stat_user_tables WHERE relname IN ('awa_jobs', 'awa_cron_jobs')"
            ).fetchall()
        }
        jobs, cron = tables.get("awa_jobs", (0, 0, 0, 0, 0)), tables.get("awa_cron_jobs", (0, 0, 0, 0, 0))
        oids = dict(
            conn.execute(
                "SELECT c.relname, c.oid::bigint FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                "WHERE i.indrelid = 'awa_jobs'::regclass AND i.indisvalid"
            ).fetchall()
        )
        self.index_rebuilds += sum(1 for name, oid in oids.items() if self.index_oids.get(name, oid) != oid)
        self.index_oids = oids
        assert completed is not None and late is not None and size is not None
        mb = 1024 * 1024

        def rounded(value: Any) -> float | None:
            return None if value is None else round(float(value), 1)

        return {
            "completed_per_s": round(completed[0] / (until - since), 1),
            "fires": late[0],
            "late_p50_ms": rounded(late[1]),
            "late_p99_ms": rounded(late[2]),
            "late_max_ms": rounded(late[3]),
            "fires_over_100ms": late[4],
            "jobs_rows": jobs[0],
            "heap_mb": round(size[0] / mb, 1),
            "index_mb": round(size[1] / mb, 1),
            "total_mb": round(size[2] / mb, 1),
            "dead_tuples": jobs[1],
            "autovacuum_runs": jobs[2],
            "autoanalyze_runs": jobs[3],
            "cron_dead_tuples": cron[1],
            "cron_autovacuum_runs": cron[2],
            "index_rebuilds": self.index_rebuilds,
            # VACUUMs not run by autovacuum: here, the leader's catch-up vacuums
            # (awa_cron_jobs has its own, counted apart).
            "vacuum_runs": jobs[4],
        }

    def run(self) -> None:
        threads = [
            threading.Thread(target=self.enqueue_loop, name="soak-enqueue", daemon=True),
            threading.Thread(target=self.long_reader, name="soak-reader", daemon=True),
        ]
        for thread in threads:
            thread.start()
        started = time.monotonic()
        with psycopg.connect(self.campaign.conninfo, autocommit=True) as conn:

            def db_now() -> float:
                row = conn.execute("SELECT extract(epoch FROM clock_timestamp())::float8").fetchone()
                assert row is not None
                return float(row[0])

            since, cpu, offered = db_now(), self.cpu(), self.enqueued
            while (elapsed := time.monotonic() - started) < self.plan.seconds:
                time.sleep(max(0.0, SAMPLE - (time.monotonic() - started) % SAMPLE))
                if any(not p.alive() for p in self.procs):
                    raise BrokenRun(
                        f"a process exited: {[(p.role, p.index) for p in self.procs if not p.alive()]}"
                    )
                until, now_cpu, now_offered = db_now(), self.cpu(), self.enqueued
                row = {"t_s": round(time.monotonic() - started), **self.sample(conn, since, until)}
                row["offered_per_s"] = round(
                    self.plan.schedules + (now_offered - offered) / (until - since), 1
                )
                for key, value in now_cpu.items():
                    row[key] = round((value - cpu.get(key, 0.0)) / (until - since), 3)  # cores busy
                row["long_reader_open"] = int(self.reader_open)
                self.rows.append(row)
                log(" ".join(f"{k}={row[k]}" for k in COLUMNS))
                since, cpu, offered = until, now_cpu, now_offered
            del elapsed
            self.check_pruning(conn)
        self.stop.set()
        for thread in threads:
            thread.join(timeout=60)

    def check_pruning(self, conn: psycopg.Connection[Any]) -> None:
        """A run longer than its retention plus five pruning intervals must have
        pruned: the settings reached the leader and its maintenance ran. (The
        quick run is too short to tell.)"""
        slack = 5 * float(PROCESS_ENV["AWA_SYNC_INTERVAL"])
        if self.plan.seconds < self.plan.retention + slack + SAMPLE:
            return
        row = conn.execute(
            "SELECT extract(epoch FROM clock_timestamp() - min(finished_at))::float8 FROM awa_jobs"
            " WHERE state IN ('completed', 'failed', 'cancelled')"
        ).fetchone()
        oldest = row[0] if row else None
        if oldest is not None and oldest > self.plan.retention + slack:
            raise BrokenRun(
                f"nothing was pruned: the oldest finished job is {oldest:.0f} s old,"
                f" retention {self.plan.retention:.0f} s"
            )

    def stop_processes(self) -> None:
        for proc in self.procs:
            proc.signal(signal.SIGTERM)
        for proc in self.procs:
            if proc.popen is not None:
                try:
                    proc.popen.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    proc.signal(signal.SIGKILL)
                    proc.popen.wait(timeout=60)

    def log_errors(self) -> list[str]:
        """Every ERROR or Traceback line the processes logged."""
        found: list[str] = []
        for path in sorted((self.campaign.workdir / "logs").glob("*.log")):
            for line in path.read_text(errors="replace").splitlines():
                if " ERROR " in line or "Traceback" in line:
                    found.append(f"{path.name}: {line}")
        return found


class BrokenRun(Exception):
    """The soak could not run as planned (not a timing)."""


def log(message: str) -> None:
    print(f"[soak {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def summary(plan: Plan, rows: list[dict[str, Any]], errors: list[str], enqueue_errors: int) -> dict[str, Any]:
    reader_end = plan.reader_at + plan.reader_for
    warm = [r for r in rows if r["t_s"] > 2 * SAMPLE]  # start-up left out
    # A sample covers the 10 s before its t_s.
    out_rows = [r for r in warm if r["t_s"] <= plan.reader_at or r["t_s"] > reader_end + plan.recovery]
    in_rows = [r for r in warm if plan.reader_at < r["t_s"] <= reader_end + SAMPLE]
    early = [r for r in rows if r["t_s"] <= min(600.0, plan.seconds / 6) + SAMPLE / 2]

    def worst(rs: list[dict[str, Any]], key: str, pick: Any) -> float | None:
        values = [r[key] for r in rs if r[key] is not None]
        return pick(values) if values else None

    return {
        "samples": len(rows),
        "completed_per_s_min_outside_reader": worst(out_rows, "completed_per_s", min),
        "completed_per_s_min_with_reader": worst(in_rows, "completed_per_s", min),
        "late_p99_ms_max_outside_reader": worst(out_rows, "late_p99_ms", max),
        "late_p99_ms_max_with_reader": worst(in_rows, "late_p99_ms", max),
        "total_mb_at_10_min": early[-1]["total_mb"] if early else None,  # a sixth of a shorter run
        "total_mb_peak": worst(rows, "total_mb", max),
        "total_mb_end": rows[-1]["total_mb"] if rows else None,
        "dead_tuples_peak": worst(rows, "dead_tuples", max),
        "log_errors": len(errors),
        "enqueue_errors": enqueue_errors,
    }


def write_outputs(plan: Plan, result: dict[str, Any], out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    with (out_dir / f"soak-{plan.mode}.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(result["rows"])
    path = out_dir / f"soak-{plan.mode}.json"
    path.write_text(json.dumps(result, indent=2, default=str))
    return path


def plot(results: Path, png: Path, build: bool) -> None:
    """Draw the plot in the benchmark's virtualenv (matplotlib is not a project
    dependency); without ``build``, only if that virtualenv exists already."""
    from bench.run import BENCH_VENV, ensure_bench_venv

    python = ensure_bench_venv() if build or (BENCH_VENV / ".installed").exists() else None
    if python is None:
        log("no benchmark virtualenv: no plot (the CSV has every sample)")
        return
    subprocess.run([python, "-m", "bench.soak_report", str(results), str(png)], cwd=ROOT, check=True)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="the CI run: 3 minutes, scaled down")
    parser.add_argument("--minutes", type=float, default=float(os.environ.get("SOAK_MINUTES", "60")))
    parser.add_argument(
        "--retention", type=float, default=None, help="AWA_JOB_RETENTION of the run (seconds)"
    )
    parser.add_argument(
        "--schedules", type=int, default=None, help="every-second schedules (1,000; quick: 100)"
    )
    parser.add_argument(
        "--enqueue-rate", type=float, default=None, help="enqueues/s offered (100; quick: 50)"
    )
    parser.add_argument(
        "--jobs-autovacuum-cost-limit",
        type=int,
        default=None,
        help="set autovacuum_vacuum_cost_limit on awa_jobs (default: the server's pace)",
    )
    parser.add_argument(
        "--publish", action="store_true", help="also write the soak section of docs/benchmarks.md"
    )
    args = parser.parse_args()
    exit_on_sigterm()
    plan = Plan.of(args)
    log(
        f"{plan.mode} run: {plan.seconds:.0f} s, {plan.schedules} every-second schedules, "
        f"{plan.enqueue_rate:.0f} enqueues/s, "
        f"{WORKERS} runtasks x {CONCURRENCY}, retention {plan.retention:.0f} s, long reader at {plan.reader_at:.0f} s "
        f"for {plan.reader_for:.0f} s"
    )
    started = time.time()
    load_at_start = [round(x, 2) for x in os.getloadavg()]
    with tempfile.TemporaryDirectory(prefix="awa-soak-") as tmp:
        campaign = Campaign(0, plan.seconds, Path(tmp))
        campaign.start_cluster()
        soak = Soak(plan, campaign)
        try:
            campaign.migrate()
            if plan.jobs_autovacuum_cost_limit:
                with psycopg.connect(campaign.conninfo, autocommit=True) as conn:
                    conn.execute(
                        f"ALTER TABLE awa_jobs SET (autovacuum_vacuum_cost_limit = {plan.jobs_autovacuum_cost_limit:d})"
                    )
            campaign.configure_django()
            soak.start_processes()
            soak.run()
        except BrokenRun as exc:
            log(f"BROKEN: {exc}")
            return 1
        finally:
            soak.stop.set()
            soak.stop_processes()
            errors = soak.log_errors()
            from django.db import connections

            connections.close_all()
            campaign.server.cleanup()
    result = {
        "mode": plan.mode,
        "plan": plan.__dict__,
        "load": {
            "schedules": plan.schedules,
            "enqueue_rate": plan.enqueue_rate,
            "workers": WORKERS,
            "concurrency": CONCURRENCY,
        },
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "loadavg_at_start": load_at_start,
            "loadavg_at_end": [round(x, 2) for x in os.getloadavg()],
        },
        "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(started)),
        "summary": summary(plan, soak.rows, errors, soak.enqueue_errors),
        "errors": errors[:50],
        "rows": soak.rows,
    }
    path = write_outputs(plan, result, ROOT / ".cache" / "soak")
    log(json.dumps(result["summary"]))
    for line in errors[:20]:
        log(f"log error: {line}")
    png = ROOT / "docs" / "images" / f"soak-{plan.mode}.png" if args.publish else path.with_suffix(".png")
    plot(path, png, build=args.publish)
    if args.publish:
        from bench.soak_report import markdown, publish

        publish(markdown(result, f"images/{png.name}"))
    late = [r for r in soak.rows if r["t_s"] > plan.seconds * 2 / 3]
    if not late or not any(r["completed_per_s"] > 0 for r in late):
        log("BROKEN: nothing completed in the last third of the run")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
