"""The admin's job search reads a bounded part of each job's errors: the class
and the end of the traceback (where the exception's own lines are) of the
latest attempts, and nothing of errors stored larger than AWA_MAX_ARGS_BYTES
(raw SQL): a row holding megabytes of error text costs no more to search
than any other (bench/admin_search.py measures it)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client, override_settings
from django.urls import reverse

from awa_django.admin.jobs import ERROR_TAIL_CHARS, SEARCHED_ERRORS
from tests.factories import JobFactory

pytestmark = pytest.mark.django_db

JOBS = reverse("admin:awa_django_job_changelist")


def ids(client: Client, term: str) -> set[int]:
    response = client.get(JOBS, {"q": term})
    assert response.status_code == 200, term
    return {j.id for j in response.context["cl"].result_list}


def test_jobs_search__reads_the_class_and_the_end_of_each_traceback_only(admin_client: Client) -> None:
    padding = "y" * (ERROR_TAIL_CHARS + 10)
    failed = JobFactory(
        state="failed",
        errors=[
            {
                "exception_class_path": "myapp.errors.QuotaExceeded",
                "traceback": f"Traceback NEEDLE-AT-START\n{padding}\nmyapp.errors.QuotaExceeded: NEEDLE-AT-END\n",
            }
        ],
    )
    assert ids(admin_client, "needle-at-end") == {failed.id}
    assert ids(admin_client, "QuotaExceeded") == {failed.id}
    assert ids(admin_client, "NEEDLE-AT-START") == set()


def test_jobs_search__reads_the_latest_attempts_only(admin_client: Client) -> None:
    entries = [
        {"exception_class_path": f"myapp.Error{i:04d}", "traceback": f"attempt-{i:04d}"} for i in range(150)
    ]
    job = JobFactory(state="failed", errors=entries)
    assert ids(admin_client, f"attempt-{150 - SEARCHED_ERRORS:04d}") == {job.id}
    assert ids(admin_client, f"attempt-{149 - SEARCHED_ERRORS:04d}") == set()


def test_jobs_search__errors_stored_over_the_args_limit_are_not_read(admin_client: Client) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO awa_jobs (kind, state, errors) VALUES ('myapp.tasks.huge', 'failed',"
            " jsonb_build_array(jsonb_build_object('exception_class_path', 'myapp.Huge',"
            " 'traceback', (SELECT string_agg(md5(i::text), '') FROM generate_series(1, 320000) AS i)"
            " || ' HUGE-END'))) RETURNING id, pg_column_size(errors)"
        )
        huge, stored = cursor.fetchone()
    assert stored > 1024 * 1024  # over AWA_MAX_ARGS_BYTES as stored: no reader decodes it
    assert ids(admin_client, "HUGE-END") == set()
    assert ids(admin_client, "myapp.tasks.huge") == {huge}  # found by its task path
    with override_settings(AWA_MAX_ARGS_BYTES=20 * 1024 * 1024):
        assert ids(admin_client, "HUGE-END") == {huge}


def test_jobs_search__errors_that_compress_well_are_not_read_past_the_limit(admin_client: Client) -> None:
    """10 MB of one repeated character would compress to a small stored value;
    errors are stored uncompressed, so its stored size is its real size and
    neither the list nor the search reads it."""
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO awa_jobs (kind, state, errors) VALUES ('myapp.tasks.repeated', 'failed',"
            " jsonb_build_array(jsonb_build_object('exception_class_path', 'myapp.Repeated',"
            " 'traceback', repeat('a', 10 * 1024 * 1024) || ' REPEATED-END'))) RETURNING id, pg_column_size(errors)"
        )
        job, stored = cursor.fetchone()
    assert stored > 10 * 1024 * 1024
    assert ids(admin_client, "REPEATED-END") == set()
    assert ids(admin_client, "myapp.tasks.repeated") == {job}
    page = admin_client.get(JOBS).content.decode()
    assert "not read: errors stored over AWA_MAX_ARGS_BYTES" in page
