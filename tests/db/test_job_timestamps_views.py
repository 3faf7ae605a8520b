"""The operators' views over job rows holding timestamps no datetime can hold
(raw SQL, or rows stored before the check of migration 0024): the admin's job
list under every filter, the job detail and the schedule page, ``awa jobs list``
and ``awa cron show`` list them flagged ("invalid timestamp: -infinity") beside
the healthy ones, never a 500 or a traceback; retrying one that would still
break the check is refused naming the job."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from awa_django.exceptions import OperationRefused
from awa_django.operations import queues
from tests.factories import CronJobFactory
from tests.helpers.admin import texts
from tests.helpers.jobrows import IMPOSSIBLE_TIMESTAMPS, insert_job, sql, without_timestamp_check
from tests.testapp import tasks

pytestmark = pytest.mark.django_db

JOBS = reverse("admin:awa_django_job_changelist")
STATES = ("available", "scheduled", "running", "retryable", "completed", "failed", "cancelled")
FILTERS = [
    "",
    *(f"?state__exact={s}" for s in STATES),
    "?queue=default",
    "?kind=tests.testapp.tasks.record",
    "?cron_name=nightly",
    "?q=record",
    "?o=6",
    "?o=-6",
]


def awa(*args: str) -> str:
    out = StringIO()
    call_command("awa", *args, stdout=out)
    return out.getvalue()


def hostile_jobs(value: str) -> dict[str, int]:
    """One job per state, every timestamp ``value`` (SQL), as schedule nightly's."""
    literal = IMPOSSIBLE_TIMESTAMPS[value]
    return {
        state: insert_job(
            state,
            attempt="1",
            run_at=literal,
            created_at=literal,
            attempted_at=literal,
            started_at=literal,
            heartbeat_at=literal,
            finished_at=literal,
            metadata="""'{"cron_name": "nightly", "triggered_manually": true, "triggered_by": "x"}'""",
        )
        for state in STATES
    }


@pytest.mark.parametrize("value", ["minus_infinity", "infinity", "year_1_bc", "year_10000"])
def test_job_admin__lists_and_shows_rows_with_impossible_timestamps_flagged(
    admin_client: Client, value: str
) -> None:
    CronJobFactory(name="nightly")
    healthy = tasks.record.enqueue("healthy")
    with without_timestamp_check():
        bad = hostile_jobs(value)
        stored = sql("SELECT run_at::text FROM awa_jobs WHERE id = %s", [bad["failed"]])[0][0]
        for query in FILTERS:
            response = admin_client.get(JOBS + query)
            assert response.status_code == 200, query
            page = response.content.decode()
            if query in ("", "?state__exact=available"):
                assert f"invalid timestamp: {stored}" in page, query
                assert f">{healthy.id}<" in page, query
        for state, job_id in bad.items():
            page = admin_client.get(reverse("admin:awa_django_job_change", args=[job_id]))
            assert page.status_code == 200, state
            assert page.content.decode().count(f"invalid timestamp: {stored}") >= 5, state
        schedule = admin_client.get(reverse("admin:awa_django_cronjob_change", args=["nightly"]))
        assert schedule.status_code == 200
        assert f"job {bad['failed']}" in schedule.content.decode()


@pytest.mark.parametrize("value", ["minus_infinity", "infinity", "year_1_bc", "year_10000"])
def test_awa_jobs_list__lists_rows_with_impossible_timestamps_flagged(value: str) -> None:
    CronJobFactory(name="nightly")
    healthy = tasks.record.enqueue("healthy")
    with without_timestamp_check():
        bad = hostile_jobs(value)
        stored = sql("SELECT run_at::text FROM awa_jobs WHERE id = %s", [bad["failed"]])[0][0]
        text = awa("jobs", "list")
        listed = json.loads(awa("jobs", "list", "--json"))
        shown = awa("cron", "show", "nightly")
        shown_json = json.loads(awa("cron", "show", "nightly", "--json"))
        history = json.loads(awa("cron", "history", "nightly", "--json"))
        triggered = tasks.record.enqueue("triggered")
        sql(
            """UPDATE awa_jobs SET metadata = '{"cron_name": "nightly", "triggered_manually": true}'"""
            " WHERE id = %s",
            [int(triggered.id)],
        )
        awa("cron", "history", "nightly")
        history_after = json.loads(awa("cron", "history", "nightly", "--json"))
    lines = {line.split()[0]: line for line in text.splitlines()[1:]}
    assert set(lines) == {str(healthy.id), *map(str, bad.values())}
    assert f"(invalid timestamp: run_at {stored}, created_at {stored}" in lines[str(bad["available"])]
    assert "invalid timestamp" not in lines[str(healthy.id)]
    by_id = {row["id"]: row for row in listed}
    assert by_id[bad["running"]]["run_at"] == stored
    assert by_id[bad["running"]]["invalid_timestamps"].startswith(f"run_at {stored}, created_at {stored}")
    assert by_id[int(healthy.id)]["invalid_timestamps"] is None
    assert "nightly" in shown and shown_json["name"] == "nightly"
    # A manual trigger's slot is its creation: one no datetime holds is no slot.
    assert history == []
    assert [h["job_id"] for h in history_after if h["outcome"] == "triggered"] == [int(triggered.id)]


def test_retry_job__refuses_a_job_whose_creation_no_datetime_holds(admin_client: Client) -> None:
    job_id = insert_job("failed", created_at="'-infinity'")
    response = admin_client.post(
        JOBS, {"action": "retry_jobs", "_selected_action": [str(job_id)]}, follow=True
    )
    assert response.status_code == 200
    assert any(f"job {job_id} cannot be retried" in m for m in texts(response))
    with pytest.raises(OperationRefused, match=f"job {job_id} cannot be retried: .*created_at -infinity"):
        queues.retry_job(job_id, "alice")
    with pytest.raises(CommandError, match=f"job {job_id} cannot be retried"):
        call_command("awa", "jobs", "retry", str(job_id), "--actor", "alice")
    assert sql("SELECT state FROM awa_jobs WHERE id = %s", [job_id]) == [("failed",)]
