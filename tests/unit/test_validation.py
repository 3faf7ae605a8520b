"""validation.py: the hostile-input checks, each returning a reason or None (no database)."""

from __future__ import annotations

import pytest

from awa_django import validation


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("fine", None),
        ("nul\x00", "contains a NUL character"),
        ("lone\ud800", "contains a lone surrogate (not valid Unicode text)"),
    ],
)
def test_text_problem(value: str, reason: str | None) -> None:
    assert validation.text_problem(value) == reason


@pytest.mark.parametrize(
    ("value", "char"),
    [("esc\x1b[2J", "001B"), ("rtl\u202eeman", "202E"), ("line\u2028sep", "2028"), ("new\nline", "000A")],
)
def test_name_problem__control_and_format_characters_are_named(value: str, char: str) -> None:
    assert validation.name_problem(value) == f"contains the control or format character U+{char}"


def test_name_problem__printable_unicode_is_fine() -> None:
    assert validation.name_problem("nächtlicher-bericht 報告") is None


def test_json_problem__finds_bad_strings_keys_and_floats_anywhere() -> None:
    assert validation.json_problem({"a": [1, "ok", {"b": 2.5}]}) is None
    assert validation.json_problem({"a": ["x\x00"]}) == "value of 'a' contains a NUL character"
    assert validation.json_problem({"k\x00": 1}) == "key 'k\\x00' contains a NUL character"
    assert validation.json_problem([float("nan")]) == "a value is nan (not JSON)"
    assert validation.json_problem({"x": float("inf")}) == "value of 'x' is inf (not JSON)"


def test_json_problem__depth_limit_is_iterative_and_exact() -> None:
    def nested(depth: int) -> object:
        value: object = 0
        for _ in range(depth):
            value = [value]
        return value

    assert validation.json_problem(nested(3), max_depth=3) is None
    assert (
        validation.json_problem(nested(4), max_depth=3)
        == "is nested deeper than 3 levels (AWA_MAX_JSON_DEPTH=3)"
    )
    # An empty array is a level too, as in the database's count.
    assert validation.json_problem([[[]]], max_depth=3) is None
    assert validation.json_problem([[[[]]]], max_depth=3) is not None
    assert validation.json_problem([[[]]], max_depth=3, within=1) is not None
    # Far deeper than the interpreter's recursion limit: still answered.
    limit = validation.MAX_JSON_DEPTH
    assert (
        validation.json_problem(nested(100_000))
        == f"is nested deeper than {limit} levels (AWA_MAX_JSON_DEPTH={limit})"
    )


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("*/0 * * * *", "step '0' in the minute field must be a whole number from 1 to 59"),
        ("* * * * */8", "step '8' in the day-of-week field"),
        ("0 0 30-2 * *", "range '30-2' in the day-of-month field is reversed"),
        ("0 0 * dec-jan *", "range 'dec-jan' in the month field is reversed"),
        ("0 0 * * fri-mon", "range 'fri-mon' in the day-of-week field is reversed"),
        ("0\u00a00 * * *", "contains the character U+00A0"),
        ("0 " * 200, "characters long; the limit is 256"),
    ],
)
def test_expression_problem__refused(text: str, fragment: str) -> None:
    problem = validation.expression_problem(text)
    assert problem is not None and fragment in problem


@pytest.mark.parametrize(
    "text",
    [
        "*/5 * * * *",
        "0 */30 * * * *",
        "0 9 * * mon-fri",
        "@daily",
        "1 2 3",
        "0 0 1-31 1-12 0-7",
        "* * * * */7",
    ],
)
def test_expression_problem__accepted_or_left_to_the_parser(text: str) -> None:
    assert validation.expression_problem(text) is None


def test_timezone_problem__host_dependent_zones() -> None:
    assert "depends on the host" in (validation.timezone_problem(" LocalTime ") or "")
    assert validation.timezone_problem("Europe/Berlin") is None
    assert validation.timezone_problem("UTC\x00") == "contains a NUL character"


@pytest.mark.parametrize("kind", [".x", "x", "a..b", "a.b.", "1a.b"])
def test_kind_problem__not_an_absolute_dotted_path(kind: str) -> None:
    assert "is not an absolute dotted path" in (validation.kind_problem(kind) or "")


def test_kind_problem__dotted_path_is_fine() -> None:
    assert validation.kind_problem("myapp.tasks.send_digest") is None


def test_size_problem__limit_is_inclusive() -> None:
    assert validation.size_problem(100, 100) is None
    assert validation.size_problem(101, 100) == "is 101 bytes as JSON; the limit is AWA_MAX_ARGS_BYTES=100"


@pytest.mark.parametrize(
    ("queue", "ok"),
    [
        ("default", True),
        ("é" * 200, True),
        ("", False),
        ("x" * 201, False),
        ("a\x00", False),
        ("\ud800", False),
        ("a\tb", False),
        (7, False),
    ],
)
def test_queue_problem(queue: object, ok: bool) -> None:
    assert (validation.queue_problem(queue) is None) is ok


def test_run_after_problem__a_day_inside_pythons_years_in_utc() -> None:
    from datetime import UTC, datetime, timedelta, timezone

    east, west = timezone(timedelta(hours=14)), timezone(timedelta(hours=-14))
    assert validation.run_after_problem(datetime(1, 1, 2, tzinfo=UTC)) is None
    assert validation.run_after_problem(datetime(9999, 12, 30, 23, 59, tzinfo=UTC)) is None
    assert validation.run_after_problem(datetime(2030, 1, 1)) is None  # naive: compared as UTC
    for bad in (
        datetime(1, 1, 1, 23, 59, tzinfo=UTC),
        datetime(1, 1, 2, 12, tzinfo=east),  # 0001-01-01 22:00 UTC
        datetime(1, 1, 1, tzinfo=east),  # before year 1 in UTC
        datetime(9999, 12, 31, tzinfo=UTC),
        datetime(9999, 12, 31, 23, tzinfo=west),  # after year 9999 in UTC
        datetime(1, 1, 1),
    ):
        assert "must be between 0001-01-02" in (validation.run_after_problem(bad) or ""), bad
