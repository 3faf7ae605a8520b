"""Runtime schedules: created, changed and deleted by operators, beside code declarations.

Proves: the API validates exactly as a declaration (same errors, naming the
field) and writes nothing on a refusal; rows belong to the reserved owner,
which code sync never overwrites and reconciliation never retires; names
declared in code are refused, and a runtime name declared later in code is a
system check error; edits never fire a slot twice and never replay slots the
new expression would have had before the edit; delete keeps the slot fence.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.core.checks import run_checks
from django.db import connection
from django.test.utils import override_settings

import awa_django
from awa_django.declarations import build_schedule
from awa_django.declarations.declaration import registry
from awa_django.declarations.runtime import RUNTIME_OWNER
from awa_django.declarations.sync import sync_schedules
from awa_django.exceptions import InvalidSchedule, OperationRefused, ScheduleNotFound, UnknownScheduleOption
from awa_django.leader.evaluator import evaluate
from awa_django.models import CronJob, Job
from awa_django.operations.runtime_schedules import (
    create_schedule,
    delete_schedule,
    runtime_definition,
    update_schedule,
)
from awa_django.reconciliation import persistence
from tests.factories import CronJobFactory
from tests.helpers.database import db_now, operator_context
from tests.helpers.fires import CURRENT_FIRE, plan_entry

pytestmark = pytest.mark.django_db

TASK = "tests.testapp.tasks.record"


def fired(name: str) -> list[str]:
    return [j.metadata["cron_fire_at"] for j in Job.objects.filter(metadata__cron_name=name).order_by("id")]


def test_api__exported_from_awa_django() -> None:
    assert awa_django.create_schedule is create_schedule
    assert awa_django.update_schedule is update_schedule
    assert awa_django.delete_schedule is delete_schedule
    assert awa_django.RUNTIME_OWNER == RUNTIME_OWNER == "awa:runtime"


def test_changes__notify_the_leaders_channel() -> None:
    from awa_django.leader.loop import NOTIFY_CHANNEL
    from awa_django.operations import runtime_schedules

    assert runtime_schedules.NOTIFY_CHANNEL == NOTIFY_CHANNEL


def test_create__stores_the_declared_definition_owned_by_the_runtime_owner() -> None:
    schedule = create_schedule(
        "poll",
        "*/5 * * * *",
        TASK,
        kwargs={"label": "x"},
        timezone="Europe/Berlin",
        actor="alice",
        queue="mail",
        priority=7,
        missed_fire_policy="catch_up",
    )
    row = CronJob.objects.get(name="poll")
    declared = build_schedule(
        "poll",
        "*/5 * * * *",
        TASK,
        kwargs={"label": "x"},
        timezone="Europe/Berlin",
        queue="mail",
        priority=7,
        missed_fire_policy="catch_up",
    )
    assert schedule == declared
    assert row.owner_id == RUNTIME_OWNER
    assert (row.cron_expr, row.timezone, row.kind, row.queue, row.priority) == (
        "*/5 * * * *",
        "Europe/Berlin",
        TASK,
        "mail",
        7,
    )
    assert row.args == {"args": [], "kwargs": {"label": "x"}}
    assert runtime_definition("poll")["missed_fire_policy"] == "catch_up"


@pytest.mark.parametrize(
    ("call", "field"),
    [
        ({"cron": "61 * * * *"}, "cron"),
        ({"timezone": "Mars/Olympus"}, "timezone"),
        ({"task": "tests.testapp.tasks.not_a_task"}, "task"),
        ({"queue": "nowhere"}, "queue"),
        ({"priority": 1000}, "priority"),
        ({"missed_fire_policy": "sometimes"}, "missed_fire_policy"),
        ({"kwargs": {"x": float("nan")}}, "kwargs"),
        ({"name": "bad\x1bname"}, "name"),
    ],
)
def test_create__validates_as_a_declaration_and_writes_nothing(call: dict[str, Any], field: str) -> None:
    arguments: dict[str, Any] = {"name": "poll", "cron": "* * * * *", "task": TASK, **call}
    with pytest.raises(InvalidSchedule) as raised:
        create_schedule(actor="alice", **arguments)
    with pytest.raises(InvalidSchedule) as declared:
        build_schedule(**arguments)
    assert raised.value.field == declared.value.field == field
    assert str(raised.value) == str(declared.value)
    assert not CronJob.objects.exists()


def test_create__unknown_option_is_refused() -> None:
    with pytest.raises(UnknownScheduleOption, match="colour"):
        create_schedule("poll", "* * * * *", TASK, actor="alice", colour="red")


def test_create__refuses_names_declared_in_code_saying_where() -> None:
    registry.clear()
    from awa_django import periodic

    periodic("in-code", "* * * * *", TASK)
    try:
        with pytest.raises(OperationRefused, match=r"declared in code \(.*test_runtime_schedules.py:\d+\)"):
            create_schedule("in-code", "* * * * *", TASK, actor="alice")
        with pytest.raises(OperationRefused, match="declared in code"):
            create_schedule("IN-CODE", "* * * * *", TASK, actor="alice")
    finally:
        registry.remove("in-code")
    CronJobFactory(name="other-deploy")
    CronJobFactory(name="billing-owned", owner_id="billing")
    with pytest.raises(OperationRefused, match="unowned schedule synced"):
        create_schedule("other-deploy", "* * * * *", TASK, actor="alice")
    with pytest.raises(OperationRefused, match="owner 'billing'"):
        create_schedule("billing-owned", "* * * * *", TASK, actor="alice")
    with override_settings(AWA_SCHEDULES={"from-settings": {"cron": "* * * * *", "task": TASK}}):
        with pytest.raises(OperationRefused, match="settings.AWA_SCHEDULES"):
            create_schedule("from-settings", "* * * * *", TASK, actor="alice")


def test_create__twice_and_lookalike_names_are_refused() -> None:
    create_schedule("poll", "* * * * *", TASK, actor="alice")
    with pytest.raises(OperationRefused, match="edit it instead"):
        create_schedule("poll", "* * * * *", TASK, actor="alice")
    with pytest.raises(InvalidSchedule, match="only in case"):
        create_schedule("POLL", "* * * * *", TASK, actor="alice")


def test_code_sync_and_reconciliation_never_touch_runtime_rows() -> None:
    create_schedule("poll", "* * * * *", TASK, actor="alice")
    code = build_schedule("poll", "0 0 * * *", "tests.testapp.tasks.send_mail")
    assert sync_schedules([code]) == []
    with operator_context():
        CronJob.objects.filter(name="poll").update(last_enqueued_at=None)
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO awa_cron_owners (owner_id) VALUES (%s)", [RUNTIME_OWNER])
    assert persistence.reconcile_all() == []
    row = CronJob.objects.get(name="poll")
    assert (row.cron_expr, row.kind, row.retired_at) == ("* * * * *", TASK, None)


def test_update__validates_whole_definition_and_keeps_the_row_on_error() -> None:
    create_schedule("poll", "* * * * *", TASK, actor="alice", queue="mail")
    with pytest.raises(InvalidSchedule) as raised:
        update_schedule("poll", actor="bob", cron="* * 32 * *")
    assert raised.value.field == "cron"
    with pytest.raises(InvalidSchedule, match="'queue'"):
        update_schedule("poll", actor="bob", task="tests.testapp.tasks.record", queue="elsewhere")
    assert CronJob.objects.get(name="poll").cron_expr == "* * * * *"
    result = update_schedule("poll", actor="bob", kwargs={"label": "y"}, priority=3)
    assert result.changed and result.detail == "args, priority"
    assert not update_schedule("poll", actor="bob", priority=3).changed
    row = CronJob.objects.get(name="poll")
    assert (row.args, row.priority, row.queue) == ({"args": [], "kwargs": {"label": "y"}}, 3, "mail")


def test_update_and_delete__refuse_code_names_and_unknown_names() -> None:
    CronJobFactory(name="code")
    with pytest.raises(OperationRefused, match="declared in code"):
        update_schedule("code", actor="bob", priority=1)
    with pytest.raises(OperationRefused, match="declared in code"):
        delete_schedule("code", actor="bob")
    with pytest.raises(ScheduleNotFound):
        update_schedule("ghost", actor="bob", priority=1)
    with pytest.raises(ScheduleNotFound):
        delete_schedule("ghost", actor="bob")
    assert CronJob.objects.filter(name="code").exists()


def test_edit__never_refires_a_fired_slot_nor_replays_past_slots_of_the_new_expression() -> None:
    create_schedule("poll", "0 0 * * *", TASK, actor="alice", missed_fire_policy="catch_up")
    now = db_now()
    fired_at = now.replace(hour=0, minute=0, second=0, microsecond=0)
    with operator_context():
        CronJob.objects.filter(name="poll").update(last_enqueued_at=fired_at - timedelta(days=1))
    evaluate()
    assert len(fired("poll")) == 1  # today's midnight
    # Every minute since midnight would be due under the new expression: none is replayed.
    update_schedule("poll", actor="bob", cron="* * * * *")
    row = CronJob.objects.get(name="poll")
    assert row.last_enqueued_at is not None and row.last_enqueued_at >= now
    evaluate()
    assert len(fired("poll")) == 1
    # A change that does not touch the timing keeps the fire clock.
    before = row.last_enqueued_at
    update_schedule("poll", actor="bob", kwargs={"label": "z"})
    assert CronJob.objects.get(name="poll").last_enqueued_at == before


def test_edit__a_fire_planned_from_the_old_definition_cannot_land() -> None:
    create_schedule("poll", "* * * * *", TASK, actor="alice")
    with operator_context():
        CronJob.objects.filter(name="poll").update(last_enqueued_at=db_now() - timedelta(minutes=5))
    stale = CronJob.objects.get(name="poll")
    update_schedule("poll", actor="bob", cron="*/2 * * * *")
    with connection.cursor() as cursor:
        entry = plan_entry(stale, [db_now().replace(second=0, microsecond=0)])
        cursor.execute(f"SELECT count(*) FROM {CURRENT_FIRE}(%s::jsonb)", [json.dumps([entry])])
        assert cursor.fetchone()[0] == 0
    assert fired("poll") == []


def test_delete__removes_the_row_and_a_recreated_schedule_never_refires_a_slot() -> None:
    create_schedule("poll", "* * * * *", TASK, actor="alice")
    evaluate()
    first = fired("poll")
    assert len(first) == 1
    assert delete_schedule("poll", actor="bob").changed
    assert not CronJob.objects.filter(name="poll").exists()
    create_schedule("poll", "* * * * *", TASK, actor="alice")
    evaluate()
    slots = fired("poll")
    assert len(slots) == len(set(slots))  # each slot at most once
    assert slots[0] == first[0]


def test_check__runtime_name_declared_in_code_is_an_error_with_the_remedy() -> None:
    create_schedule("poll", "* * * * *", TASK, actor="alice")
    with override_settings(AWA_SCHEDULES={"poll": {"cron": "* * * * *", "task": TASK}}):
        errors = [m for m in run_checks(databases=["default"]) if m.id == "awa_django.E043"]
    assert len(errors) == 1
    assert "poll" in errors[0].msg and "adopt" in errors[0].hint and "rename" in errors[0].hint
    assert "settings.AWA_SCHEDULES" in errors[0].hint


def test_check__the_runtime_owner_is_not_a_deployment_owner() -> None:
    with override_settings(AWA_AUTHORITATIVE=True, AWA_OWNER=RUNTIME_OWNER, AWA_REVISION="r1"):
        assert "awa_django.E040" in [m.id for m in run_checks()]
        with pytest.raises(ValueError, match="reserved"):
            persistence.configured()


@pytest.mark.django_db(transaction=True)
def test_every_change_notifies_the_leader(second_connection: Any) -> None:
    from awa_django.leader.loop import NOTIFY_CHANNEL

    second_connection.execute(f"LISTEN {NOTIFY_CHANNEL}")
    create_schedule("poll", "* * * * *", TASK, actor="alice")
    assert list(second_connection.notifies(timeout=30, stop_after=1)), "create did not notify"
    # A change the row triggers do not announce (no timing column): notified all the same.
    update_schedule("poll", actor="bob", priority=9)
    assert list(second_connection.notifies(timeout=30, stop_after=1)), "edit did not notify"
    delete_schedule("poll", actor="bob")
    assert list(second_connection.notifies(timeout=30, stop_after=1)), "delete did not notify"


def test_delete__a_retired_runtime_schedule_is_refused_until_restored() -> None:
    from awa_django.operations.owners import restore, retire

    create_schedule("rt", "* * * * *", TASK, actor="setup")
    retire("rt", actor="ops", apply=True)
    with pytest.raises(OperationRefused, match="is retired; restore it first"):
        delete_schedule("rt", actor="bob")
    row = CronJob.objects.get(name="rt")
    assert row.retired_at is not None and row.retired_by == "ops"  # the tombstone is untouched
    restore("rt", actor="ops", apply=True)
    delete_schedule("rt", actor="bob")
    assert not CronJob.objects.filter(name="rt").exists()


@pytest.mark.parametrize(
    "policy", [{"overlap": "skip"}, {"overlap": "buffer_one"}, {"starting_deadline": 30}, {"jitter": 1}]
)
def test_update__a_new_timing_of_a_schedule_with_an_execution_policy_is_written(
    policy: dict[str, Any],
) -> None:
    create_schedule("rt-pol", "*/5 * * * *", TASK, actor="ops", **policy)
    before = CronJob.objects.get(name="rt-pol").last_enqueued_at
    result = update_schedule("rt-pol", actor="ops", cron="*/7 * * * *")
    assert result.changed and "cron_expr" in result.detail
    row = CronJob.objects.get(name="rt-pol")
    assert row.cron_expr == "*/7 * * * *"
    assert before is None or row.last_enqueued_at >= before  # the new timing starts at the edit
    assert not Job.objects.exists()  # moving the clock enqueues nothing
    # The fence still suppresses a fire statement unaware of the policies.
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE awa_cron_jobs SET last_enqueued_at = clock_timestamp() + interval '1 hour' "
            "WHERE name = 'rt-pol' RETURNING name"
        )
        assert cursor.fetchone() is None
