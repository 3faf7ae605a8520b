"""schedule_builder.py: one declaration validated into a Schedule, no database.

Each invalid value on its own is covered by tests/db/test_schedules.py; here:
the fixed order of the checks, the settings they read, and what the accepted
values are normalised to.
"""

from __future__ import annotations

import types
from typing import Any

import pytest
from django.test.utils import override_settings

from awa_django.declarations.builder import build_schedule
from awa_django.exceptions import InvalidSchedule

RECORD = "tests.testapp.tasks.record"

# Fields in the order build_schedule checks them, each with a bad value.
ORDER: list[tuple[str, dict[str, Any]]] = [
    ("cron", {"cron": "61 * * * *"}),
    ("timezone", {"timezone": "Mars/Olympus_Mons"}),
    ("task", {"task": "tests.testapp.tasks.missing"}),
    ("queue", {"queue": "nope"}),
    ("priority", {"priority": 101}),
    ("max_attempts", {"max_attempts": 0}),
    ("args", {"args": "abc"}),
    ("metadata", {"metadata": {"cron_name": "x"}}),
    ("tags", {"tags": "urgent"}),
]


def build(**overrides: Any) -> Any:
    options: dict[str, Any] = {"name": "nightly", "cron": "0 2 * * *", "task": RECORD}
    options.update(overrides)
    return build_schedule(**options)


@pytest.mark.parametrize("index", range(len(ORDER)))
def test_build_schedule__reports_the_first_bad_field_in_check_order(index: int) -> None:
    overrides: dict[str, Any] = {}
    for _, bad in ORDER[index:]:  # this field and every later one are bad
        overrides.update(bad)
    with pytest.raises(InvalidSchedule) as info:
        build(**overrides)
    assert info.value.field == ORDER[index][0]


def test_build_schedule__invalid_max_attempts_default_is_named_only_when_it_is_used() -> None:
    with override_settings(AWA_MAX_ATTEMPTS=0):
        with pytest.raises(InvalidSchedule) as info:
            build()
        assert info.value.field == "max_attempts"
        assert "the default AWA_MAX_ATTEMPTS=0 is invalid" in str(info.value)
        assert build(max_attempts=4).max_attempts == 4


@pytest.mark.parametrize("limit", [0, True, "1024"])
def test_build_schedule__invalid_size_limit_setting_is_refused_by_name(limit: Any) -> None:
    with override_settings(AWA_MAX_ARGS_BYTES=limit), pytest.raises(InvalidSchedule) as info:
        build(args=[1])
    assert info.value.field == "args"
    assert "AWA_MAX_ARGS_BYTES must be a whole number >= 1" in str(info.value)


def test_build_schedule__args_and_kwargs_share_one_size_limit() -> None:
    with override_settings(AWA_MAX_ARGS_BYTES=60):
        assert build(args=["x" * 20]).args == ["x" * 20]
        assert build(kwargs={"k": "y" * 20}).kwargs == {"k": "y" * 20}
        with pytest.raises(InvalidSchedule) as info:
            build(args=["x" * 20], kwargs={"k": "y" * 20})
    assert info.value.field == "args"
    assert "the limit is AWA_MAX_ARGS_BYTES=60" in str(info.value)


def test_build_schedule__size_is_counted_in_utf8_bytes_of_the_jsonb_text() -> None:
    # {"args": ["é" * 30], "kwargs": {}} as PostgreSQL prints jsonb (a space
    # after each comma and colon): 28 bytes of syntax + 60 bytes of text.
    with override_settings(AWA_MAX_ARGS_BYTES=88):
        assert build(args=["é" * 30]).args == ["é" * 30]
    with override_settings(AWA_MAX_ARGS_BYTES=87), pytest.raises(InvalidSchedule, match="is 88 bytes"):
        build(args=["é" * 30])


def test_build_schedule__normalises_iterables_and_mappings_to_json_values() -> None:
    schedule = build(
        args=(x for x in [1, (2, 3)]),
        kwargs=types.MappingProxyType({"when": (4, 5)}),
        metadata=types.MappingProxyType({"team": "ops"}),
        tags=(t for t in ["a", "b"]),
    )
    assert schedule.args == [1, [2, 3]]
    assert schedule.kwargs == {"when": [4, 5]}
    assert schedule.metadata == {"team": "ops"}
    assert schedule.tags == ("a", "b")
    assert schedule.definition()["args"] == {"args": [1, [2, 3]], "kwargs": {"when": [4, 5]}}
