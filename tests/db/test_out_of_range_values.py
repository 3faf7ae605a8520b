"""Fault isolation against values only raw SQL can write, and operator input
out of range: each stays with its row or its command.

Rows are edited with raw SQL in the operator context, as a hand edit or an old
writer would leave them; every other schedule (and the bad row itself, as far
as it can be) must keep working.
"""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import psycopg
import pytest
from django.core.management import CommandError, call_command
from django.db import connection, transaction
from django.test.utils import override_settings

from awa_django.conf import MAX_KEEPALIVE_COUNT, MAX_KEEPALIVE_SECONDS
from awa_django.db import guards
from awa_django.leader.evaluator import evaluate
from awa_django.leader.loop import Leader
from awa_django.models import CronJob, Job
from awa_django.operations import owners, queues, schedules
from awa_django.operations.queues import prune_jobs
from awa_django.reconciliation import evidence, persistence
from awa_django.worker.loop import Worker
from tests.factories import CronJobFactory, JobFactory
from tests.helpers.database import operator_context, tcp_address, unix_socket_directory
from tests.helpers.reconcile import execute, job, publish
from tests.testapp import tasks

TIMESTAMPS = ("last_enqueued_at", "created_at", "updated_at", "paused_at", "retired_at")


def set_columns(name: str, **values: str) -> None:
    """``UPDATE awa_cron_jobs SET column = <SQL literal>`` in the operator context."""
    assignments = ", ".join(f"{column} = {value}" for column, value in values.items())
    with operator_context(), connection.cursor() as cursor:
        cursor.execute(f"UPDATE awa_cron_jobs SET {assignments} WHERE name = %s", [name])


def awa(*args: str) -> str:
    out = StringIO()
    call_command("awa", *args, stdout=out)
    return out.getvalue()


def parked(name: str) -> tuple[bool, str | None]:
    row: tuple[bool, str | None] = execute(
        "SELECT parked_at IS NOT NULL, parked_reason FROM awa_cron_jobs WHERE name = %s", [name]
    )[0]
    return row


# -- 1. args with only some of its keys ---------------------------------------------


PARTIAL_ARGS = {
    "empty": ("{}", [], {}),
    "args_only": ('{"args": ["positional"]}', ["positional"], {}),
    "kwargs_only": ('{"kwargs": {"label": "keyword"}}', [], {"label": "keyword"}),
}


@pytest.mark.django_db(transaction=True)
def test_leader__args_missing_a_key_fire_a_job_the_worker_runs() -> None:
    """The model's own default is ``{}``; the worker and the task backend read a
    missing key as empty, so such rows fire instead of being parked."""
    for name, (stored, _, _) in PARTIAL_ARGS.items():
        CronJobFactory(name=name, cron_expr="* * * * * *", kind="tests.testapp.tasks.record")
        set_columns(name, args=f"'{stored}'")
    result = Leader(schedules=[]).run_once()
    assert sorted(j["metadata"]["cron_name"] for j in result.jobs) == sorted(PARTIAL_ARGS)
    assert all(parked(name) == (False, None) for name in PARTIAL_ARGS)
    worker = Worker(burst=True)
    worker.run()
    assert worker.completed == len(PARTIAL_ARGS)
    for name, (_, args, kwargs) in PARTIAL_ARGS.items():
        row = Job.objects.get(metadata__cron_name=name)
        assert row.state == "completed", (name, row.errors)
        # record(label="", **extra) returns its label.
        assert row.result == kwargs.get("label", args[0] if args else "")
        view = tasks.record.get_result(str(row.id))
        assert (view.args, view.kwargs) == (args, kwargs)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("stored", "reason"),
    [
        ('{"x": 1}', "it has the key 'x'"),
        ('{"kwargs": {}, "extra": []}', "it has the key 'extra'"),
        ('{"args": {}}', "its 'args' is a JSON object, not an array"),
        ('{"kwargs": []}', "its 'kwargs' is a JSON array, not an object"),
        ('{"kwargs": null}', "its 'kwargs' is a JSON null, not an object"),
    ],
)
def test_evaluate__args_with_a_foreign_key_or_wrong_type_stay_parked(stored: str, reason: str) -> None:
    CronJobFactory(name="healthy", cron_expr="* * * * * *")
    CronJobFactory(name="bad", cron_expr="* * * * * *")
    set_columns("bad", args=f"'{stored}'")
    result = evaluate()
    assert [j["metadata"]["cron_name"] for j in result.jobs] == ["healthy"]
    is_parked, parked_reason = parked("bad")
    assert parked_reason == f'args is not {{"args": [...], "kwargs": {{...}}}}: {reason}' and is_parked


# -- 2. reconciliation reads no timestamp it cannot convert -------------------------


@pytest.mark.django_db(transaction=True)
def test_stored_rows__a_row_with_infinite_timestamps_is_read_like_any_other() -> None:
    publish("billing", [job("a"), job("b")])
    set_columns("b", **{column: "'infinity'" for column in TIMESTAMPS if column != "retired_at"})
    set_columns("a", retired_at="'infinity'", retired_by="'ops'")
    rows = {r.name: r for r in evidence.stored_rows("billing", [], "default")}
    assert sorted(rows) == ["a", "b"]
    assert rows["a"].retired and not rows["b"].retired
    assert rows["b"].definition["args"] == {"args": [], "kwargs": {"label": "b", "nested": {"a": 1, "b": 2}}}
    assert rows["b"].definition == json.loads(json.dumps(rows["b"].definition))


@pytest.mark.django_db(transaction=True)
def test_reconcile__an_infinite_timestamp_does_not_stop_the_owner_or_others() -> None:
    billing = publish("billing", [job("keep"), job("drop")])
    publish("shipping", [job("ship")])
    set_columns("drop", **{column: "'infinity'" for column in TIMESTAMPS if column != "retired_at"})
    # The runtime of billing no longer declares "drop": it is retired as usual.
    publish("billing", [job("keep")], instance=billing)
    plans = {p.owner_id: p for p in persistence.reconcile_all()}
    assert sorted(plans) == ["billing", "shipping"]
    assert plans["billing"].retirements == ["drop"] and plans["billing"].applied
    assert execute("SELECT retired_by FROM awa_cron_jobs WHERE name = 'drop'") == [("billing",)]
    assert not persistence.plan("billing").blockers


# -- 3. paused_at / retired_at = 'infinity' -------------------------------------------


@pytest.mark.django_db
def test_cli__infinite_pause_and_retirement_show_their_state_and_raw_text() -> None:
    CronJobFactory(name="healthy")
    CronJobFactory(name="held")
    CronJobFactory(name="buried")
    set_columns("held", paused_at="'infinity'", paused_by="'ops'")
    set_columns("buried", retired_at="'infinity'", retired_by="'ops'")
    listing = {line.split()[0]: line for line in awa("cron", "list").splitlines()[1:-1]}
    assert "active" in listing["healthy"]
    assert "paused" in listing["held"] and "retired" in listing["buried"]
    by_name = {d["name"]: d for d in json.loads(awa("cron", "list", "--json"))}
    assert (by_name["held"]["state"], by_name["held"]["paused_at"]) == ("paused", "infinity")
    assert (by_name["buried"]["state"], by_name["buried"]["retired_at"]) == ("retired", "infinity")
    shown = json.loads(awa("cron", "show", "buried", "--json", "--next", "3"))
    assert shown["state"] == "retired" and shown["upcoming_fires"] == []
    assert "retired_at: infinity" in awa("cron", "show", "buried")


@pytest.mark.django_db
def test_operations__act_on_rows_with_infinite_pause_or_retirement() -> None:
    CronJobFactory(name="held")
    CronJobFactory(name="buried")
    set_columns("held", paused_at="'infinity'", paused_by="'ops'")
    set_columns("buried", retired_at="'infinity'", retired_by="'ops'")
    assert schedules.pause("held", "eve").detail == "already paused by ops"
    with pytest.raises(Exception, match="'buried' is retired"):
        schedules.pause("buried", "eve")
    with pytest.raises(Exception, match="'buried' is retired"):
        schedules.remove("buried", "eve")
    assert schedules.resume("held", "eve").changed
    assert CronJob.objects.get(name="held").paused_at is None
    assert schedules.remove("held", "eve").changed


@pytest.mark.django_db(transaction=True)
def test_ownership__verbs_on_a_row_with_infinite_retirement() -> None:
    publish("billing", [job("a"), job("b")])
    set_columns("a", retired_at="'infinity'", retired_by="'ops'")
    assert owners.retire("a", actor="eve").schedules == []  # already retired
    assert owners.restore("a", actor="eve").schedules == ["a"]
    assert owners.retire_owner("billing", actor="eve").schedules == ["b"]
    assert owners.restore_owner("billing", actor="eve").schedules == ["a"]
    assert owners.restore("a", actor="eve", apply=True).changed
    assert execute("SELECT retired_at IS NULL FROM awa_cron_jobs WHERE name = 'a'") == [(True,)]


# -- 4, 5. the bounds of E061 and E062 are PostgreSQL's and the kernel's --------------


@pytest.mark.django_db(transaction=True)
def test_bound_transaction_waits__the_largest_accepted_timeouts_are_valid_in_postgresql() -> None:
    with override_settings(AWA_LOCK_TIMEOUT=2147483.647, AWA_STATEMENT_TIMEOUT=2147483.647):
        with transaction.atomic(), connection.cursor() as cursor:
            guards.bound_transaction_waits(cursor)
            cursor.execute("SELECT current_setting('lock_timeout'), current_setting('statement_timeout')")
            assert cursor.fetchone() == ("2147483647ms", "2147483647ms")
    with override_settings(AWA_LOCK_TIMEOUT=2147483.648):
        with pytest.raises(Exception, match="exceeds integer range"), transaction.atomic():
            with connection.cursor() as cursor:
                guards.bound_transaction_waits(cursor)


KEEPALIVE_BOUNDS = [
    ("keepalives_idle", MAX_KEEPALIVE_SECONDS),
    ("keepalives_interval", MAX_KEEPALIVE_SECONDS),
    ("keepalives_count", MAX_KEEPALIVE_COUNT),
]


def connection_params(**where: Any) -> dict[str, Any]:
    """The test database's libpq parameters, reaching the server at ``where``."""
    params = dict(connection.get_connection_params())
    for key in ("cursor_factory", "context", "prepare_threshold"):
        params.pop(key, None)
    return {**params, **where, "keepalives": 1}


@pytest.mark.django_db
@pytest.mark.parametrize(("option", "largest"), KEEPALIVE_BOUNDS)
def test_keepalive_options__the_largest_accepted_values_connect_over_tcp(option: str, largest: int) -> None:
    # Keepalives are TCP options: the kernel takes E062's largest values, and
    # refuses one more (setsockopt), so the check's bounds are the kernel's.
    host, port = tcp_address()
    params = connection_params(host=host, port=port)
    with psycopg.connect(**{**params, option: largest}) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
    with pytest.raises(psycopg.OperationalError, match="setsockopt"):
        psycopg.connect(**{**params, option: largest + 1}).close()


@pytest.mark.django_db
@pytest.mark.parametrize(("option", "largest"), KEEPALIVE_BOUNDS)
def test_keepalive_options__a_unix_socket_connection_ignores_them(option: str, largest: int) -> None:
    # libpq applies keepalives to TCP sockets only: on a Unix socket neither
    # E062's largest values nor ones the kernel would refuse stop a connection,
    # so the processes' keepalive options are harmless there.
    params = connection_params(host=unix_socket_directory())
    for value in (largest, largest + 1, -1):
        with psycopg.connect(**{**params, option: value}) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)


@pytest.mark.django_db
def test_keepalive_options__the_processes_options_at_their_bounds_connect_both_ways() -> None:
    largest = {
        "AWA_TCP_KEEPALIVES_IDLE": MAX_KEEPALIVE_SECONDS,
        "AWA_TCP_KEEPALIVES_INTERVAL": MAX_KEEPALIVE_SECONDS,
        "AWA_TCP_KEEPALIVES_COUNT": MAX_KEEPALIVE_COUNT,
    }
    with override_settings(**largest):
        options = guards.keepalive_options()
    host, port = tcp_address()
    for where in ({"host": host, "port": port}, {"host": unix_socket_directory()}):
        with psycopg.connect(**{**connection_params(**where), **options}) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)


# -- 6. prune ages that fit ----------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("value", ["1e15", "1e300", "31536000001", "1e-300", "0.0000004"])
def test_cli_jobs_prune__refuses_ages_out_of_range(value: str) -> None:
    JobFactory(state="completed", finished_at=execute("SELECT clock_timestamp() - interval '1 hour'")[0][0])
    with pytest.raises(CommandError, match="older-than.*31536000000"):
        call_command("awa", "jobs", "prune", f"--older-than={value}")
    assert Job.objects.count() == 1


@pytest.mark.django_db
def test_cli_jobs_prune__the_bounds_themselves_are_accepted() -> None:
    done = JobFactory(
        state="completed", finished_at=execute("SELECT clock_timestamp() - interval '1 hour'")[0][0]
    )
    assert json.loads(awa("jobs", "prune", "--older-than=31536000000", "--json")) == {
        "action": "prune",
        "deleted": 0,
    }
    assert json.loads(awa("jobs", "prune", "--older-than=0.000001", "--json"))["deleted"] == 1
    assert not Job.objects.filter(id=done.id).exists()


@pytest.mark.django_db
@pytest.mark.parametrize("value", [1e15, 31536000001, 10**20])
def test_prune_jobs__refuses_ages_out_of_range(value: Any) -> None:
    with pytest.raises(ValueError, match="older_than must be .* <= 31536000000"):
        prune_jobs(older_than=value)
    assert queues.MAX_PRUNE_AGE.total_seconds() == 31536000000


@pytest.mark.django_db
def test_prune_jobs__a_retention_out_of_range_is_refused_by_name() -> None:
    with override_settings(AWA_JOB_RETENTION=1e15):
        with pytest.raises(ValueError, match="AWA_JOB_RETENTION"):
            prune_jobs()


# -- 7. show --next is bounded ---------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("value", ["-1", "1001", "10000000000", "x"])
def test_cli_cron_show__next_out_of_range_is_refused(value: str) -> None:
    CronJobFactory(name="daily")
    with pytest.raises(CommandError, match="--next"):
        call_command("awa", "cron", "show", "daily", f"--next={value}")


@pytest.mark.django_db
def test_cli_cron_show__next_bounds_are_accepted() -> None:
    CronJobFactory(name="daily", cron_expr="0 2 * * *")
    assert "upcoming_fires" not in json.loads(awa("cron", "show", "daily", "--json", "--next", "0"))
    assert len(json.loads(awa("cron", "show", "daily", "--json", "--next", "1000"))["upcoming_fires"]) == 1000
