"""System checks (``manage.py check``): one stable id per kind of mistake."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest
from django.core.checks import ERROR, CheckMessage, run_checks
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import override_settings

from awa_django.checks import database as database_checks
from awa_django.checks import settings as setting_checks
from awa_django.declarations import checks
from awa_django.declarations.declaration import periodic
from tests.helpers.processes import ROOT

RECORD = "tests.testapp.tasks.record"
VALID = {"cron": "0 2 * * *", "task": RECORD}
# The message proper (Django prints the hint on its own line) stays one short line.
MAX_MESSAGE_LENGTH = 200
# The hints operators read, as docs/reference/checks.md quotes them.
HINTS = {
    "awa_django.E001": "AWA_SCHEDULES maps schedule names to dicts with 'cron' and 'task'.",
    "awa_django.E002": "Names are 1-200 characters, unique across settings and cron.py.",
    "awa_django.E003": "Use 5 fields, 6 fields with seconds first, or @hourly/@daily/...",
    "awa_django.E004": "Use an IANA zone name such as 'Europe/Berlin' or 'UTC'.",
    "awa_django.E005": "Point 'task' at a function decorated with django.tasks.task.",
    "awa_django.E006": "Add the queue to the task backend's QUEUES in settings.TASKS.",
    "awa_django.E007": "django.tasks priorities are whole numbers from -100 to 100.",
    "awa_django.E008": "max_attempts is a whole number from 1 to 1000.",
    "awa_django.E009": "args must be a list, kwargs/metadata dicts, all JSON-serialisable.",
    "awa_django.E010": "missed_fire_policy is 'coalesce' (default) or 'catch_up'.",
    "awa_django.E011": "tags is a list of at most 20 non-empty strings.",
    "awa_django.E012": "Allowed options: see docs/reference/settings.md#awa_schedules.",
    "awa_django.E013": "overlap is 'allow' (default), 'skip' or 'buffer_one'.",
    "awa_django.E014": "starting_deadline is a timedelta or seconds > 0, at most 100 years (None: no deadline).",
    "awa_django.E015": "jitter is a timedelta or seconds >= 0, below the shortest gap.",
    "awa_django.E016": "every: a timedelta or whole seconds >= 1 instead of cron; anchor: aware, whole second.",
    "awa_django.E020": "Seconds: intervals > 0, other durations >= 0; counts: see the reference.",
    "awa_django.E021": "awa_django stores timestamptz; set USE_TZ = True.",
    "awa_django.E022": "awa_django needs a PostgreSQL database.",
    "awa_django.E040": "Authoritative mode needs AWA_OWNER: 1-200 bytes, not blank, no NUL.",
    "awa_django.E041": "Authoritative mode needs AWA_REVISION (a deploy label, e.g. a git SHA).",
    "awa_django.E042": "AWA_AUTHORITATIVE is True or False.",
    "awa_django.E090": "The admin marks a schedule overdue when its next fire is this far in the past.",
    "awa_django.E078": (
        "unique_key/concurrency_key: {name} and {slot} only, rendering at most 500 characters; "
        "concurrency_limit 1-1000000 with a concurrency_key."
    ),
}


def awa_messages() -> list[CheckMessage]:
    return [m for m in run_checks() if (m.id or "").startswith("awa_django.")]


def only_message(check_id: str) -> CheckMessage:
    """Run every registered check; exactly one awa_django message, with ``check_id``."""
    messages = awa_messages()
    assert [m.id for m in messages] == [check_id], [str(m) for m in messages]
    message = messages[0]
    assert message.level == ERROR
    assert message.is_serious()
    assert message.hint, "every awa_django check has a hint"
    assert message.hint == HINTS[check_id]
    assert "\n" not in message.msg
    assert len(message.msg) <= MAX_MESSAGE_LENGTH, message.msg
    return message


def assert_names(message: CheckMessage, schedule: str, field: str) -> None:
    assert message.msg.startswith(f"schedule {schedule!r}: field {field!r}: "), message.msg
    assert message.obj == f"AWA_SCHEDULES[{schedule!r}]"


def entry(**options: Any) -> dict[str, Any]:
    return {**VALID, **options}


# --- valid configuration ----------------------------------------------------------------


def test_checks__default_test_settings_produce_no_awa_messages() -> None:
    assert awa_messages() == []


@override_settings(
    AWA_SCHEDULES={
        "nightly-report": entry(
            cron="30 0 2 * * *",
            task="tests.testapp.tasks.send_mail",
            timezone="Europe/Berlin",
            args=[1, "a"],
            kwargs={"fmt": "pdf"},
            queue="reports",
            priority=-100,
            max_attempts=1000,
            tags=[f"t{i}" for i in range(20)],
            metadata={"team": "billing"},
            missed_fire_policy="catch_up",
        ),
        "hourly": {"cron": "@hourly", "task": RECORD},
    },
    AWA_EVALUATE_INTERVAL=0.1,
    AWA_SYNC_INTERVAL=0.5,
    AWA_JOB_RETENTION=86400,
    AWA_CATCH_UP_LIMIT=1,
    AWA_LEADER_DATABASE="default",
)
def test_checks__full_valid_configuration_produces_no_awa_messages() -> None:
    assert awa_messages() == []


def test_checks__are_registered_with_django() -> None:
    from django.core.checks import registry

    registered = registry.registry.get_checks()
    for check in (checks.check_schedules, setting_checks.check_settings, database_checks.check_database):
        assert check in registered


def test_schedule_error__each_field_has_its_id_and_hint() -> None:
    assert {field: check for field, check in checks.FIELD_CHECKS.items()} == {
        field: (check_id, HINTS[check_id])
        for field, check_id in (
            ("AWA_SCHEDULES", "awa_django.E001"),
            ("name", "awa_django.E002"),
            ("cron", "awa_django.E003"),
            ("timezone", "awa_django.E004"),
            ("task", "awa_django.E005"),
            ("queue", "awa_django.E006"),
            ("priority", "awa_django.E007"),
            ("max_attempts", "awa_django.E008"),
            ("args", "awa_django.E009"),
            ("kwargs", "awa_django.E009"),
            ("metadata", "awa_django.E009"),
            ("missed_fire_policy", "awa_django.E010"),
            ("tags", "awa_django.E011"),
            ("overlap", "awa_django.E013"),
            ("starting_deadline", "awa_django.E014"),
            ("jitter", "awa_django.E015"),
            ("every", "awa_django.E016"),
            ("anchor", "awa_django.E016"),
            ("unique_key", "awa_django.E078"),
            ("concurrency_key", "awa_django.E078"),
            ("concurrency_limit", "awa_django.E078"),
        )
    }
    assert ("awa_django.E012", HINTS["awa_django.E012"]) == checks.UNKNOWN_OPTION


@pytest.mark.parametrize(
    ("options", "check_id", "field"),
    [
        ({"overlap": "forbid"}, "awa_django.E013", "overlap"),
        ({"starting_deadline": 0}, "awa_django.E014", "starting_deadline"),
        ({"starting_deadline": "30s"}, "awa_django.E014", "starting_deadline"),
        ({"starting_deadline": 1e12}, "awa_django.E014", "starting_deadline"),
        ({"jitter": -1}, "awa_django.E015", "jitter"),
        ({"jitter": 60}, "awa_django.E015", "jitter"),
        ({"every": 0}, "awa_django.E016", "every"),
        ({"every": 60}, "awa_django.E016", "every"),
    ],
)
def test_check_schedules__execution_policies_are_checked_naming_the_schedule_and_option(
    options: dict[str, Any], check_id: str, field: str
) -> None:
    """A bad policy or interval option of an AWA_SCHEDULES entry (jitter of a
    minute on an every-minute schedule, every beside cron included) is reported
    with its own id, naming the schedule and the option."""
    entry = {"cron": "* * * * *", "task": RECORD, **options}
    with override_settings(AWA_SCHEDULES={"tidy": entry}):
        messages = [m for m in checks.check_schedules() if m.id == check_id]
    assert len(messages) == 1
    assert "'tidy'" in messages[0].msg and field in messages[0].msg


# --- E001: AWA_SCHEDULES shape ------------------------------------------------------------


@pytest.mark.parametrize("value", [["nightly"], "nightly", None], ids=repr)
def test_check_schedules__e001_awa_schedules_not_a_dict(value: Any) -> None:
    with override_settings(AWA_SCHEDULES=value):
        message = only_message("awa_django.E001")

    assert "AWA_SCHEDULES" in message.msg
    assert "dict" in message.msg


@override_settings(AWA_SCHEDULES={"nightly": ["0 2 * * *", RECORD]})
def test_check_schedules__e001_options_not_a_dict() -> None:
    message = only_message("awa_django.E001")

    assert_names(message, "nightly", "AWA_SCHEDULES")


# --- E002: name -------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["", "   ", "a\x00b"], ids=["empty", "blank", "nul"])
def test_check_schedules__e002_bad_name(name: str) -> None:
    with override_settings(AWA_SCHEDULES={name: VALID}):
        message = only_message("awa_django.E002")

    assert_names(message, name, "name")


@override_settings(AWA_SCHEDULES={1: VALID})
def test_check_schedules__e002_non_str_name() -> None:
    message = only_message("awa_django.E002")

    assert "field 'name'" in message.msg
    assert "1" in message.msg


@override_settings(AWA_SCHEDULES={"n" * 201: VALID})
def test_check_schedules__e002_name_too_long() -> None:
    messages = awa_messages()

    assert [m.id for m in messages] == ["awa_django.E002"]
    assert "field 'name'" in messages[0].msg
    assert messages[0].hint


@override_settings(AWA_SCHEDULES={"testapp-yearly": VALID})
def test_check_schedules__e002_name_also_declared_in_cron_py() -> None:
    message = only_message("awa_django.E002")

    assert_names(message, "testapp-yearly", "name")
    assert "cron.py" in message.msg


@override_settings(AWA_SCHEDULES={"shared": VALID})
def test_check_schedules__e002_name_also_declared_with_periodic() -> None:
    periodic("shared", "0 3 * * *", RECORD)

    message = only_message("awa_django.E002")

    assert_names(message, "shared", "name")


# --- E003-E011: one id per field ----------------------------------------------------------


@pytest.mark.parametrize(
    ("check_id", "field", "options"),
    [
        ("awa_django.E003", "cron", {"cron": "not a cron"}),
        ("awa_django.E003", "cron", {"cron": "0 0 0 1 1 * 2026"}),
        ("awa_django.E003", "cron", {"cron": "0 0 30 2 *"}),
        ("awa_django.E003", "cron", {"cron": 15}),
        ("awa_django.E004", "timezone", {"timezone": "Mars/Olympus_Mons"}),
        ("awa_django.E005", "task", {"task": "tests.testapp.tasks.missing"}),
        ("awa_django.E005", "task", {"task": "tests.testapp.tasks.not_a_task"}),
        ("awa_django.E006", "queue", {"queue": "nope"}),
        ("awa_django.E007", "priority", {"priority": 101}),
        ("awa_django.E007", "priority", {"priority": True}),
        ("awa_django.E008", "max_attempts", {"max_attempts": 0}),
        ("awa_django.E008", "max_attempts", {"max_attempts": 1001}),
        ("awa_django.E009", "args", {"args": {"a": 1}}),
        ("awa_django.E009", "args", {"args": [{1, 2}]}),
        ("awa_django.E009", "kwargs", {"kwargs": {"x": float("nan")}}),
        ("awa_django.E009", "kwargs", {"kwargs": {1: "x"}}),
        ("awa_django.E009", "metadata", {"metadata": {"cron_name": "x"}}),
        ("awa_django.E009", "metadata", {"metadata": ["x"]}),
        ("awa_django.E010", "missed_fire_policy", {"missed_fire_policy": "skip"}),
        ("awa_django.E011", "tags", {"tags": [f"t{i}" for i in range(21)]}),
        ("awa_django.E011", "tags", {"tags": [""]}),
        ("awa_django.E011", "tags", {"tags": "urgent"}),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_check_schedules__field_error_has_its_own_id(
    check_id: str, field: str, options: dict[str, Any]
) -> None:
    with override_settings(AWA_SCHEDULES={"nightly": entry(**options)}):
        message = only_message(check_id)

    assert_names(message, "nightly", field)


@pytest.mark.parametrize("missing", ["cron", "task"])
def test_check_schedules__missing_required_option_uses_the_field_id(missing: str) -> None:
    options = {k: v for k, v in VALID.items() if k != missing}
    expected = {"cron": "awa_django.E003", "task": "awa_django.E005"}[missing]

    with override_settings(AWA_SCHEDULES={"nightly": options}):
        message = only_message(expected)

    assert_names(message, "nightly", missing)
    assert "required" in message.msg


# --- E012: unknown option -----------------------------------------------------------------


@pytest.mark.parametrize("key", ["colour", "cron_expr", "source"])
def test_check_schedules__e012_unknown_option(key: str) -> None:
    with override_settings(AWA_SCHEDULES={"nightly": entry(**{key: "x"})}):
        message = only_message("awa_django.E012")

    assert_names(message, "nightly", key)
    assert "not a schedule option" in message.msg


@pytest.mark.parametrize("key", ["name", "AWA_SCHEDULES"])
def test_check_schedules__e012_unknown_option_named_like_a_field_id(key: str) -> None:
    # "name" is not an AWA_SCHEDULES option (the dict key is the name). An unknown
    # option is E012 whatever it is called; it must not borrow another field's id.
    with override_settings(AWA_SCHEDULES={"nightly": entry(**{key: "x"})}):
        message = only_message("awa_django.E012")

    assert_names(message, "nightly", key)


# --- several errors at once -----------------------------------------------------------------


@override_settings(
    AWA_SCHEDULES={
        "a-cron": entry(cron="nope"),
        "b-ok": VALID,
        "c-zone": entry(timezone="Nowhere/Zone"),
        "d-unknown": entry(colour="red"),
    },
    AWA_SYNC_INTERVAL=-1,
)
def test_checks__report_every_problem_at_once() -> None:
    messages = awa_messages()

    assert sorted((m.id, m.obj) for m in messages) == [
        ("awa_django.E003", "AWA_SCHEDULES['a-cron']"),
        ("awa_django.E004", "AWA_SCHEDULES['c-zone']"),
        ("awa_django.E012", "AWA_SCHEDULES['d-unknown']"),
        ("awa_django.E020", None),
    ]


# --- E020: durations and the catch-up limit -------------------------------------------------


@pytest.mark.parametrize("key", setting_checks.DURATION_SETTINGS)
@pytest.mark.parametrize("value", [-1, -0.5, "5", None, True, float("nan"), float("inf")], ids=repr)
def test_check_settings__e020_bad_duration(key: str, value: Any) -> None:
    with override_settings(**{key: value}):
        message = only_message("awa_django.E020")

    assert message.msg.startswith(f"{key} ")
    assert repr(value) in message.msg


@pytest.mark.parametrize("key", setting_checks.INTERVAL_SETTINGS)
@pytest.mark.parametrize("value", [0, -1, "5", None, float("nan")], ids=repr)
def test_check_settings__e020_intervals_must_be_positive(key: str, value: Any) -> None:
    with override_settings(**{key: value}):
        message = only_message("awa_django.E020")
    assert message.msg.startswith(f"{key} ") and "> 0" in message.msg


@pytest.mark.parametrize("key", setting_checks.INTERVAL_SETTINGS)
def test_check_settings__fractional_intervals_are_valid(key: str) -> None:
    # Rescue must stay well above the heartbeat interval (checked below).
    with override_settings(**{key: 0.25, "AWA_HEARTBEAT_INTERVAL": 0.1 if key == "AWA_RESCUE_AFTER" else 5}):
        assert awa_messages() == []


def test_check_settings__rescue_must_exceed_twice_the_heartbeat() -> None:
    with override_settings(AWA_RESCUE_AFTER=9, AWA_HEARTBEAT_INTERVAL=5):
        message = only_message("awa_django.E020")
    assert message.msg.startswith("AWA_RESCUE_AFTER (9) must exceed twice AWA_HEARTBEAT_INTERVAL")


@pytest.mark.parametrize("key", setting_checks.DURATION_SETTINGS)
def test_check_settings__zero_and_fractional_durations_are_valid(key: str) -> None:
    with override_settings(**{key: 0}):
        assert awa_messages() == []
    with override_settings(**{key: 0.25}):
        assert awa_messages() == []


@pytest.mark.parametrize("value", [0, -1, 1.5, "10", True, None], ids=repr)
def test_check_settings__e020_bad_catch_up_limit(value: Any) -> None:
    with override_settings(AWA_CATCH_UP_LIMIT=value):
        message = only_message("awa_django.E020")

    assert message.msg.startswith("AWA_CATCH_UP_LIMIT ")
    assert repr(value) in message.msg


# --- E021: USE_TZ -------------------------------------------------------------------------


@override_settings(USE_TZ=False)
def test_check_settings__e021_use_tz_off() -> None:
    message = only_message("awa_django.E021")

    assert "USE_TZ" in message.msg


# --- E022: database -----------------------------------------------------------------------


@override_settings(AWA_LEADER_DATABASE="replica")
def test_check_database__e022_leader_alias_not_in_databases() -> None:
    message = only_message("awa_django.E022")

    assert "AWA_LEADER_DATABASE" in message.msg
    assert "'replica'" in message.msg


@pytest.mark.parametrize("alias", [None, 0, ["default"]], ids=repr)
def test_check_database__e022_leader_alias_not_a_string(alias: Any) -> None:
    # A check reports a bad setting; it must not crash `manage.py check`.
    with override_settings(AWA_LEADER_DATABASE=alias):
        message = only_message("awa_django.E022")

    assert "AWA_LEADER_DATABASE" in message.msg


def test_check_database__postgresql_default_alias_is_valid() -> None:
    assert database_checks.check_database() == []


# --- manage.py check --------------------------------------------------------------------


@override_settings(AWA_SCHEDULES={"nightly": entry(cron="nope")})
def test_manage_py_check__fails_on_invalid_awa_schedules() -> None:
    with pytest.raises(SystemCheckError) as info:
        call_command("check", stdout=io.StringIO(), stderr=io.StringIO())

    report = str(info.value)
    assert "AWA_SCHEDULES['nightly']: (awa_django.E003) schedule 'nightly': field 'cron'" in report
    assert f"HINT: {HINTS['awa_django.E003']}" in report


def test_manage_py_check__passes_on_valid_settings() -> None:
    out = io.StringIO()

    call_command("check", stdout=out, stderr=io.StringIO())

    assert "no issues" in out.getvalue()


@pytest.mark.parametrize("value", [0, 1001, "3", True, None])
def test_check_settings__e020_bad_max_attempts(value: Any) -> None:
    with override_settings(AWA_MAX_ATTEMPTS=value):
        message = only_message("awa_django.E020")
    assert message.msg.startswith("AWA_MAX_ATTEMPTS ")


# --- E040-E042: authoritative reconciliation settings ---------------------------------------


@pytest.mark.parametrize("owner", [None, "", "   ", "x" * 201, "a\x00b", 7])
def test_check_reconciliation__e040_bad_owner(owner: Any) -> None:
    with override_settings(AWA_AUTHORITATIVE=True, AWA_OWNER=owner, AWA_REVISION="rev-1"):
        message = only_message("awa_django.E040")
    assert message.msg.startswith("AWA_OWNER must be")


@pytest.mark.parametrize("revision", [None, "", "y" * 201])
def test_check_reconciliation__e041_bad_revision(revision: Any) -> None:
    with override_settings(AWA_AUTHORITATIVE=True, AWA_OWNER="billing", AWA_REVISION=revision):
        message = only_message("awa_django.E041")
    assert message.msg.startswith("AWA_REVISION must be")


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_check_reconciliation__e042_authoritative_is_a_bool(value: Any) -> None:
    with override_settings(AWA_AUTHORITATIVE=value):
        message = only_message("awa_django.E042")
    assert message.msg.startswith("AWA_AUTHORITATIVE must be a bool")


def test_check_reconciliation__additive_mode_needs_no_owner() -> None:
    with override_settings(AWA_AUTHORITATIVE=False, AWA_OWNER=None, AWA_REVISION=None):
        assert awa_messages() == []
    with override_settings(AWA_AUTHORITATIVE=True, AWA_OWNER="billing", AWA_REVISION="abc123"):
        assert awa_messages() == []


# --- E030/E031: the task backend ----------------------------------------------------------


def test_backend_check__e030_non_postgresql_database(tmp_path: Any) -> None:
    from django.db import connections

    sqlite = {"ENGINE": "django.db.backends.sqlite3", "NAME": str(tmp_path / "other.sqlite3")}
    connections.settings["sqlite"] = connections.configure_settings(
        {**connections.settings, "sqlite": sqlite}
    )["sqlite"]
    try:
        with override_settings(
            TASKS={
                "default": {
                    "BACKEND": "awa_django.client.backend.AwaBackend",
                    "QUEUES": ["default", "mail", "reports"],
                    "OPTIONS": {"DATABASE": "sqlite"},
                }
            }
        ):
            from awa_django.client.compat import task_backends

            messages = task_backends["default"].check()
    finally:
        del connections.settings["sqlite"]
        if hasattr(connections._connections, "sqlite"):
            delattr(connections._connections, "sqlite")
    assert [m.id for m in messages] == ["awa_django.E030"]
    assert "needs PostgreSQL" in messages[0].msg and messages[0].hint


def test_checks__every_error_id_is_documented_and_every_documented_one_is_reported() -> None:
    """The package's error ids (checks, the task backend's check, conf.SETTINGS) and the
    reference name the same set; each check's tests assert its hint."""
    pattern = r"awa_django\.E\d{3}"
    documented = set(re.findall(pattern, (ROOT / "docs/reference/checks.md").read_text()))
    sources = (
        *(ROOT / "awa_django/checks").glob("*.py"),
        ROOT / "awa_django/declarations/checks.py",
        ROOT / "awa_django/client/checks.py",
        ROOT / "awa_django/reconciliation/checks.py",
        ROOT / "awa_django/client/backend.py",
        ROOT / "awa_django/conf.py",
    )
    reported = {check_id for path in sources for check_id in re.findall(pattern, path.read_text())}
    assert documented == reported


@pytest.mark.django_db(transaction=True)
def test_check_sql_objects__e050_reports_a_dropped_or_replaced_function() -> None:
    from django.db import connection

    assert database_checks.check_sql_objects(databases=["default"]) == []
    with connection.cursor() as cursor:
        cursor.execute("COMMENT ON FUNCTION awa_claim_v2(text[], integer, text) IS 'hand-edited'")
        cursor.execute(
            "ALTER FUNCTION awa_release_v2(bigint, integer, interval, interval, jsonb) RENAME TO awa_release_gone"
        )
    try:
        messages = database_checks.check_sql_objects(databases=["default"])
    finally:
        with connection.cursor() as cursor:
            cursor.execute(
                "ALTER FUNCTION awa_release_gone(bigint, integer, interval, interval, jsonb) RENAME TO awa_release_v2"
            )
            cursor.execute(
                "COMMENT ON FUNCTION awa_claim_v2(text[], integer, text) IS 'awa_django 0014_claim_order'"
            )
    assert [(m.id, m.msg) for m in messages] == [
        ("awa_django.E050", "SQL function awa_claim_v2 is outdated ('hand-edited') in database 'default'"),
        ("awa_django.E050", "SQL function awa_release_v2 is missing in database 'default'"),
    ]
    assert all(m.hint for m in messages)


@pytest.mark.django_db(transaction=True)
def test_check_sql_objects__e050_reports_a_body_replaced_by_hand_with_the_same_comment() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_get_functiondef('awa_cron_protocol_version()'::regprocedure)")
        original = cursor.fetchone()[0]
        # CREATE OR REPLACE keeps the version comment: only the body tells.
        cursor.execute(
            "CREATE OR REPLACE FUNCTION awa_cron_protocol_version() RETURNS integer "
            "LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 2 $$"
        )
        cursor.execute("SELECT obj_description('awa_cron_protocol_version()'::regprocedure, 'pg_proc')")
        comment = cursor.fetchone()[0]
    try:
        messages = database_checks.check_sql_objects(databases=["default"])
    finally:
        with connection.cursor() as cursor:
            cursor.execute(original)
    assert comment == "awa_django 0004_reconciliation"
    assert [(m.id, m.msg) for m in messages] == [
        (
            "awa_django.E050",
            "SQL function awa_cron_protocol_version is not as shipped in 0004_reconciliation.sql "
            "(replaced by hand) in database 'default'",
        )
    ]
    assert database_checks.check_sql_objects(databases=["default"]) == []


@pytest.mark.django_db
def test_check_sql_objects__a_faithful_install_matches_every_shipped_body() -> None:
    from django.db import connection

    from awa_django.db.sqlfiles import (
        SQL_DIR,
        body_hash,
        declared_functions,
        dropped_functions,
        expected_function_hashes,
        migration_sql_files,
    )

    # Every function a shipped file creates and no later file drops.
    expected = expected_function_hashes(migration_sql_files())
    shipped = {name: digest for name, (_, digest) in expected.items()}
    declared: set[str] = set()
    dropped: set[str] = set()
    for files in migration_sql_files().values():
        for file_name in files:
            declared.update(declared_functions(SQL_DIR / f"{file_name}.sql"))
            dropped.update(dropped_functions(SQL_DIR / f"{file_name}.sql"))
    declared -= dropped
    with connection.cursor() as cursor:
        cursor.execute("SELECT proname, prosrc FROM pg_proc WHERE proname = ANY(%s)", [list(shipped)])
        installed = {name: body_hash(source) for name, source in cursor.fetchall()}
    assert set(shipped) == declared and len(shipped) >= 25
    assert installed == shipped
    assert database_checks.check_sql_objects(databases=["default"]) == []


# --- E090: the admin's overdue threshold ------------------------------------------------------


@pytest.mark.parametrize("value", [0, -1, "60", True, float("inf")])
def test_check_admin_settings__e090_overdue_after_not_positive_seconds(value: Any) -> None:
    with override_settings(AWA_OVERDUE_AFTER=value):
        message = only_message("awa_django.E090")
    assert message.msg == f"AWA_OVERDUE_AFTER must be a number of seconds > 0, got {value!r}"


def test_check_admin_settings__e090_accepts_positive_seconds() -> None:
    with override_settings(AWA_OVERDUE_AFTER=0.5):
        assert awa_messages() == []
