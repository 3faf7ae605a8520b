"""A schedule's payload is measured once, when it is written, with the measure
every writer and the leader share: the jsonb text's bytes.

The trigger ``awa_cron_jobs_measure`` keeps ``args_bytes``/``args_depth``/
``metadata_bytes``/``metadata_depth`` on each row (a forged measure is
replaced); the evaluation pass reads those columns instead of printing each
payload (so its cost does not grow with payload sizes); a row parked for its
payload is evaluated again when the payload changes, not at every sync; and
the API refuses exactly what the leader would park.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.db import connection
from django.test.utils import override_settings

from awa_django.exceptions import InvalidSchedule
from awa_django.leader import evaluator
from awa_django.leader.evaluator import evaluate
from awa_django.models import CronJob, Job
from awa_django.operations.runtime_schedules import create_schedule
from tests.factories import CronJobFactory
from tests.helpers.database import operator_context
from tests.helpers.rows import parked

pytestmark = pytest.mark.django_db

TASK = "tests.testapp.tasks.record"
MEASURES = ("args_bytes", "args_depth", "metadata_bytes", "metadata_depth")


def sql(statement: str, params: Any = None) -> Any:
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return cursor.fetchall() if cursor.description else None


def measures(name: str) -> tuple[int | None, ...]:
    (row,) = sql(f"SELECT {', '.join(MEASURES)} FROM awa_cron_jobs WHERE name = %s", [name])
    return tuple(row)


def printed(name: str) -> tuple[int, int]:
    """What the measures must say: the jsonb text's bytes, as PostgreSQL prints them."""
    ((args, metadata),) = sql(
        "SELECT octet_length(args::text), octet_length(metadata::text) FROM awa_cron_jobs WHERE name = %s",
        [name],
    )
    return args, metadata


@contextmanager
def triggers_off() -> Iterator[None]:
    """Rows written as a replica (or a superuser's bulk load) writes them: no trigger runs."""
    sql("SET LOCAL session_replication_role = replica")
    try:
        yield
    finally:
        sql("SET LOCAL session_replication_role = origin")


def fired(name: str) -> int:
    return Job.objects.filter(metadata__cron_name=name).count()


def test_measure__a_written_payload_is_measured_as_postgresql_prints_it() -> None:
    CronJobFactory(
        name="m", args={"args": [[1, [2]], "é" * 10], "kwargs": {"k": {"a": []}}}, metadata={"team": "ops"}
    )
    args_bytes, metadata_bytes = printed("m")
    assert measures("m") == (args_bytes, 4, metadata_bytes, 1)


def test_measure__kept_across_updates_that_leave_the_payload_and_never_forged() -> None:
    row = CronJobFactory(name="m", args={"args": ["x" * 100], "kwargs": {}})
    before = measures("m")
    sql("UPDATE awa_cron_jobs SET queue = 'other', last_enqueued_at = now() WHERE name = 'm'")
    assert measures("m") == before
    sql("UPDATE awa_cron_jobs SET args_bytes = 1, args_depth = 0, metadata_bytes = -5 WHERE name = 'm'")
    assert measures("m") == before
    row.args = {"args": ["x" * 300], "kwargs": {}}
    row.save()
    assert measures("m")[0] == printed("m")[0] == before[0] + 200


@override_settings(AWA_MAX_ARGS_BYTES=1000, AWA_MAX_JSON_DEPTH=8)
@pytest.mark.parametrize(
    ("column", "value", "reason"),
    [
        ("args_bytes", 1001, "args is 1001 bytes"),
        ("args_depth", 9, "args is nested deeper than 8"),
        ("metadata_bytes", 1001, "metadata is 1001 bytes"),
        ("metadata_depth", 9, "metadata is nested deeper than 8"),
    ],
)
def test_evaluate__reads_the_stored_measures_not_the_payload(column: str, value: int, reason: str) -> None:
    """The pass holds the stored measure to the limits: it does not print the
    payload again (shown with a measure written while triggers were off)."""
    CronJobFactory(name="m", cron_expr="* * * * * *")
    with triggers_off():
        sql(f"UPDATE awa_cron_jobs SET {column} = %s WHERE name = 'm'", [value])
    evaluate()
    is_parked, why = parked("m")
    assert is_parked and reason in (why or "")


@override_settings(AWA_MAX_ARGS_BYTES=1000)
def test_evaluate__a_row_without_measures_is_measured_by_the_pass() -> None:
    CronJobFactory(name="m", cron_expr="* * * * * *")
    with triggers_off():
        sql(
            "UPDATE awa_cron_jobs SET args = %s::jsonb, args_bytes = NULL, args_depth = NULL WHERE name = 'm'",
            [json.dumps({"args": ["x" * 2000], "kwargs": {}})],
        )
    evaluate()
    assert "AWA_MAX_ARGS_BYTES" in (parked("m")[1] or "")


@override_settings(AWA_MAX_ARGS_BYTES=1000)
def test_reevaluate_parked__leaves_a_payload_still_over_the_limit_parked() -> None:
    """Re-reading it every AWA_SYNC_INTERVAL would cost a pass its size; its
    measures change only with its payload."""
    CronJobFactory(name="big", cron_expr="* * * * * *", args={"args": ["x" * 2000], "kwargs": {}})
    CronJobFactory(name="bad-zone", cron_expr="* * * * * *")
    sql("UPDATE awa_cron_jobs SET timezone = 'Mars/Olympus_Mons' WHERE name = 'bad-zone'")
    evaluate()
    assert parked("big")[0] and parked("bad-zone")[0]
    assert evaluator.reevaluate_parked() == 1
    assert CronJob.objects.get(name="big").next_fire_at is not None
    assert CronJob.objects.get(name="bad-zone").next_fire_at is None
    with override_settings(AWA_MAX_ARGS_BYTES=5000):  # a limit raised: it fits now
        assert evaluator.reevaluate_parked() == 1
        assert CronJob.objects.get(name="big").next_fire_at is None


@override_settings(AWA_MAX_ARGS_BYTES=1000)
@pytest.mark.parametrize("column", ["args", "metadata"])
def test_measure__a_parked_payload_that_changes_is_evaluated_again(column: str) -> None:
    big = {"args": ["x" * 2000], "kwargs": {}} if column == "args" else {"note": "x" * 2000}
    CronJobFactory(name="big", cron_expr="* * * * * *", **{column: big})
    evaluate()
    assert parked("big")[0]
    small = {"args": [], "kwargs": {}} if column == "args" else {}
    with operator_context():
        sql(f"UPDATE awa_cron_jobs SET {column} = %s::jsonb WHERE name = 'big'", [json.dumps(small)])
    assert CronJob.objects.get(name="big").next_fire_at is None
    evaluate()
    assert parked("big") == (False, None)
    assert fired("big") == 1


def test_create_schedule__refuses_args_over_the_limit_as_the_leader_measures_them() -> None:
    """[[]] * n is 3n bytes as compact JSON but 4n as jsonb prints it: the API
    measures as the leader does, so what it accepts the leader fires."""
    args = [[]] * 250
    jsonb_bytes = len(json.dumps({"args": args, "kwargs": {}}))  # ", " and ": ", as jsonb prints
    compact_bytes = len(json.dumps({"args": args, "kwargs": {}}, separators=(",", ":")))
    assert compact_bytes < jsonb_bytes
    with override_settings(AWA_MAX_ARGS_BYTES=jsonb_bytes - 1):
        with pytest.raises(InvalidSchedule, match=f"is {jsonb_bytes} bytes"):
            create_schedule("wide", "* * * * * *", TASK, args=args, actor="alice")
        assert not CronJob.objects.filter(name="wide").exists()
    with override_settings(AWA_MAX_ARGS_BYTES=jsonb_bytes):
        create_schedule("wide", "* * * * * *", TASK, args=args, actor="alice")
        assert measures("wide")[0] == jsonb_bytes
        evaluate()
        assert parked("wide") == (False, None)
        assert fired("wide") == 1


@pytest.mark.parametrize(
    ("assignment", "changes"),
    [
        ('args = \'{"args": [1], "kwargs": {}}\'', False),
        ('metadata = \'{"team": "x"}\'', False),
        ("queue = 'other'", False),
        ("next_fire_at = now()", True),
    ],
)
def test_fence__an_owned_row_keeps_its_payload_and_definition_from_other_writers(
    assignment: str, changes: bool
) -> None:
    """The fence compares an owned row without printing its payload, and
    compares the payload itself only when a statement writes it: both still
    keep a writer that is not the row's manager out."""
    CronJobFactory(name="owned", owner_id="app", args={"args": [], "kwargs": {}}, metadata={})
    before = sql("SELECT args, metadata, queue, next_fire_at FROM awa_cron_jobs WHERE name = 'owned'")
    sql(f"UPDATE awa_cron_jobs SET {assignment} WHERE name = 'owned'")
    after = sql("SELECT args, metadata, queue, next_fire_at FROM awa_cron_jobs WHERE name = 'owned'")
    assert (after != before) is changes
