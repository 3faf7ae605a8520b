"""The shape of a schedule definition, written once.

:data:`FIELDS` lists the definition columns of ``awa_cron_jobs`` in order:
the manifest keys (:data:`DEFINITION_KEYS`), the SQL recordset columns and the
compared columns of the upsert (:mod:`.upsert`), :meth:`Schedule.definition`,
the definition of a stored row (built in SQL by :mod:`.evidence`) and the
CLI's ``ROW_FIELDS`` are all derived from it.

:data:`OPTIONS`, derived from it and the flow-control options, is the one
list of a schedule's options: the ``AWA_SCHEDULES`` keys
(:data:`SETTINGS_KEYS`), the keys ``create_schedule`` / ``update_schedule``
and ``awa cron create|edit --option`` accept, and the options a stored row
gives back (``runtime.row_options``) derive from it; the explicit keyword
parameters of ``periodic()``, ``build_schedule()`` and ``create_schedule()``,
the CLI's dedicated flags and the admin form's fields are checked against it
by tests (:func:`option_differences` names the option in one and not the
other). See docs/explanation/architecture.md, "Adding a schedule option".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..cron.search import CronExpression, Interval, Timing, interval_anchor
from .flow import FLOW_OPTION_NAMES

# The value of a definition field that every definition must carry.
REQUIRED: Any = object()


@dataclass(frozen=True)
class DefinitionField:
    """One definition column: its key, its SQL type, the settings options that feed it.

    A field with a ``default`` (the execution policies) is left out of a
    definition while it holds that default, so the manifest (and its hash) of
    schedules that do not use it reads as written by runtimes that predate
    it; ``sql_default`` is what the upsert writes for an absent key.
    """

    key: str
    sql_type: str
    settings: tuple[str, ...]
    default: Any = REQUIRED
    sql_default: str = "NULL"


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
    # Execution policies (see docs/explanation/semantics.md#execution-policies).
    DefinitionField("overlap", "text", ("overlap",), "allow", "'allow'"),
    DefinitionField("starting_deadline", "double precision", ("starting_deadline",), None),
    DefinitionField("jitter", "double precision", ("jitter",), 0, "0"),
    # An interval's timing (cron_expr is then NULL); left out of the
    # definition of a cron schedule, whose manifest and hash stay as they were.
    DefinitionField("every_seconds", "integer", ("every",), None),
    DefinitionField("anchor", "timestamptz", ("anchor",), None),
)
# The values of the optional fields (execution policies, interval) left out
# of a definition while at their default.
POLICY_DEFAULTS = {f.key: f.default for f in FIELDS if f.default is not REQUIRED}
# The execution policies proper.
POLICY_KEYS = ("overlap", "starting_deadline", "jitter")

# The keys of one manifest entry (a full schedule definition), in column order;
# those of POLICY_DEFAULTS only when they differ from their default.
DEFINITION_KEYS = tuple(f.key for f in FIELDS)
REQUIRED_KEYS = tuple(f.key for f in FIELDS if f.default is REQUIRED)
# The columns an upsert compares and writes (everything but the name).
COMPARED_KEYS = DEFINITION_KEYS[1:]
# Every option of a schedule, as periodic() and AWA_SCHEDULES take it: the
# definition's (FIELDS' settings), then the flow-control options (stored in
# the schedule's metadata, see .flow).
OPTIONS: tuple[str, ...] = (*(option for f in FIELDS for option in f.settings), *FLOW_OPTION_NAMES)
# Keys accepted in an AWA_SCHEDULES entry (and by the runtime API and the CLI's --option).
SETTINGS_KEYS = frozenset(OPTIONS)
# The column list of ``jsonb_to_recordset(...) AS d(...)`` reading definitions.
RECORDSET_COLUMNS = ", ".join(f"{f.key} {f.sql_type}" for f in FIELDS)


@dataclass(frozen=True, slots=True)
class Schedule:
    """One validated schedule definition, as stored in ``awa_cron_jobs``."""

    name: str
    cron: CronExpression | None  # None for an interval schedule
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
    overlap: str = "allow"
    # Seconds (int when whole, so the manifest's JSON is stable); None = no deadline.
    starting_deadline: float | None = None
    jitter: float = 0
    # An interval schedule: whole seconds between slots, and the explicit
    # anchor (None: the row's creation, truncated to the second).
    every: int | None = None
    anchor: datetime | None = None
    source: str = field(default="", compare=False)

    def timing(self, created_at: datetime) -> Timing:
        """What the schedule fires on, for a row created at ``created_at``."""
        if self.cron is not None:
            return self.cron
        assert self.every is not None
        return Interval(self.every, interval_anchor(self.anchor, created_at))

    def definition(self) -> dict[str, Any]:
        """The row's definition columns (everything the sync writes), keyed as in a manifest.

        Execution policies at their default are left out (see :class:`DefinitionField`).
        """
        values = self.columns()
        return {k: v for k, v in values.items() if k not in POLICY_DEFAULTS or v != POLICY_DEFAULTS[k]}

    def columns(self) -> dict[str, Any]:
        """Every definition column, defaults included (what a row stores)."""
        return {
            k: _FROM_SCHEDULE[k](self) if k in _FROM_SCHEDULE else getattr(self, k) for k in DEFINITION_KEYS
        }

    @property
    def has_policies(self) -> bool:
        """Whether any execution policy differs from its default."""
        return any(getattr(self, k) != POLICY_DEFAULTS[k] for k in POLICY_KEYS)


def option_differences(where: str, names: Iterable[str], *, partial: bool = False) -> list[str]:
    """How the options ``where`` takes (``names``) differ from :data:`OPTIONS`, one
    sentence each; ``[]`` when they agree. ``partial``: ``where`` may leave options
    out (it takes the others some other way), but may not name one that is none."""
    given = set(names)
    unknown = [
        f"{where} takes {name!r}, which is not a schedule option (shape.OPTIONS)"
        for name in sorted(given - SETTINGS_KEYS)
    ]
    if partial:
        return unknown
    missing = [
        f"option {name!r} (shape.OPTIONS) is missing from {where}" for name in OPTIONS if name not in given
    ]
    return missing + unknown


# The definition columns a Schedule does not hold under the column's own name.
_FROM_SCHEDULE: dict[str, Callable[[Schedule], Any]] = {
    "cron_expr": lambda s: None if s.cron is None else s.cron.text,
    "every_seconds": lambda s: s.every,
    "anchor": lambda s: None if s.anchor is None else s.anchor.astimezone(UTC).isoformat(),
    "args": lambda s: {"args": s.args, "kwargs": s.kwargs},
    "tags": lambda s: list(s.tags),
}
