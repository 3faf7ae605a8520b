"""One schedule shape: every list of definition keys derives from schedule_shape.FIELDS."""

from __future__ import annotations

import dataclasses

from awa_django.cli.cron import ROW_FIELDS
from awa_django.cron import search
from awa_django.declarations.declaration import SETTINGS_KEYS as SCHEDULES_SETTINGS_KEYS
from awa_django.declarations.shape import (
    COMPARED_KEYS,
    DEFINITION_KEYS,
    FIELDS,
    RECORDSET_COLUMNS,
    REQUIRED,
    REQUIRED_KEYS,
    SETTINGS_KEYS,
    Schedule,
)
from awa_django.reconciliation.manifest import DEFINITION_KEYS as MANIFEST_KEYS
from awa_django.reconciliation.manifest import manifest_for
from awa_django.store.queries import query


def schedule() -> Schedule:
    return Schedule(
        name="nightly",
        cron=search.parse_cron("0 3 * * *"),
        timezone="UTC",
        kind="app.tasks.t",
        queue="default",
        args=[1],
        kwargs={"k": "v"},
        priority=0,
        max_attempts=3,
        tags=("a",),
        metadata={"m": 1},
        missed_fire_policy="coalesce",
    )


def test_the_derived_keys_agree() -> None:
    assert MANIFEST_KEYS is DEFINITION_KEYS and SCHEDULES_SETTINGS_KEYS is SETTINGS_KEYS
    assert tuple(f.key for f in FIELDS) == DEFINITION_KEYS and DEFINITION_KEYS[1:] == COMPARED_KEYS
    assert ROW_FIELDS[: len(DEFINITION_KEYS)] == DEFINITION_KEYS
    assert {
        "cron",
        "task",
        "timezone",
        "args",
        "kwargs",
        "queue",
        "priority",
        "max_attempts",
        "tags",
        "metadata",
        "missed_fire_policy",
        "overlap",
        "starting_deadline",
        "jitter",
        "every",
        "anchor",
        # Flow control, stored in the schedule's metadata (schedules.flow).
        "unique_key",
        "concurrency_key",
        "concurrency_limit",
    } == SETTINGS_KEYS


def test_schedule_definition_has_the_manifest_keys() -> None:
    definition = schedule().definition()
    assert tuple(definition) == REQUIRED_KEYS
    assert definition["cron_expr"] == "0 3 * * *" and definition["args"] == {
        "args": [1],
        "kwargs": {"k": "v"},
    }
    assert definition["tags"] == ["a"]


def _statement(name: str) -> str:
    """Query ``name`` without its comment lines, its whitespace collapsed."""
    lines = [line for line in query(name).splitlines() if not line.lstrip().startswith("--")]
    return " ".join(" ".join(lines).split())


def _derived_upserts() -> dict[str, str]:
    """The upsert and runtime statements as FIELDS derives them (whitespace collapsed)."""
    columns = ", ".join(DEFINITION_KEYS)
    selected = ", ".join(
        f"d.{f.key}" if f.default is REQUIRED else f"COALESCE(d.{f.key}, {f.sql_default})" for f in FIELDS
    )
    assign = ", ".join(f"{k} = EXCLUDED.{k}" for k in COMPARED_KEYS)
    changed = (
        f"({', '.join(f'c.{k}' for k in COMPARED_KEYS)}) IS DISTINCT FROM "
        f"({', '.join(f'EXCLUDED.{k}' for k in COMPARED_KEYS)})"
    )

    def insert(source: str, owner: str, conflict: str) -> str:
        return (
            f"INSERT INTO awa_cron_jobs AS c ({columns}, owner_id, created_at, updated_at) "
            f"SELECT {selected}, {owner}, clock_timestamp(), clock_timestamp() FROM {source} "
            f"ORDER BY d.name ON CONFLICT (name) {conflict}"
        )

    def update_where(owner_match: str) -> str:
        return (
            f"DO UPDATE SET {assign}, updated_at = clock_timestamp() "
            f"WHERE {owner_match} AND c.retired_at IS NULL AND {changed}"
        )

    manifest = (
        f"awa_cron_manifests AS m, jsonb_to_recordset(m.manifest) AS d({RECORDSET_COLUMNS}) "
        "WHERE m.owner_id = %s AND m.desired_hash = %s"
    )
    additive = (
        f"WITH d AS (SELECT * FROM jsonb_to_recordset(%s::jsonb) AS d({RECORDSET_COLUMNS})), "
        "owned AS ( SELECT c.name FROM awa_cron_jobs AS c JOIN d USING (name) WHERE c.owner_id IS NOT NULL ), "
        "written AS ( "
        + insert(
            "d WHERE d.name NOT IN (SELECT owned.name FROM owned)", "NULL", update_where("c.owner_id IS NULL")
        )
        + " RETURNING c.name ) SELECT written.name, 'written' FROM written UNION ALL "
        "SELECT owned.name, 'owned' FROM owned"
    )
    row = f"SELECT {columns}, owner_id, retired_at IS NOT NULL FROM awa_cron_jobs WHERE name = %s"
    derived = {
        "sync_owned_schedules": insert(
            manifest, "m.owner_id", update_where("c.owner_id = EXCLUDED.owner_id")
        ),
        "insert_new_manifest_names": insert(manifest, "m.owner_id", "DO NOTHING"),
        "sync_declared_schedules": additive,
        "lock_runtime_schedule": f"{row} FOR UPDATE",
        "read_runtime_schedule": row,
        "insert_runtime_schedules": (
            f"INSERT INTO awa_cron_jobs AS c ({columns}, owner_id, created_at, updated_at) "
            f"SELECT {', '.join(f'd.{k}' for k in DEFINITION_KEYS)}, %s, clock_timestamp(), clock_timestamp() "
            f"FROM jsonb_to_recordset(%s::jsonb) AS d({RECORDSET_COLUMNS}) "
            "ON CONFLICT (name) DO NOTHING RETURNING c.name"
        ),
        "update_runtime_schedule": (
            f"UPDATE awa_cron_jobs AS c SET {', '.join(f'{k} = d.{k}' for k in COMPARED_KEYS)}, "
            "last_enqueued_at = CASE WHEN %s THEN greatest(c.last_enqueued_at, clock_timestamp()) "
            "ELSE c.last_enqueued_at END, updated_at = clock_timestamp() "
            f"FROM jsonb_to_recordset(%s::jsonb) AS d({RECORDSET_COLUMNS}) "
            "WHERE c.name = d.name AND c.owner_id = %s AND c.retired_at IS NULL RETURNING c.name"
        ),
    }
    return {name: " ".join(text.split()) for name, text in derived.items()}


def test_the_static_upserts_name_exactly_the_columns_fields_derives() -> None:
    """The upsert and runtime statements are static text in upsert.sql and
    runtime.sql; a definition field added to FIELDS and not to them fails here."""
    for name, derived in _derived_upserts().items():
        assert _statement(name) == derived, name


def test_the_static_upserts__keep_the_owner_and_retired_guards() -> None:
    assert all(f"d.{key}" in _statement("sync_owned_schedules") for key in DEFINITION_KEYS)
    assert "c.owner_id = EXCLUDED.owner_id AND c.retired_at IS NULL" in _statement("sync_owned_schedules")
    assert "c.owner_id IS NULL AND c.retired_at IS NULL" in _statement("sync_declared_schedules")
    assert _statement("insert_new_manifest_names").endswith("DO NOTHING")


def test_execution_policies_enter_the_definition_only_when_set() -> None:
    """A schedule without policies has the definition (and manifest hash) of a
    release without them; a policy that is set is part of the definition."""
    assert set(DEFINITION_KEYS) - set(REQUIRED_KEYS) == {
        "overlap",
        "starting_deadline",
        "jitter",
        "every_seconds",
        "anchor",
    }
    plain = schedule()
    skipping = dataclasses.replace(plain, overlap="skip", starting_deadline=30, jitter=0.5)
    assert "overlap" not in plain.definition() and not plain.has_policies
    definition = skipping.definition()
    assert (definition["overlap"], definition["starting_deadline"], definition["jitter"]) == ("skip", 30, 0.5)
    assert manifest_for([plain]).desired_hash != manifest_for([skipping]).desired_hash
