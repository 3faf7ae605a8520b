"""The contract with the tables: every value limit, metadata key and SQL function version, named once.

The Python validation reads these names; the database enforces the same
numbers and keys in its CHECK constraints, indexes and functions, and
``tests/db/test_contract.py`` reads those back (``pg_get_constraintdef``,
``pg_get_indexdef``, ``pg_proc.prosrc``) and compares them with the values
here, so a limit changed on one side only fails a test. Changing a value
here means a migration that changes the SQL to match.

Pure constants: no imports from the rest of the package, so any module
(the store included) may import it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

__all__ = [
    "FUNCTION_VERSIONS",
    "UNVERSIONED_FUNCTIONS",
    "current_function",
    "kept_functions",
    "previous_function",
    "CONCURRENCY_LIMIT_MAX",
    "CONCURRENCY_LIMIT_MIN",
    "CRON_EXPRESSION_MAX_LENGTH",
    "CRON_FIRE_AT_KEY",
    "CRON_NAME_KEY",
    "DURATION_MAX_SECONDS",
    "ERROR_MAX_CHARS_DEFAULT",
    "ERROR_MAX_CHARS_MIN",
    "EVERY_SECONDS_MAX",
    "EVERY_SECONDS_MIN",
    "FLOW_KEY",
    "FLOW_OPTION_KEYS",
    "INT4_MAX",
    "JSON_DEPTH_DEFAULT",
    "JSON_DEPTH_MAX",
    "KEY_HASHED_PREFIX_LENGTH",
    "KEY_MAX_LENGTH",
    "KEY_TEMPLATE_MAX_LENGTH",
    "LABEL_MAX_BYTES",
    "MANUAL_SLOT_PREFIX",
    "MAX_ATTEMPTS_MAX",
    "MAX_ATTEMPTS_MIN",
    "MAX_TAGS",
    "NAME_MAX_LENGTH",
    "OWNER_ID_MAX_LENGTH",
    "PAYLOAD_BYTES_DEFAULT",
    "PRIORITY_MAX",
    "PRIORITY_MIN",
    "QUEUE_MAX_LENGTH",
    "RESERVED_METADATA_KEYS",
    "TIMESTAMP_MAX",
    "TIMESTAMP_MIN",
    "TRIGGERED_BY_KEY",
    "TRIGGERED_MANUALLY_KEY",
]

# --- value limits ---

# The largest value of a PostgreSQL ``integer`` column.
INT4_MAX = 2**31 - 1

# A schedule's name, and each of its tags: 1-200 characters
# (awa_cron_jobs_name_check).
NAME_MAX_LENGTH = 200
# A schedule's tags: at most this many (Python only: the column is text[]).
MAX_TAGS = 20
# A queue name, of a schedule or a job: 1-200 characters (awa_jobs_queue_length_check).
QUEUE_MAX_LENGTH = 200
# An owner id: 1-200 characters once trimmed (awa_cron_owners_owner_id_check).
OWNER_ID_MAX_LENGTH = 200
# Owner ids and revisions as the Python validation takes them: at most 200
# UTF-8 bytes, so never more than OWNER_ID_MAX_LENGTH characters either.
LABEL_MAX_BYTES = OWNER_ID_MAX_LENGTH
# A cron expression longer than this is refused before it is parsed (Python only).
CRON_EXPRESSION_MAX_LENGTH = 256

# A job's unique_key and concurrency_key: 1-500 characters
# (awa_jobs_unique_key_length_check, awa_jobs_concurrency_key_length_check);
# a btree index entry must stay well under 2,700 bytes.
KEY_MAX_LENGTH = 500
# A schedule's key template (unique_key / concurrency_key): a template without
# placeholders is the key itself, so it takes what a key takes; one with
# placeholders must also render within KEY_MAX_LENGTH (schedules.flow).
KEY_TEMPLATE_MAX_LENGTH = KEY_MAX_LENGTH
# A rendering past KEY_MAX_LENGTH written by hand keeps this many characters,
# then "#" and its md5 (32 hex digits): awa_flow_key_v1.
KEY_HASHED_PREFIX_LENGTH = KEY_MAX_LENGTH - 33
# The {slot} of an operator's trigger: "manual:<job id>" (awa_jobs_flow_keys_v2).
MANUAL_SLOT_PREFIX = "manual:"
# How many jobs with one concurrency key run at once (awa_jobs_concurrency_limit_check).
CONCURRENCY_LIMIT_MIN = 1
CONCURRENCY_LIMIT_MAX = 1_000_000

# A job's and a schedule's priority (awa_jobs_priority_check, awa_cron_jobs_priority_check).
PRIORITY_MIN = -100
PRIORITY_MAX = 100
# A schedule's max_attempts (awa_cron_jobs_max_attempts_check).
MAX_ATTEMPTS_MIN = 1
MAX_ATTEMPTS_MAX = 1000
# An interval schedule's every_seconds: an integer column, at least 1
# (awa_cron_jobs_every_seconds_check).
EVERY_SECONDS_MIN = 1
EVERY_SECONDS_MAX = INT4_MAX
# The longest starting deadline or jitter, in seconds: 100 years of 366 days
# (awa_cron_jobs_starting_deadline_range_check, awa_cron_jobs_jitter_range_check).
DURATION_MAX_SECONDS = 100 * 366 * 86400

# The instants an unfinished job's timestamps may hold: a day inside Python's
# years 1-9999, so every one reads back and shows in any zone (awa_jobs_timestamps_check).
TIMESTAMP_MIN = datetime.min.replace(tzinfo=UTC) + timedelta(days=1)
TIMESTAMP_MAX = datetime.max.replace(tzinfo=UTC) - timedelta(days=1)

# Payloads (args, metadata, results, errors): AWA_MAX_ARGS_BYTES' default, in
# bytes of JSON text (the SQL takes the setting as a parameter).
PAYLOAD_BYTES_DEFAULT = 1024 * 1024
# AWA_MAX_JSON_DEPTH's default and ceiling; the measure trigger counts a
# payload's depth up to the ceiling (awa_cron_jobs_measure_v1).
JSON_DEPTH_DEFAULT = 32
JSON_DEPTH_MAX = 200
# AWA_ERROR_MAX_CHARS' default, and the least bound in effect (Python only:
# a bound below this would cut even the exception's own line).
ERROR_MAX_CHARS_DEFAULT = 20_000
ERROR_MAX_CHARS_MIN = 200

# --- metadata keys ---

# Written into a fired job's metadata by the fire function (awa_cron_fire_*):
# the schedule's name and the slot (ISO 8601 UTC, whole seconds).
CRON_NAME_KEY = "cron_name"
CRON_FIRE_AT_KEY = "cron_fire_at"
# Written by an operator's trigger (awa_cron_trigger_v1) instead of the slot.
TRIGGERED_MANUALLY_KEY = "triggered_manually"
TRIGGERED_BY_KEY = "triggered_by"
# A schedule's flow-control options, in its metadata (rendered into a fired
# job's columns, then removed, by awa_jobs_flow_keys_v2), and their keys.
FLOW_KEY = "awa_flow"
FLOW_OPTION_KEYS = ("unique_key", "concurrency_key", "concurrency_limit")
# Keys a schedule's own metadata may not use: a job could claim to be a fire it is not.
RESERVED_METADATA_KEYS = frozenset(
    {CRON_NAME_KEY, CRON_FIRE_AT_KEY, TRIGGERED_MANUALLY_KEY, TRIGGERED_BY_KEY, FLOW_KEY}
)

# --- SQL function versions ---
# The version of each versioned SQL function family (``awa_<family>_v<N>``)
# the code calls and the newest migration installs; the SQL of each is in
# awa_django/store/current_sql/functions/. The previous version (N-1) of a family
# stays installed for one release, so processes of the previous release keep
# working mid-upgrade (docs/explanation/sql-versions.md); a later migration
# drops it. Tests compare this table with the installed functions and with
# every call in the package's Python and named queries.
FUNCTION_VERSIONS: dict[str, int] = {
    "awa_claim": 3,
    "awa_claim_pick": 1,
    "awa_complete": 1,
    "awa_complete_claim": 3,
    "awa_complete_many": 1,
    "awa_cron_fire": 8,
    "awa_cron_jitter": 1,
    "awa_cron_jobs_invalidate": 2,
    "awa_cron_jobs_measure": 1,
    "awa_cron_jobs_notify": 1,
    "awa_cron_lock_evidence": 1,
    "awa_cron_schedule_fence": 4,
    "awa_cron_trigger": 1,
    "awa_cron_unknown_runtime": 1,
    "awa_cron_upsert": 2,
    "awa_errors_append": 1,
    "awa_fail": 2,
    "awa_fail_job": 2,
    "awa_flow_key": 1,
    "awa_heartbeat": 1,
    "awa_jobs_flow_keys": 2,
    "awa_jobs_notify": 1,
    "awa_jobs_started_at": 1,
    "awa_json_depth": 1,
    "awa_key_room": 1,
    "awa_queue_room": 1,
    "awa_release": 3,
    "awa_rescue": 2,
}

# SQL functions without a version suffix: their contract never changes.
UNVERSIONED_FUNCTIONS: frozenset[str] = frozenset(
    {"awa_cron_protocol_lock", "awa_cron_protocol_version", "awa_format_fire_at"}
)


def current_function(family: str) -> str:
    """The name of ``family``'s current version: ``awa_cron_fire`` -> ``awa_cron_fire_v8``."""
    return f"{family}_v{FUNCTION_VERSIONS[family]}"


def previous_function(family: str) -> str | None:
    """The name of ``family``'s previous version, kept installed for one release; None for a v1."""
    version = FUNCTION_VERSIONS[family]
    return f"{family}_v{version - 1}" if version > 1 else None


def kept_functions() -> frozenset[str]:
    """Every SQL function the newest migration leaves installed: the current and
    previous version of each family, and the unversioned functions."""
    names = {current_function(family) for family in FUNCTION_VERSIONS}
    names |= {name for family in FUNCTION_VERSIONS if (name := previous_function(family))}
    return frozenset(names | UNVERSIONED_FUNCTIONS)
