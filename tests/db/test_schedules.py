"""Declaring schedules: ``periodic()``, ``build_schedule()``, ``AWA_SCHEDULES``, ``cron.py``.

Validation is eager and total: every bad declaration raises ``InvalidSchedule``
naming the schedule and the field, and ``runcron`` refuses to start (writing
nothing) when any declaration is invalid.
"""

from __future__ import annotations

import io
import json
from datetime import datetime
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import CommandError, call_command
from django.core.management.base import SystemCheckError
from django.db import connection
from django.test import override_settings

from awa_django import InvalidSchedule, periodic
from awa_django.declarations.declaration import (
    Schedule,
    build_schedule,
    declared_schedules,
    registry,
    settings_schedules,
)
from tests.testapp.tasks import record, send_mail

RECORD = "tests.testapp.tasks.record"
SEND_MAIL = "tests.testapp.tasks.send_mail"
BAD_SCHEDULES = {"bad": {"cron": "nope", "task": RECORD}}


def table_count(table: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {table}")
        return cursor.fetchone()[0]


# --- happy path -------------------------------------------------------------------------


def test_periodic__task_object_uses_module_path_queue_and_priority_of_the_task() -> None:
    schedule = periodic("digest", "0 9 * * 1-5", send_mail)

    assert isinstance(schedule, Schedule)
    assert schedule.kind == "tests.testapp.tasks.send_mail" == send_mail.module_path
    assert schedule.queue == "mail"
    assert schedule.priority == 5
    assert "digest" in registry


def test_periodic__dotted_path_is_resolved_like_the_task_object() -> None:
    by_path = periodic("by-path", "0 9 * * *", SEND_MAIL)
    by_object = build_schedule("by-path", "0 9 * * *", send_mail)

    assert by_path == by_object
    assert by_path.kind == SEND_MAIL
    assert (by_path.queue, by_path.priority) == ("mail", 5)


def test_periodic__explicit_queue_and_priority_override_the_task_defaults() -> None:
    schedule = periodic("override", "0 9 * * *", send_mail, queue="reports", priority=-7)

    assert (schedule.queue, schedule.priority) == ("reports", -7)


def test_periodic__record_task_defaults_to_default_queue_and_priority_zero() -> None:
    schedule = periodic("plain", "0 9 * * *", record)

    assert (schedule.kind, schedule.queue, schedule.priority) == (RECORD, "default", 0)


def test_build_schedule__max_attempts_defaults_to_awa_max_attempts() -> None:
    assert build_schedule("s", "* * * * *", RECORD).max_attempts == 3


@override_settings(AWA_MAX_ATTEMPTS=7)
def test_build_schedule__max_attempts_default_follows_override_settings() -> None:
    assert build_schedule("s", "* * * * *", RECORD).max_attempts == 7
    assert build_schedule("s", "* * * * *", RECORD, max_attempts=2).max_attempts == 2


def test_build_schedule__definition_has_every_column_and_nested_args() -> None:
    schedule = build_schedule(
        "nightly-report",
        "0 2 * * *",
        SEND_MAIL,
        timezone="Europe/Berlin",
        args=("a", 1),
        kwargs={"fmt": "pdf", "n": [1, 2]},
        max_attempts=4,
        tags=["reports", "nightly"],
        metadata={"team": "billing"},
        missed_fire_policy="catch_up",
    )

    assert schedule.definition() == {
        "name": "nightly-report",
        "cron_expr": "0 2 * * *",
        "timezone": "Europe/Berlin",
        "kind": SEND_MAIL,
        "queue": "mail",
        "args": {"args": ["a", 1], "kwargs": {"fmt": "pdf", "n": [1, 2]}},
        "priority": 5,
        "max_attempts": 4,
        "tags": ["reports", "nightly"],
        "metadata": {"team": "billing"},
        "missed_fire_policy": "catch_up",
    }
    # The definition is JSON as written to the database.
    assert json.loads(json.dumps(schedule.definition())) == schedule.definition()


def test_build_schedule__defaults_give_empty_args_kwargs_tags_metadata_and_coalesce() -> None:
    definition = build_schedule("s", "* * * * *", RECORD).definition()

    assert definition["args"] == {"args": [], "kwargs": {}}
    assert definition["tags"] == []
    assert definition["metadata"] == {}
    assert definition["timezone"] == "UTC"
    assert definition["missed_fire_policy"] == "coalesce"


@pytest.mark.parametrize(
    ("expr", "fields"),
    [
        ("0 2 * * *", ("0", "0", "2", "*", "*", "*")),
        ("*/5 * * * 1-5", ("0", "*/5", "*", "*", "*", "1-5")),
        # Six fields: seconds FIRST (Awa/croner), so this is 09:00:30.
        ("30 0 9 * * *", ("30", "0", "9", "*", "*", "*")),
        ("*/10 * * * * *", ("*/10", "*", "*", "*", "*", "*")),
        ("@yearly", ("0", "0", "0", "1", "1", "*")),
        ("@annually", ("0", "0", "0", "1", "1", "*")),
        ("@monthly", ("0", "0", "0", "1", "*", "*")),
        ("@weekly", ("0", "0", "0", "*", "*", "0")),
        ("@daily", ("0", "0", "0", "*", "*", "*")),
        ("@midnight", ("0", "0", "0", "*", "*", "*")),
        ("@hourly", ("0", "0", "*", "*", "*", "*")),
    ],
)
def test_build_schedule__accepts_five_six_field_and_macro_expressions(
    expr: str, fields: tuple[str, ...]
) -> None:
    schedule = build_schedule("s", expr, RECORD)

    assert schedule.cron.fields == fields
    assert schedule.definition()["cron_expr"] == expr


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("name", "n" * 200),
        ("priority", -100),
        ("priority", 100),
        ("max_attempts", 1),
        ("max_attempts", 1000),
        ("tags", [f"t{i}" for i in range(20)]),
        ("timezone", "America/New_York"),
    ],
)
def test_build_schedule__accepts_values_at_the_limits(option: str, value: Any) -> None:
    options: dict[str, Any] = {"name": "limits", "cron": "* * * * *", "task": RECORD}
    options[option] = value

    schedule = build_schedule(**options)

    got = schedule.definition()[option]
    assert got == (list(value) if option == "tags" else value)


# --- invalid declarations ---------------------------------------------------------------

NAME = "nightly"

INVALID_CASES: list[tuple[str, str, dict[str, Any]]] = [
    # (id, field, overrides of a valid periodic() call)
    ("cron-words", "cron", {"cron": "not a cron"}),
    ("cron-seven-fields", "cron", {"cron": "0 0 0 1 1 * 2026"}),
    ("cron-never-fires", "cron", {"cron": "0 0 30 2 *"}),
    ("cron-empty", "cron", {"cron": ""}),
    ("cron-out-of-range", "cron", {"cron": "61 * * * *"}),
    ("cron-reboot", "cron", {"cron": "@reboot"}),
    ("cron-hash-token", "cron", {"cron": "H * * * *"}),
    ("cron-not-str", "cron", {"cron": 5}),
    ("timezone-unknown", "timezone", {"timezone": "Mars/Olympus_Mons"}),
    ("timezone-empty", "timezone", {"timezone": ""}),
    ("timezone-not-str", "timezone", {"timezone": 1}),
    ("policy", "missed_fire_policy", {"missed_fire_policy": "skip"}),
    ("policy-none", "missed_fire_policy", {"missed_fire_policy": None}),
    ("task-unknown-path", "task", {"task": "tests.testapp.tasks.missing"}),
    ("task-unknown-module", "task", {"task": "tests.nosuchmodule.job"}),
    ("task-no-dots", "task", {"task": "record"}),
    ("task-plain-function-path", "task", {"task": "tests.testapp.tasks.not_a_task"}),
    ("task-none", "task", {"task": None}),
    ("queue-not-in-backend", "queue", {"queue": "nope"}),
    ("queue-empty", "queue", {"queue": ""}),
    ("queue-not-str", "queue", {"queue": 3}),
    ("priority-too-high", "priority", {"priority": 101}),
    ("priority-too-low", "priority", {"priority": -101}),
    ("priority-bool", "priority", {"priority": True}),
    ("priority-float", "priority", {"priority": 1.5}),
    ("max-attempts-zero", "max_attempts", {"max_attempts": 0}),
    ("max-attempts-1001", "max_attempts", {"max_attempts": 1001}),
    ("max-attempts-bool", "max_attempts", {"max_attempts": True}),
    ("args-dict", "args", {"args": {"a": 1}}),
    ("args-str", "args", {"args": "abc"}),
    ("args-int", "args", {"args": 5}),
    ("args-set-item", "args", {"args": [{1, 2}]}),
    ("args-datetime", "args", {"args": [datetime(2026, 1, 1)]}),
    ("args-nan", "args", {"args": [float("nan")]}),
    ("kwargs-set", "kwargs", {"kwargs": {"s": {1}}}),
    ("kwargs-datetime", "kwargs", {"kwargs": {"when": datetime(2026, 1, 1)}}),
    ("kwargs-nan", "kwargs", {"kwargs": {"x": float("nan")}}),
    ("kwargs-inf", "kwargs", {"kwargs": {"x": float("inf")}}),
    ("kwargs-int-key", "kwargs", {"kwargs": {1: "x"}}),
    ("kwargs-list", "kwargs", {"kwargs": ["x"]}),
    ("metadata-set", "metadata", {"metadata": {"s": {1}}}),
    ("metadata-datetime", "metadata", {"metadata": {"when": datetime(2026, 1, 1)}}),
    ("metadata-nan", "metadata", {"metadata": {"x": float("nan")}}),
    ("metadata-int-key", "metadata", {"metadata": {1: "x"}}),
    ("metadata-cron_name", "metadata", {"metadata": {"cron_name": "other"}}),
    ("metadata-cron_fire_at", "metadata", {"metadata": {"cron_fire_at": "2026-01-01"}}),
    ("metadata-triggered_manually", "metadata", {"metadata": {"triggered_manually": True}}),
    ("metadata-triggered_by", "metadata", {"metadata": {"triggered_by": "mallory"}}),
    ("tags-21", "tags", {"tags": [f"t{i}" for i in range(21)]}),
    ("tags-empty-string", "tags", {"tags": ["ok", ""]}),
    ("tags-str", "tags", {"tags": "urgent"}),
    ("tags-non-str-item", "tags", {"tags": [1]}),
    ("tags-nul", "tags", {"tags": ["a\x00b"]}),
]


def call_periodic(**overrides: Any) -> Schedule:
    options: dict[str, Any] = {"name": NAME, "cron": "0 2 * * *", "task": RECORD}
    options.update(overrides)
    name, cron, task = options.pop("name"), options.pop("cron"), options.pop("task")
    return periodic(name, cron, task, **options)


@pytest.mark.parametrize(
    ("field", "overrides"),
    [pytest.param(field, overrides, id=case) for case, field, overrides in INVALID_CASES],
)
def test_periodic__invalid_input_raises_invalid_schedule_naming_schedule_and_field(
    field: str, overrides: dict[str, Any]
) -> None:
    with pytest.raises(InvalidSchedule) as info:
        call_periodic(**overrides)

    exc = info.value
    assert exc.schedule == NAME
    assert exc.field == field
    assert str(exc).startswith(f"schedule {NAME!r}: field {field!r}: ")
    assert exc.reason and exc.reason in str(exc)
    assert isinstance(exc, ImproperlyConfigured)
    # Nothing half-registered.
    assert NAME not in registry


@pytest.mark.parametrize(
    ("field", "overrides"),
    [pytest.param(field, overrides, id=case) for case, field, overrides in INVALID_CASES],
)
def test_build_schedule__invalid_input_raises_invalid_schedule(field: str, overrides: dict[str, Any]) -> None:
    options: dict[str, Any] = {"name": NAME, "cron": "0 2 * * *", "task": RECORD}
    options.update(overrides)

    with pytest.raises(InvalidSchedule) as info:
        build_schedule(**options)

    assert (info.value.schedule, info.value.field) == (NAME, field)


def test_periodic__plain_function_object_is_not_a_task() -> None:
    from tests.testapp.tasks import not_a_task

    with pytest.raises(InvalidSchedule) as info:
        periodic(NAME, "* * * * *", not_a_task)

    assert (info.value.schedule, info.value.field) == (NAME, "task")
    assert "not_a_task" in str(info.value)
    assert "@task" in str(info.value)


def test_periodic__unknown_task_message_shows_the_dotted_path() -> None:
    with pytest.raises(InvalidSchedule) as info:
        periodic(NAME, "* * * * *", "tests.testapp.tasks.missing")

    assert "'tests.testapp.tasks.missing'" in str(info.value)


def test_periodic__queue_error_lists_the_backend_queues() -> None:
    with pytest.raises(InvalidSchedule) as info:
        periodic(NAME, "* * * * *", RECORD, queue="nope")

    message = str(info.value)
    assert "'nope'" in message
    assert "['default', 'mail', 'reports']" in message


def test_periodic__reserved_metadata_key_is_named_in_the_message() -> None:
    with pytest.raises(InvalidSchedule) as info:
        periodic(NAME, "* * * * *", RECORD, metadata={"cron_fire_at": "x", "team": "a"})

    assert "cron_fire_at" in str(info.value)
    assert "team" not in str(info.value)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("", id="empty"),
        pytest.param("   ", id="blank"),
        pytest.param("n" * 201, id="too-long-201"),
        pytest.param("a\x00b", id="nul"),
    ],
)
def test_periodic__bad_name_raises_on_field_name(name: str) -> None:
    with pytest.raises(InvalidSchedule) as info:
        periodic(name, "* * * * *", RECORD)

    assert info.value.field == "name"
    assert info.value.schedule == name
    assert f"schedule {name!r}: field 'name': " in str(info.value)
    assert name not in registry


@pytest.mark.parametrize("name", [None, 42, b"bytes", ["list"]], ids=repr)
def test_periodic__non_str_name_raises_on_field_name_without_a_schedule(name: Any) -> None:
    with pytest.raises(InvalidSchedule) as info:
        periodic(name, "* * * * *", RECORD)

    assert info.value.field == "name"
    assert info.value.schedule is None
    assert str(info.value).startswith("schedule: field 'name': ")
    assert repr(name) in str(info.value)


def test_periodic__name_is_validated_before_the_other_fields() -> None:
    with pytest.raises(InvalidSchedule) as info:
        periodic("", "not a cron", "tests.testapp.tasks.missing")

    assert info.value.field == "name"


# --- duplicates -------------------------------------------------------------------------


def test_periodic__same_name_twice_raises_and_keeps_the_first() -> None:
    first = periodic("dup", "0 1 * * *", RECORD)

    with pytest.raises(InvalidSchedule) as info:
        periodic("dup", "0 2 * * *", SEND_MAIL)

    assert (info.value.schedule, info.value.field) == ("dup", "name")
    # Both declarations are located, so the user can find them.
    assert str(info.value).count(__file__) == 2
    assert [s for s in registry if s.name == "dup"] == [first]


def test_periodic__identical_redeclaration_is_still_a_duplicate() -> None:
    periodic("dup", "0 1 * * *", RECORD)

    with pytest.raises(InvalidSchedule) as info:
        periodic("dup", "0 1 * * *", RECORD)

    assert info.value.field == "name"


def test_periodic__name_of_an_autodiscovered_schedule_is_a_duplicate() -> None:
    with pytest.raises(InvalidSchedule) as info:
        periodic("testapp-yearly", "0 1 * * *", RECORD)

    assert (info.value.schedule, info.value.field) == ("testapp-yearly", "name")
    assert "tests/testapp/cron.py" in str(info.value)


@override_settings(AWA_SCHEDULES={"both": {"cron": "0 3 * * *", "task": RECORD}})
def test_declared_schedules__name_in_settings_and_code_raises() -> None:
    periodic("both", "0 4 * * *", RECORD)

    with pytest.raises(InvalidSchedule) as info:
        declared_schedules()

    assert (info.value.schedule, info.value.field) == ("both", "name")
    assert "AWA_SCHEDULES" in str(info.value)


# --- declared_schedules() -----------------------------------------------------------------


def test_declared_schedules__includes_autodiscovered_cron_py() -> None:
    by_name = {s.name: s for s in declared_schedules()}

    yearly = by_name["testapp-yearly"]
    assert yearly.kind == RECORD
    assert yearly.cron.text == "0 0 1 1 *"
    assert yearly.kwargs == {"label": "yearly"}
    assert yearly.source.endswith("tests/testapp/cron.py:10")


@override_settings(
    AWA_SCHEDULES={
        "zz-settings": {"cron": "0 5 * * *", "task": RECORD},
        "b-settings": {
            "cron": "0 2 * * *",
            "task": SEND_MAIL,
            "timezone": "Europe/Berlin",
            "kwargs": {"fmt": "pdf"},
            "queue": "reports",
            "priority": 1,
            "max_attempts": 9,
            "tags": ["t"],
            "metadata": {"m": 1},
            "missed_fire_policy": "catch_up",
            "args": [1],
        },
    }
)
def test_declared_schedules__merges_settings_and_code_sorted_by_name() -> None:
    periodic("m-code", "0 1 * * *", RECORD)
    periodic("a-code", "0 1 * * *", RECORD)

    schedules = declared_schedules()

    assert [s.name for s in schedules] == [
        "a-code",
        "b-settings",
        "m-code",
        "testapp-yearly",
        "zz-settings",
    ]
    b = schedules[1]
    assert b.source == "settings.AWA_SCHEDULES"
    assert b.definition() == {
        "name": "b-settings",
        "cron_expr": "0 2 * * *",
        "timezone": "Europe/Berlin",
        "kind": SEND_MAIL,
        "queue": "reports",
        "args": {"args": [1], "kwargs": {"fmt": "pdf"}},
        "priority": 1,
        "max_attempts": 9,
        "tags": ["t"],
        "metadata": {"m": 1},
        "missed_fire_policy": "catch_up",
    }


@override_settings(AWA_SCHEDULES={"bad": {"cron": "nope", "task": RECORD}})
def test_declared_schedules__raises_on_invalid_settings_schedule() -> None:
    with pytest.raises(InvalidSchedule) as info:
        declared_schedules()

    assert (info.value.schedule, info.value.field) == ("bad", "cron")


# --- AWA_SCHEDULES ----------------------------------------------------------------------


@override_settings(
    AWA_SCHEDULES={
        "good": {"cron": "0 2 * * *", "task": RECORD},
        "unknown-key": {"cron": "0 2 * * *", "task": RECORD, "colour": "red"},
        "no-cron": {"task": RECORD},
        "no-task": {"cron": "0 2 * * *"},
        "not-a-dict": ["0 2 * * *", RECORD],
        "bad-cron": {"cron": "nope", "task": RECORD},
        "bad-queue": {"cron": "0 2 * * *", "task": RECORD, "queue": "nope"},
    }
)
def test_settings_schedules__returns_every_error_not_just_the_first() -> None:
    good, errors = settings_schedules()

    assert [s.name for s in good] == ["good"]
    assert [(e.schedule, e.field) for e in errors] == [
        ("unknown-key", "colour"),
        ("no-cron", "cron"),
        ("no-task", "task"),
        ("not-a-dict", "AWA_SCHEDULES"),
        ("bad-cron", "cron"),
        ("bad-queue", "queue"),
    ]
    for error in errors:
        assert isinstance(error, InvalidSchedule)
        assert str(error).startswith(f"schedule {error.schedule!r}: field {error.field!r}: ")


@pytest.mark.parametrize(
    ("options", "field"),
    [
        pytest.param({"cron": "* * * * *", "task": RECORD, "when": "x"}, "when", id="unknown-key"),
        pytest.param({"cron": "* * * * *", "task": RECORD, "source": "x"}, "source", id="source-key"),
        pytest.param({"task": RECORD}, "cron", id="missing-cron"),
        pytest.param({"cron": "* * * * *"}, "task", id="missing-task"),
        pytest.param("0 2 * * *", "AWA_SCHEDULES", id="options-str"),
        pytest.param(None, "AWA_SCHEDULES", id="options-none"),
    ],
)
def test_settings_schedules__invalid_entry(options: Any, field: str) -> None:
    with override_settings(AWA_SCHEDULES={"entry": options}):
        good, errors = settings_schedules()

    assert good == []
    assert [(e.schedule, e.field) for e in errors] == [("entry", field)]


@pytest.mark.parametrize("value", [["a"], "a", None, 1], ids=repr)
def test_settings_schedules__awa_schedules_not_a_dict(value: Any) -> None:
    with override_settings(AWA_SCHEDULES=value):
        good, errors = settings_schedules()

    assert good == []
    assert [(e.schedule, e.field) for e in errors] == [(None, "AWA_SCHEDULES")]
    assert "dict" in str(errors[0])


def test_settings_schedules__defaults_to_no_schedules() -> None:
    assert settings_schedules() == ([], [])


# --- runcron refuses to start -------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("skip_checks", [True, False], ids=["handle", "with-checks"])
@override_settings(AWA_SCHEDULES=BAD_SCHEDULES)
def test_runcron__invalid_settings_schedule_refuses_to_start_and_writes_nothing(
    skip_checks: bool,
) -> None:
    with pytest.raises((SystemCheckError, CommandError)) as info:
        call_command("runcron", "--once", skip_checks=skip_checks, stdout=io.StringIO())

    assert "'bad'" in str(info.value)
    assert "'cron'" in str(info.value)
    assert table_count("awa_cron_jobs") == 0
    assert table_count("awa_jobs") == 0


@pytest.mark.django_db(transaction=True)
def test_runcron__invalid_code_schedule_refuses_to_start_and_writes_nothing() -> None:
    # An invalid schedule cannot be registered through periodic(); a duplicate
    # between settings and code is the code-side error runcron must refuse.
    periodic("twice", "0 1 * * *", RECORD)
    with override_settings(AWA_SCHEDULES={"twice": {"cron": "0 2 * * *", "task": RECORD}}):
        with pytest.raises(CommandError) as info:
            call_command("runcron", "--once", stdout=io.StringIO())

    assert "'twice'" in str(info.value)
    assert table_count("awa_cron_jobs") == 0
    assert table_count("awa_jobs") == 0


@pytest.mark.django_db(transaction=True)
@override_settings(AWA_SCHEDULES={"good": {"cron": "0 0 1 1 *", "task": RECORD}})
def test_runcron__valid_schedules_are_written(  # control for the "writes nothing" tests
) -> None:
    call_command("runcron", "--once", stdout=io.StringIO())

    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM awa_cron_jobs ORDER BY name")
        assert [row[0] for row in cursor.fetchall()] == ["good", "testapp-yearly"]


# --- an invalid cron.py -------------------------------------------------------------------


def test_build_schedule__an_expression_is_parsed_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    from awa_django.cron import search
    from awa_django.declarations import declaration as schedules

    schedules._parse_cron.cache_clear()
    calls: list[str] = []
    real = search.parse_cron

    def counting(text: str) -> Any:
        calls.append(text)
        return real(text)

    monkeypatch.setattr(search, "parse_cron", counting)
    for i in range(3):
        schedules.build_schedule(f"parsed-once-{i}", "*/7 * * * *", "tests.testapp.tasks.record")
    with pytest.raises(schedules.InvalidSchedule):
        schedules.build_schedule("bad", "61 * * * *", "tests.testapp.tasks.record")
    with pytest.raises(schedules.InvalidSchedule):
        schedules.build_schedule("bad", "61 * * * *", "tests.testapp.tasks.record")
    # Once for the valid text; an invalid one is parsed (and refused) every time.
    assert calls == ["*/7 * * * *", "61 * * * *", "61 * * * *"]
    schedules._parse_cron.cache_clear()


# -- settings_schedules keeps one validation (start-up with 10,000 declared)
CACHED = {"cached-a": {"cron": "*/5 * * * *", "task": "tests.testapp.tasks.record"}}


@override_settings(AWA_SCHEDULES=CACHED)
def test_settings_schedules__validates_once_while_the_declarations_read_the_same() -> None:
    first, _ = settings_schedules()
    again, _ = settings_schedules()
    assert [s.name for s in first] == ["cached-a"]
    assert again[0] is first[0]  # the kept validation, not a second one
    again.clear()  # callers get their own lists
    assert [s.name for s in settings_schedules()[0]] == ["cached-a"]


def test_settings_schedules__an_edit_in_place_or_a_changed_setting_validates_again() -> None:
    declared = {"edited": {"cron": "*/5 * * * *", "task": "tests.testapp.tasks.record"}}
    with override_settings(AWA_SCHEDULES=declared):
        first, errors = settings_schedules()
        assert first[0].cron.text == "*/5 * * * *" and not errors
        declared["edited"]["cron"] = "*/7 * * * *"  # edited in place: same dict object
        assert settings_schedules()[0][0].cron.text == "*/7 * * * *"
        declared["edited"]["args"] = ["x" * 200]
        assert not settings_schedules()[1]
        with override_settings(AWA_MAX_ARGS_BYTES=64):  # another setting the result depends on
            good, errors = settings_schedules()
            assert not good and errors[0].field == "args"
        assert settings_schedules()[0][0].name == "edited"
