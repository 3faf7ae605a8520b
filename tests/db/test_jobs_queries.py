"""Every named query of the jobs family PREPAREs against a migrated database:
its tables, columns, functions and parameter types all resolve."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.db import connection

from awa_django.store.queries import all_queries

pytestmark = pytest.mark.django_db
JOBS_QUERIES = sorted(q.name for q in all_queries().values() if q.family == "jobs")


def numbered(text: str) -> str:
    """``text`` with its psycopg placeholders as PostgreSQL's ``$n`` (a name
    keeps its number wherever it repeats), comment lines dropped."""
    text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--"))
    names: dict[str, int] = {}
    count = 0

    def number(match: re.Match[str]) -> str:
        nonlocal count
        if match["name"] is None:
            count += 1
            return f"${count}"
        if match["name"] not in names:
            count += 1
            names[match["name"]] = count
        return f"${names[match['name']]}"

    return re.sub(r"%(?:\((?P<name>\w+)\))?s", number, text)


def test_the_jobs_family_has_its_queries() -> None:
    assert {"claim_jobs", "complete_and_claim_jobs", "insert_jobs", "job_duration_expression"} <= set(
        JOBS_QUERIES
    )


@pytest.mark.parametrize("name", JOBS_QUERIES)
def test_query__prepares_against_the_migrated_schema(name: str) -> None:
    text = numbered(all_queries()[name].sql)
    if name.endswith("_expression"):  # a fragment the admin annotates its queryset with
        text = f"SELECT ({text}) FROM awa_jobs"
    assert "%" not in text
    cursor: Any
    with connection.cursor() as cursor:
        cursor.execute(f"PREPARE awa_check AS {text}")
        try:
            cursor.execute("SELECT parameter_types FROM pg_prepared_statements WHERE name = 'awa_check'")
            (types,) = cursor.fetchone()
            assert "unknown" not in str(types), types
        finally:
            cursor.execute("DEALLOCATE awa_check")
