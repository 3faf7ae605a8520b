"""Load the versioned SQL files in ``awa_django/sql/`` for migrations.

Each ``NNNN_name.sql`` has a ``NNNN_name.reverse.sql`` that undoes it. Shipped
files are frozen: new behaviour is a new file and a new migration.
"""

from __future__ import annotations

import re
from pathlib import Path

from django.db import migrations

SQL_DIR = Path(__file__).resolve().parent / "sql"


def read_sql(name: str) -> str:
    """Return the text of ``sql/<name>.sql``."""
    return (SQL_DIR / f"{name}.sql").read_text(encoding="utf-8")


def run_sql_file(name: str) -> migrations.RunSQL:
    """A ``RunSQL`` operation applying ``<name>.sql`` and reversed by ``<name>.reverse.sql``."""
    return migrations.RunSQL(sql=read_sql(name), reverse_sql=read_sql(f"{name}.reverse"))


def declared_functions(path: Path) -> list[str]:
    """Names of the functions a SQL file creates (each carries a version comment)."""
    return re.findall(r"CREATE FUNCTION (\w+)\(", path.read_text(encoding="utf-8"))
