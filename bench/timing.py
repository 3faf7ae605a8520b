"""Timing and database counters shared by every side of the benchmark.

Dependency-free on purpose: awa_django's side imports it from the project's
virtualenv, the peers' sides from the benchmark's own virtualenv. Whatever
talks to the database is passed in as a callable ``sql(statement) -> rows``.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

Sql = Callable[[str], list[tuple[Any, ...]]]

# WAL position (cluster-wide) and this database's committed + rolled-back
# transactions, as the statistics system last saw them.
COUNTERS = (
    "SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn, xact_commit + xact_rollback"
    " FROM pg_stat_database WHERE datname = current_database()"
)


def per_second(count: int, call: Callable[[], Any]) -> float:
    """Calls ``call`` ``count`` times; the calls per second."""
    start = time.perf_counter()
    for _ in range(count):
        call()
    return count / (time.perf_counter() - start)


def enqueue_rates(
    count: int,
    single: Callable[[], Any],
    atomic: Callable[[], AbstractContextManager[Any]] | None = None,
    bulk: Callable[[int], Any] | None = None,
) -> dict[str, float | None]:
    """The enqueue rates every system reports: ``count`` single enqueues, the
    same inside one transaction (``atomic``), and one bulk call of ``count``;
    and the CPU per single call (``single_client_cpu_ms``: this process,
    ``single_pg_cpu_ms``: PostgreSQL)."""
    cpu: dict[str, Any] = {}
    with cpu_cost(cpu):
        out: dict[str, float | None] = {"single_per_s": per_second(count, single)}
    out.update(call_cpu(cpu, count, "single"))
    if atomic is not None:
        start = time.perf_counter()
        with atomic():
            for _ in range(count):
                single()
        out["one_transaction_per_s"] = count / (time.perf_counter() - start)
    if bulk is not None:
        start = time.perf_counter()
        bulk(count)
        out["bulk_per_s"] = count / (time.perf_counter() - start)
    return out


def read_counters(sql: Sql, close: Callable[[], None]) -> tuple[int, int]:
    """(WAL bytes, transactions) now. ``close`` ends the caller's session first:
    a backend reports its transaction counts when it exits (sooner only once a
    second), so closing and waiting makes the count complete."""
    close()
    time.sleep(0.6)
    sql("SELECT pg_stat_clear_snapshot()")
    row = sql(COUNTERS)[0]
    return int(row[0]), int(row[1])


@contextmanager
def db_cost(sql: Sql, close: Callable[[], None], out: dict[str, Any]) -> Iterator[None]:
    """Fills ``out`` with ``wal_bytes`` and ``transactions`` spent inside the
    block (the two reads of the counters excluded). The processes that did the
    work must have exited (or closed their connections) before the block ends."""
    wal_before, xact_before = read_counters(sql, close)
    yield
    wal_after, xact_after = read_counters(sql, close)
    out["wal_bytes"] = wal_after - wal_before
    # The first read's own transactions (clear_snapshot and the read itself).
    out["transactions"] = max(0, xact_after - xact_before - 2)


def per_unit(cost: dict[str, Any], units: int, own_statements: int = 0) -> dict[str, float | None]:
    """WAL bytes and transactions per fire or per task; ``own_statements`` are
    the caller's polling statements in the window (each one transaction)."""
    if units <= 0 or "wal_bytes" not in cost:
        return {"wal_bytes_per_unit": None, "transactions_per_unit": None}
    return {
        "wal_bytes_per_unit": cost["wal_bytes"] / units,
        "transactions_per_unit": max(0, cost["transactions"] - own_statements) / units,
    }


def peak_rss(pid: int) -> float | None:
    """Peak resident set size of a running process (Linux), in MB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


# -- CPU time: the measured processes' and PostgreSQL's ---------------------------
TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
PROC = Path("/proc")
Stat = tuple[str, int, float, float]


def parse_stat(text: str) -> Stat:
    """(command name, parent pid, CPU seconds, reaped children's CPU seconds)
    of one ``/proc/<pid>/stat`` line (the name may hold spaces and parentheses)."""
    name = text[text.index("(") + 1 : text.rindex(")")]
    fields = text[text.rindex(")") + 2 :].split()
    # After the name: state ppid ... utime (11) stime (12) cutime (13) cstime (14).
    return (
        name,
        int(fields[1]),
        (int(fields[11]) + int(fields[12])) / TICK,
        (int(fields[13]) + int(fields[14])) / TICK,
    )


def postmasters(stats: dict[int, Stat]) -> list[int]:
    """The ``postgres`` processes whose parent is not one: the servers' postmasters."""
    return [pid for pid, s in stats.items() if s[0] == "postgres" and stats.get(s[1], ("",))[0] != "postgres"]


def server_cpu(stats: dict[int, Stat]) -> float | None:
    """The CPU seconds spent so far by PostgreSQL on this machine, from the
    parsed stat of every process: each live ``postgres`` process's own, plus
    what its postmaster's exited children (ended sessions) spent. None if no
    PostgreSQL runs here."""
    live = [s[2] for s in stats.values() if s[0] == "postgres"]
    if not live:
        return None
    return sum(live) + sum(stats[pid][3] for pid in postmasters(stats))


def scan() -> dict[int, Stat]:
    """Every process's parsed stat; a ``postgres`` process's CPU from its
    ``schedstat`` (nanoseconds, where ``stat`` counts 10 ms ticks: its
    processes are single-threaded, so the main thread's figure is the process's)."""
    stats: dict[int, Stat] = {}
    for entry in PROC.iterdir() if PROC.is_dir() else ():
        try:
            if entry.name.isdigit():
                stat = parse_stat((entry / "stat").read_text())
                if stat[0] == "postgres":
                    stat = (stat[0], stat[1], precise_cpu(entry, stat[2]), stat[3])
                stats[int(entry.name)] = stat
        except (OSError, ValueError, IndexError):
            continue  # exited meanwhile
    return stats


def precise_cpu(entry: Path, cpu: float) -> float:
    """A postgres process's CPU from its ``schedstat`` if the kernel has one, else ``cpu``."""
    try:
        return int((entry / "schedstat").read_text().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return cpu


def postgres_cpu() -> float | None:
    """``server_cpu`` now. A session ending during the scan moves from the live
    sum to the reaped one: the scan is repeated until the reaped sum held."""
    for _ in range(5):
        stats = scan()
        masters = postmasters(stats)
        try:
            again = [parse_stat((PROC / str(pid) / "stat").read_text())[3] for pid in masters]
        except (OSError, ValueError, IndexError):
            continue
        if again == [stats[pid][3] for pid in masters]:
            return server_cpu(stats)
    return None


def own_cpu() -> tuple[float, float]:
    """(this process, every thread; its waited-for children) CPU seconds so far."""
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, children.ru_utime + children.ru_stime


@contextmanager
def cpu_cost(out: dict[str, Any]) -> Iterator[None]:
    """Fills ``out`` with the CPU seconds spent inside the block by this process
    (``self_cpu_s``), by its children waited for inside it (``children_cpu_s``:
    worker processes started and waited for in the block), by PostgreSQL
    (``pg_cpu_s``, the whole server on this machine; None if it is not here),
    and the block's wall time (``cpu_wall_s``)."""
    pg, (me, children), start = postgres_cpu(), own_cpu(), time.monotonic()
    yield
    wall = time.monotonic() - start
    me_after, children_after = own_cpu()
    pg_after = postgres_cpu()
    out["self_cpu_s"] = me_after - me
    out["children_cpu_s"] = children_after - children
    out["pg_cpu_s"] = pg_after - pg if pg is not None and pg_after is not None else None
    out["cpu_wall_s"] = wall


def cpu_bound(
    per_s: float | None, cpu_ms_per_unit: float | None, cores: int | None
) -> dict[str, float | None]:
    """The CPU-bound ceiling (units/s if ``cores`` cores did nothing else) and
    the share of it reached: ``per_s / ceiling``."""
    if not cpu_ms_per_unit or cpu_ms_per_unit <= 0 or not cores:
        return {"cpu_ceiling_per_s": None, "cpu_utilization": None}
    ceiling = cores * 1000 / cpu_ms_per_unit
    return {"cpu_ceiling_per_s": ceiling, "cpu_utilization": per_s / ceiling if per_s else None}


def worker_cpu(run: dict[str, Any], idle: dict[str, Any], jobs: int, jobs_per_s: float) -> dict[str, Any]:
    """CPU per job of a worker run, ``run`` and ``idle`` from ``cpu_cost``:
    ``idle`` the same processes started on an empty queue, whose CPU (start-up
    and exit: imports, Django's set-up, connecting) is taken off, so what
    remains is the CPU the jobs cost."""

    def ms_per_job(key: str) -> float | None:
        if run.get(key) is None or idle.get(key) is None or jobs <= 0:
            return None
        return max(0.0, float(run[key]) - float(idle[key])) * 1000 / jobs

    worker, pg = ms_per_job("children_cpu_s"), ms_per_job("pg_cpu_s")
    total = worker + pg if worker is not None and pg is not None else None
    cores = os.cpu_count()
    startup = [idle.get("children_cpu_s"), idle.get("pg_cpu_s")]
    return {
        "worker_cpu_s": run.get("children_cpu_s"),
        "pg_cpu_s": run.get("pg_cpu_s"),
        "cpu_wall_s": run.get("cpu_wall_s"),
        "worker_cpu_ms_per_job": worker,
        "pg_cpu_ms_per_job": pg,
        "total_cpu_ms_per_job": total,
        "startup_cpu_ms": sum(startup) * 1000 if None not in startup else None,  # type: ignore[arg-type]
        "cpu_cores": cores,
        **cpu_bound(jobs_per_s, total, cores),
    }


def call_cpu(cpu: dict[str, Any], calls: int, prefix: str) -> dict[str, float | None]:
    """CPU ms per call of calls made by this process (``cpu`` from ``cpu_cost``):
    this process's (``<prefix>_client_cpu_ms``) and PostgreSQL's."""
    pg = cpu.get("pg_cpu_s")
    return {
        f"{prefix}_client_cpu_ms": cpu["self_cpu_s"] * 1000 / calls if calls else None,
        f"{prefix}_pg_cpu_ms": pg * 1000 / calls if pg is not None and calls else None,
    }
