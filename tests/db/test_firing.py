"""firing.py: sending a fire plan, isolating a row the statement rejects, and
turning ``awa_jobs`` rows into dicts.

The statement's own contract (CAS, guards) is in test_fire_sql.py and the
evaluator's use of it in test_poisoned_rows.py; these call ``fire_plan``
directly, inside a transaction as the leader's batches are.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.db import ProgrammingError, connection, transaction

from awa_django.client.compat import task_enqueued
from awa_django.db import jsonb
from awa_django.leader import evaluator, firing
from awa_django.models import CronJob, Job
from awa_django.store import schedules as store
from awa_django.store.schedule_rows import PlannedFire
from tests.factories import CronJobFactory

pytestmark = pytest.mark.django_db


def entry(name: str, fires: int = 1) -> PlannedFire:
    """The plan entry the evaluator would send for ``name``: its last ``fires`` minutes."""
    with connection.cursor() as cursor:
        row = store.plan_row_of(cursor, name, jsonb.max_depth())
    assert row is not None and row.now is not None
    minute = row.now.replace(second=0, microsecond=0)
    times = [minute - timedelta(minutes=fires - i) for i in range(fires)]
    return replace(
        PlannedFire.from_row(row),
        fires=tuple(t.isoformat() for t in times),
        next_fire_at=(minute + timedelta(minutes=1)).isoformat(),
    )


def fire(plan: list[PlannedFire]) -> list[dict[str, Any]]:
    with transaction.atomic(), connection.cursor() as cursor:
        return firing.fire_plan(cursor, plan)


def parked_reason(name: str) -> str | None:
    reason: str | None = CronJob.objects.values_list("parked_reason", flat=True).get(name=name)
    return reason


def test_job_row__decodes_json_text_columns_only() -> None:
    job = firing.job_row(
        ["id", "kind", "args", "metadata", "errors", "result"],
        [7, "x.y", '{"args": [1], "kwargs": {}}', '{"cron_name": "n"}', "[]", {"already": "decoded"}],
    )
    assert job == {
        "id": 7,
        "kind": "x.y",
        "args": {"args": [1], "kwargs": {}},
        "metadata": {"cron_name": "n"},
        "errors": [],
        "result": {"already": "decoded"},
    }
    assert firing.job_row(["id", "kind"], [1, '"text"'])["kind"] == '"text"'  # not a JSON column
    with pytest.raises(ValueError):
        firing.job_row(["id", "kind"], [1])


def test_fire_plan__enqueues_every_fire_and_moves_the_clock() -> None:
    CronJobFactory(name="a", queue="mail")
    CronJobFactory(name="b")
    plan = [entry("a", fires=2), entry("b")]
    jobs = fire(plan)
    assert sorted((j["metadata"]["cron_name"], j["metadata"]["cron_fire_at"]) for j in jobs) == sorted(
        [("a", plan[0].fires[0]), ("a", plan[0].fires[1]), ("b", plan[1].fires[0])]
    )
    assert {j["queue"] for j in jobs if j["metadata"]["cron_name"] == "a"} == {"mail"}
    # Not decoded on the firing thread; decode_args (the announcer's) decodes it.
    assert isinstance(jobs[0]["args"], jsonb.Deferred)
    assert firing.decode_args(jobs)[0]["args"] == {"args": [], "kwargs": {}}
    last = CronJob.objects.get(name="a").last_enqueued_at
    assert last == datetime.fromisoformat(plan[0].fires[1])


def test_evaluate__the_jobs_it_keeps_and_the_leaders_announcements_have_their_args_decoded() -> None:
    from awa_django.leader import loop as leader

    CronJobFactory(name="a", cron_expr="* * * * * *", args={"args": [[1]], "kwargs": {"k": "v"}})
    assert [j["args"] for j in evaluator.evaluate().jobs] == [{"args": [[1]], "kwargs": {"k": "v"}}]
    handed: list[dict[str, Any]] = []
    Job.objects.all().delete()
    CronJob.objects.filter(name="a").update(last_enqueued_at=None)
    evaluator.evaluate(on_fired=handed.extend)
    assert [type(j["args"]) for j in handed] == [jsonb.Deferred]
    announced: list[Any] = []

    def receive(sender: Any, task_result: Any, **kwargs: Any) -> None:
        announced.append(task_result)

    task_enqueued.connect(receive)
    try:
        leader.announce_each(handed)
    finally:
        task_enqueued.disconnect(receive)
    assert [(r.args, r.kwargs) for r in announced] == [([[1]], {"k": "v"})]


def test_announce_each__decodes_no_args_while_only_receivers_that_never_read_them_listen(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A megabyte of args costs the leader a quarter second of parsing with the GIL
    held: not spent when only Django's own log line listens to task_enqueued."""
    from awa_django.leader import loop as leader

    CronJobFactory(name="a", cron_expr="* * * * * *", args={"args": [[1]], "kwargs": {}})
    handed: list[dict[str, Any]] = []
    evaluator.evaluate(on_fired=handed.extend)
    assert [type(j["args"]) for j in handed] == [jsonb.Deferred]

    def refuse(self: jsonb.Deferred) -> Any:
        raise AssertionError("args decoded for receivers that never read them")

    monkeypatch.setattr(jsonb.Deferred, "value", refuse)
    with (
        caplog.at_level(logging.DEBUG, logger="django.tasks"),
        caplog.at_level(logging.DEBUG, logger="django_tasks"),
    ):
        leader.announce_each(handed)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert any(f"id={handed[0]['id']}" in r.getMessage() for r in caplog.records)


def test_fire_plan__the_same_plan_sent_twice_enqueues_once() -> None:
    CronJobFactory(name="a")
    plan = [entry("a")]
    assert len(fire(plan)) == 1
    assert fire(plan) == []  # a late or deposed leader's copy loses the CAS
    assert Job.objects.count() == 1


def test_fire_plan__a_row_the_statement_rejects_is_parked_alone(caplog: pytest.LogCaptureFixture) -> None:
    for name in ("a", "rejected", "z"):
        CronJobFactory(name=name, queue="mail" if name == "rejected" else "default")
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE awa_jobs ADD CONSTRAINT no_mail CHECK (queue <> 'mail')")
    with caplog.at_level(logging.WARNING, logger="awa_django.evaluator"):
        jobs = fire([entry("a"), entry("rejected"), entry("z")])
    assert sorted(j["metadata"]["cron_name"] for j in jobs) == ["a", "z"]
    reason = parked_reason("rejected")
    assert reason is not None and reason.startswith("fire statement failed: ") and "no_mail" in reason
    assert "\n" not in reason  # the first line of the database's message
    assert (parked_reason("a"), parked_reason("z")) == (None, None)
    events = [getattr(r, "event", None) for r in caplog.records]
    assert events.count("cron.fire_isolated") == 1 and events.count("cron.parked") == 1


def test_fire_plan__a_row_that_cannot_even_be_parked_does_not_fail_the_others(
    caplog: pytest.LogCaptureFixture,
) -> None:
    CronJobFactory(name="a")
    CronJobFactory(name="doomed", queue="mail")
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE awa_jobs ADD CONSTRAINT no_mail CHECK (queue <> 'mail')")
        cursor.execute(
            "ALTER TABLE awa_cron_jobs ADD CONSTRAINT no_park CHECK (parked_reason IS NULL OR name <> 'doomed')"
        )
    with caplog.at_level(logging.ERROR, logger="awa_django.evaluator"):
        jobs = fire([entry("a"), entry("doomed")])
    assert [j["metadata"]["cron_name"] for j in jobs] == ["a"]
    assert parked_reason("doomed") is None
    assert CronJob.objects.get(name="doomed").last_enqueued_at is None
    assert any("cannot even be parked" in r.getMessage() for r in caplog.records)


def test_fire_plan__an_error_that_is_no_rows_fault_propagates(monkeypatch: pytest.MonkeyPatch) -> None:
    CronJobFactory(name="a")
    plan = [entry("a")]
    from awa_django.store import fires

    def missing_version(cursor: Any, plan_text: str) -> Any:
        cursor.execute("SELECT * FROM awa_cron_fire_no_such_version(%s::jsonb)", [plan_text])

    monkeypatch.setattr(fires, "fire", missing_version)
    with pytest.raises(ProgrammingError):
        fire(plan)
    assert Job.objects.count() == 0
    assert parked_reason("a") is None


def test_log_fired__one_record_per_job_and_nothing_below_info(caplog: pytest.LogCaptureFixture) -> None:
    jobs: list[dict[str, Any]] = [
        {"id": 1, "metadata": {"cron_name": "a", "cron_fire_at": "2026-03-01T12:00:00+00:00"}},
        {"id": 2, "metadata": "not a dict"},
    ]
    with caplog.at_level(logging.INFO, logger="awa_django.evaluator"):
        firing.log_fired(jobs)
    records = [r for r in caplog.records if getattr(r, "event", None) == "cron.fired"]
    fields = [(vars(r)["schedule"], vars(r)["fire_at"], vars(r)["job_id"]) for r in records]
    assert fields == [
        ("a", "2026-03-01T12:00:00+00:00", 1),
        (None, None, 2),
    ]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="awa_django.evaluator"):
        firing.log_fired([{"no": "keys"}])  # not even read when INFO is off
    assert caplog.records == []
