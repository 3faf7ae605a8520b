"""Deep or oversized JSON in a stored row stays with that row.

Rows are written with raw SQL (database write access is in scope). A row
nested 2,000 levels deep or 50 MB large is parked (schedules) or failed
(jobs) with a reason naming the column and the limit; the leader, the worker
(claim and rescue), the admin and the CLI keep serving every other row. The
same limits hold at ``enqueue()``, ``enqueue_many()`` and for task results.
"""

from __future__ import annotations

from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext, override_settings
from django.urls import reverse

from awa_django.client.compat import task_backends
from awa_django.db import jsonb
from awa_django.leader.evaluator import evaluate
from awa_django.models import CronJob, Job
from awa_django.store import jobs
from awa_django.worker.loop import Worker
from tests.factories import CronJobFactory
from tests.testapp import tasks

pytestmark = pytest.mark.django_db(transaction=True)

DEEP = "('{\"args\": [' || repeat('[', 2000) || repeat(']', 2000) || '], \"kwargs\": {}}')::jsonb"
DEEP_100 = "('{\"args\": [' || repeat('[', 100) || repeat(']', 100) || '], \"kwargs\": {}}')::jsonb"
BIG = "jsonb_build_object('args', jsonb_build_array(repeat('x', 2 * 1024 * 1024)), 'kwargs', '{}'::jsonb)"


def sql(statement: str, params: list[Any] | None = None) -> None:
    with connection.cursor() as cursor:
        cursor.execute(statement, params)


def parked_reason(name: str) -> str | None:
    return CronJob.objects.values_list("parked_reason", flat=True).get(name=name)


def fired(name: str) -> int:
    return Job.objects.filter(metadata__cron_name=name).count()


def raw_job(args_sql: str, column: str = "args", state: str = "available") -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO awa_jobs (kind, queue, args, state, run_at, max_attempts) "
            "VALUES ('tests.testapp.tasks.record', 'default', '{}'::jsonb, %s, now(), 3) RETURNING id",
            [state],
        )
        job_id = int(cursor.fetchone()[0])
        cursor.execute(f"UPDATE awa_jobs SET {column} = {args_sql} WHERE id = %s", [job_id])
    return job_id


def awa(*args: str) -> str:
    out = StringIO()
    call_command("awa", *args, stdout=out)
    return out.getvalue()


# -- the decoding function --------------------------------------------------------


def test_decode__refuses_depth_and_size_without_recursion() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    value = jsonb.decode(deep, "args")
    assert isinstance(value, jsonb.Undecodable)
    assert str(value) == "<not shown: args is nested deeper than 32 levels (AWA_MAX_JSON_DEPTH=32)>"
    # Brackets inside strings are text, not nesting.
    assert jsonb.decode('["' + "[" * 500 + '"]', "args") == ["[" * 500]
    with override_settings(AWA_MAX_ARGS_BYTES=10):
        big = jsonb.decode('["abcdefghijk"]', "result")
    assert isinstance(big, jsonb.Undecodable) and "AWA_MAX_ARGS_BYTES=10" in big.reason
    assert jsonb.decode("[[1]]", "args") == [[1]]


@pytest.mark.parametrize(("depth", "parked"), [(32, False), (33, True)])
def test_text_depth__agrees_with_the_database_and_declarations(depth: int, parked: bool) -> None:
    text = "[" * depth + "]" * depth
    with connection.cursor() as cursor:
        cursor.execute("SELECT awa_json_depth_v1(%s::jsonb, 32)", [text])
        in_sql = cursor.fetchone()[0]
    assert in_sql == min(depth, 33) == jsonb.text_depth(text, 32)
    assert (jsonb.nesting_problem(text) is not None) is parked


# -- the leader -------------------------------------------------------------------


@pytest.mark.parametrize("value", [DEEP, DEEP_100, BIG])
def test_evaluate__deep_or_large_args_are_parked_before_the_fire(value: str) -> None:
    CronJobFactory(name="healthy", cron_expr="* * * * * *")
    CronJobFactory(name="poisoned", cron_expr="* * * * * *")
    sql(f"UPDATE awa_cron_jobs SET args = {value} WHERE name = 'poisoned'")
    evaluate()
    assert fired("healthy") == 1
    assert fired("poisoned") == 0
    reason = parked_reason("poisoned") or ""
    assert reason.startswith("args is ") and (
        "AWA_MAX_JSON_DEPTH=32" in reason or "AWA_MAX_ARGS_BYTES" in reason
    )


def test_evaluate__deep_metadata_is_parked() -> None:
    CronJobFactory(name="poisoned", cron_expr="* * * * * *")
    sql(
        "UPDATE awa_cron_jobs SET metadata = ('{\"a\": ' || repeat('[', 40) || repeat(']', 40) || '}')::jsonb"
    )
    evaluate()
    assert fired("poisoned") == 0
    assert (parked_reason("poisoned") or "").startswith("metadata is nested deeper than 32 levels")


# -- the worker -------------------------------------------------------------------


@pytest.mark.parametrize("column", ["args", "metadata"])
def test_claim__an_undecodable_job_fails_alone_with_its_reason(column: str) -> None:
    healthy = tasks.write_effect.enqueue("fine")
    deep = "(repeat('[', 2000) || repeat(']', 2000))::jsonb"
    poisoned = raw_job(deep if column != "metadata" else f"jsonb_build_object('a', {deep})", column)
    worker = Worker(burst=True)
    worker.run()
    assert Job.objects.get(id=int(healthy.id)).state == "completed"
    with connection.cursor() as cursor:
        cursor.execute("SELECT state, errors -> -1 ->> 'traceback' FROM awa_jobs WHERE id = %s", [poisoned])
        state, traceback = cursor.fetchone()
    assert state == "failed"
    assert f"job {column} cannot be read: it is nested deeper than 32 levels" in traceback


@pytest.mark.parametrize(
    "errors",
    [
        "(repeat('[', 2000) || repeat(']', 2000))::jsonb",
        "jsonb_build_array(jsonb_build_object('traceback', repeat('x', 3 * 1024 * 1024)))",
        "'\"not an array\"'::jsonb",
    ],
    ids=["deep", "large", "not-an-array"],
)
def test_claim__errors_no_reader_decodes_do_not_stop_the_next_attempt(errors: str) -> None:
    """The errors of earlier attempts are a record: unreadable ones (written by
    hand, or stored before errors were bounded) read as none, and the job runs."""
    job_id = raw_job(errors, "errors")
    Worker(burst=True).run()
    with connection.cursor() as cursor:
        cursor.execute("SELECT state FROM awa_jobs WHERE id = %s", [job_id])
        assert cursor.fetchone() == ("completed",)


def test_rescue__returns_undecodable_rows_without_failing() -> None:
    job_id = raw_job(DEEP, state="running")
    sql("UPDATE awa_jobs SET attempt = 1, heartbeat_at = now() - interval '1 hour' WHERE id = %s", [job_id])
    with connection.cursor() as cursor:
        (row,) = jobs.rescue(cursor, timedelta(seconds=1))
    assert isinstance(row.args, jsonb.Undecodable)
    Worker().rescue()  # logs the rescued rows: no RecursionError


# -- the admin and the CLI --------------------------------------------------------


def test_admin_and_cli__serve_lists_and_pages_beside_hostile_rows(admin_client: Client) -> None:
    CronJobFactory(name="healthy")
    CronJobFactory(name="deep")
    sql(f"UPDATE awa_cron_jobs SET args = {DEEP}, metadata = {BIG} WHERE name = 'deep'")
    healthy = tasks.write_effect.enqueue("fine")
    deep = raw_job(DEEP)
    big = raw_job(BIG.replace("2 * 1024 * 1024", "50 * 1024 * 1024"), "result", state="completed")
    for url in (
        reverse("admin:awa_django_cronjob_changelist"),
        reverse("admin:awa_django_job_changelist"),
        reverse("admin:awa_django_cronjob_change", args=["deep"]),
        reverse("admin:awa_django_job_change", args=[deep]),
        reverse("admin:awa_django_job_change", args=[big]),
        reverse("admin:awa_django_job_change", args=[int(healthy.id)]),
    ):
        page = admin_client.get(url)
        assert page.status_code == 200, url
        assert len(page.content) < 1_000_000, url
    with CaptureQueriesContext(connection) as queries:
        admin_client.get(reverse("admin:awa_django_job_changelist"))
    assert not any('"awa_jobs"."result"' in q["sql"] for q in queries.captured_queries)
    detail = admin_client.get(reverse("admin:awa_django_job_change", args=[big])).content.decode()
    assert "too large to show" in detail
    listing = awa("cron", "list")
    assert "healthy" in listing and "deep" in listing
    assert str(deep) in awa("jobs", "list")
    assert "not shown: args is nested deeper" in awa("cron", "show", "deep")


# -- the limits at enqueue and for results ---------------------------------------


def nested(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("depth", [32, 950, 5000])
def test_enqueue__refuses_args_deeper_than_the_limit(depth: int) -> None:
    # The stored value is {"args": [...], "kwargs": {...}}: its own level counts.
    with pytest.raises(ValueError, match=r"nested deeper than 32 levels \(AWA_MAX_JSON_DEPTH=32\)"):
        tasks.record.enqueue(nested(depth))
    tasks.record.enqueue(nested(30))
    backend = task_backends["default"]
    with pytest.raises(ValueError, match=r"call 2 of 2 .*AWA_MAX_JSON_DEPTH=32"):
        backend.enqueue_many([(tasks.record, [], {}), (tasks.record, [nested(depth)], {})])
    assert Job.objects.count() == 1


@override_settings(AWA_MAX_ARGS_BYTES=1000)
def test_enqueue__refuses_args_over_the_size_limit() -> None:
    with pytest.raises(
        ValueError, match=r"args is 10\d\d bytes as JSON; the limit is AWA_MAX_ARGS_BYTES=1000"
    ):
        tasks.record.enqueue("x" * 1000)
    # Counted as stored (UTF-8), not as json.dumps escapes it.
    tasks.record.enqueue("é" * 400)


def test_worker__an_oversized_result_fails_the_job() -> None:
    result = tasks.returns_value.enqueue("y" * 2000)
    with override_settings(AWA_MAX_ARGS_BYTES=1000):
        Worker(burst=True).run()
    row = Job.objects.get(id=int(result.id))
    assert row.state in ("retryable", "failed") and row.result is None
    assert "AWA_MAX_ARGS_BYTES=1000" in row.errors[-1]["traceback"]
