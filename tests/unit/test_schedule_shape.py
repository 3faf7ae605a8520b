"""One schedule shape: every list of definition keys derives from schedule_shape.FIELDS."""

from __future__ import annotations

import dataclasses

from awa_django.cli.cron import ROW_FIELDS
from awa_django.cron import search
from awa_django.reconciliation.manifest import DEFINITION_KEYS as MANIFEST_KEYS
from awa_django.reconciliation.manifest import manifest_for
from awa_django.schedules import upsert
from awa_django.schedules.declaration import SETTINGS_KEYS as SCHEDULES_SETTINGS_KEYS
from awa_django.schedules.shape import (
    COMPARED_KEYS,
    DEFINITION_KEYS,
    FIELDS,
    RECORDSET_COLUMNS,
    REQUIRED_KEYS,
    SETTINGS_KEYS,
    Schedule,
)


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


def test_the_upsert_statements_use_the_shape() -> None:
    for key in DEFINITION_KEYS:
        assert f"d.{key}" in upsert.SYNC_OWNED and f"d.{key}" in upsert.SYNC_ADDITIVE
    for key in COMPARED_KEYS:
        assert f"c.{key}" in upsert.SYNC_OWNED and f"EXCLUDED.{key}" in upsert.SYNC_ADDITIVE
    for statement in (upsert.SYNC_OWNED, upsert.SYNC_ADDITIVE, upsert.INSERT_NEW_NAMES):
        assert RECORDSET_COLUMNS in statement
    assert "c.owner_id = EXCLUDED.owner_id AND c.retired_at IS NULL" in upsert.SYNC_OWNED
    assert "c.owner_id IS NULL AND c.retired_at IS NULL" in upsert.SYNC_ADDITIVE
    assert "DO NOTHING" in upsert.INSERT_NEW_NAMES


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
