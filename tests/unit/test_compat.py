"""``awa_django.client.compat``: the one module that knows which task framework runs."""

from __future__ import annotations

import ast
from pathlib import Path

import django
import pytest
from django.core.exceptions import ImproperlyConfigured

from awa_django.client import compat

PACKAGE = Path(__file__).resolve().parents[2] / "awa_django"
FRAMEWORKS = ("django.tasks", "django_tasks")


def framework_imports(path: Path) -> list[str]:
    """The task-framework modules ``path`` imports, at any depth of the module."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        found += [n for n in names if n.split(".")[0] == "django_tasks" or n.startswith("django.tasks")]
    return found


def test_compat__names_the_framework_of_the_installed_django() -> None:
    expected = "django.tasks" if django.VERSION >= (6, 0) else "django_tasks"
    assert expected == compat.FRAMEWORK
    assert compat.Task.__module__.startswith(expected)
    assert f"{expected}.backends.immediate.ImmediateBackend" == compat.IMMEDIATE_BACKEND


def test_compat__exceptions_carry_the_django_tasks_names() -> None:
    assert issubclass(compat.InvalidTaskBackend, ImproperlyConfigured)
    assert compat.InvalidTask.__name__ in ("InvalidTask", "InvalidTaskError")


@pytest.mark.parametrize(
    "path",
    sorted(p for p in PACKAGE.rglob("*.py") if p.name != "compat.py" and "migrations" not in p.parts),
    ids=lambda p: str(p.relative_to(PACKAGE)),
)
def test_compat__is_the_only_module_importing_the_framework(path: Path) -> None:
    assert framework_imports(path) == []


def test_compat__imports_the_framework_itself() -> None:
    assert set(framework_imports(PACKAGE / "client" / "compat.py")) & {f"{f}.base" for f in FRAMEWORKS}
