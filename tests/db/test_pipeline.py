"""A pass whose fire statements run on a second connection (pipeline.py):
every due row fires once, batches commit in order, errors reach the pass."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import OperationalError

from awa_django.leader import evaluator
from awa_django.models import CronJob, Job
from tests.factories import CronJobFactory
from tests.helpers.waiting import wait_for

# The second connection sees only committed rows: no test transaction.
pytestmark = pytest.mark.django_db(transaction=True)


def make_due(count: int) -> list[str]:
    names = [f"p{i:02d}" for i in range(count)]
    for name in names:
        CronJobFactory(name=name, cron_expr="* * * * * *")
    return names


def test_pipeline__every_due_row_fires_once_batch_by_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(evaluator, "FIRE_BATCH_SIZE", 2)
    names = make_due(7)
    batches: list[tuple[list[str], str]] = []

    def on_fired(jobs: list[dict[str, Any]]) -> None:
        batches.append(([j["metadata"]["cron_name"] for j in jobs], threading.current_thread().name))

    result = evaluator.evaluate(on_fired=on_fired, pipelined=True)
    assert result.evaluated == 7 and result.fired == 7 and result.jobs == []
    assert [name for batch, _ in batches for name in batch] == names
    assert {thread for _, thread in batches} == {"awa-fire"}  # fired on the second connection
    assert Job.objects.count() == 7
    assert not CronJob.objects.filter(next_fire_at__isnull=True).exists()
    # The next pass finds nothing left to fire for these slots.
    again = evaluator.evaluate(on_fired=lambda jobs: None, pipelined=True)
    assert Job.objects.count() == 7 + again.fired
    assert all(count == 1 for count in _fires_per_slot().values())


def test_pipeline__a_failed_fire_statement_fails_the_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(evaluator, "FIRE_BATCH_SIZE", 2)
    make_due(6)
    real = evaluator.fire_plan
    calls: list[int] = []

    def failing(cursor: Any, plan: list[dict[str, Any]]) -> list[dict[str, Any]]:
        calls.append(1)
        if len(calls) == 2:
            raise OperationalError("server closed the connection unexpectedly")
        return real(cursor, plan)

    monkeypatch.setattr(evaluator, "fire_plan", failing)
    with pytest.raises(OperationalError):
        evaluator.evaluate(on_fired=lambda jobs: None, pipelined=True)
    assert not [t for t in threading.enumerate() if t.name == "awa-fire"]
    assert Job.objects.count() == 2  # the first batch committed, nothing after the failure


def _fires_per_slot() -> dict[tuple[str, str], int]:
    counts: dict[tuple[str, str], int] = {}
    for metadata in Job.objects.values_list("metadata", flat=True):
        key = (metadata["cron_name"], metadata["cron_fire_at"])
        counts[key] = counts.get(key, 0) + 1
    return counts


def test_prepared_batches__dealt_out_over_the_lanes_side_by_side_never_early(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from awa_django.leader import prefire
    from tests.helpers.fires import prepared_for

    monkeypatch.setattr(evaluator, "FIRE_BATCH_SIZE", 2)
    monkeypatch.setattr(prefire, "FIRE_LANES", 2)
    names = make_due(5)
    prepared = prepared_for(names)
    assert len(prepared.batches) == 3
    firing: list[tuple[str, int]] = []
    real = evaluator.fire_plan

    def recording(cursor: Any, plan: list[dict[str, Any]]) -> list[dict[str, Any]]:
        cursor.execute("SELECT pg_backend_pid()")
        firing.append((threading.current_thread().name, cursor.fetchone()[0]))
        return real(cursor, plan)

    monkeypatch.setattr(evaluator, "fire_plan", recording)
    threads: list[str] = []
    result = prefire.fire_prepared(
        prepared, on_fired=lambda jobs: threads.append(threading.current_thread().name)
    )
    assert result is not None and result.fired == 5
    assert threads == [threading.current_thread().name] * 3  # announced on the caller's thread, at the end
    # Batches 0 and 2 on the caller's connection, batch 1 on the second lane's.
    assert sorted(name for name, _ in firing) == sorted([threading.current_thread().name] * 2 + ["awa-fire"])
    assert len({pid for _, pid in firing}) == 2
    jobs = list(Job.objects.all())
    assert sorted(j.metadata["cron_name"] for j in jobs) == names
    assert all(j.created_at >= prepared.slot for j in jobs)
    assert all(count == 1 for count in _fires_per_slot().values())


def _backend_pid(cursor: Any, plan: list[dict[str, Any]], pids: list[int], real: Any) -> list[dict[str, Any]]:
    cursor.execute("SELECT pg_backend_pid()")
    pids.append(cursor.fetchone()[0])
    return real(cursor, plan)


def test_kept_connection__pipelines_of_one_leader_share_one_connection_until_it_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from django.db import connection

    from awa_django.leader import pipeline

    monkeypatch.setattr(evaluator, "FIRE_BATCH_SIZE", 2)
    real = evaluator.fire_plan
    pids: list[int] = []
    monkeypatch.setattr(evaluator, "fire_plan", lambda c, p: _backend_pid(c, p, pids, real))
    own = connection.cursor().connection.info.backend_pid
    with pipeline.kept_connection("default"):
        for round_ in range(3):
            make_due_named(5, f"k{round_}")
            evaluator.evaluate(on_fired=lambda jobs: None, pipelined=True)
        fire_pids = {pid for pid in pids if pid != own}
        assert len(fire_pids) == 1  # three passes, one second connection
        assert _session_exists(fire_pids.pop())
    # Closed on exit: the server ends the session once it reads the client's goodbye.
    kept = next(pid for pid in pids if pid != own)
    wait_for(lambda: not _session_exists(kept), timeout=60)
    assert _names_fired() == {f"k{r}{i:02d}" for r in range(3) for i in range(5)}


def test_kept_connection__a_failed_fire_closes_it_and_the_next_pipeline_reconnects(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from awa_django.leader import pipeline

    monkeypatch.setattr(evaluator, "FIRE_BATCH_SIZE", 2)
    real = evaluator.fire_plan
    calls: list[int] = []

    def failing_once(cursor: Any, plan: list[dict[str, Any]]) -> list[dict[str, Any]]:
        calls.append(1)
        if len(calls) == 2:
            raise OperationalError("server closed the connection unexpectedly")
        return real(cursor, plan)

    monkeypatch.setattr(evaluator, "fire_plan", failing_once)
    with pipeline.kept_connection("default"):
        make_due(6)
        with pytest.raises(OperationalError):
            evaluator.evaluate(on_fired=lambda jobs: None, pipelined=True)
        result = evaluator.evaluate(on_fired=lambda jobs: None, pipelined=True)
    assert Job.objects.count() == 2 + result.fired  # the rest fired on a new connection
    assert _names_fired() == {f"p{i:02d}" for i in range(6)}


def _names_fired() -> set[str]:
    return {m["cron_name"] for m in Job.objects.values_list("metadata", flat=True)}


def make_due_named(count: int, prefix: str) -> None:
    for i in range(count):
        CronJobFactory(name=f"{prefix}{i:02d}", cron_expr="* * * * * *")


def _session_exists(pid: int) -> bool:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", [pid])
        return bool(cursor.fetchone()[0])


def test_kept_connection__one_killed_while_idle_is_replaced_before_the_next_batch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from django.db import connection

    from awa_django.leader import pipeline

    monkeypatch.setattr(evaluator, "FIRE_BATCH_SIZE", 2)
    real = evaluator.fire_plan
    pids: list[int] = []
    monkeypatch.setattr(evaluator, "fire_plan", lambda c, p: _backend_pid(c, p, pids, real))
    own = connection.cursor().connection.info.backend_pid
    with pipeline.kept_connection("default"):
        make_due_named(5, "a")
        evaluator.evaluate(on_fired=lambda jobs: None, pipelined=True)
        killed = next(pid for pid in pids if pid != own)
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [killed])
        make_due_named(5, "b")
        evaluator.evaluate(on_fired=lambda jobs: None, pipelined=True)  # no error: reconnected first
    assert {f"b{i:02d}" for i in range(5)} <= _names_fired()
    assert len({pid for pid in pids if pid not in (own, killed)}) == 1


def test_prepared_batches__a_slot_of_several_lanes_uses_a_kept_connection_per_lane(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from django.db import connection

    from awa_django.leader import pipeline, prefire
    from tests.helpers.fires import prepared_for, set_slot

    monkeypatch.setattr(prefire, "LANE_ROWS", 2)
    monkeypatch.setattr(prefire, "FIRE_LANES", 3)
    real = evaluator.fire_plan
    pids: list[int] = []
    monkeypatch.setattr(evaluator, "fire_plan", lambda c, p: _backend_pid(c, p, pids, real))
    own = connection.cursor().connection.info.backend_pid
    with pipeline.kept_connection("default", lanes=2):
        assert pipeline.kept_lanes("default") == 2
        for round_ in range(2):
            names = [f"l{round_}{i:02d}" for i in range(6)]
            for name in names:
                CronJobFactory(name=name, cron_expr="* * * * * *")
            prepared = prepared_for(names)
            assert [len(batch) for batch in prepared.batches] == [2, 2, 2]  # a lane per LANE_ROWS rows
            result = prefire.fire_prepared(prepared)
            assert result is not None and result.fired == 6
            set_slot(names, 3600)  # out of the next round's way
        lanes = {pid for pid in pids if pid != own}
        assert len(lanes) == 2  # two slots, the same two kept connections
        assert all(_session_exists(pid) for pid in lanes)
    assert pipeline.kept_lanes("default") == 0
    assert all(count == 1 for count in _fires_per_slot().values())


def test_prepared_batches__when_several_lanes_fail_every_lane_thread_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from awa_django.leader import prefire
    from tests.helpers.fires import prepared_for

    monkeypatch.setattr(prefire, "LANE_ROWS", 2)
    monkeypatch.setattr(prefire, "FIRE_LANES", 3)
    real = evaluator.fire_plan

    def lanes_fail(cursor: Any, plan: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if threading.current_thread().name == "awa-fire":
            raise OperationalError("server closed the connection unexpectedly")
        return real(cursor, plan)

    monkeypatch.setattr(evaluator, "fire_plan", lanes_fail)
    names = make_due(6)
    prepared = prepared_for(names)
    assert [len(batch) for batch in prepared.batches] == [2, 2, 2]  # two of the three on lane threads
    with pytest.raises(OperationalError):
        prefire.fire_prepared(prepared)
    # Both lane threads were told to end, not only the first to report its error.
    assert not [t for t in threading.enumerate() if t.name == "awa-fire"]
    assert Job.objects.count() == 2  # the caller's own batch committed
