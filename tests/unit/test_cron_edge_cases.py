"""Cron edge cases, without a database: non-ASCII digits, the day fields in
descriptions, wrap-around ranges and the admin's first fire."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from awa_django import validation
from awa_django.admin.schedule_rows import _due
from awa_django.cron import search
from awa_django.cron.describe import describe_cron
from awa_django.cron.search import CronError, fires_between, parse_cron
from awa_django.declarations.builder import build_schedule
from awa_django.exceptions import InvalidSchedule
from awa_django.leader.row_checks import row_problem
from awa_django.models import CronJob
from tests.helpers.rows import healthy

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


# --- 2. descriptions say how the two day fields combine -------------------------------------


@pytest.mark.parametrize(
    ("expression", "description"),
    [
        # Both fields restricted: a day matching EITHER fires (classic cron, OR).
        ("0 0 1 * 1", "At 00:00, on day 1 of the month or on Monday"),
        ("0 0 13 * 5", "At 00:00, on day 13 of the month or on Friday"),
        ("0 0 1,15 * 1-5", "At 00:00, on day 1 and 15 of the month or on Monday through Friday"),
        ("0 0 1-7 * 1", "At 00:00, between day 1 and 7 of the month or on Monday"),
        ("0 0 L * 1", "At 00:00, on the last day of the month or on Monday"),
        ("0 0 15W * 0", "At 00:00, on the weekday nearest day 15 of the month or on Sunday"),
        ("0 0 1 * 1#1", "At 00:00, on day 1 of the month or on the first Monday of the month"),
        ("0 9 1 * 5L", "At 09:00, on day 1 of the month or on the last Friday of the month"),
        ("0 0 1 1 1", "At 00:00, on day 1 of the month or on Monday, only in January"),
        ("0 0 1 * sat-mon", "At 00:00, on day 1 of the month or on Saturday through Monday"),
        ("0 0 1 * mon,wed,fri", "At 00:00, on day 1 of the month or on Monday, Wednesday and Friday"),
        ("0 0 1 * 1/2", "At 00:00, on day 1 of the month or on Monday, Wednesday and Friday"),
        ("30 0 9 1 * 1", "At 09:00:30, on day 1 of the month or on Monday"),
        (
            "*/5 9-17 1,15 * mon-fri",
            "Every 5 minutes, between 09:00 and 17:59, on day 1 and 15 of the month "
            "or on Monday through Friday",
        ),
        # A day field starting with '*' (not '*' itself): the day must match BOTH (AND).
        ("0 0 */2 * 1", "At 00:00, every 2 days, if that day is Monday"),
        ("0 0 */2 * */2", "At 00:00, every 2 days, if that day is Sunday, Tuesday, Thursday or Saturday"),
        ("0 0 */2 * 1#1", "At 00:00, every 2 days, if that day is the first Monday of the month"),
        (
            "0 0 1 * */2",
            "At 00:00, on day 1 of the month, if that day is Sunday, Tuesday, Thursday or Saturday",
        ),
        ("0 0 */2 * mon,fri", "At 00:00, every 2 days, if that day is Monday or Friday"),
        # A '*'-led field that still matches every day says nothing more.
        ("0 0 */1 * 1", "At 00:00, only on Monday"),
        ("0 0 *,1 * 1", "At 00:00, only on Monday"),
        ("0 0 1 * */1", "At 00:00, on day 1 of the month"),
        # A restricted field ORed with one that matches every day: every day.
        ("0 0 1-31 * 1", "At 00:00"),
        # '*' or '?' in a day field: the other field alone (cron-descriptor's wording).
        ("0 0 ? * 1", "At 00:00, only on Monday"),
        ("0 0 1 * ?", "At 00:00, on day 1 of the month"),
        ("0 0 1 * *", "At 00:00, on day 1 of the month"),
        ("0 0 * * 5#3", "At 00:00, on the third Friday of the month"),
        ("0 9 * * 1-5", "At 09:00, Monday through Friday"),
        ("0 0 L * *", "At 00:00, on the last day of the month"),
        # Lists mixing L, W or # with other items, which cron-descriptor misreads.
        ("0 0 L,15 * *", "At 00:00, on day 15 and the last day of the month"),
        ("0 0 1,15,L * 1", "At 00:00, on day 1, day 15 and the last day of the month or on Monday"),
        ("0 0 * * 1,3#2", "At 00:00, on Monday and the second Wednesday of the month"),
        ("0 0 1 * 5L,1", "At 00:00, on day 1 of the month or on Monday and the last Friday of the month"),
    ],
)
def test_describe_cron__day_fields_follow_the_day_rule(expression: str, description: str) -> None:
    assert describe_cron(expression) == description


def test_describe_cron__the_or_wording_is_what_the_schedule_does() -> None:
    # "on day 1 of the month or on Monday": the 1st when it is no Monday, and Mondays
    # that are not the 1st, both fire.
    days = [f.date() for f in fires_between(parse_cron("0 0 1 * 1"), UTC_ZONE, *_JANUARY_2026)]
    assert date(2026, 1, 1) in days  # a Thursday
    assert date(2026, 1, 5) in days  # a Monday
    # "every 2 days, if that day is Monday": odd-dated Mondays only.
    days = [f.date() for f in fires_between(parse_cron("0 0 */2 * 1"), UTC_ZONE, *_JANUARY_2026)]
    assert days == [date(2026, 1, 5), date(2026, 1, 19)]


_JANUARY_2026 = (datetime(2025, 12, 31, 23, 59, tzinfo=UTC), datetime(2026, 1, 31, 23, 59, tzinfo=UTC))


# --- 3. wrap-around ranges: what the parser reads, what a schedule may declare --------------


def test_parse_cron__wrap_around_ranges_run_past_the_end_of_the_field() -> None:
    assert parse_cron("0 22-2 * * *")._plan.hours == (0, 1, 2, 22, 23)
    fires = fires_between(parse_cron("0 0 * * fri-mon"), UTC_ZONE, *_JANUARY_2026)
    assert {f.strftime("%a") for f in fires} == {"Fri", "Sat", "Sun", "Mon"}
    with pytest.raises(CronError, match="wraps around cannot have a step"):
        parse_cron("0 22-2/3 * * *")


@pytest.mark.parametrize(("expr", "field"), [("0 22-2 * * *", "hour"), ("0 0 * * fri-mon", "day-of-week")])
def test_build_schedule__wrap_around_ranges_are_refused(expr: str, field: str) -> None:
    # A schedule cannot use one: declarations refuse it and the leader parks a stored row with it.
    assert f"in the {field} field is reversed" in (validation.expression_problem(expr) or "")
    with pytest.raises(InvalidSchedule, match="is reversed"):
        build_schedule("wrap", expr, RECORD)
    problem = row_problem(healthy(cron_expr=expr)) or ""
    assert problem.startswith("cron_expr range") and "is reversed" in problem


# --- 4. the admin's "due" uses the leader's first-fire rule ---------------------------------


def test_admin_due__a_never_fired_row_waits_for_the_slot_in_the_look_back() -> None:
    created = datetime(2026, 1, 1, 10, 0, 25, tzinfo=UTC)
    row = CronJob(name="hourly", cron_expr="0 * * * *", timezone="UTC", created_at=created)
    # The leader fires the 10:00 slot (60 s before creation), not 11:00.
    assert _due(row) == datetime(2026, 1, 1, 10, tzinfo=UTC)
    assert _due(row) == search.next_fire(
        parse_cron(row.cron_expr), UTC_ZONE, search.search_start(None, created)
    )
    # Exactly 60 s before creation is still in the look-back; 61 s is not.
    row.created_at = datetime(2026, 1, 1, 10, 1, tzinfo=UTC)
    assert _due(row) == datetime(2026, 1, 1, 10, tzinfo=UTC)
    row.created_at = datetime(2026, 1, 1, 10, 1, 1, tzinfo=UTC)
    assert _due(row) == datetime(2026, 1, 1, 11, tzinfo=UTC)
    # A row that fired waits for the slot after its last fire.
    row.last_enqueued_at = datetime(2026, 1, 1, 12, tzinfo=UTC)
    assert _due(row) == datetime(2026, 1, 1, 13, tzinfo=UTC)


def test_search_start__is_the_bound_due_fires_uses() -> None:
    created = datetime(2026, 1, 1, 10, 0, 25, tzinfo=UTC)
    expr = parse_cron("0 * * * *")
    # due_fires finds the 10:00 slot from creation + 1 s, and the bound includes it.
    now = created + timedelta(seconds=1)
    fires = search.due_fires(
        expr, UTC_ZONE, last_enqueued_at=None, created_at=created, now=now, catch_up=False, limit=10
    )
    start = search.search_start(None, created)
    assert fires == [datetime(2026, 1, 1, 10, tzinfo=UTC)] and start < fires[0]
    assert start == created - timedelta(seconds=60, microseconds=1)
    last = datetime(2026, 1, 1, 9, tzinfo=UTC)
    assert search.search_start(last, created) == last
