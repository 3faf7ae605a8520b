"""Rebuilding the indexes of ``awa_jobs`` once churn has bloated them.

Every job is inserted, claimed and completed, and neither update is HOT (both
change an indexed column), so each job leaves dead entries in most indexes of
``awa_jobs``. VACUUM makes their pages reusable but never gives them back, and
while a long transaction holds back cleanup (a report, a stuck session), the
indexes grow with every job and stay that size once it ends: measured in the
soak benchmark, 220 MB of indexes at a steady state became 380 MB after a
10-minute reader, while the heap went back to its size.

So the leader's maintenance, after pruning, estimates what each btree index
of ``awa_jobs`` would take if built afresh (entries and their widths, from a
sample of the table's pages) and keeps each index's ratio of size to estimate
over the last ``HISTORY`` runs. Under steady churn that ratio settles (dead
entries between two vacuums, pages split half full: about 2 measured), so a
ratio is judged against the index's usual one, the median of those runs: an
index is rebuilt with ``REINDEX INDEX CONCURRENTLY`` when its ratio is more
than ``JUMP`` times its usual one and more than ``BLOAT_FACTOR``, it is at
least ``MIN_EXCESS`` bytes over its estimate, and ``MIN_HISTORY`` runs are
known; one index per run, the one most over its estimate. An index at its
usual size is never rebuilt just to grow back.

A concurrent rebuild takes no lock that enqueue, claim or completion waits
for; it waits for transactions older than itself, so while a client
transaction has been open for ``QUIET_AFTER`` seconds or more the run does
nothing (and records nothing: the usual ratio is what cleanup keeps up with).
Nor while cleanup of the table is behind (``jobs_vacuum.behind``): an index
rebuilt before the dead entries of a hold-back are vacuumed away grows straight
back (measured: 162 MB rebuilt, 310 MB again ten minutes later). A rebuild that
was interrupted leaves an invalid ``..._ccnew`` index behind: each run drops
those first, unless an index of the table is being built right then (an
operator's ``REINDEX CONCURRENTLY`` shows the same way while it runs). A drop
waits for every transaction that has the table open; one that is not through
within ``LOCK_TIMEOUT_MS`` (a reader, or a build that began after the check)
ends the run, and the next tries again. A role
that may not rebuild the table's indexes is told once, and upkeep stops for
the process.
"""

from __future__ import annotations

import logging
import statistics
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import OperationalError, ProgrammingError, connections
from psycopg import errors

from ..store import maintenance as store
from . import jobs_vacuum
from .service import EverySync

logger = logging.getLogger("awa_django.queues")

# An index is rebuilt when its ratio of size to estimate is more than JUMP
# times its usual ratio (the median over the last HISTORY runs, once
# MIN_HISTORY are known) and more than BLOAT_FACTOR...
JUMP = 1.5
BLOAT_FACTOR = 2.0
HISTORY = 60
MIN_HISTORY = 10
# ...and at least this many bytes over its estimate (a small index is left
# alone: the rebuild reads the whole table).
MIN_EXCESS = 32 * 1024 * 1024
# No rebuild while a client transaction is older than this (seconds): the
# rebuild would wait for it.
QUIET_AFTER = 60.0
# Pages of awa_jobs the estimate reads at most (a sample of the table).
SAMPLE_PAGES = 2000
# A rebuild that takes longer is cancelled (its leftover dropped next run).
REBUILD_TIMEOUT_MS = 15 * 60 * 1000
# How long dropping a leftover waits for the transactions using the table.
LOCK_TIMEOUT_MS = 10_000
# Btree leaves are built 90 % full; an index tuple has an 8-byte header, a
# 4-byte line pointer and 4 bytes of alignment on average, where a row
# (pg_column_size(ROW(...))) has a 24-byte header.
LEAF_FILL = 0.9
ENTRY_OVERHEAD = 8 + 4 + 4 - 24

_refused: set[str] = set()  # aliases whose role may not rebuild (told once)
# Each index's ratio of size to estimate over the last runs, by alias and name.
_seen: dict[tuple[str, str], deque[float]] = {}


@dataclass
class IndexSize:
    name: str
    size: int
    estimate: int

    @property
    def ratio(self) -> float:
        return self.size / max(self.estimate, 1)


def rebuild_due(index: IndexSize, seen: Sequence[float]) -> bool:
    """Whether ``index`` is bloated beyond what churn keeps it at (``seen``: its
    ratios of the runs before)."""
    if len(seen) < MIN_HISTORY:
        return False
    usual = statistics.median(seen)
    return index.ratio > max(BLOAT_FACTOR, JUMP * usual) and index.size - index.estimate >= MIN_EXCESS


def forget(using: str | None = None) -> None:
    """Drop the ratios seen (of ``using``, or of every alias)."""
    for key in [k for k in _seen if using is None or k[0] == using]:
        del _seen[key]


def estimates(cursor: Any) -> list[IndexSize]:
    """Each btree index of awa_jobs: its size and what a fresh build would take."""
    indexes = store.jobs_btree_indexes(cursor)
    pages = max(store.jobs_heap_pages(cursor), 1)
    percent = min(100.0, 100.0 * SAMPLE_PAGES / pages)
    sampled = store.sample_index_entries(cursor, indexes, percent)
    out = []
    for index, (count, width) in zip(indexes, sampled, strict=True):
        entry_bytes = (width + count * ENTRY_OVERHEAD) * 100.0 / percent
        out.append(IndexSize(index.name, index.size, int(max(entry_bytes, 0) / LEAF_FILL) + 8192))
    return out


def upkeep(using: str = "default") -> str | None:
    """Drop leftovers, then rebuild the most bloated index of awa_jobs if one is;
    return its name (None when nothing was rebuilt)."""
    if connections[using].in_atomic_block or using in _refused:
        return None  # a concurrent rebuild cannot run inside a transaction
    with connections[using].cursor() as cursor:
        if store.index_build_under_way(cursor):
            return None  # its invalid copy is not a leftover, and one build at a time
        if not _drop_leftovers(cursor):
            return None
        if jobs_vacuum.old_transaction(cursor, QUIET_AFTER)[0] or jobs_vacuum.behind(cursor):
            return None
        bloated = []
        for index in estimates(cursor):
            seen = _seen.setdefault((using, index.name), deque(maxlen=HISTORY))
            if rebuild_due(index, seen):
                bloated.append(index)
            seen.append(index.ratio)
        if not bloated:
            return None
        worst = max(bloated, key=lambda i: i.size - i.estimate)
        return _rebuild(cursor, worst, using)


def _drop_leftovers(cursor: Any) -> bool:
    """Drop the invalid copies interrupted rebuilds left; False when a drop
    waited ``LOCK_TIMEOUT_MS`` for a transaction using the table and gave up."""
    for name in store.index_leftovers(cursor):
        try:
            store.drop_index_concurrently(cursor, name, LOCK_TIMEOUT_MS)
        except OperationalError as exc:
            if not isinstance(exc.__cause__, errors.LockNotAvailable):
                raise
            logger.info(
                "leftover index %s of awa_jobs not dropped: a transaction using the table did not end "
                "within %d ms; upkeep tries again next run",
                name,
                LOCK_TIMEOUT_MS,
                extra={"event": "jobs.index_upkeep_deferred", "index": name},
            )
            return False
    return True


def _rebuild(cursor: Any, index: IndexSize, using: str) -> str | None:
    try:
        store.reindex_concurrently(cursor, index.name, REBUILD_TIMEOUT_MS)
    except ProgrammingError as exc:
        if not isinstance(exc.__cause__, errors.InsufficientPrivilege):
            return None  # the index went away since it was sized: nothing to rebuild
        # Not the table's owner (no MAINTAIN privilege).
        _refused.add(using)
        logger.warning(
            "cannot rebuild the indexes of awa_jobs (%s); index upkeep stops for this process",
            str(exc).strip().splitlines()[0],
            extra={"event": "jobs.index_upkeep_refused"},
        )
        return None
    after = store.relation_size(cursor, index.name)
    logger.info(
        "rebuilt index %s of awa_jobs: %d MB to %d MB (estimate %d MB)",
        index.name,
        index.size // 2**20,
        after // 2**20,
        index.estimate // 2**20,
        extra={"event": "jobs.index_rebuilt", "index": index.name, "before": index.size, "after": after},
    )
    return index.name


class IndexUpkeep(EverySync):
    """Rebuilds the index of awa_jobs most bloated beyond its usual size, if one is."""

    name = "index upkeep"

    def run(self, using: str) -> None:
        upkeep(using=using)
