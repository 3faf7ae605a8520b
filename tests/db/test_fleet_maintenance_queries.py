"""Every named query of the fleet and maintenance families is valid against a
migrated database: PostgreSQL parses, plans and types it (``PREPARE``), each
placeholder a parameter whose type the statement fixes. A VACUUM cannot be
prepared: PostgreSQL parses it only when it runs (see tests/db/test_vacuum.py
and test_jobs_vacuum.py)."""

from __future__ import annotations

import re

import pytest
from django.db import connection

from awa_django.store.queries import all_queries

FAMILIES = ("fleet", "maintenance")
UNPREPARABLE = {"vacuum_jobs", "vacuum_schedules"}
# The system check's count of out-of-range timestamps, moved out of db/ with these.
ALSO = ["count_unfinished_jobs_out_of_timestamp_range"]
PLACEHOLDER = re.compile(r"%\((\w+)\)s")


def named(family: str) -> list[str]:
    return sorted(q.name for q in all_queries().values() if q.family == family)


def numbered(text: str) -> str:
    """``%(name)s`` placeholders as ``$n`` (one number per name), as psycopg sends them."""
    numbers: dict[str, int] = {}
    return PLACEHOLDER.sub(lambda m: f"${numbers.setdefault(m[1], len(numbers) + 1)}", text)


def test_the_families_hold_queries() -> None:
    assert len(named("fleet")) >= 30 and len(named("maintenance")) >= 13


@pytest.mark.django_db
@pytest.mark.parametrize(
    "name", [n for family in FAMILIES for n in named(family) if n not in UNPREPARABLE] + ALSO
)
def test_query__prepares_against_the_migrated_schema(name: str) -> None:
    text = all_queries()[name].sql
    assert "%s" not in text, "named placeholders only"
    with connection.cursor() as cursor:
        cursor.execute(f"PREPARE awa_store_check AS {numbered(text)}")
        try:
            cursor.execute(
                "SELECT parameter_types FROM pg_prepared_statements WHERE name = 'awa_store_check'"
            )
            (types,) = cursor.fetchone()
            assert "unknown" not in str(types), f"{name}: a parameter of no type: {types}"
        finally:
            cursor.execute("DEALLOCATE awa_store_check")


def test_the_unpreparable_queries_are_vacuums() -> None:
    for name in UNPREPARABLE:
        assert all_queries()[name].sql.splitlines()[-1].startswith("VACUUM")
