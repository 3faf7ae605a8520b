"""A real ``runtasks --concurrency 4`` claims, in one batch, three healthy jobs
allowed a single attempt and one whose ``run_at`` is '-infinity' (written by raw
SQL where the check of migration 0024 is missing): the bad job fails alone at
once, naming the job and the column, and the three complete at attempt 1."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from awa_django.models import Job
from tests.helpers.jobrows import insert_job, without_timestamp_check

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def test_runtasks__fails_a_row_it_cannot_load_alone_and_runs_the_rest_of_its_batch(
    runtasks: Callable[..., Any],
) -> None:
    with without_timestamp_check():
        healthy = [insert_job("available", max_attempts="1") for _ in range(3)]
        # '-infinity' sorts first: the bad row is in the first claim, with the three.
        bad = insert_job("available", max_attempts="1", run_at="'-infinity'")
        proc = runtasks("--burst", "--concurrency", "4")
        assert proc.wait(timeout=120) == 0, proc.output()
        rows = dict(Job.objects.filter(id__in=healthy).values_list("id", "state"))
        attempts = set(Job.objects.filter(id__in=healthy).values_list("attempt", flat=True))
        bad_row = Job.objects.filter(id=bad).values("state", "attempt", "errors").get()
    assert "Traceback" not in proc.output()
    assert rows == dict.fromkeys(healthy, "completed") and attempts == {1}
    assert (bad_row["state"], bad_row["attempt"]) == ("failed", 1)
    (error,) = bad_row["errors"]
    assert error["exception_class_path"] == "awa_django.exceptions.InvalidJobRow"
    assert f"job {bad} holds a timestamp no job can have (run_at -infinity)" in error["traceback"]
    assert (
        f"job {bad} failed: job {bad} holds a timestamp no job can have (run_at -infinity)" in proc.output()
    )
