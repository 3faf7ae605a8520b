"""The layout rules of the test suite, checked on every run.

- No module under ``tests/`` imports a test module (``tests.<dir>.test_*``) or a
  ``conftest``: what several modules share lives in ``tests/helpers/``.
- A ``conftest.py`` defines fixtures (``@pytest.fixture``) and pytest hooks
  (``pytest_*``) only: no other function, no class.
- A test file is named by its subject: never ``test_audit_*`` or ``*_hardening``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]


def python_files() -> list[Path]:
    return sorted(TESTS.rglob("*.py"))


def module_name(path: Path) -> str:
    parts = ["tests", *path.relative_to(TESTS).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_test_module(dotted: str) -> bool:
    """``tests.<...>.test_*`` or a ``conftest``: modules nothing may import from."""
    parts = dotted.split(".")
    return parts[0] == "tests" and (parts[-1].startswith("test_") or parts[-1] == "conftest")


def imported_modules(source: str, name: str, is_package: bool = False) -> Iterator[str]:
    """Every module the source of module ``name`` imports, relative imports resolved;
    ``from package import module`` yields ``package.module`` as well."""
    base = name.split(".") if is_package else name.split(".")[:-1]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            parent = base[: len(base) - node.level + 1] if node.level else []
            module = ".".join([*parent, *(node.module.split(".") if node.module else [])])
            yield module
            yield from (f"{module}.{alias.name}" for alias in node.names)


def imports_of_test_modules(path: Path) -> list[str]:
    name = module_name(path)
    found = imported_modules(path.read_text(), name, is_package=path.name == "__init__.py")
    return sorted({m for m in found if is_test_module(m)})


def is_fixture(decorator: ast.expr) -> bool:
    """``@pytest.fixture``, ``@pytest.fixture(...)``, ``@fixture`` or ``@fixture(...)``."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    if isinstance(target, ast.Attribute):
        return target.attr == "fixture" and isinstance(target.value, ast.Name) and target.value.id == "pytest"
    return isinstance(target, ast.Name) and target.id == "fixture"


def non_fixtures(source: str) -> list[str]:
    """The top-level functions and classes of a conftest that are neither a fixture nor a hook."""
    found = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef):
            found.append(f"class {node.name}")
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not is_fixture_or_hook(node):
            found.append(f"def {node.name}")
    return found


def is_fixture_or_hook(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return node.name.startswith("pytest_") or any(map(is_fixture, node.decorator_list))


def misnamed(path: Path) -> bool:
    return path.name.startswith("test_audit_") or path.stem.endswith("_hardening")


def test_test_modules__import_no_other_test_module_or_conftest() -> None:
    offenders = {
        str(path.relative_to(TESTS)): found
        for path in python_files()
        if (found := imports_of_test_modules(path))
    }
    assert offenders == {}, "move what they share into tests/helpers/"


def test_conftest_files__define_only_fixtures_and_hooks() -> None:
    offenders = {
        str(path.relative_to(TESTS)): found
        for path in TESTS.rglob("conftest.py")
        if (found := non_fixtures(path.read_text()))
    }
    assert offenders == {}, "helpers go in tests/helpers/; a conftest holds fixtures and hooks"


def test_test_files__are_named_by_subject() -> None:
    assert [str(p.relative_to(TESTS)) for p in python_files() if misnamed(p)] == []


def test_test_files__the_suite_has_its_helpers_package() -> None:
    """The rules above are only kept by having a place for shared code."""
    assert (TESTS / "helpers" / "__init__.py").is_file()
    assert ast.get_docstring(ast.parse((TESTS / "helpers" / "__init__.py").read_text()))


# -- the checks themselves ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from tests.db.test_admin import staff", ["tests.db.test_admin"]),
        ("from tests.db import test_admin", ["tests.db.test_admin"]),
        ("import tests.processes.test_processes", ["tests.processes.test_processes"]),
        ("from .test_fire_sql import fire", ["tests.db.test_fire_sql"]),
        ("from tests.conftest import raw_connection", ["tests.conftest"]),
        ("from ..conftest import ROOT", ["tests.conftest"]),
        ("def f():\n    from tests.unit.test_rowchecks import healthy", ["tests.unit.test_rowchecks"]),
        ("from tests.helpers.database import db_now", []),
        ("from tests.testapp import tasks", []),
        ("from awa_django.worker import runner", []),
    ],
)
def test_imported_modules__finds_imports_of_test_modules(source: str, expected: list[str]) -> None:
    found = imported_modules(source, "tests.db.test_example")
    assert sorted({m for m in found if is_test_module(m)}) == expected


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import pytest\n@pytest.fixture\ndef a(): ...", []),
        ("import pytest\n@pytest.fixture(autouse=True)\nasync def a(): ...", []),
        ("from pytest import fixture\n@fixture(scope='session')\ndef a(): ...", []),
        ("def pytest_collection_modifyitems(items): ...", []),
        ("LIMIT = 3", []),
        ("def raw_connection(): ...", ["def raw_connection"]),
        ("import functools\n@functools.cache\ndef cached(): ...", ["def cached"]),
        ("class Runcron: ...", ["class Runcron"]),
    ],
)
def test_non_fixtures__names_what_a_conftest_may_not_define(source: str, expected: list[str]) -> None:
    assert non_fixtures(source) == expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("test_audit_cli.py", True),
        ("test_cli_hardening.py", True),
        ("test_cli_arguments.py", False),
        ("test_checks_limits.py", False),
    ],
)
def test_misnamed__audit_and_hardening_names(name: str, expected: bool) -> None:
    assert misnamed(TESTS / "db" / name) is expected
