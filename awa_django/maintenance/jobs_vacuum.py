"""Catching up on the cleanup of ``awa_jobs`` once a long transaction ends.

While a transaction stays open, no row version it could still see can be
removed, so every job claimed and completed meanwhile leaves its dead versions
and their index entries behind (1.2 M of them after a 10-minute reader in the
soak benchmark). When the transaction ends, that backlog is autovacuum's to
clear, throttled by its cost delay, and a run that began while the transaction
was open keeps its horizon to the end and removes none of it. Until the
backlog is gone, every claim reads past dead entries of the ready index, and
the indexes keep growing.

So the leader's maintenance, after pruning, looks at ``awa_jobs``:

* while a client transaction has been open ``QUIET_AFTER`` seconds or more, a
  VACUUM could not remove what it holds back: it only notes the hold-back, and
  tells the operator once per such transaction which session it is (its
  process id, role, application name and state), since only ending it helps;
* otherwise, once the table holds at least ``MIN_DEAD`` dead row versions and
  more than ``DEAD_FRACTION`` of its live rows (*cleanup is behind*), it runs
  ``VACUUM awa_jobs`` itself, unthrottled as a VACUUM typed by hand is, unless
  a vacuum that began after the hold-back ended is already on the table.

Waiting for the table's lock, the VACUUM makes PostgreSQL cancel an autovacuum
run in its way (one that prevents wraparound is never cancelled: after
``LOCK_TIMEOUT_MS`` the catch-up gives up until the next run). Index upkeep
waits while cleanup is behind: an index rebuilt before the dead entries are
gone grows straight back. A role that may not vacuum the table is told once,
and the catch-up stops for the process.

A role without ``pg_read_all_stats`` sees no transaction start of another
role's sessions, nor their vacuums' progress: a VACUUM then may remove
nothing. What it left is what PostgreSQL counts as dead afterwards, so one
that leaves cleanup behind makes the next wait (``RETRY_AFTER``, doubled up to
``MAX_RETRY_AFTER``) rather than read the whole table every minute.
"""

from __future__ import annotations

import datetime
import logging
import time
from typing import Any

from django.db import OperationalError, connections
from psycopg import errors

from ..store import maintenance as store
from .service import EverySync

logger = logging.getLogger("awa_django.queues")

# Cleanup is behind when awa_jobs holds at least MIN_DEAD dead row versions and
# more than DEAD_FRACTION of its live rows (autovacuum starts at a fifth, so
# under steady churn the count stays below half).
MIN_DEAD = 100_000
DEAD_FRACTION = 0.5
# A client transaction open this long (seconds) holds cleanup back.
QUIET_AFTER = 60.0
# The VACUUM waits this long for the table's lock, and is cancelled after
# VACUUM_TIMEOUT_MS (the next run starts over, from what it removed).
LOCK_TIMEOUT_MS = 10_000
VACUUM_TIMEOUT_MS = 15 * 60 * 1000
# A VACUUM that leaves cleanup behind was held back by a transaction this role
# cannot see (pg_stat_activity hides other roles' transaction starts without
# pg_read_all_stats): the next one waits RETRY_AFTER seconds, doubled after
# each such VACUUM up to MAX_RETRY_AFTER.
RETRY_AFTER = 60.0
MAX_RETRY_AFTER = 480.0

# How long the statistics may take to show a VACUUM (PostgreSQL 14 reports them
# through its collector, later versions at once).
STATS_WAIT = 2.0

_refused: set[str] = set()  # aliases whose role may not vacuum awa_jobs (told once)
# When an old transaction was last seen, per alias, until a catch-up VACUUM ran.
_held_back: dict[str, datetime.datetime] = {}
# The transactions already told about, as (pid, xact_start), per alias.
_told: dict[str, set[tuple[int, datetime.datetime]]] = {}
# After a VACUUM that left cleanup behind: when the next may run, and the wait
# after that one if it does no better (time.monotonic()), per alias.
_retry: dict[str, tuple[float, float]] = {}


def forget(using: str | None = None) -> None:
    """Drop what was remembered (of ``using``, or of every alias)."""
    for remembered in (_held_back, _retry, _told):
        for alias in [a for a in remembered if using is None or a == using]:
            del remembered[alias]
    if using is None:
        _refused.clear()
    else:
        _refused.discard(using)


def old_transaction(cursor: Any, older_than: float) -> tuple[bool, datetime.datetime]:
    """Whether another client transaction of this database has been open
    ``older_than`` seconds or more (holding cleanup back), and the server's time."""
    return store.old_client_transaction(cursor, older_than)


def tuples(cursor: Any) -> tuple[int, int, int]:
    """Live and dead row versions of awa_jobs, and the VACUUMs run by hand on it, as counted."""
    counts = store.jobs_tuple_counts(cursor)
    return counts.live, counts.dead, counts.vacuums


def behind(cursor: Any) -> bool:
    """Whether awa_jobs holds more dead row versions than churn leaves between vacuums."""
    live, dead, _ = tuples(cursor)
    return dead >= MIN_DEAD and dead > DEAD_FRACTION * live


def catch_up(using: str = "default") -> bool:
    """VACUUM awa_jobs when cleanup is behind and nothing holds it back; True when it ran."""
    if connections[using].in_atomic_block or using in _refused:
        return False  # VACUUM cannot run inside a transaction
    with connections[using].cursor() as cursor:
        old, now = old_transaction(cursor, QUIET_AFTER)
        if old:
            _held_back[using] = now
            _tell_holders(cursor, using)
            return False
        _told.pop(using, None)
        if not behind(cursor):
            _held_back.pop(using, None)  # autovacuum caught up on its own
            _retry.pop(using, None)
            return False
        if time.monotonic() < _retry.get(using, (0.0, 0.0))[0]:
            return False  # the last VACUUM did not help: something unseen holds cleanup back
        held_back = _held_back.get(using)
        if store.jobs_vacuum_under_way(cursor, held_back):
            return False  # a vacuum that can remove the backlog is on it
        if not _may_vacuum(cursor, using):
            return False
        vacuums = tuples(cursor)[2]
        ran = _vacuum(cursor)
        if ran:
            _held_back.pop(using, None)
            _after_vacuum(cursor, using, vacuums)
    return ran


def _tell_holders(cursor: Any, using: str) -> None:
    """Log each transaction that holds cleanup back, once."""
    holders = store.cleanup_holders(cursor, QUIET_AFTER)
    told = _told.get(using, set())
    for holder in holders:
        if (holder.pid, holder.started) in told:
            continue
        logger.warning(
            "a transaction open for %.0f s (process %d, role %s, application %r, %s) holds back "
            "the cleanup of awa_jobs: until it ends, claims slow down and the table grows",
            holder.open_seconds,
            holder.pid,
            holder.role,
            holder.application,
            holder.state,
            extra={
                "event": "jobs.cleanup_held_back",
                "pid": holder.pid,
                "role": holder.role,
                "application": holder.application,
                "state": holder.state,
                "open_seconds": round(holder.open_seconds, 1),
            },
        )
    _told[using] = {(holder.pid, holder.started) for holder in holders}


def _after_vacuum(cursor: Any, using: str, vacuums_before: int) -> None:
    """Back off when the VACUUM left cleanup behind (what it could not remove
    is what PostgreSQL counts as dead after it)."""
    deadline = time.monotonic() + STATS_WAIT
    while tuples(cursor)[2] <= vacuums_before:
        if time.monotonic() > deadline:
            return  # the statistics do not show it yet: no judgement
        time.sleep(0.1)
    if not behind(cursor):
        _retry.pop(using, None)
        return
    wait = _retry.get(using, (0.0, RETRY_AFTER / 2))[1] * 2
    wait = min(max(wait, RETRY_AFTER), MAX_RETRY_AFTER)
    _retry[using] = (time.monotonic() + wait, wait)
    logger.warning(
        "awa_jobs still holds many dead row versions after a VACUUM: a transaction this role "
        "cannot see in pg_stat_activity holds cleanup back; the next catch-up in %.0f s",
        wait,
        extra={"event": "jobs.vacuum_held_back", "retry_in": wait},
    )


def _may_vacuum(cursor: Any, using: str) -> bool:
    if store.may_vacuum_jobs(cursor):
        return True
    _refused.add(using)
    logger.warning(
        "cannot vacuum awa_jobs (the role neither owns it nor may maintain it); "
        "the catch-up after long transactions stops for this process",
        extra={"event": "jobs.vacuum_refused"},
    )
    return False


def _vacuum(cursor: Any) -> bool:
    """VACUUM awa_jobs within the timeouts; False when its lock was not had in time."""
    dead = tuples(cursor)[1]
    started = time.monotonic()
    try:
        store.vacuum_jobs(cursor, LOCK_TIMEOUT_MS, VACUUM_TIMEOUT_MS)
    except OperationalError as exc:
        if not isinstance(exc.__cause__, errors.LockNotAvailable):
            raise  # a cancelled statement (the 15 minutes, or a stop) among them
        logger.info(
            "awa_jobs is being vacuumed by a run that cannot be cancelled; catch-up waits",
            extra={"event": "jobs.vacuum_deferred"},
        )
        return False
    logger.info(
        "vacuumed awa_jobs after cleanup fell behind: %d dead row versions, %.1f s",
        dead,
        time.monotonic() - started,
        extra={"event": "jobs.vacuumed", "dead": dead, "seconds": round(time.monotonic() - started, 3)},
    )
    return True


class CatchUpVacuum(EverySync):
    """Vacuums awa_jobs when its cleanup fell behind and nothing holds it back."""

    name = "catch-up vacuum"

    def run(self, using: str) -> None:
        catch_up(using=using)
