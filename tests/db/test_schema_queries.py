"""The store's schema queries (system checks, health probe, metrics) are valid
SQL on a migrated database: PostgreSQL prepares each one, inferring its parameters."""

from __future__ import annotations

import re

import pytest

from awa_django.store.queries import all_queries
from tests.helpers.database import raw_connection

pytestmark = pytest.mark.django_db(transaction=True)

PARAMETER = re.compile(r"%\((\w+)\)s")
SCHEMA_QUERIES = sorted(name for name, q in all_queries().items() if q.family == "schema")


def positional(sql: str) -> str:
    """``sql`` with each ``%(name)s`` as ``$n`` (a name used twice keeps its number)."""
    numbers: dict[str, int] = {}
    return PARAMETER.sub(lambda m: f"${numbers.setdefault(m[1], len(numbers) + 1)}", sql)


def test_schema_family__holds_the_checks_health_and_metrics_queries() -> None:
    assert {
        "check_runtime_name_clashes",
        "check_installed_functions",
        "check_job_constraint_validated",
        "health_live_processes",
        "health_overdue_schedules",
        "health_policy_gap",
        "health_record_progress",
        "metrics_database_gauges",
        "session_statement_timeout",
    } <= set(SCHEMA_QUERIES)


@pytest.mark.parametrize("name", SCHEMA_QUERIES)
def test_schema_query__prepares_on_a_migrated_database(name: str) -> None:
    sql = positional(all_queries()[name].sql)
    with raw_connection() as conn:
        conn.execute(f"PREPARE awa_probe AS {sql}")
        conn.execute("DEALLOCATE awa_probe")
