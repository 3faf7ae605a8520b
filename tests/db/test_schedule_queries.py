"""The schedules family's named queries: each one PREPAREs on a migrated database.

PREPARE parses, analyses and plans a statement without running it, so a query
naming a column, table or function the migrations do not install (or one
whose parameters PostgreSQL cannot type) fails here, whatever its caller.
"""

from __future__ import annotations

import re

import pytest
from django.db import connection

from awa_django.store.queries import all_queries

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
    assert {"due_schedules_batch", "fire_plan", "sync_owned_schedules", "trim_slot_history"} <= set(SCHEDULES)


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
