"""The constants the Python code and the SQL share, each named once."""

from __future__ import annotations

# --- SQL function versions ---
# The version of each versioned SQL function family (``awa_<family>_v<N>``)
# the code calls and the newest migration installs; the SQL of each is in
# awa_django/store/schema/functions/. The previous version (N-1) of a family
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
