"""evidence.py: what one owner's reconciliation reads (the SQL, no decision).

Runtimes are simulated as in test_reconciliation.py (``publish`` writes a
snapshot, a manifest and a declaration); the functions are called directly on
Django's cursor.
"""

from __future__ import annotations

from datetime import timedelta

import psycopg
import pytest
from django.db import connection, transaction

from awa_django.reconciliation import evidence
from awa_django.reconciliation.decision import Agreement
from tests.factories import CronJobFactory
from tests.helpers.database import operator_context, raw_connection
from tests.helpers.reconcile import age_evidence, execute, job, legacy_runtime, publish, shut_down

pytestmark = pytest.mark.django_db(transaction=True)


def desired_hash(instance: str) -> str:
    return str(
        execute("SELECT desired_hash FROM awa_cron_declarations WHERE instance_id = %s", [instance])[0][0]
    )


def test_clock__is_the_database_clock_and_advances_inside_a_transaction() -> None:
    with transaction.atomic(), connection.cursor() as cursor:
        first = evidence.clock(cursor)
        second = evidence.clock(cursor)
        (statement_start,) = execute("SELECT now()")[0]
    assert first.tzinfo is not None
    assert statement_start <= first < second  # clock_timestamp(), not the transaction's now()


def test_agreement__empty_without_an_owner_row_and_read_back_with_one() -> None:
    with connection.cursor() as cursor:
        assert evidence.agreement(cursor, "billing", lock=False) == Agreement()
    publish("billing", [job("a")])
    execute(
        "UPDATE awa_cron_owners SET synced_hash = 'h-synced', agreed_hash = 'h-agreed', "
        "agreed_since = clock_timestamp(), evidence_until = clock_timestamp() + interval '1 hour' "
        "WHERE owner_id = 'billing'"
    )
    with connection.cursor() as cursor:
        state = evidence.agreement(cursor, "billing", lock=False)
    assert (state.synced_hash, state.agreed_hash) == ("h-synced", "h-agreed")
    assert state.agreed_since is not None and state.evidence_until is not None
    assert state.evidence_until - state.agreed_since > timedelta(minutes=59)


@pytest.mark.parametrize("lock", [True, False])
def test_agreement__lock_holds_the_owner_row_until_the_transaction_ends(lock: bool) -> None:
    publish("billing", [job("a")])
    other = raw_connection()
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            evidence.agreement(cursor, "billing", lock=lock)
            probe = "SELECT 1 FROM awa_cron_owners WHERE owner_id = 'billing' FOR UPDATE NOWAIT"
            if lock:
                with pytest.raises(psycopg.errors.LockNotAvailable):
                    other.execute(probe)
            else:
                assert other.execute(probe).fetchall() == [(1,)]
    finally:
        other.close()


def test_declarations__live_ones_of_the_owner_in_instance_order() -> None:
    first = publish("billing", [job("a")], revision="rev-7", grace_ms=1500)
    second = publish("billing", [job("a"), job("b")])
    publish("shipping", [job("s")])
    with connection.cursor() as cursor:
        now = evidence.clock(cursor)
        found = evidence.declarations(cursor, "billing", now)
    assert [d.instance_id for d in found] == sorted([first, second])
    by_id = {d.instance_id: d for d in found}
    assert (by_id[first].revision, by_id[first].grace_ms) == ("rev-7", 1500)
    assert by_id[first].desired_hash == desired_hash(first) != desired_hash(second)
    # Fresh for max(30 s, 3 x the 10 s snapshot interval) after the last snapshot.
    assert timedelta(0) < by_id[first].expires_at - now <= timedelta(seconds=30)


def test_declarations__stale_or_shutting_down_runtimes_are_not_evidence() -> None:
    leaving = publish("billing", [job("a")])
    staying = publish("billing", [job("a")])
    shut_down(leaving)
    with connection.cursor() as cursor:
        assert [d.instance_id for d in evidence.declarations(cursor, "billing", evidence.clock(cursor))] == [
            staying
        ]
    age_evidence(10)  # 10 s old: still within 30 s
    with connection.cursor() as cursor:
        assert len(evidence.declarations(cursor, "billing", evidence.clock(cursor))) == 1
    age_evidence(30)  # 40 s old
    with connection.cursor() as cursor:
        assert evidence.declarations(cursor, "billing", evidence.clock(cursor)) == ()


def test_blocking_instances__live_runtimes_without_this_protocol() -> None:
    publish("billing", [job("a")])  # speaks the protocol: never blocking
    old = legacy_runtime()
    (current,) = execute("SELECT awa_cron_protocol_version()")[0]
    legacy_runtime(protocol=int(current))
    other = legacy_runtime(protocol=int(current) + 1)
    with connection.cursor() as cursor:
        assert evidence.blocking_instances(cursor, evidence.clock(cursor)) == tuple(sorted([old, other]))
    age_evidence(3600)
    with connection.cursor() as cursor:
        assert evidence.blocking_instances(cursor, evidence.clock(cursor)) == ()


def test_published_manifest__entries_of_that_owner_and_hash_only() -> None:
    instance = publish("billing", [job("b"), job("a")])
    digest = desired_hash(instance)
    with connection.cursor() as cursor:
        entries = evidence.published_manifest(cursor, "billing", digest)
        assert [e["name"] for e in entries] == ["a", "b"]
        assert entries[0]["args"] == {"args": [], "kwargs": {"label": "a", "nested": {"a": 1, "b": 2}}}
        assert evidence.published_manifest(cursor, "shipping", digest) == ()
        assert evidence.published_manifest(cursor, "billing", "no-such-hash") == ()


def test_stored_rows__owned_and_named_rows_with_json_normal_definitions() -> None:
    with operator_context():
        CronJobFactory(name="owned", owner_id="billing", tags=["x", "y"])
        CronJobFactory(name="named-unowned")
        CronJobFactory(name="named-elsewhere", owner_id="shipping")
        CronJobFactory(name="unrelated", owner_id="shipping")
        CronJobFactory(name="tombstone", owner_id="billing")
        execute(
            "UPDATE awa_cron_jobs SET retired_at = clock_timestamp(), retired_by = 'ops', "
            "retired_revision = 'operator' WHERE name = 'tombstone'"
        )
    rows = {
        r.name: r for r in evidence.stored_rows("billing", ["named-unowned", "named-elsewhere"], "default")
    }
    assert sorted(rows) == ["named-elsewhere", "named-unowned", "owned", "tombstone"]
    assert (rows["named-elsewhere"].owner_id, rows["named-unowned"].owner_id) == ("shipping", None)
    assert rows["tombstone"].retired and not rows["owned"].retired
    assert rows["owned"].definition["tags"] == ["x", "y"]
    assert rows["owned"].definition["args"] == {"args": [], "kwargs": {}}


def test_conflict_scan__names_rows_of_others_unowned_or_retired() -> None:
    with operator_context():
        CronJobFactory(name="taken", owner_id="shipping")
        CronJobFactory(name="loose")
        CronJobFactory(name="mine", owner_id="billing")
        CronJobFactory(name="buried", owner_id="billing")
        execute(
            "UPDATE awa_cron_jobs SET retired_at = clock_timestamp(), retired_by = 'ops', "
            "retired_revision = 'operator' WHERE name = 'buried'"
        )
    instance = publish("billing", [job(n) for n in ("buried", "fresh", "loose", "mine", "taken")])
    with connection.cursor() as cursor:
        found = evidence.conflict_scan(cursor, "billing", desired_hash(instance))
    assert found == (("buried", "billing"), ("loose", None), ("taken", "shipping"))
