"""Time the admin's job search with rows holding 10 MB of error text.

The search matches the term against a bounded part of each job's errors (the
class and the last ERROR_TAIL_CHARS of the traceback, of the latest
SEARCHED_ERRORS attempts, and nothing of errors stored larger than
AWA_MAX_ARGS_BYTES: the store's job_errors_text_expression). This script
times that expression against the one it replaced (every attempt's whole
traceback), on a table of ordinary failed jobs plus a few rows written by
hand with 10 MB tracebacks (incompressible text, as PostgreSQL stores it).
Everything runs in one transaction, rolled back at the end.

Run (a migrated database): DATABASE_URL=postgres://... .venv/bin/python bench/admin_search.py
Timing claims live here, never in tests (tests/db/test_admin_job_search.py proves what is read).
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
# The example project: it installs the admin (bench.settings does not).
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "example_project.settings")

import django

django.setup()

from awa_django.admin.jobs import ERROR_TAIL_CHARS, SEARCHED_ERRORS  # noqa: E402
from awa_django.db import jsonb  # noqa: E402
from awa_django.store.queries import query  # noqa: E402

# The expression the search used before: every attempt's whole class and traceback.
UNBOUNDED_SQL = """
    CASE WHEN jsonb_typeof(awa_jobs.errors) = 'array' THEN
        (SELECT string_agg(concat_ws(' ', e ->> 'exception_class_path', e ->> 'traceback'), ' ')
           FROM jsonb_array_elements(awa_jobs.errors) AS e)
    END
"""
ORDINARY_ROWS = 10_000
HUGE_ROWS = 10
HUGE_BYTES = 10 * 1024 * 1024
RUNS = 3


def search_sql(expression: str) -> str:
    # As Django writes icontains on PostgreSQL (and the admin ORs the other fields).
    return (
        "SELECT count(*) FROM awa_jobs WHERE UPPER(kind::text) LIKE UPPER(%s)"
        f" OR UPPER(({expression})::text) LIKE UPPER(%s)"
    )


def fill_ordinary(cursor: psycopg.Cursor) -> None:
    cursor.execute(
        "INSERT INTO awa_jobs (kind, state, errors) SELECT 'myapp.tasks.t' || i, 'failed',"
        " jsonb_build_array(jsonb_build_object('exception_class_path', 'myapp.Error',"
        " 'traceback', 'Traceback (most recent call last):' || repeat(' line', 200) || ' myapp.Error: ' || i))"
        " FROM generate_series(1, %s) AS i",
        [ORDINARY_ROWS],
    )
    cursor.execute("ANALYZE awa_jobs")


def fill_huge(cursor: psycopg.Cursor) -> None:
    # Incompressible: md5 text of random numbers, as a 10 MB traceback written by hand.
    chunks = HUGE_BYTES // 32
    for _ in range(HUGE_ROWS):
        cursor.execute(
            "INSERT INTO awa_jobs (kind, state, errors) SELECT 'myapp.tasks.huge', 'failed',"
            " jsonb_build_array(jsonb_build_object('exception_class_path', 'myapp.Huge', 'traceback',"
            " (SELECT string_agg(md5(random()::text), '') FROM generate_series(1, %s))))",
            [chunks],
        )
    cursor.execute("ANALYZE awa_jobs")


def timed(cursor: psycopg.Cursor, sql: str, term: str) -> float:
    runs = []
    for _ in range(RUNS):
        start = time.perf_counter()
        cursor.execute(sql, [f"%{term}%", f"%{term}%"])
        cursor.fetchone()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def main() -> None:
    url = os.environ["DATABASE_URL"]
    with psycopg.connect(url) as conn, conn.cursor() as cursor:
        bounded = query("job_errors_text_expression")
        for value in (jsonb.max_bytes(), ERROR_TAIL_CHARS, SEARCHED_ERRORS):
            bounded = bounded.replace("%s", str(value), 1)
        fill_ordinary(cursor)
        for rows, fill in (
            (f"{ORDINARY_ROWS} ordinary failed jobs", None),
            (f"+ {HUGE_ROWS} with 10 MB", fill_huge),
        ):
            if fill is not None:
                fill(cursor)
            for label, expression in (("unbounded (before)", UNBOUNDED_SQL), ("bounded (now)", bounded)):
                seconds = timed(cursor, search_sql(expression), "no such text")
                print(f"{rows:32} {label:20} {seconds * 1000:9.0f} ms per search (median of {RUNS})")
        conn.rollback()


if __name__ == "__main__":
    main()
