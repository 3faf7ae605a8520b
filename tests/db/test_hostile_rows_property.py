"""Generated hostile rows next to healthy ones: nothing crashes, the healthy fire and run.

Each example writes, by raw SQL, a schedule row and a job row whose JSON
columns hold any JSON type, deep nesting or large values, whose names hold
control, bidi and zero-width characters, and whose timestamps sit at the edges
PostgreSQL accepts; then one leader pass, one worker claim-and-rescue, the
admin lists (under every filter) and the job's page, and ``awa cron list`` /
``awa jobs list`` run over them, beside a healthy schedule and a healthy job.
The job row's timestamps and state are generated too: the check
``awa_jobs_timestamps_check`` refuses an unfinished job whose timestamp no
datetime holds, and with the check dropped (a database where such a row was
stored before it) that job fails alone and every view lists it.
The schedule row's payload measures (``args_bytes``, ``args_depth``,
``metadata_bytes``, ``metadata_depth``) are the trigger's or any forged with
triggers off.
"""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import IntegrityError, connection, transaction
from django.test import Client
from django.test.utils import override_settings
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from awa_django.db.sqlfiles import read_sql
from awa_django.leader.evaluator import evaluate
from awa_django.models import Job
from awa_django.worker.loop import Worker
from tests.helpers.jobrows import TIMESTAMP_CHECK, without_timestamp_check
from tests.testapp import tasks

pytestmark = pytest.mark.django_db(transaction=True)

# Small limits, so "large" values stay cheap to generate and store.
LIMITS = {"AWA_MAX_ARGS_BYTES": 4096, "AWA_MAX_JSON_DEPTH": 8}

JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**62), 2**62)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20).filter(lambda t: "\x00" not in t)
)
ANY_JSON = st.recursive(
    JSON_SCALARS,
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.text(max_size=5).filter(lambda t: "\x00" not in t), children, max_size=3)
    ),
    max_leaves=8,
)


def nested_text(depth: int) -> str:
    return "[" * depth + "]" * depth


def as_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


# A JSON column's text: any value, deeply nested, or over the size limit.
JSON_TEXT = st.one_of(
    ANY_JSON.map(as_text),
    st.integers(9, 3000).map(nested_text),
    st.integers(5000, 20000).map(lambda n: as_text({"args": ["x" * n], "kwargs": {}})),
    st.just('{"args": [], "kwargs": {}}'),
)
HOSTILE_CHARS = "\x1b\x07\r\n\t\u202e\u2066\u200b\u2028\ufeff\x85"
NAME = st.text(
    alphabet=st.sampled_from(HOSTILE_CHARS)
    | st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    min_size=1,
    max_size=200,
).filter(lambda n: n != "healthy")
# The payload measures a row keeps (sql/0026_payload_measure.sql): None for the
# trigger's own, else values forged with triggers off (a replica, a bulk load),
# NULL and out-of-range ones included.
INT4 = st.none() | st.integers(-(2**31), 2**31 - 1)
INT2 = st.none() | st.integers(-(2**15), 2**15 - 1)
MEASURES = st.none() | st.tuples(INT4, INT2, INT4, INT2)
EDGE_TIMESTAMP = st.sampled_from(
    [None, "infinity", "-infinity", "0001-01-01 00:00+00", "4713-01-01 00:00+00 BC", "9999-12-31 23:59:59+00",
     "1970-01-01 00:00+00", "294276-12-31 23:59:59+00"]
)  # fmt: skip
# A job's timestamps: the same edges, year 0 (1 BC), year 10000, and the edges of
# the range awa_jobs_timestamps_check allows.
JOB_TIMESTAMP = EDGE_TIMESTAMP | st.sampled_from(
    ["0001-01-01 00:00+00 BC", "10000-01-01 00:00+00", "0001-01-02 00:00+00", "9999-12-30 23:59:59.999999+00"]
)
JOB_STATES = ("available", "scheduled", "running", "retryable", "completed", "failed", "cancelled")
JOB_FILTERS = ["", *(f"?state__exact={s}" for s in JOB_STATES), "?queue=default", "?kind=x", "?q=x", "?o=6"]


def sql(statement: str, params: list[Any] | None = None) -> Any:
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return cursor.fetchall() if cursor.description else None


def awa(*args: str) -> str:
    out = StringIO()
    call_command("awa", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def admin_user() -> User:
    return User.objects.create_superuser("hostile-admin", "a@example.com", "x")


@given(
    name=NAME,
    args=JSON_TEXT,
    metadata=JSON_TEXT,
    last_enqueued=EDGE_TIMESTAMP,
    created=EDGE_TIMESTAMP.filter(lambda t: t is not None),
    job_args=JSON_TEXT,
    job_metadata=JSON_TEXT,
    errors=JSON_TEXT,
    result=JSON_TEXT,
    queue=NAME,
    job_state=st.sampled_from(JOB_STATES),
    job_times=st.fixed_dictionaries(
        {"run_at": JOB_TIMESTAMP.filter(lambda t: t is not None), "created_at": JOB_TIMESTAMP.filter(bool)},
        optional={c: JOB_TIMESTAMP for c in ("attempted_at", "started_at", "heartbeat_at", "finished_at")},
    ),
    measures=MEASURES,
)
@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
def test_hostile_rows__leader_worker_admin_and_cli_serve_the_healthy_rows(
    admin_user: User,
    name: str,
    args: str,
    metadata: str,
    last_enqueued: str | None,
    created: str,
    job_args: str,
    job_metadata: str,
    errors: str,
    result: str,
    queue: str,
    job_state: str,
    job_times: dict[str, str | None],
    measures: tuple[int | None, int | None, int | None, int | None] | None,
) -> None:
    sql("TRUNCATE awa_cron_jobs, awa_jobs")
    with without_timestamp_check():
        serve_hostile_rows(
            admin_user, name, args, metadata, last_enqueued, created, job_args, job_metadata, errors, result,
            queue, job_state, job_times, measures,
        )  # fmt: skip


def insert_hostile_job(values: list[Any], state: str, times: dict[str, str | None]) -> int:
    """The hostile job row; an unfinished one whose timestamp no datetime holds is
    first refused by the check (put back for the insert), then stored without it."""
    columns = ", ".join(times)
    sql_values = ", ".join(["%s::timestamptz"] * len(times))
    statement = (
        f"INSERT INTO awa_jobs (kind, queue, args, metadata, errors, result, state, max_attempts, tags, attempt,"
        f" {columns}) VALUES (%s, %s, %s::jsonb, %s::jsonb, %s::jsonb, %s::jsonb, %s, 3, ARRAY[%s], 1,"
        f" {sql_values}) RETURNING id"
    )
    params = [*values[:6], state, values[0], *times.values()]
    in_range = sql(
        "SELECT coalesce(bool_and(t BETWEEN '0001-01-02 00:00+00' AND '9999-12-30 23:59:59.999999+00'), TRUE)"
        " FROM unnest(%s::timestamptz[]) AS t WHERE t IS NOT NULL",
        [list(times.values())],
    )[0][0]
    if state not in ("completed", "failed", "cancelled") and not in_range:
        with transaction.atomic():
            sql(read_sql("0024_job_timestamps"))
            with pytest.raises(IntegrityError, match=TIMESTAMP_CHECK), transaction.atomic():
                sql(statement, params)
            transaction.set_rollback(True)
    return int(sql(statement, params)[0][0])


def serve_hostile_rows(
    admin_user: User,
    name: str,
    args: str,
    metadata: str,
    last_enqueued: str | None,
    created: str,
    job_args: str,
    job_metadata: str,
    errors: str,
    result: str,
    queue: str,
    job_state: str,
    job_times: dict[str, str | None],
    measures: tuple[int | None, int | None, int | None, int | None] | None,
) -> None:
    sql(
        "INSERT INTO awa_cron_jobs (name, cron_expr, timezone, kind, queue, args, metadata, priority,"
        " max_attempts, missed_fire_policy, tags, created_at, updated_at, last_enqueued_at) VALUES"
        " ('healthy', '* * * * * *', 'UTC', 'tests.testapp.tasks.record', 'default', '{}', '{}', 0, 3,"
        "  'coalesce', '{}', now() - interval '1 hour', now(), NULL),"
        " (%s, '* * * * * *', 'UTC', 'tests.testapp.tasks.record', %s, %s::jsonb, %s::jsonb, 0, 3,"
        "  'coalesce', ARRAY[%s], %s::timestamptz, now(), %s::timestamptz)",
        [name, queue, args, metadata, name, created, last_enqueued],
    )
    measured = (
        "SELECT args_bytes, args_depth, metadata_bytes, metadata_depth FROM awa_cron_jobs WHERE name = %s"
    )
    if measures is None:  # the trigger's: the jsonb text's bytes, the depth up to 201
        ((args_bytes, _, metadata_bytes, _),) = sql(measured, [name])
        assert (args_bytes, metadata_bytes) == sql(
            "SELECT octet_length(args::text), octet_length(metadata::text) FROM awa_cron_jobs WHERE name = %s",
            [name],
        )[0]
    else:
        sql("SET session_replication_role = replica")
        try:
            sql(
                "UPDATE awa_cron_jobs SET args_bytes = %s, args_depth = %s, metadata_bytes = %s,"
                " metadata_depth = %s WHERE name = %s",
                [*measures, name],
            )
        finally:
            sql("SET session_replication_role = origin")
        assert sql(measured, [name]) == [measures]
    with override_settings(**LIMITS):
        healthy = tasks.record.enqueue("healthy")
        hostile = insert_hostile_job(
            [name, queue, job_args, job_metadata, errors, result], job_state, job_times
        )
        sql(
            "INSERT INTO awa_jobs (kind, queue, args, metadata, errors, result, state, run_at, max_attempts,"
            " attempt, heartbeat_at, attempted_at) VALUES ('tests.testapp.tasks.record', 'default', %s::jsonb,"
            " %s::jsonb, %s::jsonb, %s::jsonb, 'running', now(), 3, 1, now() - interval '1 hour', now())",
            [job_args, job_metadata, errors, result],
        )
        evaluate()
        assert Job.objects.filter(metadata__cron_name="healthy").count() == 1
        worker = Worker(burst=True)
        worker.rescue()
        worker.run()
        assert Job.objects.get(id=int(healthy.id)).state == "completed"
        assert set(Job.objects.filter(metadata__cron_name="healthy").values_list("state", flat=True)) == {
            "completed"
        }
        client = Client()
        client.force_login(admin_user)
        pages = [reverse("admin:awa_django_cronjob_changelist")]
        pages += [reverse("admin:awa_django_job_changelist") + query for query in JOB_FILTERS]
        pages.append(reverse("admin:awa_django_job_change", args=[hostile]))
        for url in pages:
            page = client.get(url)
            assert page.status_code == 200, url
            assert len(page.content) < 1_000_000
        if job_state != "running":  # a running row is its worker's (or rescue's) to finish
            assert sql("SELECT state FROM awa_jobs WHERE id = %s", [hostile])[0][0] != "running"
        assert "healthy" in awa("cron", "list")
        assert str(healthy.id) in awa("jobs", "list")
        assert "healthy" in json.dumps(json.loads(awa("cron", "list", "--json")))
        listed = {j["id"] for j in json.loads(awa("jobs", "list", "--json"))}
        assert {int(healthy.id), hostile} <= listed
