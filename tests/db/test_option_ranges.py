"""Every number a schedule option takes is checked against its column at every door.

Proves, for the values the column cannot hold or that mean nothing (``every``
from 2**31 s, ``NaN`` and ``Infinity`` deadlines and jitters, a concurrency
limit past awa_jobs' check): ``periodic()`` and ``AWA_SCHEDULES`` are refused
by a system check naming the schedule and the option, ``create_schedule`` and
``update_schedule`` by an ``InvalidSchedule`` naming the field before any SQL,
``manage.py awa cron create|edit`` by a one-line error, the admin form by a
form error, and the database by a CHECK constraint. A write that fails inside
a fence context reports its own error, not "current transaction is aborted".
A row holding ``'NaN'`` (written before the constraint) is parked once, logged
once; migration 0027 clears such a value and validates its constraints.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.checks import run_checks
from django.core.management import CommandError, call_command
from django.db import DataError, IntegrityError, connection, transaction
from django.test.utils import override_settings

from awa_django import InvalidSchedule, periodic
from awa_django.db import sessions
from awa_django.db.sqlfiles import read_sql
from awa_django.declarations.declaration import registry
from awa_django.declarations.ranges import INT4_MAX, MAX_DURATION, RANGES
from awa_django.leader.loop import Leader
from awa_django.models import CronJob
from awa_django.operations.runtime_schedules import create_schedule, update_schedule
from tests.factories import CronJobFactory
from tests.helpers.admin import VIEW_ALL, staff
from tests.helpers.database import operator_context
from tests.helpers.reconcile import execute

TASK = "tests.testapp.tasks.record"
EDITOR = (*VIEW_ALL, "add_cronjob", "change_cronjob", "delete_cronjob")

# (options, the field named, the check id) of declarations out of range.
OUT_OF_RANGE = [
    ({"every": 2**31}, "every", "awa_django.E016"),
    ({"every": 3000000000}, "every", "awa_django.E016"),
    ({"every": timedelta(days=30000)}, "every", "awa_django.E016"),
    ({"every": 10**400}, "every", "awa_django.E016"),
    ({"cron": "0 2 * * *", "starting_deadline": float("nan")}, "starting_deadline", "awa_django.E014"),
    ({"cron": "0 2 * * *", "starting_deadline": float("inf")}, "starting_deadline", "awa_django.E014"),
    ({"cron": "0 2 * * *", "starting_deadline": 10**400}, "starting_deadline", "awa_django.E014"),
    ({"cron": "0 2 * * *", "jitter": float("nan")}, "jitter", "awa_django.E015"),
    ({"cron": "0 2 * * *", "jitter": float("inf")}, "jitter", "awa_django.E015"),
    ({"every": INT4_MAX, "jitter": MAX_DURATION + 1}, "jitter", "awa_django.E015"),
    (
        {"cron": "0 2 * * *", "concurrency_key": "k", "concurrency_limit": 3000000000},
        "concurrency_limit",
        "awa_django.E078",
    ),
    ({"cron": "0 2 * * *", "unique_key": "a\udc80"}, "unique_key", "awa_django.E078"),
    ({"cron": "0 2 * * *", "priority": 2**31}, "priority", "awa_django.E007"),
    ({"cron": "0 2 * * *", "max_attempts": 2**63}, "max_attempts", "awa_django.E008"),
]


def _ids(options: dict[str, Any]) -> str:
    return ",".join(f"{k}={v!r:.20}" for k, v in options.items())


@pytest.mark.parametrize(
    ("options", "field", "check_id"), OUT_OF_RANGE, ids=[_ids(o) for o, _, _ in OUT_OF_RANGE]
)
def test_periodic__out_of_range_numbers_name_the_option(
    options: dict[str, Any], field: str, check_id: str
) -> None:
    with pytest.raises(InvalidSchedule) as raised:
        periodic("nightly", task=TASK, **options)
    assert (raised.value.schedule, raised.value.field) == ("nightly", field)
    assert "nightly" not in registry


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("options", "field", "check_id"), OUT_OF_RANGE, ids=[_ids(o) for o, _, _ in OUT_OF_RANGE]
)
def test_check_schedules__out_of_range_numbers_are_check_errors(
    options: dict[str, Any], field: str, check_id: str
) -> None:
    with override_settings(AWA_SCHEDULES={"nightly": {"task": TASK, **options}}):
        errors = [m for m in run_checks() if m.obj == "AWA_SCHEDULES['nightly']"]
    assert [m.id for m in errors] == [check_id]
    assert errors[0].msg.startswith(f"schedule 'nightly': field '{field}': ")


@pytest.mark.django_db
def test_every__the_largest_value_is_stored_and_the_next_is_refused() -> None:
    create_schedule("longest", every=INT4_MAX, task=TASK, actor="eve")
    assert CronJob.objects.get(name="longest").every_seconds == INT4_MAX == RANGES["every"].high
    with pytest.raises(InvalidSchedule, match=r"field 'every': .* from 1 to 2147483647, got 2147483648"):
        create_schedule("longer", every=2**31, task=TASK, actor="eve")
    assert not CronJob.objects.filter(name="longer").exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("options", "field", "check_id"), OUT_OF_RANGE, ids=[_ids(o) for o, _, _ in OUT_OF_RANGE]
)
def test_create_schedule__out_of_range_numbers_are_refused_before_sql(
    options: dict[str, Any], field: str, check_id: str
) -> None:
    with pytest.raises(InvalidSchedule) as raised:
        create_schedule("nightly", task=TASK, actor="eve", **options)
    assert (raised.value.schedule, raised.value.field) == ("nightly", field)
    assert not CronJob.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("changes", "field"),
    [({"every": 3000000000}, "every"), ({"unique_key": "a\udc80"}, "unique_key")],
)
def test_update_schedule__refuses_naming_the_field_and_the_transaction_stays_usable(
    changes: dict[str, Any], field: str
) -> None:
    create_schedule("nightly", "0 2 * * *", TASK, actor="eve")
    with transaction.atomic():
        with pytest.raises(InvalidSchedule) as raised:
            update_schedule("nightly", actor="eve", **changes)
        assert raised.value.field == field
        # The caller's transaction was not aborted by a statement that failed.
        assert execute("SELECT cron_expr FROM awa_cron_jobs WHERE name = 'nightly'") == [("0 2 * * *",)]


@pytest.mark.django_db
def test_owner_context__a_failed_statement_inside_reports_its_own_error() -> None:
    with transaction.atomic(), connection.cursor() as cursor:
        with pytest.raises(DataError, match="integer out of range"):
            with sessions.owner_context(cursor, "billing"), sessions.policies_context(cursor):
                cursor.execute("SELECT 3000000000::integer")
        transaction.set_rollback(True)


def awa(*args: str) -> str:
    out = StringIO()
    call_command("awa", "cron", *args, "--actor", "eve", stdout=out, stderr=StringIO())
    return out.getvalue()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--every", "1e400"],
            r"--every: must be a whole number of seconds from 1 to 2147483647, got '1e400'",
        ),
        (["--every", "3000000000"], r"--every: must be a whole number .* got 3000000000"),
        (
            ["--cron", "0 2 * * *", "--priority", "99999999999999999999"],
            r"--priority: must be a whole number",
        ),
        (["--cron", "0 2 * * *", "--max-attempts", "1e400"], r"--max-attempts: must be a whole number"),
        (["--option", "every=1e400"], r"field 'every': must be a finite number of seconds"),
        (["--option", "every=3000000000"], r"field 'every': must be a whole number .* got 3000000000"),
        (["--cron", "0 2 * * *", "--option", "starting_deadline=NaN"], r"field 'starting_deadline'"),
        (["--cron", "0 2 * * *", "--option", "jitter=Infinity"], r"field 'jitter'"),
        (
            [
                "--cron",
                "0 2 * * *",
                "--option",
                "concurrency_key=k",
                "--option",
                "concurrency_limit=3000000000",
            ],
            r"field 'concurrency_limit'",
        ),
    ],
)
def test_cli_cron_create__out_of_range_numbers_are_one_line_errors(flags: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message) as raised:
        awa("create", "nightly", "--task", TASK, *flags)
    assert "\n" not in str(raised.value)
    assert not CronJob.objects.exists()


@pytest.mark.django_db
def test_cli_cron_edit__out_of_range_every_is_refused_naming_it() -> None:
    create_schedule("nightly", "0 2 * * *", TASK, actor="eve")
    with pytest.raises(CommandError, match=r"--every: must be a whole number"):
        awa("edit", "nightly", "--every", "3000000000")
    with pytest.raises(CommandError, match=r"field 'every'"):
        awa("edit", "nightly", "--option", "every=3000000000")
    assert CronJob.objects.get(name="nightly").cron_expr == "0 2 * * *"


def form_data(**overrides: Any) -> dict[str, Any]:
    data = {
        "name": "poll",
        "cron_expr": "",
        "every_seconds": "60",
        "timezone": "UTC",
        "missed_fire_policy": "coalesce",
        "task_path": TASK,
        "call_args": "[]",
        "call_kwargs": "{}",
        "queue": "",
        "priority": "",
        "max_attempts": "",
    }
    data.update(overrides)
    return data


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"every_seconds": str(2**31)}, "every_seconds"),
        ({"every_seconds": "3000000000"}, "every_seconds"),
        ({"starting_deadline": "1e400"}, "starting_deadline"),
        ({"starting_deadline": "NaN"}, "starting_deadline"),
        ({"jitter": "Infinity"}, "jitter"),
        ({"jitter": str(MAX_DURATION + 1)}, "jitter"),
    ],
)
def test_admin_add__out_of_range_numbers_are_form_errors(overrides: dict[str, Any], field: str) -> None:
    client = staff("alice", *EDITOR)
    response = client.post("/admin/awa_django/cronjob/add/", form_data(**overrides))
    assert response.status_code == 200
    form = response.context["adminform"].form
    assert field in form.errors, form.errors
    assert not CronJob.objects.exists()


@pytest.mark.django_db
def test_admin_change__out_of_range_every_is_a_form_error() -> None:
    create_schedule("poll", every=60, task=TASK, actor="eve")
    client = staff("alice", *EDITOR)
    data = form_data(every_seconds="3000000000")
    del data["name"]
    response = client.post("/admin/awa_django/cronjob/poll/change/", data)
    assert response.status_code == 200
    assert "every_seconds" in response.context["adminform"].form.errors
    assert CronJob.objects.get(name="poll").every_seconds == 60


def set_raw(name: str, assignment: str) -> None:
    with operator_context(), connection.cursor() as cursor:
        cursor.execute(f"UPDATE awa_cron_jobs SET {assignment} WHERE name = %s", [name])


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("assignment", "constraint"),
    [
        ("starting_deadline = 'NaN'", "awa_cron_jobs_starting_deadline_range_check"),
        ("starting_deadline = 'Infinity'", "awa_cron_jobs_starting_deadline_range_check"),
        ("starting_deadline = 3162240001", "awa_cron_jobs_starting_deadline_range_check"),
        ("jitter = 'NaN'", "awa_cron_jobs_jitter_range_check"),
        ("jitter = 'Infinity'", "awa_cron_jobs_jitter_range_check"),
    ],
)
def test_constraints__raw_sql_cannot_store_a_non_finite_or_out_of_range_policy(
    assignment: str, constraint: str
) -> None:
    CronJobFactory(name="nightly")
    with pytest.raises(IntegrityError, match=constraint):
        set_raw("nightly", assignment)
    set_raw("nightly", "starting_deadline = 3162240000, jitter = 3162240000")  # the bounds themselves


@pytest.fixture
def without_range_checks() -> Iterator[None]:
    """The table as before migration 0027: its two checks dropped (restored after)."""
    execute(
        "ALTER TABLE awa_cron_jobs DROP CONSTRAINT awa_cron_jobs_starting_deadline_range_check, "
        "DROP CONSTRAINT awa_cron_jobs_jitter_range_check"
    )
    try:
        yield
    finally:
        execute(read_sql("0027_option_ranges"))
        execute(read_sql("0027_option_ranges_validate"))  # clears the test's row, validates


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("stored", ["NaN", "Infinity"])
def test_leader__a_non_finite_deadline_row_is_parked_once_and_logged_once(
    without_range_checks: None, stored: str, caplog: pytest.LogCaptureFixture
) -> None:
    CronJobFactory(name="healthy", cron_expr="* * * * * *")
    CronJobFactory(name="bad", cron_expr="* * * * * *")
    set_raw("bad", f"starting_deadline = '{stored}'")
    caplog.set_level(logging.DEBUG, logger="awa_django")
    leader = Leader(schedules=[])
    fired = [j["metadata"]["cron_name"] for _ in range(3) for j in leader.run_once().jobs]
    assert set(fired) == {"healthy"}
    (parked_reason,) = execute(
        "SELECT parked_reason FROM awa_cron_jobs WHERE name = 'bad' AND parked_at IS NOT NULL"
    )[0]
    assert parked_reason.startswith("starting_deadline ")
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR and "bad" in r.getMessage()]
    assert [r.getMessage() for r in errors] == [
        f"schedule bad cannot be evaluated and is parked: {parked_reason}"
    ]


@pytest.mark.django_db(transaction=True)
def test_migration_0027__clears_non_finite_values_already_stored_and_validates() -> None:
    call_command("migrate", "awa_django", "0023", verbosity=0)
    try:
        CronJobFactory(name="nan", starting_deadline=1.0)
        CronJobFactory(name="forever", starting_deadline=1.0)
        CronJobFactory(name="shaky", jitter=1.0)
        CronJobFactory(name="fine", starting_deadline=30.0, jitter=5.0)
        set_raw("nan", "owner_id = 'billing'")  # an owned row: the fence guards it
        set_raw("nan", "starting_deadline = 'NaN'")
        set_raw("forever", "starting_deadline = 'Infinity'")
        set_raw("shaky", "jitter = 'NaN'")
    finally:
        call_command("migrate", "awa_django", verbosity=0)
    rows = execute("SELECT name, starting_deadline, jitter FROM awa_cron_jobs ORDER BY name")
    assert rows == [("fine", 30.0, 5.0), ("forever", None, 0.0), ("nan", None, 0.0), ("shaky", None, 0.0)]
    assert execute(
        "SELECT conname, convalidated FROM pg_constraint WHERE conname LIKE 'awa_cron_jobs_%%_range_check' "
        "ORDER BY conname"
    ) == [("awa_cron_jobs_jitter_range_check", True), ("awa_cron_jobs_starting_deadline_range_check", True)]
