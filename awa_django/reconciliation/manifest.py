"""Canonical manifests: an owner's complete desired schedule set, hashed.

Every runtime of an owner must compute the same bytes for the same schedules,
whatever the declaration order or the key order of nested args/metadata:
schedules are sorted by name, object keys are sorted recursively (array order
is kept), the JSON is compact, and the hash is SHA-256 of it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..declarations.builder import MAX_NAME_LENGTH
from ..declarations.shape import DEFINITION_KEYS, POLICY_DEFAULTS, REQUIRED_KEYS, Schedule

__all__ = [
    "DEFINITION_KEYS",
    "REQUIRED_KEYS",
    "InvalidManifest",
    "Manifest",
    "build_manifest",
    "canonical_json",
    "manifest_for",
]


class InvalidManifest(ValueError):
    """A manifest cannot be built (blank or duplicate names, bad entries)."""


@dataclass(frozen=True, slots=True)
class Manifest:
    """A canonical manifest: its entries, JSON text and hash."""

    entries: tuple[dict[str, Any], ...]
    text: str
    desired_hash: str

    @property
    def names(self) -> list[str]:
        return [e["name"] for e in self.entries]


def canonical_json(value: Any) -> str:
    """Compact JSON with every object's keys sorted, recursively."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def build_manifest(definitions: Iterable[Mapping[str, Any]]) -> Manifest:
    """Validate and canonicalise schedule definitions (dicts with DEFINITION_KEYS)."""
    entries: list[dict[str, Any]] = []
    seen: set[str] = set()
    for definition in definitions:
        missing = [k for k in REQUIRED_KEYS if k not in definition]
        if missing:
            raise InvalidManifest(f"manifest entry {definition.get('name')!r} lacks {missing}")
        name = definition["name"]
        if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME_LENGTH or "\x00" in name:
            raise InvalidManifest(f"invalid schedule name {name!r} in manifest")
        if name in seen:
            raise InvalidManifest(f"schedule {name!r} appears twice in the manifest")
        seen.add(name)
        # Round-trip through canonical JSON: the entry is exactly what is hashed.
        # Policies at their default are left out, as Schedule.definition does.
        entry = {
            k: definition[k]
            for k in DEFINITION_KEYS
            if k in definition and (k not in POLICY_DEFAULTS or definition[k] != POLICY_DEFAULTS[k])
        }
        entries.append(json.loads(canonical_json(entry)))
    entries.sort(key=lambda e: e["name"])
    text = canonical_json(entries)
    return Manifest(tuple(entries), text, hashlib.sha256(text.encode("utf-8")).hexdigest())


def manifest_for(schedules: Iterable[Schedule]) -> Manifest:
    """The manifest of validated :class:`Schedule` objects."""
    return build_manifest(s.definition() for s in schedules)
