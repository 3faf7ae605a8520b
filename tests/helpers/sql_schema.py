"""The current SQL in ``awa_django/store/current_sql/``, read back: the functions,
triggers and views it defines, and the same objects as installed."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from awa_django.db.sqlfiles import FUNCTION_BODY, read_sql

SCHEMA_DIR = Path(__file__).resolve().parents[2] / "awa_django" / "store" / "current_sql"
TRIGGER = re.compile(r"CREATE TRIGGER (\w+)\s.*?\sON (\w+)\s.*?;", re.DOTALL)
VIEW = re.compile(r"CREATE VIEW (\w+) AS\s(.*?);", re.DOTALL)


def normal(text: str) -> str:
    """Whitespace runs as one space, no trailing semicolon: the form compared."""
    return " ".join(text.split()).rstrip(";").strip()


def schema_functions() -> dict[str, str]:
    """Function name -> body (the text between its dollar quotes), every file of ``functions/``."""
    bodies: dict[str, str] = {}
    for path in sorted((SCHEMA_DIR / "functions").glob("*.sql")):
        for match in FUNCTION_BODY.finditer(path.read_text(encoding="utf-8")):
            assert match[1] not in bodies, f"{match[1]} is defined twice ({path.name})"
            bodies[match[1]] = match[3]
    return bodies


def schema_triggers() -> dict[tuple[str, str], str]:
    """(table, trigger) -> the statement, from ``triggers.sql``."""
    text = (SCHEMA_DIR / "triggers.sql").read_text(encoding="utf-8")
    return {(m[2], m[1]): normal(m[0]) for m in TRIGGER.finditer(text)}


def schema_views() -> dict[str, str]:
    """View name -> its query, from ``views.sql``."""
    text = (SCHEMA_DIR / "views.sql").read_text(encoding="utf-8")
    return {m[1]: m[2] for m in VIEW.finditer(text)}


def installed_functions(cursor: Any) -> dict[str, str]:
    """Function name -> ``prosrc``, every ``awa_`` function of the current schema."""
    cursor.execute(
        "SELECT p.proname, p.prosrc FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
        " WHERE n.nspname = current_schema() AND p.proname LIKE 'awa\\_%%'"
    )
    return dict(cursor.fetchall())


def installed_triggers(cursor: Any) -> dict[tuple[str, str], str]:
    """(table, trigger) -> ``pg_get_triggerdef`` without the schema, on the ``awa_`` tables."""
    cursor.execute(
        "SELECT c.relname, t.tgname, pg_get_triggerdef(t.oid) FROM pg_trigger t"
        " JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE NOT t.tgisinternal AND n.nspname = current_schema() AND c.relname LIKE 'awa\\_%%'"
    )
    rows = cursor.fetchall()
    cursor.execute("SELECT quote_ident(current_schema())")
    schema = cursor.fetchone()[0]
    return {(table, name): normal(text.replace(f" ON {schema}.", " ON ")) for table, name, text in rows}


def installed_views(cursor: Any) -> set[str]:
    """The ``awa_`` views of the current schema."""
    cursor.execute(
        "SELECT viewname FROM pg_views WHERE schemaname = current_schema() AND viewname LIKE 'awa\\_%%'"
    )
    return {row[0] for row in cursor.fetchall()}


def install_superseded(cursor: Any, name: str) -> None:
    """Install ``name``, a version 0029 dropped, as its own file shipped it (its
    statement in 0029's reverse file): a writer of an earlier release, for a
    test. Inside a test's transaction it goes with the rollback; otherwise drop it."""
    text = read_sql("0029_drop_superseded_functions.reverse")
    match = re.search(rf"CREATE FUNCTION {name}\(.*?\bAS\s+\$(\w*)\$.*?\$\1\$[^;]*;", text, re.DOTALL)
    assert match, f"{name} is not a version 0029 dropped"
    cursor.execute(match[0])
