"""manifest.py: canonical manifests and their hash (no database)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from awa_django.reconciliation.manifest import (
    DEFINITION_KEYS,
    InvalidManifest,
    build_manifest,
    canonical_json,
)


def definition(name: str, **changes: Any) -> dict[str, Any]:
    base = {key: None for key in DEFINITION_KEYS}
    base.update(
        name=name,
        cron_expr="0 3 * * *",
        timezone="UTC",
        kind="tests.testapp.tasks.record",
        queue="default",
        args={"args": [], "kwargs": {"b": 1, "a": [3, 1]}},
        priority=0,
        max_attempts=3,
        tags=[],
        metadata={},
        missed_fire_policy="coalesce",
    )
    base.update(changes)
    return base


def test_canonical_json__sorted_keys_compact_and_unicode() -> None:
    assert canonical_json({"b": 1, "a": {"d": [2, 1], "c": "é"}}) == '{"a":{"c":"é","d":[2,1]},"b":1}'
    with pytest.raises(ValueError):
        canonical_json({"x": float("nan")})


def test_build_manifest__order_of_schedules_and_keys_does_not_change_the_hash() -> None:
    one = build_manifest([definition("b"), definition("a")])
    reordered = {
        k: v
        for k, v in reversed(
            list(definition("b", args={"args": [], "kwargs": {"a": [3, 1], "b": 1}}).items())
        )
    }
    two = build_manifest([definition("a"), reordered])
    assert one.names == ["a", "b"]
    assert one.text == two.text and one.desired_hash == two.desired_hash
    assert one.desired_hash == hashlib.sha256(one.text.encode()).hexdigest()
    assert json.loads(one.text) == list(one.entries)


def test_build_manifest__any_change_of_definition_changes_the_hash() -> None:
    base = build_manifest([definition("a")]).desired_hash
    assert build_manifest([definition("a", cron_expr="0 4 * * *")]).desired_hash != base
    # Array order is meaning, kept as written.
    assert (
        build_manifest([definition("a", tags=["y", "x"])]).desired_hash
        != build_manifest([definition("a", tags=["x", "y"])]).desired_hash
    )


def test_build_manifest__extra_keys_are_not_hashed() -> None:
    assert (
        build_manifest([definition("a", description="ignored")]).text
        == build_manifest([definition("a")]).text
    )


@pytest.mark.parametrize(
    ("definitions", "message"),
    [
        ([definition("a"), definition("a")], "appears twice"),
        ([definition("   ")], "invalid schedule name"),
        ([definition("x" * 1000)], "invalid schedule name"),
        ([definition("nul\x00")], "invalid schedule name"),
        ([{"name": "partial"}], "lacks"),
    ],
)
def test_build_manifest__refuses_invalid_entries(definitions: list[dict[str, Any]], message: str) -> None:
    with pytest.raises(InvalidManifest, match=message):
        build_manifest(definitions)


def test_build_manifest__empty_is_a_valid_manifest() -> None:
    empty = build_manifest([])
    assert empty.entries == () and empty.text == "[]"
