"""Index upkeep (scheduler/index_upkeep.py): a bloated index of awa_jobs is
rebuilt concurrently and shrinks; a fresh one is left alone; nothing is
rebuilt while an old transaction is open; an interrupted rebuild's leftover
is dropped."""

from __future__ import annotations

import logging
import threading

import psycopg
import pytest
from django.db import connection

from awa_django.scheduler import index_upkeep

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
    """Many entries, then most of them deleted and vacuumed: pages kept, entries gone."""
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


@pytest.fixture
def small_floor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index_upkeep, "MIN_EXCESS", 256 * 1024)


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
    bloat()
    before = by_name()
    worst = max((i for i in before.values() if i.bloated), key=lambda i: i.size - i.estimate)
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
    assert not [i for i in by_name().values() if i.bloated]
    assert rebuilt_all == {i.name for i in before.values() if i.bloated}


def test_upkeep__leaves_indexes_near_their_estimate_alone(small_floor: None) -> None:
    fill(40000)
    with connection.cursor() as cursor:
        cursor.execute("REINDEX TABLE awa_jobs")
    assert index_upkeep.upkeep() is None


def test_upkeep__waits_while_an_old_transaction_is_open(
    small_floor: None, monkeypatch: pytest.MonkeyPatch, django_db_blocker: object
) -> None:
    bloat()
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
    with connection.cursor() as cursor:
        # What REINDEX CONCURRENTLY leaves when cancelled: an invalid copy.
        cursor.execute("CREATE INDEX awa_jobs_ready_ccnew ON awa_jobs (id)")
        cursor.execute(
            "UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'awa_jobs_ready_ccnew'::regclass"
        )
    index_upkeep.upkeep()
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass('awa_jobs_ready_ccnew')")
        assert cursor.fetchone()[0] is None


def test_upkeep__writers_go_on_while_an_index_is_rebuilt(small_floor: None) -> None:
    bloat(rows=120000)
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
