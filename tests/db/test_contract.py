"""Every limit and metadata key of :mod:`awa_django.contract` is the one the database holds.

Reads the migrated database itself: the CHECK constraints of the ``awa_``
tables (``pg_get_constraintdef``), the indexes (``pg_get_indexdef``) and the
newest installed version of each function (``pg_proc.prosrc``), and finds in
them the number or key each constant names, so a limit changed on one side
only fails here. The Python validation's own names are compared with the
contract too, and the two unique key limits (a job's key, a schedule's key
template) are shown to agree at every door.
"""

from __future__ import annotations

import re

import pytest
from django.db import connection

from awa_django import InvalidSchedule, contract, validation
from awa_django.bounded_text import MIN_CHARS
from awa_django.client import enqueue, limits
from awa_django.client.compat import TASK_MAX_PRIORITY, TASK_MIN_PRIORITY
from awa_django.conf import DEFAULTS, MAX_JSON_DEPTH, Kind
from awa_django.declarations import builder, flow, ranges
from awa_django.declarations.builder import build_schedule

pytestmark = pytest.mark.django_db

TASK = "tests.testapp.tasks.record"


def _normal(text: str) -> str:
    """A definition without casts and quotes: ``(priority >= -100) AND (priority <= 100)``."""
    text = re.sub(r"::[a-z]+(?: [a-z]+)*|'", "", text)
    while re.search(r"\((-?[0-9.]+)\)", text):
        text = re.sub(r"\((-?[0-9.]+)\)", r"\1", text)
    return text


def constraint(name: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_get_constraintdef(oid) FROM pg_constraint"
            " WHERE conname = %s AND conrelid::regclass::text LIKE 'awa_%%'",
            [name],
        )
        row = cursor.fetchone()
    assert row is not None, f"no CHECK constraint {name} on an awa_ table"
    return _normal(row[0])


def newest_body(family: str) -> str:
    """The body of the newest installed ``<family>_v<n>`` (the one the current code calls)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT proname, prosrc FROM pg_proc WHERE proname ~ %s", [f"^{family}_v[0-9]+$"])
        rows = cursor.fetchall()
    assert rows, f"no function {family}_v<n> is installed"
    return max(rows, key=lambda row: int(row[0].rsplit("_v", 1)[1]))[1]


def index_definitions(table: str) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_get_indexdef(indexrelid) FROM pg_index WHERE indrelid = %s::regclass", [table]
        )
        return [row[0] for row in cursor.fetchall()]


@pytest.mark.parametrize(
    ("name", "column", "low", "high"),
    [
        ("awa_cron_jobs_name_check", "length(name)", 1, contract.NAME_MAX_LENGTH),
        ("awa_jobs_queue_length_check", "char_length(queue)", 1, contract.QUEUE_MAX_LENGTH),
        (
            "awa_cron_owners_owner_id_check",
            "length(TRIM(BOTH FROM owner_id))",
            1,
            contract.OWNER_ID_MAX_LENGTH,
        ),
        ("awa_jobs_unique_key_length_check", "char_length(unique_key)", 1, contract.KEY_MAX_LENGTH),
        ("awa_jobs_concurrency_key_length_check", "char_length(concurrency_key)", 1, contract.KEY_MAX_LENGTH),
        (
            "awa_jobs_concurrency_limit_check",
            "concurrency_limit",
            contract.CONCURRENCY_LIMIT_MIN,
            contract.CONCURRENCY_LIMIT_MAX,
        ),
        ("awa_jobs_priority_check", "priority", contract.PRIORITY_MIN, contract.PRIORITY_MAX),
        ("awa_cron_jobs_priority_check", "priority", contract.PRIORITY_MIN, contract.PRIORITY_MAX),
        (
            "awa_cron_jobs_max_attempts_check",
            "max_attempts",
            contract.MAX_ATTEMPTS_MIN,
            contract.MAX_ATTEMPTS_MAX,
        ),
        ("awa_cron_jobs_jitter_range_check", "jitter", 0, contract.DURATION_MAX_SECONDS),
    ],
)
def test_contract__range_is_the_check_constraints(name: str, column: str, low: int, high: int) -> None:
    check = constraint(name)
    assert f"{column} >= {low})" in check and f"{column} <= {high})" in check, check


def test_contract__durations_and_intervals_are_the_check_constraints() -> None:
    deadline = constraint("awa_cron_jobs_starting_deadline_range_check")
    assert f"starting_deadline <= {contract.DURATION_MAX_SECONDS}" in deadline
    assert f"every_seconds >= {contract.EVERY_SECONDS_MIN}" in constraint("awa_cron_jobs_every_seconds_check")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute"
            " WHERE attrelid = 'awa_cron_jobs'::regclass AND attname = 'every_seconds'"
        )
        assert cursor.fetchone() == ("integer",)  # whose largest value is EVERY_SECONDS_MAX
        cursor.execute("SELECT %s::integer", [contract.EVERY_SECONDS_MAX])
        assert cursor.fetchone() == (contract.INT4_MAX,)


def test_contract__timestamps_are_the_check_constraint() -> None:
    check = constraint("awa_jobs_timestamps_check")
    low, high = (
        t.isoformat(sep=" ").removesuffix(":00") for t in (contract.TIMESTAMP_MIN, contract.TIMESTAMP_MAX)
    )
    for column in ("run_at", "created_at", "attempted_at", "started_at", "heartbeat_at", "finished_at"):
        assert f"{column} >= {low})" in check and f"{column} <= {high})" in check, column


def test_contract__flow_keys_are_the_key_function() -> None:
    body = newest_body("awa_flow_key")
    assert f"char_length(k) <= {contract.KEY_MAX_LENGTH} THEN k" in body
    assert f"left(k, {contract.KEY_HASHED_PREFIX_LENGTH}) || '#' || md5(k)" in body
    with connection.cursor() as cursor:
        longest = "k" * contract.KEY_MAX_LENGTH
        cursor.execute(
            "SELECT awa_flow_key_v1(%s, 'n', 's'), awa_flow_key_v1(%s, 'n', 's')", [longest, longest + "k"]
        )
        kept, hashed = cursor.fetchone()
    assert kept == longest
    assert len(hashed) == contract.KEY_MAX_LENGTH and hashed != longest


def test_contract__flow_trigger_reads_the_flow_keys_and_the_ceiling() -> None:
    body = newest_body("awa_jobs_flow_keys")
    for key in (
        contract.FLOW_KEY,
        contract.CRON_NAME_KEY,
        contract.CRON_FIRE_AT_KEY,
        *contract.FLOW_OPTION_KEYS,
    ):
        assert f"'{key}'" in body, key
    assert f"'{contract.MANUAL_SLOT_PREFIX}'" in body
    assert f"{contract.CONCURRENCY_LIMIT_MIN}), {contract.CONCURRENCY_LIMIT_MAX})::integer" in body


def test_contract__fire_and_trigger_write_the_metadata_keys() -> None:
    fire = newest_body("awa_cron_fire")
    assert f"jsonb_build_object('{contract.CRON_NAME_KEY}', s.name" in fire
    assert f"'{contract.CRON_FIRE_AT_KEY}', awa_format_fire_at(" in fire
    assert f"jsonb_build_object('{contract.FLOW_KEY}'" in fire
    trigger = newest_body("awa_cron_trigger")
    for key in (contract.CRON_NAME_KEY, contract.TRIGGERED_MANUALLY_KEY, contract.TRIGGERED_BY_KEY):
        assert f"'{key}'" in trigger, key


def test_contract__job_indexes_use_the_metadata_keys() -> None:
    found = " ".join(index_definitions("awa_jobs"))
    assert f"metadata ->> '{contract.CRON_NAME_KEY}'" in found
    assert f"metadata ->> '{contract.CRON_FIRE_AT_KEY}'" in found


def test_contract__measure_counts_depth_to_the_ceiling() -> None:
    body = newest_body("awa_cron_jobs_measure")
    assert f"awa_json_depth_v1(NEW.args, {contract.JSON_DEPTH_MAX})" in body
    assert f"awa_json_depth_v1(NEW.metadata, {contract.JSON_DEPTH_MAX})" in body


def test_contract__python_validation_uses_the_contract() -> None:
    assert (flow.MAX_KEY_LENGTH, enqueue.MAX_KEY_LENGTH) == (contract.KEY_MAX_LENGTH,) * 2
    assert flow.MAX_TEMPLATE_LENGTH == contract.KEY_TEMPLATE_MAX_LENGTH
    assert {flow.MAX_LIMIT, enqueue.MAX_CONCURRENCY_LIMIT, limits.MAX_CONCURRENCY} == {
        contract.CONCURRENCY_LIMIT_MAX
    }
    assert (ranges.RANGES["concurrency_limit"].low, ranges.RANGES["concurrency_limit"].high) == (
        contract.CONCURRENCY_LIMIT_MIN,
        contract.CONCURRENCY_LIMIT_MAX,
    )
    assert (ranges.RANGES["priority"].low, ranges.RANGES["priority"].high) == (
        TASK_MIN_PRIORITY,
        TASK_MAX_PRIORITY,
    )
    assert (TASK_MIN_PRIORITY, TASK_MAX_PRIORITY) == (contract.PRIORITY_MIN, contract.PRIORITY_MAX)
    assert builder.MAX_NAME_LENGTH == contract.NAME_MAX_LENGTH
    assert validation.MAX_QUEUE_LENGTH == contract.QUEUE_MAX_LENGTH
    assert builder.RESERVED_METADATA_KEYS == contract.RESERVED_METADATA_KEYS
    assert flow.FLOW_METADATA_KEY == contract.FLOW_KEY and set(contract.FLOW_OPTION_KEYS) == flow.FLOW_OPTIONS
    assert MAX_JSON_DEPTH == contract.JSON_DEPTH_MAX and MIN_CHARS == contract.ERROR_MAX_CHARS_MIN
    assert DEFAULTS["AWA_MAX_ARGS_BYTES"] == contract.PAYLOAD_BYTES_DEFAULT
    assert DEFAULTS["AWA_MAX_JSON_DEPTH"] == contract.JSON_DEPTH_DEFAULT
    assert DEFAULTS["AWA_ERROR_MAX_CHARS"] == contract.ERROR_MAX_CHARS_DEFAULT
    # AWA_MAX_ATTEMPTS, the default of a schedule's max_attempts, takes the column's range.
    assert Kind.ATTEMPTS.accepts(contract.MAX_ATTEMPTS_MAX) and Kind.ATTEMPTS.accepts(
        contract.MAX_ATTEMPTS_MIN
    )
    assert not Kind.ATTEMPTS.accepts(contract.MAX_ATTEMPTS_MAX + 1)


def test_unique_key_limits__a_template_takes_what_a_key_takes() -> None:
    """The rule: a key (enqueue's, or a rendered template) is 1-500 characters,
    and a template too, a template without placeholders being the key itself."""
    longest = "u" * contract.KEY_MAX_LENGTH
    schedule = build_schedule("keyed", "* * * * *", TASK, unique_key=longest, concurrency_key=longest)
    assert schedule.metadata[contract.FLOW_KEY]["unique_key"] == longest
    assert enqueue.flow_keys(unique_key=longest).unique_key == longest
    for option in ("unique_key", "concurrency_key"):
        with pytest.raises(InvalidSchedule, match=option):
            build_schedule("keyed", "* * * * *", TASK, **{option: longest + "u"})
    with pytest.raises(ValueError, match=f"at most {contract.KEY_MAX_LENGTH}"):
        enqueue.flow_keys(unique_key=longest + "u")
    # A template that could render past a key is refused, whatever its own length.
    with pytest.raises(InvalidSchedule, match="renders up to"):
        build_schedule(
            "n" * contract.NAME_MAX_LENGTH, "* * * * *", TASK, unique_key="{name}{name}{name}{slot}"
        )
