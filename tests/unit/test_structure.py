"""The structure rules of awa_django, checked on every run.

- No function is over 60 lines of code (multi-line string literals, i.e. SQL, excluded).
- No import circle between the package's modules: what a module imports at load time,
  inside functions or under ``TYPE_CHECKING``, all count.
- No underscore name is imported from outside its own subpackage (``cron`` modules may
  share one with each other; nothing else reaches in).
- The package's own modules import the code where it lives, never through one of the
  public re-export modules kept for users (``awa_django.backend``, ``operations``, ...).
- Every subpackage says what it owns (a docstring) and what others may use (``__all__``).

Module size is not a rule: a module holds one concept, however long.

The rooms:

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
import importlib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "awa_django"
MAX_FUNCTION_LINES = 60
# Public paths kept for users: each re-exports code that lives in a subpackage.
PUBLIC_REEXPORTS = {"backend", "operations", "testing"}
SUBPACKAGES = (
    "checks",
    "cli",
    "client",
    "cron",
    "db",
    "declarations",
    "leader",
    "maintenance",
    "operations",
    "reconciliation",
    "store",
    "worker",
)


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "migrations" not in p.parts)


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = [package.name, *path.relative_to(package).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, package: Path = PACKAGE) -> Iterator[tuple[str, str]]:
    """``(module, name)`` for each name ``path`` imports from the package; ``name`` is
    ``""`` for ``import module``. ``from pkg import submodule`` yields the submodule."""
    name = module_name(path, package)
    base = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == package.name:
                    yield alias.name, ""
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base[: len(base) - node.level + 1]
                target = ".".join([*anchor, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if target.split(".")[0] != package.name:
                continue
            for alias in node.names:
                submodule = package.parent.joinpath(*f"{target}.{alias.name}".split("."))
                if submodule.with_suffix(".py").exists() or submodule.is_dir():
                    yield f"{target}.{alias.name}", ""
                else:
                    yield target, alias.name


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    paths = [p for p in package.rglob("*.py") if "migrations" not in p.parts]
    graph: dict[str, set[str]] = {module_name(p, package): set() for p in paths}
    for path in paths:
        source = module_name(path, package)
        for target, _ in imports_of(path, package):
            if target in graph and target != source:
                graph[source].add(target)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import circle of ``graph`` as a list of modules, or ``[]``."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return []

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return []


def subpackage_of(module: str) -> str:
    parts = module.split(".")
    if len(parts) > 2 or (len(parts) == 2 and parts[1] in SUBPACKAGES):
        return ".".join(parts[:2])
    return module


def private_reaches(path: Path, package: Path = PACKAGE) -> list[str]:
    """``module.name`` for each underscore name ``path`` takes from another subpackage."""
    home = subpackage_of(module_name(path, package))
    return [
        f"{target}.{name}"
        for target, name in imports_of(path, package)
        if name.startswith("_") and not name.startswith("__") and subpackage_of(target) != home
    ]


def function_lengths(path: Path) -> dict[str, int]:
    """``name:line`` -> lines of code of each function in ``path``, SQL strings excluded."""
    found = {}
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        lines = set(range(node.lineno, (node.end_lineno or node.lineno) + 1))
        for sub in ast.walk(node):
            if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and sub.end_lineno != sub.lineno:
                lines -= set(range(sub.lineno, (sub.end_lineno or sub.lineno) + 1))
        found[f"{node.name}:{node.lineno}"] = len(lines)
    return found


def test_the_package_has_modules_to_check() -> None:
    assert len(_modules()) > 30


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_functions__are_at_most_60_lines(path: Path) -> None:
    too_long = {name: n for name, n in function_lengths(path).items() if n > MAX_FUNCTION_LINES}
    assert too_long == {}


def test_the_length_rule_counts_code_and_skips_sql_strings(tmp_path: Path) -> None:
    source = tmp_path / "sample.py"
    body = "\n".join(f"    x{i} = {i}" for i in range(61))
    sql = '    q = """\n' + "SELECT 1\n" * 100 + '"""'
    source.write_text(f"def long():\n{body}\n\n\ndef short():\n{sql}\n    return q\n")
    assert function_lengths(source) == {"long:1": 62, "short:65": 2}


def test_imports__form_no_circle() -> None:
    assert find_cycle(import_graph()) == []


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports__take_no_underscore_name_from_another_subpackage(path: Path) -> None:
    assert private_reaches(path) == []


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports__go_where_the_code_lives_not_through_public_reexports(path: Path) -> None:
    via_reexport = sorted(
        target
        for target, _ in imports_of(path)
        if target.split(".")[1:] and target.split(".")[1] in PUBLIC_REEXPORTS and len(target.split(".")) == 2
    )
    assert via_reexport == []


@pytest.mark.parametrize("name", SUBPACKAGES)
def test_subpackage__says_what_it_owns_and_what_others_may_use(name: str) -> None:
    package = importlib.import_module(f"awa_django.{name}")
    assert (package.__doc__ or "").strip()
    exported = package.__all__
    assert exported
    for member in exported:
        if (PACKAGE / name / f"{member}.py").exists():
            continue
        assert hasattr(package, member), f"awa_django.{name}.__all__ names {member!r}, which it lacks"


@pytest.mark.parametrize("module", sorted(PUBLIC_REEXPORTS))
def test_public_path__keeps_working_and_is_the_code_that_runs(module: str) -> None:
    public = importlib.import_module(f"awa_django.{module}")
    assert public.__all__
    for member in public.__all__:
        value = getattr(public, member)
        home = importlib.import_module(value.__module__)
        assert home.__name__ != public.__name__
        assert getattr(home, member) is value


def test_the_rules_see_a_circle_and_a_private_reach(tmp_path: Path) -> None:
    package = tmp_path / "awa_django"
    (package / "cron").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "cron" / "__init__.py").write_text("")
    (package / "cron" / "parse.py").write_text("from .search import _step\n_X = 1\n")
    (package / "cron" / "search.py").write_text("def f():\n    from awa_django.cron.parse import _X\n")
    (package / "leader.py").write_text("from .cron.parse import _X\n")
    assert find_cycle(import_graph(package)) == [
        "awa_django.cron.parse",
        "awa_django.cron.search",
        "awa_django.cron.parse",
    ]
    assert private_reaches(package / "cron" / "search.py", package) == []
    assert private_reaches(package / "leader.py", package) == ["awa_django.cron.parse._X"]


# Calls go one way: the worker uses its task threads, the leader and the worker use
# the metrics; neither imports back (task threads call through runner.Pool, the
# metrics read gauge sources).
ONE_WAY = {
    "awa_django.metrics": ("awa_django.leader", "awa_django.worker"),
    "awa_django.worker.runner": ("awa_django.worker.loop",),
}


@pytest.mark.parametrize("module", sorted(ONE_WAY))
def test_imports__run_one_way_from_the_worker_and_the_leader(module: str) -> None:
    assert sorted(t for t in import_graph()[module] if t.startswith(ONE_WAY[module])) == []


ROOT = PACKAGE.parent
ARCHITECTURE = ROOT / "docs" / "explanation" / "architecture.md"
EXECUTING_CALLS = {"execute", "executemany", "raw", "extra", "mogrify"}
# A string that starts like a statement: a keyword (SQL is written in capitals
# here) followed by what a statement goes on with (a keyword, a parenthesis, a
# parameter, an awa_ name, or a name and a comma or parenthesis), so a message such
# as "VACUUM of awa_cron_jobs" is prose.
SQL_TEXT = re.compile(
    r"^\s*(?:--[^\n]*\n\s*)*(SELECT|INSERT INTO|UPDATE|DELETE FROM|WITH|VACUUM|REINDEX|ANALYZE|CREATE|ALTER|"
    r"DROP|LOCK TABLE|LISTEN|NOTIFY|TRUNCATE|PREPARE|EXPLAIN)\s+(?:[A-Z*(%{\"\d]|awa_|\w+\s*[,(]|\w+\s+FROM\b)"
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
