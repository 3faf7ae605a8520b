"""``legacy_difference`` against croniter, the reading of day fields it reports changes from.

For a deterministic sample of day-field shapes, the fire times of croniter and of
cronexpr are compared (naive local times, 2026 to 2032): every expression whose fire
times differ must be reported. Reporting a few that happen to agree is tolerated (the
check says "may differ" for the contrived ``nW`` + ``#`` combinations), so the test
also pins the plain cases that must NOT be reported.
"""

from __future__ import annotations

import itertools
import random
from datetime import datetime

import pytest
from croniter import croniter

from awa_django.cron.search import CronError, _next_naive, legacy_difference, parse_cron

DOMS = [
    "*",
    "?",
    "*/2",
    "*/3",
    "*/1",
    "1",
    "15",
    "29",
    "30",
    "31",
    "1-7",
    "1-31",
    "L",
    "15W",
    "1W",
    "29W",
    "30W",
    "31W",
    "1,15",
    "L,15",
    "*,1",
    "2/3",
    "31-1",
]
DOWS = [
    "*",
    "?",
    "*/2",
    "*/7",
    "*/1",
    "1",
    "0",
    "7",
    "1-5",
    "0-6",
    "0-7",
    "sun-sat",
    "1#1",
    "5#5",
    "L5",
    "mon",
    "1/2",
    "1-7/2",
    "7-7",
    "5-2",
    "6,0",
    "*,1",
    "mon#2",
]
MONTHS = ["*", "2", "4", "1-3", "*/2", "2,4"]
SAMPLE = sorted(random.Random(14).sample(list(itertools.product(DOMS, MONTHS, DOWS)), 250))
END = datetime(2033, 1, 1)


def old_and_new(text: str) -> tuple[list[datetime], list[datetime]] | None:
    try:
        expression = parse_cron(text)
        old_iter = croniter(
            " ".join(expression.fields),
            datetime(2025, 12, 31, 23, 59),
            ret_type=datetime,
            second_at_beginning=True,
        )
        old = []
        while len(old) < 300 and (t := old_iter.get_next()) < END:
            old.append(t)
    except (CronError, Exception):  # rejected by one engine: nothing stored to compare
        return None
    new, cursor = [], datetime(2025, 12, 31, 23, 59)
    while len(new) < 300 and (found := _next_naive(expression._plan, cursor)) and found < END:
        new.append(found)
        cursor = found
    horizon = min(old[-1] if old else END, new[-1] if new else END)
    return [t for t in old if t <= horizon], [t for t in new if t <= horizon]


@pytest.mark.parametrize(("dom", "month", "dow"), SAMPLE)
def test_legacy_difference__reports_every_changed_expression(dom, month, dow):
    text = f"0 0 {dom} {month} {dow}"
    compared = old_and_new(text)
    if compared is None:
        return
    old, new = compared
    if old != new:
        assert legacy_difference(parse_cron(text)) is not None, (text, old[:5], new[:5])


@pytest.mark.parametrize(
    ("expr", "reason"),
    [
        (
            "0 0 */2 * 1",
            "day field '*/2' starts with '*': it now narrows the other day field (AND), as in classic cron",
        ),
        (
            "0 0 29 2 */1",
            "day field '*/1' starts with '*': it now narrows the other day field (AND), as in classic cron",
        ),
        ("0 0 1 * 1#1", "'W', '#' or 'L' now adds its days to those of the other day field (OR)"),
        ("0 0 15W * 1", "'W', '#' or 'L' now adds its days to those of the other day field (OR)"),
        ("0 0 31W * *", "'31W' no longer fires in months that have no day 31"),
        ("0 0 29W 2 *", "'29W' no longer fires in months that have no day 29"),
        ("0 0 * * 7-7", "range '7-7' in the day-of-week field now means one value, not every value"),
        ("5-5 * * * *", "range '5-5' in the minute field now means one value, not every value"),
        ("0 0 * 1-1/1 *", "range '1-1/1' in the month field now means one value, not every value"),
    ],
)
def test_legacy_difference__names_the_reason(expr, reason):
    assert legacy_difference(parse_cron(expr)) == reason


@pytest.mark.parametrize(
    "expr",
    [
        "* * * * *",
        "0 9 * * 1-5",
        "0 0 1 * *",
        "0 0 */2 * *",
        "0 0 * * */2",
        "0 0 1-7 * 1",
        "0 0 L * *",
        "0 0 L * 1",
        "0 0 15W * *",
        "0 0 * * 5#3",
        "0 0 * * 5L",
        "0 0 *,1 * 1",
        "0 0 30W 1,3 *",
        "@weekly",
        "0 0 1 * 0-7",
    ],
)
def test_legacy_difference__unchanged_expressions_are_not_reported(expr):
    assert legacy_difference(parse_cron(expr)) is None
