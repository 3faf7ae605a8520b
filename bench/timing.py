"""Timing and database counters shared by every side of the benchmark.

Dependency-free on purpose: awa_django's side imports it from the project's
virtualenv, the peers' sides from the benchmark's own virtualenv. Whatever
talks to the database is passed in as a callable ``sql(statement) -> rows``.
"""

from __future__ import annotations

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
) -> dict[str, float]:
    """The enqueue rates every system reports: ``count`` single enqueues, the
    same inside one transaction (``atomic``), and one bulk call of ``count``."""
    out = {"single_per_s": per_second(count, single)}
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
