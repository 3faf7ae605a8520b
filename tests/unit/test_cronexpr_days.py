"""Day matching as classic (Vixie/cronie) cron does it, and the extensions ``L``, ``W``, ``#``.

Each case pins one day-field shape where a brute-force oracle of classic cron and
croniter's reading disagree: the engine must follow the oracle.
"""

from __future__ import annotations

import copy
import pickle
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from awa_django.cron import search
from awa_django.cron.search import CronError, due_fires, fires_between, latest_fire, next_fire, parse_cron

UTC_ZONE = ZoneInfo("UTC")
# (2026-01-01T00:00Z, 2028-12-31T23:59Z], the window of the counts.
START, END = datetime(2026, 1, 1, tzinfo=UTC), datetime(2028, 12, 31, 23, 59, tzinfo=UTC)


def fire_days(expr: str, start: datetime = START, end: datetime = END) -> list[date]:
    return [f.date() for f in fires_between(parse_cron(expr), UTC_ZONE, start, end)]


def d(text: str) -> date:
    return date.fromisoformat(text)


# --- the AND/OR rule -----------------------------------------------------------------------


def test_day_rule__stepped_star_day_of_month_is_anded_with_day_of_week():
    days = fire_days("0 0 */2 * 1")
    assert len(days) == 80
    assert all(day.weekday() == 0 and day.day % 2 == 1 for day in days)
    assert d("2026-01-03") not in days
    assert days[:3] == [d("2026-01-05"), d("2026-01-19"), d("2026-02-09")]


def test_day_rule__stepped_star_day_of_week_every_day_keeps_day_of_month():
    assert fire_days("0 0 29 2 */1") == [d("2028-02-29")]


def test_day_rule__stepped_star_day_of_week_is_anded_with_day_of_month():
    assert fire_days("0 0 29 2 */7") == []
    fire = next_fire(parse_cron("0 0 29 2 */7"), UTC_ZONE, START)
    assert fire == datetime(2032, 2, 29, tzinfo=UTC)  # the next 29 February on a Sunday


def test_day_rule__both_stepped_stars_are_anded():
    days = fire_days(
        "0 0 */2 * */2", start=START - timedelta(minutes=1), end=datetime(2026, 1, 31, 23, 59, tzinfo=UTC)
    )
    # odd dates that are Sun/Tue/Thu/Sat
    assert days == [
        day
        for day in (d("2026-01-01") + timedelta(n) for n in range(31))
        if day.day % 2 == 1 and day.isoweekday() % 7 % 2 == 0
    ]


def test_day_rule__both_restricted_fire_on_either():
    days = fire_days(
        "0 0 1-7 * 1", start=START - timedelta(minutes=1), end=datetime(2026, 1, 31, 23, 59, tzinfo=UTC)
    )
    assert days == sorted(
        {d(f"2026-01-0{n}") for n in range(1, 8)} | {d("2026-01-12"), d("2026-01-19"), d("2026-01-26")}
    )


@pytest.mark.parametrize("star", ["*", "?"])
def test_day_rule__plain_star_day_of_month_uses_day_of_week_only(star):
    assert fire_days(f"0 0 {star} * 1", end=datetime(2026, 1, 20, tzinfo=UTC)) == [
        d("2026-01-05"),
        d("2026-01-12"),
        d("2026-01-19"),
    ]


def test_day_rule__star_list_counts_as_unrestricted():
    # The field text starts with "*": Vixie's DOM_STAR, so the fields are ANDed.
    assert fire_days("0 0 *,1 * 1", end=datetime(2026, 1, 20, tzinfo=UTC)) == [
        d("2026-01-05"),
        d("2026-01-12"),
        d("2026-01-19"),
    ]


# --- '#' (n-th weekday) -------------------------------------------------------------------


def test_nth_weekday__or_with_restricted_day_of_month():
    days = fire_days("0 0 1 * 1#1")
    assert len(days) == 66
    assert set(days) == {
        day for day in _days_2026_2028()[1:] if day.day == 1 or (day.weekday() == 0 and day.day <= 7)
    }


def test_nth_weekday__accepted_with_restricted_day_of_month():
    days = fire_days("0 0 15 * 1#1", end=datetime(2026, 3, 1, tzinfo=UTC))
    assert days == [d("2026-01-05"), d("2026-01-15"), d("2026-02-02"), d("2026-02-15")]
    assert parse_cron("* * 15 * 1#1").text == "* * 15 * 1#1"


def test_nth_weekday__anded_with_stepped_star_day_of_month():
    # first Mondays that fall on an odd date
    days = fire_days("0 0 */2 * 1#1", end=datetime(2026, 7, 1, tzinfo=UTC))
    assert days == [d("2026-01-05"), d("2026-06-01")]


def test_nth_weekday__fifth_friday_only_in_months_that_have_one():
    assert fire_days("0 0 * * 5#5", end=datetime(2026, 12, 31, tzinfo=UTC)) == [
        d("2026-01-30"),
        d("2026-05-29"),
        d("2026-07-31"),
        d("2026-10-30"),
    ]


# --- 'L' -----------------------------------------------------------------------------------


def test_last_day__or_with_restricted_day_of_week():
    days = fire_days("0 0 L * 1", end=datetime(2026, 1, 31, 23, 59, tzinfo=UTC))
    assert days == [d("2026-01-05"), d("2026-01-12"), d("2026-01-19"), d("2026-01-26"), d("2026-01-31")]


@pytest.mark.parametrize("expr", ["0 0 * * 5L", "0 0 * * L5", "0 0 * * friL"])
def test_last_weekday__last_friday_of_each_month(expr):
    assert fire_days(expr, end=datetime(2026, 4, 1, tzinfo=UTC)) == [
        d("2026-01-30"),
        d("2026-02-27"),
        d("2026-03-27"),
    ]


def test_last_day__february_in_leap_and_common_years():
    assert fire_days("0 0 L 2 *") == [d("2026-02-28"), d("2027-02-28"), d("2028-02-29")]


# --- 'W' -----------------------------------------------------------------------------------


def test_nearest_weekday__never_past_the_end_of_a_short_month():
    days = fire_days("0 0 31W * *", end=datetime(2026, 12, 31, tzinfo=UTC))
    # 31 Jan 2026 is a Saturday -> Friday 30th; months without a 31st have no fire.
    assert days == [
        d("2026-01-30"),
        d("2026-03-31"),
        d("2026-05-29"),
        d("2026-07-31"),
        d("2026-08-31"),
        d("2026-10-30"),
        d("2026-12-31"),
    ]


def test_nearest_weekday__never_before_the_first():
    # 1 Aug 2026 is a Saturday: the nearest weekday in August is Monday the 3rd.
    assert fire_days("0 0 1W 8 *", end=datetime(2026, 12, 31, tzinfo=UTC)) == [d("2026-08-03")]


def test_nearest_weekday__sunday_moves_to_monday():
    # 15 Feb 2026 is a Sunday.
    assert fire_days("0 0 15W 2 *", end=datetime(2026, 12, 31, tzinfo=UTC)) == [d("2026-02-16")]


def test_nearest_weekday__last_day_sunday_moves_back_to_friday():
    # 31 May 2026 is a Sunday.
    assert fire_days("0 0 31W 5 *", end=datetime(2026, 12, 31, tzinfo=UTC)) == [d("2026-05-29")]


def test_nearest_weekday__last_weekday_of_month():
    assert fire_days("0 0 LW * *", end=datetime(2026, 6, 1, tzinfo=UTC)) == [
        d("2026-01-30"),
        d("2026-02-27"),
        d("2026-03-31"),
        d("2026-04-30"),
        d("2026-05-29"),
    ]


def test_nearest_weekday__or_with_restricted_day_of_week():
    days = fire_days("0 0 15W * 0", end=datetime(2026, 1, 31, 23, 59, tzinfo=UTC))
    assert days == [d("2026-01-04"), d("2026-01-11"), d("2026-01-15"), d("2026-01-18"), d("2026-01-25")]


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        (
            "0 0 30W 2 *",
            "invalid cron expression '0 0 30W 2 *': it never matches any date "
            "(day-of-month '30W' never occurs in month '2')",
        ),
        (
            "0 0 31 4,6 *",
            "invalid cron expression '0 0 31 4,6 *': it never matches any date "
            "(day-of-month '31' never occurs in month '4,6')",
        ),
        (
            "0 0 30 2 *",
            "invalid cron expression '0 0 30 2 *': it never matches any date "
            "(day-of-month '30' never occurs in month '2')",
        ),
    ],
)
def test_never_matches__rejected_with_the_fields_named(expr, message):
    with pytest.raises(CronError) as excinfo:
        parse_cron(expr)
    assert str(excinfo.value) == message


# --- aware inputs in any zone --------------------------------------------------------------

NY = ZoneInfo("America/New_York")


def test_aware_inputs__fires_between_in_a_fold_compares_instants():
    # 01:30 EDT (05:30Z) then 01:10 EST (06:10Z): the second is later, though its wall clock is not.
    after = datetime(2026, 11, 1, 1, 30, tzinfo=NY)
    until = datetime(2026, 11, 1, 1, 10, fold=1, tzinfo=NY)
    assert fires_between(parse_cron("0 * * * *"), NY, after, until) == [datetime(2026, 11, 1, 6, tzinfo=UTC)]


def test_aware_inputs__latest_fire_in_a_fold_uses_instants():
    after = datetime(2026, 11, 1, 1, 30, tzinfo=NY)  # 05:30Z
    until = datetime(2026, 11, 1, 1, 10, fold=1, tzinfo=NY)  # 06:10Z
    assert latest_fire(parse_cron("0 * * * *"), NY, after, until) == datetime(2026, 11, 1, 6, tzinfo=UTC)


def test_aware_inputs__due_fires_created_at_look_back_is_60_real_seconds():
    # Created at 01:00:30 EST (06:00:30Z): the look-back starts at 05:59:30Z, after the
    # 01:00 EDT fire (05:00Z) of this fixed-time entry. Subtracting 60 s on the wall clock
    # would give 00:59:30, read as EDT (04:59:30Z), and fire that old slot.
    created = datetime(2026, 11, 1, 1, 0, 30, fold=1, tzinfo=NY)
    now = datetime(2026, 11, 1, 1, 5, fold=1, tzinfo=NY)
    fires = due_fires(
        parse_cron("0 1 * * *"),
        NY,
        last_enqueued_at=None,
        created_at=created,
        now=now,
        catch_up=False,
        limit=10,
    )
    assert fires == []


@pytest.mark.parametrize("zone", ["America/New_York", "Australia/Lord_Howe", "Asia/Kolkata"])
@pytest.mark.parametrize("expr", ["*/20 * * * *", "10 1 * * *", "50 1,2 * * *"])
def test_aware_inputs__same_answer_as_utc(zone, expr):
    tz, expression = ZoneInfo(zone), parse_cron(expr)
    # Every 7 minutes across the 2026 fall-back of New York and of Lord Howe.
    for origin in (datetime(2026, 11, 1, 4, 50, tzinfo=UTC), datetime(2026, 4, 4, 14, 10, tzinfo=UTC)):
        instants = [origin + timedelta(minutes=7 * k) for k in range(40)]
        for a in instants:
            for b in instants[::4]:
                assert fires_between(expression, tz, a.astimezone(tz), b.astimezone(tz)) == (
                    fires_between(expression, tz, a, b)
                )
                assert latest_fire(expression, tz, a.astimezone(tz), b.astimezone(tz)) == (
                    latest_fire(expression, tz, a, b)
                )
            assert next_fire(expression, tz, a.astimezone(tz)) == next_fire(expression, tz, a)


def test_aware_inputs__gap_time_is_read_as_its_instant():
    # 02:30 on 2026-03-08 does not exist in New York; fold=0 reads it with EST: 07:30Z.
    ghost = datetime(2026, 3, 8, 2, 30, tzinfo=NY)
    assert next_fire(parse_cron("*/15 * * * *"), NY, ghost) == next_fire(
        parse_cron("*/15 * * * *"), NY, ghost.astimezone(UTC)
    )


# --- cost ----------------------------------------------------------------------------------


@pytest.fixture
def month_scans(monkeypatch):
    """Count the months the day search looks at (each one a table lookup)."""
    calls: list[int] = []
    real = search._month_days

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(search, "_month_days", counting)
    return calls


@pytest.mark.parametrize("expr", ["0 0 31 4 1", "0 0 31 4,6,9,11 5#5", "0 0 31 2-4 1#5"])
def test_cost__never_occurring_day_in_restricted_months_is_cheap(expr, month_scans):
    expression, normal = parse_cron(expr), parse_cron("0 0 1 1 *")
    for year in (2026, 2027, 2028):
        for month in range(1, 13):
            after = datetime(year, month, 15, tzinfo=UTC)
            month_scans.clear()
            assert next_fire(expression, UTC_ZONE, after) is not None
            pathological = len(month_scans)
            month_scans.clear()
            next_fire(normal, UTC_ZONE, after)
            # One table look-up per month of the set, at most twice over (same day, next
            # day): never a walk through years of days. Timings: bench/cronexpr_bench.py.
            assert pathological <= 6
            assert len(month_scans) <= 2


def _days_2026_2028() -> list[date]:
    first = d("2026-01-01")
    return [first + timedelta(n) for n in range((d("2029-01-01") - first).days)]


# --- shrunk counterexamples of the property test (tests/unit/test_cronexpr_property.py) ---------
# Found by running the property test against the croniter-based engine of main.

LORD_HOWE = ZoneInfo("Australia/Lord_Howe")


def test_counterexample__range_with_equal_ends_is_one_value():
    # croniter read "1-1/1" as every month.
    fires = fires_between(
        parse_cron("0 0 * 1-1/1 *"),
        LORD_HOWE,
        datetime(2024, 1, 1, tzinfo=UTC),
        datetime(2024, 12, 31, tzinfo=UTC),
    )
    local_days = [f.astimezone(LORD_HOWE).date() for f in fires]
    assert local_days == [date(2024, 1, n) for n in range(2, 32)]
    assert fires[0] == datetime(2024, 1, 1, 13, tzinfo=UTC)  # 00:00 at UTC+11


def test_counterexample__last_sunday_written_0l():
    fires = fires_between(
        parse_cron("0 0 * 1 0L"),
        LORD_HOWE,
        datetime(2024, 1, 1, tzinfo=UTC),
        datetime(2024, 12, 31, tzinfo=UTC),
    )
    assert fires == [datetime(2024, 1, 27, 13, tzinfo=UTC)]  # Sunday 28 January, local


# --- documented examples (docs/explanation/semantics.md) ---------------------------------


@pytest.mark.parametrize(
    ("expr", "first_days"),
    [
        ("0 0 13 * 5", ["2026-01-02", "2026-01-09", "2026-01-13", "2026-01-16"]),
        ("0 0 LW 5 *", ["2026-05-29", "2027-05-31"]),
        ("0 0 * * 1/2", ["2026-01-02", "2026-01-05", "2026-01-07", "2026-01-09"]),
        ("0 0 * * */2", ["2026-01-01", "2026-01-03", "2026-01-04", "2026-01-06"]),
        ("0 0 * * 1-7/2", ["2026-01-02", "2026-01-04", "2026-01-05", "2026-01-07"]),
    ],
)
def test_documented_examples(expr, first_days):
    fires = fires_between(
        parse_cron(expr),
        UTC_ZONE,
        datetime(2025, 12, 31, 23, 59, tzinfo=UTC),
        datetime(2027, 12, 31, tzinfo=UTC),
        limit=len(first_days),
    )
    assert [f.date().isoformat() for f in fires] == first_days


def test_documented_examples__wrapped_range_hours():
    fires = fires_between(
        parse_cron("0 22-1 1 1 *"),
        UTC_ZONE,
        datetime(2025, 12, 31, 23, 59, tzinfo=UTC),
        datetime(2026, 1, 2, tzinfo=UTC),
    )
    assert [f.hour for f in fires] == [0, 1, 22, 23]


@pytest.mark.parametrize(
    ("expr", "reason"),
    [
        ("0 22-2/3 * * *", "bad hour field '22-2/3': '22-2/3': a range that wraps around cannot have a step"),
        (
            "0 0 L-2 * *",
            "bad day-of-month field 'L-2': 'l-2': 'L', 'LW' and 'nW' (n = 1-31) stand "
            "alone between commas, without ranges or steps",
        ),
        ("0 0 * * 1#6", "bad day-of-week field '1#6': '1#6': the week after '#' is 1-5"),
        (
            "0 0 * * L",
            "bad day-of-week field 'L': 'l': use 'd#k' (k-th weekday d, k = 1-5) or 'dL' "
            "(last weekday d), alone between commas",
        ),
        ("? * * * *", "bad minute field '?': '?' is not a value, range or step"),
        ("0 0 1,? * *", "bad day-of-month field '1,?': '?' must be the whole field"),
        ("0 0 32W * *", "bad day-of-month field '32W': 32 is not in 1-31"),
        ("0 0 * * 1,,2", "bad day-of-week field '1,,2': empty list item"),
        (
            "0 0 * foo *",
            "bad month field 'foo': 'foo' is not a number or a name (jan, feb, mar, apr, "
            "may, jun, jul, aug, sep, oct, nov, dec)",
        ),
    ],
)
def test_parse_cron__day_extension_errors_name_the_field(expr, reason):
    with pytest.raises(CronError) as excinfo:
        parse_cron(expr)
    assert str(excinfo.value) == f"invalid cron expression {expr!r}: {reason}"


def test_cron_expression__compiled_once_and_usable_as_a_cache_key():
    expression = parse_cron("0 0 L * 1")
    again = pickle.loads(pickle.dumps(expression))
    assert again == expression == copy.deepcopy(expression)
    assert hash(again) == hash(expression)
    assert {expression: 1}[parse_cron("0 0 L * 1")] == 1
    assert next_fire(again, UTC_ZONE, START) == next_fire(expression, UTC_ZONE, START)
