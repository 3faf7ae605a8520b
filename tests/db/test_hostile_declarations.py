"""Bad and hostile declarations fail alone, early, with the schedule and field named.

Covers ``periodic()``/``build_schedule()``, ``manage.py check`` (AWA_SCHEDULES),
the sync's per-row isolation and ``Task.enqueue()``.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

import pytest
from django.core.checks import run_checks
from django.db import connection, transaction
from django.test import override_settings

from awa_django import InvalidSchedule
from awa_django.declarations.declaration import build_schedule
from awa_django.declarations.sync import sync_schedules
from awa_django.leader.loop import Leader
from awa_django.models import CronJob, Job
from tests.testapp.tasks import record

RECORD = "tests.testapp.tasks.record"


def deep(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


# (field the error must name, options changed from a valid declaration)
BAD: dict[str, tuple[str, dict[str, Any]]] = {
    "name_nul": ("name", {"name": "a\x00b"}),
    "name_lone_surrogate": ("name", {"name": "a\ud800b"}),
    "name_escape": ("name", {"name": "a\x1b[31mred"}),
    "name_newline": ("name", {"name": "forged\nrow"}),
    "name_rtl_override": ("name", {"name": "abc\u202edef"}),
    "name_zero_width": ("name", {"name": "ab\u200bc"}),
    "name_too_long": ("name", {"name": "x" * 201}),
    "args_nul": ("args", {"args": ["a\x00"]}),
    "args_lone_surrogate": ("args", {"args": ["\udc80"]}),
    "args_too_deep": ("args", {"args": [deep(100)]}),
    "args_recursion_deep": ("args", {"args": [deep(5000)]}),
    "kwargs_key_surrogate": ("kwargs", {"kwargs": {"\ud800": 1}}),
    "kwargs_value_nul": ("kwargs", {"kwargs": {"k": {"n": "\x00"}}}),
    "metadata_key_nul": ("metadata", {"metadata": {"a\x00": 1}}),
    "metadata_value_surrogate": ("metadata", {"metadata": {"a": ["\ud800"]}}),
    "metadata_too_deep": ("metadata", {"metadata": {"a": deep(40)}}),
    "tags_surrogate": ("tags", {"tags": ["ok", "\ud800"]}),
    "tags_control": ("tags", {"tags": ["a\x07"]}),
    "task_relative": ("task", {"task": ".x"}),
    "task_dots": ("task", {"task": ".."}),
    "task_no_module": ("task", {"task": "record"}),
    "task_surrogate": ("task", {"task": "tests.\ud800"}),
    "cron_step_over_minutes": ("cron", {"cron": "*/61 * * * *"}),
    "cron_step_60_minutes": ("cron", {"cron": "*/60 * * * *"}),
    "cron_step_hours": ("cron", {"cron": "0 */24 * * *"}),
    "cron_step_float": ("cron", {"cron": "*/1e20 * * * *"}),
    "cron_step_huge": ("cron", {"cron": "*/100000000000000000000 * * * *"}),
    "cron_reversed_range": ("cron", {"cron": "30-10 * * * *"}),
    "cron_reversed_days": ("cron", {"cron": "0 0 * * fri-mon"}),
    "cron_nbsp": ("cron", {"cron": "0\u00a09 * * *"}),
    "cron_em_space": ("cron", {"cron": "0 9\u2003* * *"}),
    "cron_ideographic_space": ("cron", {"cron": "0 9 *\u3000* *"}),
    "cron_too_long": ("cron", {"cron": "0 0 * * " + ",".join(["1"] * 2000)}),
    "timezone_localtime": ("timezone", {"timezone": "localtime"}),
    "timezone_posixrules": ("timezone", {"timezone": "posixrules"}),
    "timezone_nul": ("timezone", {"timezone": "UTC\x00"}),
    "queue_control": ("queue", {"queue": "default\x1b"}),
}


def declaration(**changes: Any) -> dict[str, Any]:
    options: dict[str, Any] = {"name": "decl", "cron": "0 2 * * *", "task": RECORD}
    options.update(changes)
    return options


@pytest.mark.parametrize("case", sorted(BAD))
def test_build_schedule__hostile_input_is_invalid_schedule_naming_schedule_and_field(case: str) -> None:
    field, changes = BAD[case]
    options = declaration(**changes)
    with pytest.raises(InvalidSchedule) as caught:
        build_schedule(options.pop("name"), options.pop("cron"), options.pop("task"), **options)
    assert caught.value.field == field
    message = str(caught.value)
    assert f"field {field!r}" in message
    if field != "name":
        assert "schedule 'decl'" in message
    # The message itself is printable: no raw control characters or surrogates.
    message.encode("utf-8")
    assert "\x1b" not in message and "\n" not in message


@pytest.mark.parametrize("case", sorted(c for c in BAD if c != "name_too_long"))
def test_check__hostile_awa_schedules_entry_is_reported_by_manage_py_check(case: str) -> None:
    field, changes = BAD[case]
    options = declaration(**changes)
    name = options.pop("name")
    with override_settings(AWA_SCHEDULES={name: options}):
        messages = [m for m in run_checks() if (m.id or "").startswith("awa_django.")]
    assert len(messages) == 1, [str(m) for m in messages]
    assert f"field {field!r}" in messages[0].msg


def test_build_schedule__a_200kb_expression_is_refused_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from awa_django.cron import search

    def never(text: str) -> None:
        raise AssertionError("a 200 kB expression reached the parser")

    # Refused by its length before the parser sees it (no duration measured).
    monkeypatch.setattr(search, "parse_cron", never)
    with pytest.raises(InvalidSchedule, match="limit is 256"):
        build_schedule("big", "0 0 * * " + ",".join(["1"] * 100_000), RECORD)


@pytest.mark.parametrize(
    "cron",
    [
        "*/59 * * * *",
        "0 */23 * * *",
        "0 0 */30 * *",
        "10-30 * * * *",
        "0 0 * * mon-fri",
        "0 9 * * *",
        "@daily",
        "*/15 * * * * *",
        "0\t9 * * *",
    ],
)
def test_build_schedule__ordinary_expressions_stay_valid(cron: str) -> None:
    assert build_schedule("ok", cron, RECORD).cron.text == cron.strip()


@override_settings(AWA_MAX_ARGS_BYTES=1000)
def test_build_schedule__args_and_metadata_size_limit_is_configurable() -> None:
    build_schedule("small", "0 2 * * *", RECORD, args=["x" * 900])
    with pytest.raises(InvalidSchedule, match="AWA_MAX_ARGS_BYTES=1000") as caught:
        build_schedule("big", "0 2 * * *", RECORD, args=["x" * 1000])
    assert caught.value.field == "args"
    with pytest.raises(InvalidSchedule) as caught:
        build_schedule("big", "0 2 * * *", RECORD, kwargs={"k": "x" * 1000})
    assert caught.value.field == "args"
    with pytest.raises(InvalidSchedule) as caught:
        build_schedule("big", "0 2 * * *", RECORD, metadata={"k": "x" * 1000})
    assert caught.value.field == "metadata"


def test_build_schedule__default_args_limit_refuses_50_megabytes() -> None:
    with pytest.raises(InvalidSchedule, match="AWA_MAX_ARGS_BYTES"):
        build_schedule("huge", "0 2 * * *", RECORD, args=["x" * (50 * 1024 * 1024)])


def test_build_schedule__task_module_failing_at_import_is_invalid_schedule() -> None:
    with pytest.raises(InvalidSchedule, match="RuntimeError: boom at import"):
        build_schedule("x", "0 2 * * *", "tests.badapp.raising_module.task")


@pytest.mark.django_db
def test_sync__one_failing_upsert_does_not_stop_the_others(caplog: pytest.LogCaptureFixture) -> None:
    good_a = build_schedule("a-good", "0 2 * * *", RECORD)
    good_z = build_schedule("z-good", "0 2 * * *", RECORD)
    # Bypass validation, as an older version of awa_django or a bug might.
    poisoned = dataclasses.replace(build_schedule("m-bad", "0 2 * * *", RECORD), args=["\x00"])
    with caplog.at_level(logging.ERROR, logger="awa_django"):
        changed = sync_schedules([good_a, poisoned, good_z])
    assert changed == ["a-good", "z-good"]
    assert sorted(CronJob.objects.values_list("name", flat=True)) == ["a-good", "z-good"]
    assert any(getattr(r, "schedule", None) == "m-bad" for r in caplog.records)


@pytest.mark.django_db(transaction=True)
def test_leader_maintain__a_failing_sync_still_runs_the_other_maintenance() -> None:
    from tests.factories import JobFactory

    JobFactory(state="completed")
    with connection.cursor() as cursor:
        cursor.execute("UPDATE awa_jobs SET finished_at = now() - interval '30 days'")
    leader = Leader(schedules=[build_schedule("ok", "0 2 * * *", RECORD)])
    leader.sync = lambda: (_ for _ in ()).throw(  # type: ignore[method-assign]
        __import__("django.db", fromlist=["DatabaseError"]).DatabaseError("sync broke")
    )
    with pytest.raises(Exception, match="sync broke"):
        leader.maintain()
    assert Job.objects.count() == 0  # pruning ran after the failed sync


@pytest.mark.django_db
def test_enqueue__lone_surrogate_is_a_value_error_and_the_transaction_lives_on() -> None:
    with transaction.atomic():
        with pytest.raises(ValueError, match="surrogate"):
            record.enqueue("\ud800")
        with pytest.raises(ValueError, match="surrogate"):
            record.enqueue(label="ok", **{"\udc00": 1})
        result = record.enqueue("fine")  # the caller's transaction is not aborted
        assert Job.objects.filter(id=int(result.id)).exists()
