"""cronparse.py: what a cron expression compiles to at parse time.

The fire-time searches over these sets are tested through ``cronexpr``
(test_cronexpr*.py); these tests read the compiled sets and day masks directly.
"""

from __future__ import annotations

import pytest

from awa_django.cron.days import _DayField, _nearest_weekday
from awa_django.cron.parse import CronError, _parse_days, parse_cron


def days(mask: int) -> list[int]:
    return [d for d in range(1, 32) if mask >> d & 1]


def mask_of(expr: str, length: int, first: int) -> int:
    """The day mask of ``expr`` for a month of ``length`` days whose 1st is weekday ``first``."""
    masks: tuple[int, ...] = parse_cron(expr)._plan.masks
    return masks[(length - 28) * 7 + first]


def test_parse_cron__fields_compile_to_sorted_value_sets() -> None:
    plan = parse_cron("15,*/20 22-2 * jan,MAR-apr *")._plan
    assert plan.seconds == (0,)  # five fields: second 0
    assert plan.minutes == (0, 15, 20, 40)
    assert plan.hours == (0, 1, 2, 22, 23)  # a range that wraps around midnight
    assert plan.months == (1, 3, 4)
    assert plan.month_bits == (1 << 1) | (1 << 3) | (1 << 4)


@pytest.mark.parametrize(
    ("field", "values"),
    [
        ("5/20", (5, 25, 45)),  # "a/n" runs from a to the end of the field
        ("10-20/5", (10, 15, 20)),
        ("59", (59,)),
    ],
)
def test_parse_cron__steps_and_open_ranges(field: str, values: tuple[int, ...]) -> None:
    assert parse_cron(f"{field} * * * * *")._plan.seconds == values


def test_parse_days__sunday_is_0_or_7_and_weekday_steps_stay_in_the_week() -> None:
    assert _parse_days(5, "7").values == _parse_days(5, "0").values == frozenset({0})
    assert _parse_days(5, "5/1").values == frozenset({5, 6})
    assert _parse_days(5, "sat-mon").values == frozenset({6, 0, 1})
    assert _parse_days(5, "*").star and _parse_days(5, "?").star
    assert not _parse_days(5, "1-5").star


@pytest.mark.parametrize(
    ("n", "length", "first", "day"),
    [
        (15, 31, 1, 15),  # a Monday 15th (1st is a Monday) stays
        (6, 31, 1, 5),  # Saturday 6th -> Friday 5th
        (7, 31, 1, 8),  # Sunday 7th -> Monday 8th
        (1, 30, 6, 3),  # Saturday 1st -> Monday 3rd, never the month before
        (30, 30, 6, 28),  # Sunday 30th, the last day -> Friday 28th, never the month after
        (31, 30, 1, None),  # no 31st in a 30-day month
    ],
)
def test_nearest_weekday__stays_in_the_month(n: int, length: int, first: int, day: int | None) -> None:
    assert _nearest_weekday(n, length, first) == day


def test_day_field__masks_for_last_nth_and_last_weekday() -> None:
    # A 31-day month starting on a Sunday: Fridays are the 6th, 13th, 20th, 27th;
    # Mondays the 2nd ... 30th.
    assert days(_DayField(star=False, values=frozenset(), last=True).dom_mask(31, 0)) == [31]
    assert days(_DayField(star=False, values=frozenset({30, 31})).dom_mask(30, 0)) == [30]
    assert days(_parse_days(5, "5L").dow_mask(31, 0)) == [27]
    assert days(_parse_days(5, "1#5").dow_mask(31, 0)) == [30]
    assert days(_parse_days(5, "1#5").dow_mask(28, 0)) == []  # no fifth Monday in 28 days
    assert days(_parse_days(3, "LW").dom_mask(31, 0)) == [31]  # the 31st is a Tuesday


def test_plan__day_fields_are_ored_when_both_restricted_and_anded_after_a_star() -> None:
    # 31-day month starting on a Sunday: Fridays 6, 13, 20, 27.
    assert days(mask_of("0 0 13 * 5", 31, 0)) == [6, 13, 20, 27]
    assert days(mask_of("0 0 */2 * 5", 31, 0)) == [13, 27]  # "*/2" starts with "*": AND
    assert days(mask_of("0 0 * * 5", 31, 0)) == [6, 13, 20, 27]


def test_parse_cron__macro_and_five_fields_compile_like_their_six_field_form() -> None:
    daily = parse_cron("@DAILY")
    assert daily.fields == ("0", "0", "0", "*", "*", "*")
    assert daily._plan.masks == parse_cron("0 0 0 * * *")._plan.masks
    assert daily != parse_cron("0 0 0 * * *")  # the text is part of the identity
    with pytest.raises(CronError, match="never matches"):
        parse_cron("0 0 31 4,6 *")


@pytest.mark.parametrize("dow", ["*", "1-5", "0,6", "7", "*/2", "3", "1,3,5"])
@pytest.mark.parametrize("dom", ["*", "1-7", "15", "29-31", "*/3", "1,10,20,31"])
def test_day_masks__bit_tables_match_day_by_day_matching(dom: str, dow: str) -> None:
    # The cached bit tables against the plain definition, day by day.
    dom_field, dow_field = _parse_days(3, dom), _parse_days(5, dow)
    for length in (28, 29, 30, 31):
        for first in range(7):
            assert days(dom_field.dom_mask(length, first)) == [
                d for d in range(1, length + 1) if d in dom_field.values
            ]
            weekdays = [d for d in range(1, length + 1) if (first + d - 1) % 7 in dow_field.values]
            assert days(dow_field.dow_mask(length, first)) == weekdays
