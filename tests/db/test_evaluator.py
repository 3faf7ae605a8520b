"""Evaluation passes against the real database clock.

Expressions are chosen so the expected fires do not depend on when the test
runs (daily slots days in the past, minute slots within the last minute).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext, override_settings

from awa_django.leader.evaluator import evaluate
from awa_django.models import CronJob, Job
from tests.factories import CronJobFactory
from tests.helpers.database import db_now

pytestmark = pytest.mark.django_db


def midnight(moment: datetime, days_ago: int = 0) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=days_ago)


def fired(name: str) -> list[str]:
    return [j.metadata["cron_fire_at"] for j in Job.objects.filter(metadata__cron_name=name).order_by("id")]


def iso(moment: datetime) -> str:
    return moment.isoformat().replace(".000000", "")


def make(name: str, **fields: Any) -> CronJob:
    return CronJobFactory(name=name, **fields)


def test_evaluate__coalesce_enqueues_only_the_latest_missed_fire() -> None:
    now = db_now()
    make("daily", cron_expr="0 0 * * *", last_enqueued_at=midnight(now, 3))
    evaluate()
    assert fired("daily") == [iso(midnight(now))]


def test_evaluate__catch_up_replays_every_missed_fire_in_order() -> None:
    now = db_now()
    make("daily", cron_expr="0 0 * * *", missed_fire_policy="catch_up", last_enqueued_at=midnight(now, 3))
    evaluate()
    assert fired("daily") == [iso(midnight(now, d)) for d in (2, 1, 0)]
    assert CronJob.objects.get(name="daily").last_enqueued_at == midnight(now)


@override_settings(AWA_CATCH_UP_LIMIT=2)
def test_evaluate__catch_up_limit_bounds_a_pass_and_the_rest_follow() -> None:
    now = db_now()
    make("daily", cron_expr="0 0 * * *", missed_fire_policy="catch_up", last_enqueued_at=midnight(now, 5))
    first = evaluate()
    assert fired("daily") == [iso(midnight(now, d)) for d in (4, 3)]
    assert first.pending or first.next_due_in is not None and first.next_due_in <= 0
    evaluate()
    evaluate()
    assert fired("daily") == [iso(midnight(now, d)) for d in (4, 3, 2, 1, 0)]


def test_evaluate__first_registration_is_coalesced_and_never_backfills() -> None:
    now = db_now()
    # Created three days ago, never fired, catch-up: still only the latest fire.
    make("old", cron_expr="0 0 * * *", missed_fire_policy="catch_up", created_at=now - timedelta(days=3))
    # Created now: the daily slot is hours away (or this minute at 00:00): no backfill.
    make("new", cron_expr="0 0 * * *", created_at=now)
    # Created now, every minute: the minute slot of the last 60 s fires at once.
    make("minutely", cron_expr="* * * * *", created_at=now)
    evaluate()
    assert fired("old") == [iso(midnight(now))]
    assert fired("new") == ([iso(midnight(now))] if now - midnight(now) <= timedelta(seconds=60) else [])
    assert fired("minutely") == [iso(now.replace(second=0, microsecond=0))]


def test_evaluate__paused_rows_are_skipped_and_resume_applies_the_policy() -> None:
    now = db_now()
    make("co", cron_expr="0 0 * * *", last_enqueued_at=midnight(now, 3), paused_at=now, paused_by="ops")
    make(
        "cu",
        cron_expr="0 0 * * *",
        last_enqueued_at=midnight(now, 3),
        paused_at=now,
        paused_by="ops",
        missed_fire_policy="catch_up",
    )
    result = evaluate()
    assert result.evaluated == 0 and Job.objects.count() == 0
    assert CronJob.objects.get(name="co").last_enqueued_at == midnight(now, 3)  # untouched while paused
    CronJob.objects.update(paused_at=None, paused_by=None)
    evaluate()
    assert fired("co") == [iso(midnight(now))]
    assert fired("cu") == [iso(midnight(now, d)) for d in (2, 1, 0)]


def test_evaluate__retired_rows_are_inert() -> None:
    now = db_now()
    make("tomb", cron_expr="* * * * * *", last_enqueued_at=now - timedelta(days=1), retired_at=now)
    assert evaluate().evaluated == 0
    assert Job.objects.count() == 0


def test_evaluate__changing_the_expression_keeps_last_enqueued_at() -> None:
    now = db_now()
    make("moving", cron_expr="0 0 1 1 *", last_enqueued_at=midnight(now, 3), missed_fire_policy="catch_up")
    evaluate()
    CronJob.objects.filter(name="moving").update(cron_expr="0 0 * * *")
    row = CronJob.objects.get(name="moving")
    assert row.last_enqueued_at == midnight(now, 3)
    evaluate()
    # New expression, searched strictly after the old token.
    assert fired("moving") == [iso(midnight(now, d)) for d in (2, 1, 0)]


def test_evaluate__idle_pass_reads_only_due_rows() -> None:
    now = db_now()
    CronJobFactory.create_batch(50, cron_expr="0 0 1 1 *", created_at=now)
    first = evaluate()
    assert first.evaluated == 50  # computing next_fire_at once
    assert CronJob.objects.filter(next_fire_at__isnull=True).count() == 0
    second = evaluate()
    assert second.evaluated == 0 and second.jobs == []
    assert second.next_due_in is not None and second.next_due_in > 0


def test_evaluate__one_fire_statement_per_pass_whatever_the_number_of_fires() -> None:
    now = db_now()
    for i in range(20):
        make(
            f"s{i:02}",
            cron_expr="0 0 * * *",
            missed_fire_policy="catch_up",
            last_enqueued_at=midnight(now, 3),
        )
    with CaptureQueriesContext(connection) as queries:
        result = evaluate()
    assert len(result.jobs) == 60
    # Read due rows, fire them all, find the next due time (plus a savepoint
    # here, because the test holds a transaction; none in autocommit; and the
    # fire's lock_timeout, set once per connection in autocommit, here each
    # time, since a transaction's end would undo it).
    counted = [q for q in queries if "SAVEPOINT" not in q["sql"] and "'lock_timeout'" not in q["sql"]]
    assert len(counted) == 3
    assert sum("awa_cron_fire_v8" in q["sql"] for q in queries) == 1


def test_evaluate__bad_row_written_by_raw_sql_does_not_stop_others(caplog: pytest.LogCaptureFixture) -> None:
    now = db_now()
    make("broken", cron_expr="not a cron", last_enqueued_at=midnight(now, 1))
    make("healthy", cron_expr="0 0 * * *", last_enqueued_at=midnight(now, 1))
    evaluate()
    assert fired("healthy") == [iso(midnight(now))]
    assert any(r.message.startswith("schedule broken cannot be evaluated") for r in caplog.records)
    # Parked (next_fire_at = infinity) until its definition changes.
    assert evaluate().evaluated == 0
    CronJob.objects.filter(name="broken").update(cron_expr="0 0 * * *")
    evaluate()
    assert fired("broken") == [iso(midnight(now))]


def test_evaluate__next_due_in_tracks_the_earliest_schedule() -> None:
    make("soon", cron_expr="* * * * * *")
    make("later", cron_expr="0 0 1 1 *")
    result = evaluate()
    assert result.next_due_in is not None and 0 <= result.next_due_in <= 1.0


def test_evaluate__due_rows_are_found_through_the_partial_index() -> None:
    from awa_django.store.queries import query

    CronJobFactory.create_batch(20, cron_expr="0 0 1 1 *")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE awa_cron_jobs")
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("EXPLAIN " + query("due_schedules_all"), {"max_depth": 32})
        plan = "\n".join(r[0] for r in cursor.fetchall())
    # Both arms (due, and awaiting computation) scan the partial index.
    assert plan.count("awa_cron_jobs_due") == 2, plan


def test_evaluate__a_large_due_set_fires_in_bounded_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    from awa_django.leader import evaluator

    monkeypatch.setattr(evaluator, "FIRE_BATCH_SIZE", 2)
    for i in range(5):
        make(f"batch-{i}", cron_expr="* * * * * *")
    with CaptureQueriesContext(connection) as queries:
        result = evaluate()
    fire_statements = [q for q in queries.captured_queries if "awa_cron_fire_v8" in q["sql"]]
    assert result.evaluated == 5
    assert len(fire_statements) == 3  # 2 + 2 + 1 rows
    assert sorted(len(fired(f"batch-{i}")) for i in range(5)) == [1] * 5
    # Nothing doubled: a second pass fires only later slots (on a slow machine
    # it may cross a second boundary and legitimately fire the next one).
    evaluate()
    for i in range(5):
        slots = fired(f"batch-{i}")
        assert len(slots) == len(set(slots)) and slots == sorted(slots)


def test_evaluate__rows_left_pending_are_not_read_twice_in_one_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A row whose next_fire_at stays NULL after its batch (lost CAS) must not
    make the keyset loop spin: each row is read at most once per pass."""
    from awa_django.leader import evaluator

    monkeypatch.setattr(evaluator, "FIRE_BATCH_SIZE", 1)
    for i in range(3):
        make(f"pending-{i}", cron_expr="* * * * * *")
    real = evaluator.fire_plan
    monkeypatch.setattr(evaluator, "fire_plan", lambda cursor, plan: [])  # every CAS "lost"
    result = evaluate()
    assert result.evaluated == 3 and result.pending
    monkeypatch.setattr(evaluator, "fire_plan", real)


def test_evaluate__due_batches_are_found_through_the_partial_index() -> None:
    from awa_django.store.queries import query

    CronJobFactory.create_batch(20, cron_expr="0 0 1 1 *")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE awa_cron_jobs")
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(
            "EXPLAIN " + query("due_schedules_batch"), {"after": "", "limit": 500, "max_depth": 32}
        )
        plan = "\n".join(r[0] for r in cursor.fetchall())
    # Both arms (due, and awaiting computation) scan the partial index; the
    # batch's rows are then looked up by name (an index, never a scan).
    assert plan.count("awa_cron_jobs_due") == 2, plan
    assert "Seq Scan" not in plan, plan


def test_evaluate__an_expression_is_parsed_once_not_per_row_per_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from awa_django.cron import search
    from awa_django.leader import evaluator

    evaluator._parsed_expression.cache_clear()
    calls: list[str] = []
    real = search.parse_cron

    def counting(text: str) -> Any:
        calls.append(text)
        return real(text)

    for i in range(4):
        make(f"cached-{i}", cron_expr="*/1 * * * * *")
    monkeypatch.setattr(search, "parse_cron", counting)
    evaluate()
    with connection.cursor() as cursor:
        cursor.execute("UPDATE awa_cron_jobs SET next_fire_at = NULL")
    evaluate()
    assert calls == ["*/1 * * * * *"]
    evaluator._parsed_expression.cache_clear()


def test_evaluate__rows_with_the_same_inputs_share_one_fire_computation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from awa_django.cron import search

    now = db_now()
    for i in range(4):
        make(f"same-{i}", cron_expr="0 0 * * *", last_enqueued_at=midnight(now, 3))
    make("other", cron_expr="0 0 * * *", last_enqueued_at=midnight(now, 1))
    calls: list[Any] = []
    real = search.due_fires

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs["last_enqueued_at"])
        return real(*args, **kwargs)

    monkeypatch.setattr(search, "due_fires", counting)
    evaluate()
    assert len(calls) == 2  # one per distinct (expression, zone, policy, last fire, now)
    assert [fired(f"same-{i}") for i in range(4)] == [[iso(midnight(now))]] * 4
    assert fired("other") == [iso(midnight(now))]
    stored = {row.name: row.next_fire_at for row in CronJob.objects.all()}
    assert len(set(stored.values())) == 1 and None not in stored.values()


def test_evaluate__on_fired_gets_each_batch_and_the_pass_keeps_no_jobs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from awa_django.leader import evaluator

    monkeypatch.setattr(evaluator, "FIRE_BATCH_SIZE", 2)
    for i in range(5):
        make(f"handed-{i}", cron_expr="* * * * * *")
    batches: list[list[str]] = []
    result = evaluate(on_fired=lambda jobs: batches.append([j["metadata"]["cron_name"] for j in jobs]))
    assert batches == [["handed-0", "handed-1"], ["handed-2", "handed-3"], ["handed-4"]]
    assert result.jobs == [] and result.fired == 5 and result.evaluated == 5
