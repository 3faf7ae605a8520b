"""Load the versioned SQL files in ``awa_django/sql/`` for migrations.

Each ``NNNN_name.sql`` has a ``NNNN_name.reverse.sql`` that undoes it. Shipped
files are frozen: new behaviour is a new file and a new migration. A migration
names its files with :func:`run_sql_file`; :func:`migration_sql_files` reads
that mapping back from the migrations' operations (never from their source),
and :func:`shipped_function_hashes` gives check E050 the hash of every
function body as shipped, to compare with what is installed;
:func:`expected_function_hashes` walks the applied migrations' files in order,
so a function a later file drops is no longer expected.
"""

from __future__ import annotations

import hashlib
import importlib
import pkgutil
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from django.db import migrations
from django.db.migrations.operations.base import Operation

SQL_DIR = Path(__file__).resolve().parent.parent / "sql"
MIGRATIONS_PACKAGE = "awa_django.migrations"

# A function's body as PostgreSQL stores it in pg_proc.prosrc: the text between
# the dollar quotes of ``AS $tag$ ... $tag$`` (every shipped function uses them).
FUNCTION_BODY = re.compile(r"CREATE FUNCTION (\w+)\(.*?\bAS\s+\$(\w*)\$(.*?)\$\2\$", re.DOTALL)


def read_sql(name: str) -> str:
    """Return the text of ``sql/<name>.sql``."""
    return (SQL_DIR / f"{name}.sql").read_text(encoding="utf-8")


class SqlFile(migrations.RunSQL):
    """``RunSQL`` of ``<name>.sql``, reversed by ``<name>.reverse.sql``, that knows its file."""

    def __init__(self, file_name: str) -> None:
        super().__init__(sql=read_sql(file_name), reverse_sql=read_sql(f"{file_name}.reverse"))
        self.file_name = file_name

    def deconstruct(self) -> tuple[str, list[Any], dict[str, Any]]:
        # Serialised (squashmigrations) by file name, not by its text.
        return (self.__class__.__qualname__, [self.file_name], {})


def run_sql_file(name: str) -> SqlFile:
    """A ``RunSQL`` operation applying ``<name>.sql`` and reversed by ``<name>.reverse.sql``."""
    return SqlFile(name)


def declared_functions(path: Path) -> list[str]:
    """Names of the functions a SQL file creates (each carries a version comment)."""
    return re.findall(r"CREATE FUNCTION (\w+)\(", path.read_text(encoding="utf-8"))


def dropped_functions(path: Path) -> list[str]:
    """Names of the functions a SQL file drops."""
    return re.findall(r"DROP FUNCTION (?:IF EXISTS )?(\w+)\(", path.read_text(encoding="utf-8"))


def _file_names(operations: Iterable[Operation]) -> list[str]:
    names: list[str] = []
    for operation in operations:
        if isinstance(operation, SqlFile):
            names.append(operation.file_name)
        elif isinstance(operation, migrations.SeparateDatabaseAndState):
            names.extend(_file_names(operation.database_operations))
    return names


def migration_sql_files() -> dict[str, tuple[str, ...]]:
    """Migration name -> the SQL files it applies, in migration order, from its operations."""
    package = importlib.import_module(MIGRATIONS_PACKAGE)
    mapping: dict[str, tuple[str, ...]] = {}
    for module in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if module.name.startswith("_"):
            continue
        migration = importlib.import_module(f"{MIGRATIONS_PACKAGE}.{module.name}").Migration
        mapping[module.name] = tuple(_file_names(migration.operations))
    return mapping


def body_hash(body: str) -> str:
    """The hash check E050 compares: SHA-256 of a function's body text."""
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


def shipped_function_hashes(file_name: str) -> dict[str, str]:
    """Function name -> hash of its body, for every function ``<file_name>.sql`` creates."""
    text = read_sql(file_name)
    hashes = {match[1]: body_hash(match[3]) for match in FUNCTION_BODY.finditer(text)}
    missing = set(declared_functions(SQL_DIR / f"{file_name}.sql")) - set(hashes)
    if missing:  # a body not in dollar quotes: refuse rather than skip it silently
        raise ValueError(f"{file_name}.sql: no dollar-quoted body found for {sorted(missing)}")
    return hashes


def expected_function_hashes(applied: Iterable[str]) -> dict[str, tuple[str, str]]:
    """Function name -> (the SQL file that installed it, hash of its shipped body)
    for the functions the ``applied`` migrations leave installed: a later file
    wins, and a function a later file drops is not expected."""
    applied = set(applied)
    expected: dict[str, tuple[str, str]] = {}
    for migration, files in migration_sql_files().items():
        if migration not in applied:
            continue
        for file_name in files:
            for name in dropped_functions(SQL_DIR / f"{file_name}.sql"):
                expected.pop(name, None)
            for name, digest in shipped_function_hashes(file_name).items():
                expected[name] = (file_name, digest)
    return expected
