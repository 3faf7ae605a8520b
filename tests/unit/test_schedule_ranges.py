"""schedules.ranges: one table of option ranges, and every other statement of a bound agrees with it.

Proves: each range refuses what its column cannot hold (``NaN``, ``Infinity``,
integers past a float, values past the column's type) and accepts its bounds;
the interval search, the row checks, the flow options, django.tasks'
priorities, the model's constraints and the SQL CHECK constraints state the
same bounds as the table, so no door can disagree with another.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from awa_django.client.compat import TASK_MAX_PRIORITY, TASK_MIN_PRIORITY
from awa_django.cron.interval import MAX_EVERY
from awa_django.db.sqlfiles import read_sql
from awa_django.declarations.builder import MAX_ATTEMPTS_RANGE
from awa_django.declarations.flow import MAX_LIMIT
from awa_django.declarations.ranges import INT4_MAX, MAX_DURATION, RANGES, number_problem
from awa_django.models import CronJob


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("every", 0),
        ("every", 2**31),
        ("every", 3000000000),
        ("every", 10**400),
        ("every", 1.5),
        ("every", float("inf")),
        ("every", float("nan")),
        ("every", True),
        ("every", "60"),
        ("starting_deadline", 0),
        ("starting_deadline", float("nan")),
        ("starting_deadline", float("inf")),
        ("starting_deadline", MAX_DURATION + 1),
        ("jitter", -0.5),
        ("jitter", float("nan")),
        ("jitter", float("-inf")),
        ("priority", 101),
        ("max_attempts", 0),
        ("concurrency_limit", 1_000_001),
    ],
)
def test_number_problem__refuses_what_the_column_cannot_hold(option: str, value: Any) -> None:
    problem = number_problem(option, value)
    assert problem is not None and problem.startswith("must be ")


@pytest.mark.parametrize("option", sorted(RANGES))
def test_number_problem__the_bounds_themselves_are_accepted(option: str) -> None:
    bounds = RANGES[option]
    assert number_problem(option, bounds.high) is None
    assert (number_problem(option, bounds.low) is None) is not bounds.low_open


def test_ranges__every_other_statement_of_a_bound_agrees() -> None:
    assert RANGES["every"].high == MAX_EVERY == INT4_MAX == 2147483647
    assert (RANGES["priority"].low, RANGES["priority"].high) == (TASK_MIN_PRIORITY, TASK_MAX_PRIORITY)
    assert (RANGES["max_attempts"].low, RANGES["max_attempts"].high) == MAX_ATTEMPTS_RANGE
    assert RANGES["concurrency_limit"].high == MAX_LIMIT
    assert RANGES["starting_deadline"].high == RANGES["jitter"].high == MAX_DURATION == 3162240000


def test_ranges__the_sql_checks_state_the_table_s_bounds() -> None:
    sql = read_sql("0027_option_ranges")
    for option in ("starting_deadline", "jitter"):
        (check,) = re.findall(rf"CHECK \(([^;]*?{option} <= (\d+))\)", sql)
        assert int(check[1]) == RANGES[option].high
    jobs = read_sql("0023_job_bounds")
    assert f"concurrency_limit BETWEEN 1 AND {RANGES['concurrency_limit'].high}" in jobs


def test_ranges__the_models_constraints_state_the_table_s_bounds() -> None:
    names = {c.name: str(getattr(c, "condition", "")) for c in CronJob._meta.constraints}
    assert (
        f"('starting_deadline__lte', {MAX_DURATION})" in names["awa_cron_jobs_starting_deadline_range_check"]
    )
    assert f"('jitter__lte', {MAX_DURATION})" in names["awa_cron_jobs_jitter_range_check"]
