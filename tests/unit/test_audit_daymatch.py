"""Audit "daymatch": non-ASCII digits, the day fields in descriptions, wrap-around
ranges and the admin's first fire, each pinned without a database."""

from __future__ import annotations

from zoneinfo import ZoneInfo

import pytest

from awa_django import validation
from awa_django.cronexpr import CronError, parse_cron
from awa_django.exceptions import InvalidSchedule
from awa_django.schedule_builder import build_schedule

RECORD = "tests.testapp.tasks.record"
UTC_ZONE = ZoneInfo("UTC")

# --- 1. digits are ASCII 0-9 in every field and every form ------------------------------

# (expression, the field the error must name, the offending character)
NON_ASCII_DIGITS = [
    ("\u0665 * * * *", "minute", "\u0665"),  # Arabic-Indic five
    ("\uff15 * * * *", "minute", "\uff15"),  # fullwidth five
    ("*/\u0665 * * * *", "minute", "\u0665"),  # a step: int() took it for 5
    ("*/\uff15 * * * *", "minute", "\uff15"),
    ("1-5/\u0665 * * * *", "minute", "\u0665"),
    ("0 */\u00b2 * * *", "hour", "\u00b2"),  # superscript two: isdigit() but not int()
    ("0 \u0669 * * *", "hour", "\u0669"),
    ("\u0663\u0660 0 9 * * *", "second", "\u0663"),  # six fields: seconds first
    ("0 0 \u0661\u0665W * *", "day-of-month", "\u0661"),  # nW: isdigit() took it
    ("0 0 \u00b2W * *", "day-of-month", "\u00b2"),
    ("0 0 1-5/\u0662 * *", "day-of-month", "\u0662"),
    ("0 0 1-\u0665 * *", "day-of-month", "\u0665"),
    ("0 0 * \u0663 *", "month", "\u0663"),
    ("0 0 * 1-\u0661\u0662 *", "month", "\u0661"),
    ("0 0 * jan/\u0662 *", "month", "\u0662"),
    ("0 0 * * \u0665", "day-of-week", "\u0665"),
    ("0 0 * * 5#\u0663", "day-of-week", "\u0663"),
    ("0 0 * * 5#\u00b2", "day-of-week", "\u00b2"),
    ("0 0 * * \u0665L", "day-of-week", "\u0665"),
    ("0 0 * * L\u0665", "day-of-week", "\u0665"),
    ("0 0 * * mon/\u0662", "day-of-week", "\u0662"),
]


@pytest.mark.parametrize(("expr", "field", "char"), NON_ASCII_DIGITS)
def test_parse_cron__non_ascii_digit_is_a_cron_error_naming_the_field(
    expr: str, field: str, char: str
) -> None:
    with pytest.raises(CronError) as caught:
        parse_cron(expr)
    message = str(caught.value)
    assert f"bad {field} field" in message
    assert f"U+{ord(char):04X}" in message and "ASCII" in message


@pytest.mark.parametrize(("expr", "field", "char"), NON_ASCII_DIGITS)
def test_expression_problem__non_ascii_digit_names_the_field(expr: str, field: str, char: str) -> None:
    problem = validation.expression_problem(expr) or ""
    assert f"{field} field" in problem and f"U+{ord(char):04X}" in problem


@pytest.mark.parametrize(("expr", "field", "char"), NON_ASCII_DIGITS)
def test_build_schedule__non_ascii_digit_is_invalid_naming_the_cron_field(
    expr: str, field: str, char: str
) -> None:
    with pytest.raises(InvalidSchedule) as caught:
        build_schedule("digits", expr, RECORD)
    assert caught.value.field == "cron"
    assert f"{field} field" in str(caught.value)


def test_parse_cron__non_ascii_space_between_fields_is_refused_too() -> None:
    # str.split() takes a no-break space for a separator; other cron tools do not.
    with pytest.raises(CronError, match="U\\+00A0"):
        parse_cron("0\u00a00 * * *")
    with pytest.raises(CronError, match="bad minute field .*U\\+2003"):
        parse_cron("0 0\u2003 * * * *")


def test_parse_cron__ascii_digits_are_still_read() -> None:
    assert parse_cron("*/15 1-5/2 15W * 5#3")._plan.minutes == (0, 15, 30, 45)
    assert parse_cron("30 0 9 * * *")._plan.seconds == (30,)
