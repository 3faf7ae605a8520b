"""The shape of a schedule definition, written once.

:data:`FIELDS` lists the definition columns of ``awa_cron_jobs`` in order:
the manifest keys (:data:`DEFINITION_KEYS`), the ``AWA_SCHEDULES`` options
(:data:`SETTINGS_KEYS`), the SQL recordset columns and the compared columns
of the upsert (:mod:`.upsert`), :meth:`Schedule.definition`, the definition
of a stored row (built in SQL by :mod:`.evidence`) and the CLI's ``ROW_FIELDS``
are all derived from it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..cron.search import CronExpression
from .flow import FLOW_OPTIONS


@dataclass(frozen=True)
class DefinitionField:
    """One definition column: its key, its SQL type, the settings options that feed it."""

    key: str
    sql_type: str
    settings: tuple[str, ...]


FIELDS = (
    DefinitionField("name", "text", ()),  # the key of the AWA_SCHEDULES entry
    DefinitionField("cron_expr", "text", ("cron",)),
    DefinitionField("timezone", "text", ("timezone",)),
    DefinitionField("kind", "text", ("task",)),
    DefinitionField("queue", "text", ("queue",)),
    DefinitionField("args", "jsonb", ("args", "kwargs")),
    DefinitionField("priority", "integer", ("priority",)),
    DefinitionField("max_attempts", "integer", ("max_attempts",)),
    DefinitionField("tags", "text[]", ("tags",)),
    DefinitionField("metadata", "jsonb", ("metadata",)),
    DefinitionField("missed_fire_policy", "text", ("missed_fire_policy",)),
)

# The keys of one manifest entry (a full schedule definition), in column order.
DEFINITION_KEYS = tuple(f.key for f in FIELDS)
# The columns an upsert compares and writes (everything but the name).
COMPARED_KEYS = DEFINITION_KEYS[1:]
# Keys accepted in an AWA_SCHEDULES entry: the definition's, and the flow-control
# options (stored in the schedule's metadata, see .flow).
SETTINGS_KEYS = frozenset(option for f in FIELDS for option in f.settings) | FLOW_OPTIONS
# The column list of ``jsonb_to_recordset(...) AS d(...)`` reading definitions.
RECORDSET_COLUMNS = ", ".join(f"{f.key} {f.sql_type}" for f in FIELDS)


@dataclass(frozen=True, slots=True)
class Schedule:
    """One validated schedule definition, as stored in ``awa_cron_jobs``."""

    name: str
    cron: CronExpression
    timezone: str
    kind: str
    queue: str
    args: list[Any]
    kwargs: dict[str, Any]
    priority: int
    max_attempts: int
    tags: tuple[str, ...]
    metadata: dict[str, Any]
    missed_fire_policy: str
    source: str = field(default="", compare=False)

    def definition(self) -> dict[str, Any]:
        """The row's definition columns (everything the sync writes), keyed as in a manifest."""
        return {
            k: _FROM_SCHEDULE[k](self) if k in _FROM_SCHEDULE else getattr(self, k) for k in DEFINITION_KEYS
        }


# The definition columns a Schedule does not hold under the column's own name.
_FROM_SCHEDULE: dict[str, Callable[[Schedule], Any]] = {
    "cron_expr": lambda s: s.cron.text,
    "args": lambda s: {"args": s.args, "kwargs": s.kwargs},
    "tags": lambda s: list(s.tags),
}
