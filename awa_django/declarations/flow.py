"""A schedule's flow-control options: ``unique_key``, ``concurrency_key``, ``concurrency_limit``.

Each key is a fixed string or a template over ``{name}`` (the schedule's name)
and ``{slot}`` (the fire's slot, as ``cron_fire_at``; ``manual:<job id>`` for
an operator's trigger). They are stored in the schedule's metadata under
``awa_flow``; a trigger on ``awa_jobs`` (sql/0017_flow_control.sql) renders
them into the fired job's ``unique_key`` / ``concurrency_key`` columns. A fire
whose unique key an unfinished job holds inserts nothing (the fire statement's
``ON CONFLICT DO NOTHING``): the slot is skipped, recorded in the slot
history as ``skipped_unique`` and counted, as an overlap skip is.

A template is at most as long as a key (500 characters: a template without
placeholders is the key), and one that could render past a key's 500
characters is refused too, naming the schedule and the option (the limits
are :mod:`awa_django.contract`'s): cutting the key (as the database
did) could drop the ``{slot}`` that tells slots apart, merging them. A row
written by hand with such a template gets a hashed key instead (the trigger's
``awa_flow_key_v1``): never two renderings as one key.
"""

from __future__ import annotations

import re
from typing import Any

from .. import contract
from ..exceptions import InvalidSchedule

FLOW_METADATA_KEY = contract.FLOW_KEY
# The options, as AWA_SCHEDULES keys and periodic() arguments, in that order.
FLOW_OPTION_NAMES = contract.FLOW_OPTION_KEYS
FLOW_OPTIONS = frozenset(FLOW_OPTION_NAMES)
# A template takes what a key takes: one without placeholders is the key.
MAX_TEMPLATE_LENGTH = contract.KEY_TEMPLATE_MAX_LENGTH
# A rendered key's limit (awa_jobs' check), and the longest {slot}: a fire's
# "YYYY-MM-DDTHH:MM:SS+00:00" (25) or a trigger's "manual:<job id>" (7 + 19).
MAX_KEY_LENGTH = contract.KEY_MAX_LENGTH
MAX_SLOT_LENGTH = len(contract.MANUAL_SLOT_PREFIX) + 19
PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
MIN_LIMIT = contract.CONCURRENCY_LIMIT_MIN
MAX_LIMIT = contract.CONCURRENCY_LIMIT_MAX


def _template(name: str, field_name: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidSchedule(name, field_name, f"must be a non-empty string, got {value!r:.100}")
    if len(value) > MAX_TEMPLATE_LENGTH or "\x00" in value:
        raise InvalidSchedule(name, field_name, f"must be 1-{MAX_TEMPLATE_LENGTH} characters, no NUL")
    unknown = sorted({p for p in PLACEHOLDER.findall(value) if p not in ("name", "slot")})
    if unknown or "{" in PLACEHOLDER.sub("", value) or "}" in PLACEHOLDER.sub("", value):
        raise InvalidSchedule(
            name, field_name, f"may use only the placeholders {{name}} and {{slot}}, got {value!r:.100}"
        )
    longest = rendered_length(value, name)
    if longest > MAX_KEY_LENGTH:
        raise InvalidSchedule(
            name,
            field_name,
            f"renders up to {longest} characters with this schedule's name; a key holds "
            f"{MAX_KEY_LENGTH} (use {{name}} and {{slot}} once each, or a shorter template)",
        )
    return value


def rendered_length(template: str, name: str) -> int:
    """The longest key ``template`` renders to for schedule ``name``, replacing
    as the database does (sql/0026_payload_measure.sql, awa_flow_key_v1):
    ``{name}`` first, then ``{slot}`` (any in the name too) at its longest."""
    return len(template.replace("{name}", name).replace("{slot}", "0" * MAX_SLOT_LENGTH))


def split_flow(metadata: Any) -> tuple[Any, dict[str, Any]]:
    """A stored schedule metadata as declaration options: (the metadata without
    ``awa_flow``, the flow options it held). The inverse of :func:`flow_metadata`."""
    if not isinstance(metadata, dict) or FLOW_METADATA_KEY not in metadata:
        return metadata, {}
    flow = metadata[FLOW_METADATA_KEY]
    rest = {k: v for k, v in metadata.items() if k != FLOW_METADATA_KEY}
    return rest, {k: v for k, v in flow.items() if k in FLOW_OPTIONS} if isinstance(flow, dict) else {}


def flow_metadata(name: str, unique_key: Any, concurrency_key: Any, concurrency_limit: Any) -> dict[str, Any]:
    """``{"awa_flow": {...}}`` for the schedule's metadata, ``{}`` without options."""
    flow: dict[str, Any] = {}
    if unique_key is not None:
        flow["unique_key"] = _template(name, "unique_key", unique_key)
    if concurrency_key is not None:
        flow["concurrency_key"] = _template(name, "concurrency_key", concurrency_key)
    if concurrency_limit is not None:
        if concurrency_key is None:
            raise InvalidSchedule(name, "concurrency_limit", "needs a concurrency_key")
        limit = concurrency_limit
        if isinstance(limit, bool) or not isinstance(limit, int) or not MIN_LIMIT <= limit <= MAX_LIMIT:
            raise InvalidSchedule(
                name,
                "concurrency_limit",
                f"must be a whole number {MIN_LIMIT}-{MAX_LIMIT}, got {limit!r:.50}",
            )
        flow["concurrency_limit"] = limit
    return {FLOW_METADATA_KEY: flow} if flow else {}
