"""Catalog and schema reads of the system checks: the statements of ``store/sql/schema/checks.sql``.

Each function takes a cursor of the alias being checked and returns plain
values or :class:`InstalledFunction` rows; the checks decide what to report.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .queries import query

__all__ = [
    "InstalledFunction",
    "installed_functions",
    "job_constraint_validated",
    "runtime_name_clashes",
]


@dataclass(frozen=True)
class InstalledFunction:
    """An SQL function as installed: its comment (the file that installed it) and body."""

    name: str
    comment: str | None
    source: str

    @classmethod
    def from_row(cls, row: tuple[Any, ...]) -> InstalledFunction:
        name, comment, source = row
        return cls(str(name), None if comment is None else str(comment), str(source))


# A cursor of Django's or psycopg's: both take the same ``execute(sql, params)``.
Cursor = Any


def runtime_name_clashes(cursor: Cursor, owner: str, names: Iterable[str]) -> list[str]:
    """The ``names`` that are also schedules of ``owner`` (the runtime owner), sorted."""
    cursor.execute(query("check_runtime_name_clashes"), {"owner": owner, "names": sorted(names)})
    return [str(row[0]) for row in cursor.fetchall()]


def installed_functions(cursor: Cursor, names: Iterable[str]) -> dict[str, InstalledFunction]:
    """The installed functions of the current schema among ``names``, by name."""
    cursor.execute(query("check_installed_functions"), {"names": list(names)})
    found = (InstalledFunction.from_row(row) for row in cursor.fetchall())
    return {function.name: function for function in found}


def job_constraint_validated(cursor: Cursor, name: str) -> bool | None:
    """Whether the check constraint ``name`` of ``awa_jobs`` is validated; None when missing."""
    cursor.execute(query("check_job_constraint_validated"), {"name": name})
    row = cursor.fetchone()
    return None if row is None else bool(row[0])
