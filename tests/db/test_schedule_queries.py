"""The schedules family's named queries: each one PREPAREs on a migrated database.

PREPARE parses, analyses and plans a statement without running it, so a query
naming a column, table or function the migrations do not install (or one
whose parameters PostgreSQL cannot type) fails here, whatever its caller.
"""

from __future__ import annotations

import dataclasses
import re

import pytest
from django.db import connection

from awa_django.store.queries import all_queries
from awa_django.store.schedule_rows import ScheduleRow

pytestmark = pytest.mark.django_db

SCHEDULES = sorted(name for name, found in all_queries().items() if found.family == "schedules")
_PLACEHOLDER = re.compile(r"%\((\w+)\)s|%s")


def numbered(sql: str) -> str:
    """``sql`` with psycopg's placeholders as PostgreSQL's ``$n`` (a name keeps its number)."""
    numbers: dict[str, int] = {}
    count = 0

    def number(match: re.Match[str]) -> str:
        nonlocal count
        name = match.group(1)
        if name is None or name not in numbers:
            count += 1
            if name is not None:
                numbers[name] = count
            return f"${count}"
        return f"${numbers[name]}"

    return _PLACEHOLDER.sub(number, sql)


def test_schedule_queries__the_family_holds_every_statement_of_its_files() -> None:
    assert {"due_schedules_batch", "fire_plan", "sync_owned_schedules", "schedule_slot_history"} <= set(
        SCHEDULES
    )


@pytest.mark.parametrize("name", SCHEDULES)
def test_schedule_query__prepares_on_the_migrated_database(name: str) -> None:
    statement = f"awa_test_{name}"
    with connection.cursor() as cursor:
        cursor.execute(f"PREPARE {statement} AS {numbered(all_queries()[name].sql)}")
        try:
            cursor.execute("SELECT count(*) FROM pg_prepared_statements WHERE name = %s", [statement])
            assert cursor.fetchone()[0] == 1
        finally:
            cursor.execute(f"DEALLOCATE {statement}")


def test_numbered__repeats_a_named_parameter_and_counts_positional_ones() -> None:
    assert numbered("a = %(x)s AND b = %(y)s AND c = %(x)s") == "a = $1 AND b = $2 AND c = $1"
    assert numbered("a = %s AND b = %s") == "a = $1 AND b = $2"


DUE_READS = {
    "due_schedules_batch": {"after": "", "limit": 1, "max_depth": 32},
    "due_schedules_all": {"max_depth": 32},
    "schedule_plan_row": {"name": "", "max_depth": 32},
    "next_slot_schedules": {"ahead": 0.5, "limit": 1, "max_depth": 32},
}


@pytest.mark.parametrize("name", sorted(DUE_READS))
def test_due_reads__select_the_columns_schedule_row_holds(name: str) -> None:
    """The due reads write their column list out each; none drifts from ScheduleRow."""
    with connection.cursor() as cursor:
        cursor.execute(all_queries()[name].sql, DUE_READS[name])
        columns = [c.name for c in cursor.description]
    extra = ["slot", "slot_in"] if name == "next_slot_schedules" else []
    assert columns == [f.name for f in dataclasses.fields(ScheduleRow)] + extra
