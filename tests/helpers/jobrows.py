"""Job rows holding timestamps no job can have, as raw SQL (or a database from
before migration 0024) leaves them.

``IMPOSSIBLE_TIMESTAMPS`` are SQL literals outside the range of the check
``awa_jobs_timestamps_check`` (what a Python datetime can hold, a day's margin
each side); ``without_timestamp_check`` drops that check for the block, as a
database where rows written before it are still unfinished, and puts it back
(validated) afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connection

from awa_django.db.sqlfiles import read_sql

TIMESTAMP_CHECK = "awa_jobs_timestamps_check"
IMPOSSIBLE_TIMESTAMPS = {
    "infinity": "'infinity'",
    "minus_infinity": "'-infinity'",
    "year_1_bc": "'0001-01-01 00:00+00 BC'",
    "year_4713_bc": "'4713-01-01 00:00+00 BC'",
    "year_1": "'0001-01-01 00:00+00'",
    "year_9999_end": "'9999-12-31 23:59+00'",
    "year_10000": "'10000-01-01 00:00+00'",
}


def sql(statement: str, params: list[Any] | None = None) -> Any:
    """Run ``statement`` on the test's connection; its rows, if any."""
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return cursor.fetchall() if cursor.description else None


def insert_job(state: str = "available", **columns: str) -> int:
    """A job of ``tests.testapp.tasks.record`` written by raw SQL; ``columns`` are
    SQL literals (``run_at="'-infinity'"``). Its id."""
    values = {"run_at": "now()", "max_attempts": "1", **columns}
    names = ", ".join(values)
    literals = ", ".join(values.values())
    rows = sql(
        f"INSERT INTO awa_jobs (kind, queue, args, state, {names})"
        f" VALUES ('tests.testapp.tasks.record', 'default', '{{\"args\": [], \"kwargs\": {{}}}}', %s,"
        f" {literals}) RETURNING id",
        [state],
    )
    return int(rows[0][0])


@contextmanager
def without_timestamp_check() -> Iterator[None]:
    """The block runs without ``awa_jobs_timestamps_check``; the rows breaking it
    are deleted afterwards, and the check is added and validated again."""
    sql(f"ALTER TABLE awa_jobs DROP CONSTRAINT {TIMESTAMP_CHECK}")
    try:
        yield
    finally:
        condition = read_sql("0024_job_timestamps").split("CHECK (", 1)[1].rsplit(") NOT VALID", 1)[0]
        sql(f"DELETE FROM awa_jobs WHERE NOT ({condition})")
        sql(read_sql("0024_job_timestamps"))
        sql(read_sql("0024_job_timestamps_validate"))
