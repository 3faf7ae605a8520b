"""Which ``awa_*`` tables a migration alters, in each direction, and whether it
takes the lock order first (awa_django.db.lock_order).

What counts as *altering* a table: any statement that locks it in a mode a live
writer conflicts with or that writes its rows, i.e. Django's schema operations
on a managed model (fields, indexes, constraints, deleting or renaming it, a
foreign key to it) and, in the SQL a migration runs (``RunSQL`` and the
``.sql`` files), ``ALTER TABLE``, ``LOCK TABLE``, ``CREATE [UNIQUE] INDEX`` and
``DROP INDEX`` (not ``CONCURRENTLY``: those run alone, outside a transaction),
``CREATE``/``DROP TRIGGER``, ``RULE`` or ``POLICY ... ON``, ``DROP TABLE``,
``TRUNCATE``, ``REFERENCES``, ``INSERT INTO``, ``UPDATE``, ``DELETE FROM``,
``COMMENT ON TABLE``/``COLUMN``, ``REINDEX TABLE``, ``CLUSTER`` and ``VACUUM``.
Statements inside function bodies do not run when the migration does and do
not count; those of ``DO`` blocks do. A table the migration itself creates in
that direction is not counted (no one else sees it before the commit). A
``RunPython`` may write anything: it counts as altering several tables.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import migrations
from django.db.migrations.operations.base import Operation
from django.db.migrations.state import ProjectState

from awa_django.db.lock_order import TABLE_LOCK_ORDER, LockOrder

APP = "awa_django"
NAME = r"(\w+)"
LIST = r"(\w+(?:\s*,\s*\w+)*)"

# Statements whose (first) group names the table(s) they alter.
ALTERING = [
    re.compile(p, re.IGNORECASE | re.DOTALL)
    for p in (
        rf"\bALTER\s+TABLE\s+(?:IF\s+EXISTS\s+)?(?:ONLY\s+)?{NAME}",
        rf"\bLOCK\s+(?:TABLE\s+)?(?:ONLY\s+)?{LIST}",
        rf"\bCREATE\s+(?:UNIQUE\s+)?INDEX\s+(?!CONCURRENTLY\b)(?:IF\s+NOT\s+EXISTS\s+)?\w*\s*ON\s+(?:ONLY\s+)?{NAME}",
        rf"\b(?:CREATE|DROP)\s+(?:OR\s+REPLACE\s+)?(?:CONSTRAINT\s+)?(?:TRIGGER|RULE|POLICY)\s+[^;]*?\bON\s+{NAME}",
        rf"\bDROP\s+TABLE\s+(?:IF\s+EXISTS\s+)?{LIST}",
        rf"\bTRUNCATE\s+(?:TABLE\s+)?(?:ONLY\s+)?{LIST}",
        rf"\bREFERENCES\s+{NAME}",
        rf"\bINSERT\s+INTO\s+{NAME}",
        rf"\bMERGE\s+INTO\s+(?:ONLY\s+)?{NAME}",
        rf"\bCOPY\s+{NAME}\s*(?:\([^)]*\)\s*)?FROM\b",
        rf"\bUPDATE\s+(?:ONLY\s+)?{NAME}",
        rf"\bDELETE\s+FROM\s+(?:ONLY\s+)?{NAME}",
        rf"\bCOMMENT\s+ON\s+(?:TABLE|COLUMN)\s+{NAME}",
        rf"\b(?:REINDEX\s+TABLE|CLUSTER|VACUUM(?:\s+FULL)?)\s+{NAME}",
    )
]
DROP_INDEX = re.compile(
    rf"\b(?:DROP|ALTER)\s+INDEX\s+(?!CONCURRENTLY\b)(?:IF\s+EXISTS\s+)?{NAME}", re.IGNORECASE
)
# Quoted and schema-qualified names ("awa_jobs", public.awa_jobs) read as plain ones.
QUOTES = re.compile(r'"')
SCHEMA = re.compile(r"\b\w+\s*\.\s*(awa_\w+)", re.IGNORECASE)
CREATE_TABLE = re.compile(
    rf"\bCREATE\s+(?:UNLOGGED\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?{NAME}", re.IGNORECASE
)
FUNCTION_BODY = re.compile(
    r"(\bCREATE\s+(?:OR\s+REPLACE\s+)?(?:FUNCTION|PROCEDURE)\b.*?\bAS\s+)\$(\w*)\$.*?\$\2\$",
    re.IGNORECASE | re.DOTALL,
)
COMMENT = re.compile(r"--[^\n]*")


@dataclass
class Tables:
    """The ``awa_*`` tables one direction of a migration alters and creates."""

    altered: set[str] = field(default_factory=set)
    created: set[str] = field(default_factory=set)
    unknown: list[str] = field(default_factory=list)  # what the rule cannot see into

    @property
    def existing(self) -> set[str]:
        """Altered tables that exist before the migration runs in this direction."""
        return self.altered - self.created


def _sql_text(sql: Any) -> str:
    if sql == migrations.RunSQL.noop or sql is None:
        return ""
    if isinstance(sql, str):
        return sql
    return "\n".join(s if isinstance(s, str) else s[0] for s in sql)


def sql_tables(sql: str) -> Tables:
    """The tables the statements of ``sql`` alter and create."""
    text = FUNCTION_BODY.sub(r"\1''", COMMENT.sub("", sql))
    text = SCHEMA.sub(r"\1", QUOTES.sub("", text))
    found = Tables()
    for pattern in ALTERING:
        for match in pattern.finditer(text):
            found.altered.update(n.strip().lower() for n in match.group(1).split(","))
    for match in DROP_INDEX.finditer(text):
        index = match.group(1).lower()
        owners = [t for t in TABLE_LOCK_ORDER if index.startswith(f"{t}_")]
        if owners:
            found.altered.add(max(owners, key=len))
        elif index.startswith("awa_"):
            found.unknown.append(f"DROP INDEX {index} (name an index after its table: '<table>_...')")
    found.created.update(m.group(1).lower() for m in CREATE_TABLE.finditer(text))
    found.altered = {t for t in found.altered if t.startswith("awa_")}
    found.created = {t for t in found.created if t.startswith("awa_")}
    return found


def _table(state: ProjectState, model: Any) -> str | None:
    """The table of a managed model of the state (``model``: a name or a reference)."""
    label = model if isinstance(model, str) else f"{model._meta.app_label}.{model._meta.model_name}"
    app_label, _, name = label.lower().rpartition(".")
    model_state = state.models.get((app_label or APP, name))
    if model_state is None or not model_state.options.get("managed", True):
        return None
    table = model_state.options.get("db_table") or f"{app_label or APP}_{name}"
    return str(table)


def _foreign_tables(state: ProjectState, fields: Iterable[Any]) -> set[str]:
    tables = set()
    for item in fields:
        remote = getattr(item, "remote_field", None)
        if remote is not None and getattr(remote, "model", None) is not None:
            table = _table(state, remote.model)
            if table:
                tables.add(table)
    return tables


def _merge(into: Tables, other: Tables) -> None:
    into.altered |= other.altered
    into.created |= other.created
    into.unknown += other.unknown


def operation_tables(op: Operation, state: ProjectState) -> tuple[Tables, Tables]:
    """What ``op`` alters and creates applied forwards and backwards, in ``state``."""
    forwards, backwards = Tables(), Tables()
    if isinstance(op, LockOrder):
        pass
    elif isinstance(op, migrations.RunSQL):
        forwards, backwards = sql_tables(_sql_text(op.sql)), sql_tables(_sql_text(op.reverse_sql))
    elif isinstance(op, migrations.SeparateDatabaseAndState):
        for inner in op.database_operations:
            f, b = operation_tables(inner, state)
            _merge(forwards, f)
            _merge(backwards, b)
    elif isinstance(op, migrations.RunPython):
        forwards.unknown.append("RunPython")
        backwards.unknown.append("RunPython")
    elif isinstance(op, migrations.CreateModel):
        table = (op.options or {}).get("db_table") or f"{APP}_{op.name_lower}"
        if (op.options or {}).get("managed", True):
            forwards.created.add(table)
            forwards.altered.add(table)
            backwards.altered.add(table)
        foreign = _foreign_tables(state, (f for _, f in op.fields))
        forwards.altered |= foreign
        backwards.altered |= foreign
    else:
        _model_operation_tables(op, state, forwards, backwards)
    return forwards, backwards


def _model_operation_tables(op: Operation, state: ProjectState, forwards: Tables, backwards: Tables) -> None:
    """A schema operation on one model: its table, and the table a foreign key it adds refers to."""
    if isinstance(op, (migrations.AlterModelOptions, migrations.AlterModelManagers)):
        return
    name = getattr(op, "model_name", None) or getattr(op, "name", None) or getattr(op, "old_name", None)
    table = _table(state, name) if isinstance(name, str) else None
    if table is None:
        if name is None:
            forwards.unknown.append(type(op).__name__)
            backwards.unknown.append(type(op).__name__)
        return
    forwards.altered.add(table)
    backwards.altered.add(table)
    if isinstance(op, migrations.DeleteModel):
        backwards.created.add(table)
    if isinstance(op, migrations.AlterModelTable) and op.table:
        forwards.altered.add(op.table)
        backwards.altered.add(op.table)
    foreign = _foreign_tables(state, [getattr(op, "field", None)])
    forwards.altered |= foreign
    backwards.altered |= foreign


def migration_tables(operations: Sequence[Operation], state: ProjectState) -> tuple[Tables, Tables]:
    """What a migration's operations alter applied forwards and backwards, from the state before it."""
    forwards, backwards = Tables(), Tables()
    state = state.clone()
    for op in operations:
        f, b = operation_tables(op, state)
        _merge(forwards, f)
        _merge(backwards, b)
        op.state_forwards(APP, state)
    return forwards, backwards


def _in_order(tables: Iterable[str]) -> list[str]:
    order = {t: i for i, t in enumerate(TABLE_LOCK_ORDER)}
    return sorted(tables, key=lambda t: (order.get(t, len(order)), t))


def _shown(tables: Tables) -> str:
    names = ", ".join(_in_order(tables.existing)) or "no table it can tell"
    if tables.unknown:
        names += f" (and what {', '.join(tables.unknown)} alters, which it cannot tell)"
    return names


def _needs_order(tables: Tables) -> bool:
    return len(tables.existing) >= 2 or bool(tables.unknown)


def lock_order_problems(migration: migrations.Migration, state: ProjectState) -> list[str]:
    """Why ``migration`` (applied on ``state``) breaks the lock-order rule, if it does."""
    label = f"{migration.app_label}.migrations.{migration.name}"
    if not migration.atomic:
        return _non_atomic_problems(migration, state, label)
    problems: list[str] = []
    forwards, backwards = migration_tables(migration.operations, state)
    for direction, tables, first in (
        ("forwards", forwards, migration.operations[:1]),
        ("backwards", backwards, migration.operations[-1:]),
    ):
        if not _needs_order(tables):
            continue
        names = _in_order(tables.existing)
        preamble = first[0] if first and isinstance(first[0], LockOrder) else None
        if preamble is None or preamble.direction != direction:
            problems.append(
                f"{label} alters {_shown(tables)} when applied {direction} without taking the lock "
                "order first: write its operations as `operations = in_lock_order(["
                + ", ".join(repr(n) for n in names)
                + "], [...])` (from awa_django.db.lock_order; see 'No lock cycle' in "
                "docs/explanation/guarantees.md)"
            )
        elif missing := _in_order(set(names) - set(preamble.tables)):
            problems.append(
                f"{label} alters {', '.join(missing)} when applied {direction} but its "
                "in_lock_order([...]) leaves them out: add them to its table list"
            )
    return problems


def _non_atomic_problems(migration: migrations.Migration, state: ProjectState, label: str) -> list[str]:
    """A non-atomic migration commits statement by statement: no operation may
    alter two tables, and a lock order would end with its own statement."""
    problems: list[str] = []
    state = state.clone()
    for number, op in enumerate(migration.operations, 1):
        if isinstance(op, LockOrder):
            problems.append(
                f"{label} is not atomic: its in_lock_order locks end at once (drop atomic = False)"
            )
            break
        for direction, tables in zip(("forwards", "backwards"), operation_tables(op, state), strict=True):
            if _needs_order(tables):
                problems.append(
                    f"{label} is not atomic, and its operation {number} ({op.describe()}) alters "
                    f"{_shown(tables)} when applied {direction}: move it to an atomic migration "
                    "written as `operations = in_lock_order([...], [...])`"
                )
        op.state_forwards(APP, state)
    return problems
