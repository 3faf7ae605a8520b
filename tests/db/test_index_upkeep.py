"""Index upkeep (maintenance/index_upkeep.py): an index of awa_jobs bloated
beyond its usual size is rebuilt concurrently and shrinks; one at its usual
size is left alone; nothing is rebuilt while an old transaction is open; an
interrupted rebuild's leftover is dropped."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator

import psycopg
import pytest
from django.db import connection

from awa_django.maintenance import index_upkeep, jobs_vacuum

# REINDEX CONCURRENTLY cannot run inside a transaction: no test transaction.
pytestmark = pytest.mark.django_db(transaction=True)


def fill(rows: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO awa_jobs (kind, queue, args, metadata) "
            "SELECT 'tests.testapp.tasks.record', 'default', '{}', "
            "jsonb_build_object('cron_name', 'bloat-' || (g %% 50), 'cron_fire_at', g::text) "
            "FROM generate_series(1, %s) AS g",
            [rows],
        )


def bloat(rows: int = 60000, kept_every: int = 20) -> None:
    """Many entries (``rows`` more), then most of them deleted and vacuumed:
    pages kept, entries gone."""
    if rows:
        fill(rows)
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM awa_jobs WHERE id %% %s <> 0", [kept_every])
        cursor.execute("VACUUM awa_jobs")


def size(name: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_relation_size(%s::regclass)", [name])
        return int(cursor.fetchone()[0])


def by_name() -> dict[str, index_upkeep.IndexSize]:
    with connection.cursor() as cursor:
        return {i.name: i for i in index_upkeep.estimates(cursor)}


@pytest.fixture(autouse=True)
def fresh_history(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    index_upkeep.forget()
    # These tests delete most rows at once: cleanup would count as behind
    # (tests/db/test_jobs_vacuum.py covers that upkeep waits for it).
    monkeypatch.setattr(jobs_vacuum, "MIN_DEAD", 10**12)
    yield
    index_upkeep.forget()


@pytest.fixture
def small_floor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index_upkeep, "MIN_EXCESS", 256 * 1024)
    monkeypatch.setattr(index_upkeep, "MIN_HISTORY", 3)


def make_leftover() -> None:
    """What REINDEX CONCURRENTLY leaves when cancelled: an invalid copy."""
    with connection.cursor() as cursor:
        cursor.execute("CREATE INDEX awa_jobs_ready_ccnew ON awa_jobs (id)")
        cursor.execute(
            "UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'awa_jobs_ready_ccnew'::regclass"
        )


def leftover_exists() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass('awa_jobs_ready_ccnew') IS NOT NULL")
        return bool(cursor.fetchone()[0])


def settle(runs: int = 12) -> None:
    """Upkeep runs that see the indexes as they are now: their usual size."""
    for _ in range(runs):
        assert index_upkeep.upkeep() is None


def sized(ratio: float, estimate: int = 100 * 2**20) -> index_upkeep.IndexSize:
    return index_upkeep.IndexSize("i", int(ratio * estimate), estimate)


def test_rebuild_due__judged_against_the_usual_ratio_not_a_fresh_build(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(index_upkeep, "MIN_HISTORY", 10)
    usual = [2.3] * 30  # churn keeps it near 2.3 times a fresh build
    assert not index_upkeep.rebuild_due(sized(2.4), usual)  # its usual size: never rebuilt to grow back
    assert index_upkeep.rebuild_due(sized(4.0), usual)  # what a long reader leaves
    assert not index_upkeep.rebuild_due(sized(3.4), usual)  # within half again its usual ratio
    assert not index_upkeep.rebuild_due(sized(4.0), usual[:9])  # too little seen yet
    assert not index_upkeep.rebuild_due(sized(1.9), [1.0] * 30)  # below twice a fresh build
    assert index_upkeep.rebuild_due(sized(2.1), [1.0] * 30)
    small = index_upkeep.IndexSize("i", 20 * 2**20, 2**20)  # 19 MB over its estimate
    assert not index_upkeep.rebuild_due(small, [1.0] * 30)


def test_estimates__a_fresh_index_is_near_its_estimate_and_a_bloated_one_far_over_it() -> None:
    fill(40000)
    with connection.cursor() as cursor:
        cursor.execute("REINDEX TABLE awa_jobs")
        cursor.execute("ANALYZE awa_jobs")
    fresh = by_name()["awa_jobs_pkey"]
    assert 0.5 * fresh.estimate < fresh.size < 1.5 * fresh.estimate
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM awa_jobs WHERE id % 20 <> 0")
        cursor.execute("VACUUM awa_jobs")
    bloated = by_name()["awa_jobs_pkey"]
    assert bloated.size == fresh.size and bloated.size > 5 * bloated.estimate


def test_upkeep__rebuilds_the_most_bloated_index_concurrently_and_it_shrinks(
    small_floor: None, caplog: pytest.LogCaptureFixture
) -> None:
    fill(60000)
    settle()
    bloat(rows=0)
    before = by_name()
    bloated = {i.name for i in before.values() if i.ratio > 3 and i.size - i.estimate >= 256 * 1024}
    assert {"awa_jobs_pkey", "awa_jobs_cron_slot"} <= bloated
    worst = max((before[name] for name in bloated), key=lambda i: i.size - i.estimate)
    with caplog.at_level(logging.INFO, logger="awa_django.queues"):
        rebuilt = index_upkeep.upkeep()
    assert rebuilt == worst.name
    assert size(worst.name) < before[worst.name].size / 3
    (record,) = [r for r in caplog.records if getattr(r, "event", None) == "jobs.index_rebuilt"]
    assert record.index == worst.name and record.after < record.before  # type: ignore[attr-defined]
    # One index per run; the next run takes the next one, until none is bloated.
    rebuilt_all = {rebuilt}
    for _ in range(len(before)):
        name = index_upkeep.upkeep()
        if name is None:
            break
        rebuilt_all.add(name)
    assert index_upkeep.upkeep() is None
    over_twice = {i.name for i in before.values() if i.ratio > 2}
    assert bloated <= rebuilt_all <= over_twice
    assert all(by_name()[name].ratio < 2 for name in rebuilt_all)


def test_upkeep__leaves_indexes_at_their_usual_size_alone_however_far_over_their_estimate(
    small_floor: None,
) -> None:
    bloat()  # every run from now on sees the same bloated indexes: their usual size
    assert any(i.ratio > 3 for i in by_name().values())
    settle(runs=15)


def test_upkeep__waits_while_an_old_transaction_is_open(
    small_floor: None, monkeypatch: pytest.MonkeyPatch, django_db_blocker: object
) -> None:
    fill(60000)
    settle()
    bloat(rows=0)
    monkeypatch.setattr(index_upkeep, "QUIET_AFTER", 0.0)
    params = connection.get_connection_params()
    with psycopg.connect(**params) as reader:
        reader.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        reader.execute("SELECT count(*) FROM awa_jobs").fetchone()
        assert index_upkeep.upkeep() is None  # a rebuild would wait for the reader
        reader.execute("COMMIT")
    assert index_upkeep.upkeep() is not None


def test_upkeep__drops_the_leftover_of_an_interrupted_rebuild(small_floor: None) -> None:
    bloat()
    make_leftover()
    index_upkeep.upkeep()
    assert not leftover_exists()


def test_upkeep__a_drop_that_waits_for_a_transaction_gives_up_and_the_next_run_drops(
    small_floor: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    fill(1000)
    make_leftover()
    monkeypatch.setattr(index_upkeep, "LOCK_TIMEOUT_MS", 300)
    params = connection.get_connection_params()
    with psycopg.connect(**params) as reader:
        # A transaction with the table open: DROP INDEX CONCURRENTLY waits for it.
        reader.execute("SELECT count(*) FROM awa_jobs").fetchone()
        done: list[str | None] = []

        def run() -> None:
            try:
                done.append(index_upkeep.upkeep())
            finally:
                connection.close()  # this thread's own

        worker = threading.Thread(target=run)
        with caplog.at_level(logging.INFO, logger="awa_django.queues"):
            worker.start()
            worker.join(60)  # without the lock timeout: until the reader ends
            assert not worker.is_alive() and done == [None]
        assert leftover_exists()
        assert any(getattr(r, "event", "") == "jobs.index_upkeep_deferred" for r in caplog.records)
        reader.execute("COMMIT")
    index_upkeep.upkeep()
    assert not leftover_exists()
    with connection.cursor() as cursor:
        cursor.execute("SHOW lock_timeout")
        assert cursor.fetchone()[0] == "0"


def test_upkeep__writers_go_on_while_an_index_is_rebuilt(small_floor: None) -> None:
    fill(120000)
    settle()
    bloat(rows=0)
    params = connection.get_connection_params()
    stop = threading.Event()
    inserted: list[int] = []
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            with psycopg.connect(**params, autocommit=True) as conn:
                while not stop.is_set():
                    conn.execute("INSERT INTO awa_jobs (kind) VALUES ('tests.testapp.tasks.record')")
                    inserted.append(1)
        except BaseException as exc:  # reported below
            errors.append(exc)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert index_upkeep.upkeep() is not None
    finally:
        stop.set()
        thread.join(60)
    assert not errors and inserted


def test_rebuild__an_index_gone_since_it_was_sized_does_not_stop_upkeep() -> None:
    with connection.cursor() as cursor:
        gone = index_upkeep.IndexSize("awa_jobs_gone_since", 64 * 2**20, 2**20)
        assert index_upkeep._rebuild(cursor, gone, "default") is None
    assert "default" not in index_upkeep._refused
