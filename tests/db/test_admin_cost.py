"""Every admin page issues a bounded number of queries whatever the row count.

10,000 schedules and 100,000 jobs are inserted set-based (generate_series);
each page's query count is asserted, and the job list must not count the
whole table exactly.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from awa_django.operations import schedules
from tests.helpers.database import raw_connection

pytestmark = pytest.mark.django_db

SCHEDULES = 10_000
JOBS = 100_000
OWNERS = 50

# Session, user, the page's own queries, measured; the most is the schedule
# list with facets (one aggregate per filter). The numbers do not depend on the
# row counts: that is the point.
MAX_QUERIES = 16
# The owners list computes each listed owner's live plan (reconciliation.plan,
# 6 queries): bounded by the page size (20), not by the number of owners.
PLAN_QUERIES = 6
OWNERS_PER_PAGE = 20


@pytest.fixture(scope="module")
def big_tables(django_db_setup: None) -> Iterator[None]:
    """Inserted once for the module through a second session, so committed and
    seen by every test (whose own changes roll back with its transaction);
    removed again after the module's last test."""
    with raw_connection() as conn:
        _insert_big_tables(conn)
    try:
        yield
    finally:
        with raw_connection() as conn:
            conn.execute(
                "TRUNCATE awa_jobs, awa_cron_jobs, awa_cron_owners, awa_runtime_instances, "
                "awa_queue_meta CASCADE"
            )


def _insert_big_tables(cursor: psycopg.Connection[Any]) -> None:
    cursor.execute(
        """INSERT INTO awa_cron_owners (owner_id)
           SELECT 'owner-' || i FROM generate_series(1, %s) AS i""",
        [OWNERS],
    )
    # Some rows paused, some owned, on three queues.
    cursor.execute(
        """INSERT INTO awa_cron_jobs (name, cron_expr, timezone, kind, queue, owner_id,
                                      paused_at, paused_by, last_enqueued_at)
           SELECT 'sched-' || lpad(i::text, 5, '0'),
                  CASE WHEN i %% 2 = 0 THEN '0 9 * * 1-5' ELSE '*/5 * * * * *' END,
                  CASE WHEN i %% 3 = 0 THEN 'Europe/Berlin' ELSE 'UTC' END,
                  'tests.testapp.tasks.record',
                  (ARRAY['default', 'mail', 'reports'])[1 + i %% 3],
                  CASE WHEN i %% 4 = 0 THEN 'owner-' || (1 + i %% %s) END,
                  CASE WHEN i %% 10 = 0 THEN statement_timestamp() END,
                  CASE WHEN i %% 10 = 0 THEN 'ops' END,
                  statement_timestamp() - interval '1 hour'
             FROM generate_series(1, %s) AS i""",
        [OWNERS, SCHEDULES],
    )
    cursor.execute(
        """INSERT INTO awa_jobs (kind, queue, state, metadata, args)
           SELECT 'tests.testapp.tasks.record',
                  (ARRAY['default', 'mail', 'reports'])[1 + i %% 3],
                  (ARRAY['available', 'completed', 'failed', 'running'])[1 + i %% 4],
                  jsonb_build_object('cron_name', 'sched-' || lpad((1 + i %% %s)::text, 5, '0'),
                                     'cron_fire_at', to_char(i, 'FM000000')),
                  '{"args": [], "kwargs": {}}'
             FROM generate_series(1, %s) AS i""",
        [SCHEDULES, JOBS],
    )
    cursor.execute(
        """INSERT INTO awa_runtime_instances (instance_id, hostname, pid, version, role, started_at,
                                              snapshot_interval_ms, leader, cron_protocol, shutting_down)
           SELECT gen_random_uuid(), 'host-' || i, i, 't', 'runcron', statement_timestamp(), 10000,
                  i = 1, 1, false
             FROM generate_series(1, 500) AS i"""
    )
    cursor.execute("ANALYZE awa_jobs")
    cursor.execute("INSERT INTO awa_queue_meta (queue, paused_at, paused_by) VALUES ('mail', now(), 'ops')")


def queries_for(client: Client, url: str, **post: Any) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        response = client.post(url, post) if post else client.get(url)
    assert response.status_code in (200, 302), (url, response.status_code)
    return [q["sql"] for q in captured.captured_queries]


def change(model: str, pk: Any) -> str:
    return reverse(f"admin:awa_django_{model}_change", args=[pk])


def changelist(model: str) -> str:
    return reverse(f"admin:awa_django_{model}_changelist")


PAGES = [
    changelist("cronjob"),
    changelist("cronjob") + "?p=150",
    changelist("cronjob") + "?state=paused&queue__exact=mail",
    changelist("cronjob") + "?owner_id__exact=owner-7",
    changelist("cronjob") + "?q=sched-099",
    changelist("cronjob") + "?_facets=True",
    change("cronjob", "sched-00042"),
    change("cronjob", "sched-00003"),
    changelist("job"),
    changelist("job") + "?p=1500",
    changelist("job") + "?cron_name=sched-00042",
    changelist("job") + "?state__exact=failed&queue=mail",
    changelist("job") + "?kind=tests.testapp.tasks.record",
    changelist("job") + "?_facets=True",
    changelist("queue"),
    change("queue", "mail"),
    change("cronowner", "owner-7"),
    changelist("runtimeinstance"),
    changelist("runtimeinstance") + "?fresh=yes",
]


@pytest.mark.slow
def test_admin_pages__bounded_queries_with_10k_schedules_and_100k_jobs(
    big_tables: None, admin_client: Client, django_assert_max_num_queries: Any
) -> None:
    for url in PAGES:
        with django_assert_max_num_queries(MAX_QUERIES):
            queries_for(admin_client, url)
    for url in (changelist("cronowner"), changelist("cronowner") + "?p=2"):
        with django_assert_max_num_queries(MAX_QUERIES + OWNERS_PER_PAGE * PLAN_QUERIES):
            queries_for(admin_client, url)


@pytest.mark.slow
def test_admin_job_list__never_counts_the_whole_table(big_tables: None, admin_client: Client) -> None:
    for url in (changelist("job"), changelist("job") + "?state__exact=completed"):
        sql = queries_for(admin_client, url)
        counts = [q for q in sql if re.search(r"COUNT\(\*\)", q, re.I) and '"awa_jobs"' in q]
        assert counts, "the list still reports a count"
        assert all(re.search(r"LIMIT 10001", q) for q in counts), counts
    page = admin_client.get(changelist("job")).content.decode()
    assert "about 100" in page and "(not counted exactly)" in page
    page = admin_client.get(changelist("job") + "?state__exact=completed").content.decode()
    assert "more than 10000" in page
    # A small filtered result is exact.
    page = admin_client.get(changelist("job") + "?cron_name=sched-00042").content.decode()
    assert "10 jobs" in page and "not counted exactly" not in page


@pytest.mark.slow
def test_admin_actions__bounded_queries_per_selected_row(
    big_tables: None, admin_client: Client, django_assert_max_num_queries: Any
) -> None:
    names = [f"sched-{i:05d}" for i in range(1, 21) if i % 10]
    with django_assert_max_num_queries(MAX_QUERIES + 6 * len(names)):
        queries_for(admin_client, changelist("cronjob"), action="pause_schedules", _selected_action=names)
    assert schedules.get_schedule("sched-00001").paused_by == "admin"


@pytest.mark.slow
def test_admin_schedule_jobs__found_through_the_cron_name_index(big_tables: None) -> None:
    """The list's last jobs, the detail's last fires and ?cron_name= use awa_jobs_cron_name_id."""
    from django.db.models.fields.json import KT

    from awa_django.models import Job
    from awa_django.store.queries import query

    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + query("schedules_last_jobs"), [["sched-00001", "sched-00002"]])
        plan = "\n".join(r[0] for r in cursor.fetchall())
    assert "awa_jobs_cron_name_id" in plan, plan
    newest = (
        Job.objects.alias(cron_key=KT("metadata__cron_name"))
        .filter(metadata__has_key="cron_name", cron_key="sched-00042")
        .order_by("-id")[:20]
    )
    assert "awa_jobs_cron_name_id" in newest.explain()
