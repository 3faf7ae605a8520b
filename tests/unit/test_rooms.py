"""The rooms of awa_django: the store owns every statement, the rooms import one way,
and the architecture page names the rooms and modules that exist.

- Outside ``store/``, ``db/`` and the migrations no module executes SQL or holds SQL
  text; ``db/`` runs only session plumbing and names no ``awa_`` table in a statement.
- Outside ``store/`` and ``models.py``, only ``admin/`` uses a model manager (its
  ModelAdmins' own changelist and detail querysets).
- The rooms (each subpackage, each top-level module) import one way: no circle
  between rooms, so no pair of rooms imports each other.
- ``docs/explanation/architecture.md``'s map names every room and module there is,
  and nothing that is not.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.unit.test_structure import PACKAGE, find_cycle, import_graph

ROOT = PACKAGE.parent
ARCHITECTURE = ROOT / "docs" / "explanation" / "architecture.md"
EXECUTING_CALLS = {"execute", "executemany", "raw", "extra", "mogrify"}
# A string that starts like a statement: a keyword (SQL is written in capitals
# here) followed by what a statement goes on with (a keyword, a parenthesis, a
# parameter, an awa_ name, or a name and a comma or parenthesis), so a message such
# as "VACUUM of awa_cron_jobs" is prose.
SQL_TEXT = re.compile(
    r"^\s*(?:--[^\n]*\n\s*)*(SELECT|INSERT INTO|UPDATE|DELETE FROM|WITH|VACUUM|REINDEX|ANALYZE|CREATE|ALTER|"
    r"DROP|LOCK TABLE|LISTEN|NOTIFY|TRUNCATE|PREPARE|EXPLAIN)\s+(?:[A-Z*(%{\"]|awa_|\w+\s*[,(])"
)
AWA_TABLE = re.compile(r"\bawa_[a-z_]+")


def _rooms_outside(*allowed: str) -> list[Path]:
    skip = {"migrations", *allowed}
    return sorted(p for p in PACKAGE.rglob("*.py") if not (set(p.relative_to(PACKAGE).parts[:-1]) & skip))


def statements_executed(tree: ast.AST) -> list[str]:
    """``line: call`` for each call in ``tree`` that runs SQL (``super().execute`` aside)."""
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        receiver = node.func.value
        is_super = isinstance(receiver, ast.Call) and getattr(receiver.func, "id", "") == "super"
        if node.func.attr in EXECUTING_CALLS and not is_super:
            found.append(f"{node.lineno}: .{node.func.attr}(")
        elif node.func.attr == "copy" and node.args and isinstance(node.args[0], ast.Constant | ast.Name):
            found.append(f"{node.lineno}: .copy(")
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == "RawSQL":
            found.append(f"{node.lineno}: RawSQL")
    return found


def sql_texts(tree: ast.AST) -> list[str]:
    """``line: start`` of each string constant in ``tree`` that reads as a SQL statement."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        f"{node.lineno}: {node.value[:40]!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
        and SQL_TEXT.match(node.value)
    ]


def manager_uses(tree: ast.AST) -> list[str]:
    return [
        f"{node.lineno}: .{node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr in {"objects", "_default_manager", "_base_manager"}
    ]


def _rel(path: Path) -> str:
    return str(path.relative_to(PACKAGE))


@pytest.mark.parametrize("path", _rooms_outside("store", "db"), ids=_rel)
def test_only_the_store_executes_sql(path: Path) -> None:
    tree = ast.parse(path.read_text())
    assert statements_executed(tree) == []
    assert sql_texts(tree) == []


@pytest.mark.parametrize("path", sorted((PACKAGE / "db").glob("*.py")), ids=_rel)
def test_db_plumbing_names_no_awa_table_in_a_statement(path: Path) -> None:
    tree = ast.parse(path.read_text())
    assert [text for text in sql_texts(tree) if AWA_TABLE.search(text)] == []


@pytest.mark.parametrize(
    "path", [p for p in _rooms_outside("store", "admin") if p.name != "models.py"], ids=_rel
)
def test_only_the_store_and_the_admin_use_model_managers(path: Path) -> None:
    assert manager_uses(ast.parse(path.read_text())) == []


def test_the_rules_see_a_statement_a_sql_constant_and_a_manager() -> None:
    tree = ast.parse(
        'X = "SELECT 1 FROM awa_jobs"\nY = "VACUUM of awa_jobs"\n'
        "def f(cursor, conn, rows):\n"
        '    """SELECT in a docstring is prose."""\n'
        "    cursor.execute(X)\n"
        "    conn.copy(X)\n"
        "    rows.copy()\n"
        "    super().execute()\n"
        "    return Job.objects.all()\n"
    )
    assert statements_executed(tree) == ["5: .execute(", "6: .copy("]
    assert sql_texts(tree) == ["1: 'SELECT 1 FROM awa_jobs'"]
    assert manager_uses(tree) == ["9: .objects"]


def room_of(module: str) -> str:
    """A module's room: its subpackage (``awa_django.store``) or, at the top, itself."""
    parts = module.split(".")
    if len(parts) >= 2 and (PACKAGE / parts[1]).is_dir():
        return ".".join(parts[:2])
    return module


def room_graph() -> dict[str, set[str]]:
    rooms: dict[str, set[str]] = {}
    for module, targets in import_graph().items():
        here = room_of(module)
        rooms.setdefault(here, set()).update(room_of(t) for t in targets if room_of(t) != here)
    for targets in list(rooms.values()):
        for target in targets:
            rooms.setdefault(target, set())
    return rooms


def test_rooms_import_one_way() -> None:
    assert find_cycle(room_graph()) == []


def test_the_store_sits_below_the_rooms_that_use_it() -> None:
    above = {"client", "worker", "leader", "declarations", "operations", "reconciliation", "admin", "cli"}
    store_imports = {r.split(".")[1] for r in room_graph()["awa_django.store"]}
    assert store_imports & above == set()


MAP_LINE = re.compile(r"^[├└]── (?P<room>\w+)/")
MODULES_LINE = re.compile(r"^│\s{3,}(?P<modules>[a-z_]+(?: · [a-z_]+)*)\s*$")


def documented_map() -> dict[str, set[str]]:
    """Room -> modules, read from the code block of the architecture page's map: a
    room's line (``├── cron/  what it owns``), then its modules (``│     parse · days``)."""
    block = ARCHITECTURE.read_text().split("```", 2)[1]
    rooms: dict[str, set[str]] = {}
    current = None
    for line in block.splitlines():
        if match := MAP_LINE.match(line):
            current = match["room"]
            rooms[current] = set()
        elif current and (match := MODULES_LINE.match(line)):
            rooms[current].update(match["modules"].split(" · "))
    return rooms


def actual_rooms() -> dict[str, set[str]]:
    """Room -> its modules (for ``management/``, its commands)."""
    rooms = {}
    for folder in sorted(PACKAGE.iterdir()):
        if not (folder / "__init__.py").exists() or folder.name == "migrations":
            continue
        home = folder / "commands" if (folder / "commands").is_dir() else folder
        rooms[folder.name] = {p.stem for p in home.glob("*.py") if p.stem != "__init__"}
    return rooms


def test_the_architecture_page_names_every_room_and_no_other() -> None:
    assert set(documented_map()) - {"migrations", "sql", "templates", "static"} == set(actual_rooms())


@pytest.mark.parametrize("room", sorted(actual_rooms()))
def test_the_architecture_page_names_every_module_of_a_room(room: str) -> None:
    assert documented_map().get(room, set()) == actual_rooms()[room]
