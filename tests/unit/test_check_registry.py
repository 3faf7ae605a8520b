"""The system checks' one registry: it lists every check of every topic module, once,
Django has each one under its tag, and each check id is reported by one topic module."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

from django.core.checks import Tags
from django.core.checks.registry import registry

from awa_django.checks import CHECKS, register_checks

PACKAGE = Path(__file__).resolve().parents[2] / "awa_django"
CHECK_ID = re.compile(r"awa_django\.[EW]\d{3}")


def topic_modules() -> list[Path]:
    """Every module of checks: ``checks.py`` beside an owner, and ``checks/`` itself."""
    found = {p for p in PACKAGE.rglob("checks.py") if "migrations" not in p.parts}
    found |= {p for p in (PACKAGE / "checks").glob("*.py") if p.name != "__init__.py"}
    return sorted(found)


def module_of(path: Path) -> str:
    return ".".join(["awa_django", *path.relative_to(PACKAGE).with_suffix("").parts])


def defined_checks() -> set[object]:
    """Every public ``check_*`` function a topic module defines (not imports)."""
    found: set[object] = set()
    for path in topic_modules():
        module = importlib.import_module(module_of(path))
        for name, value in vars(module).items():
            if (
                name.startswith("check_")
                and inspect.isfunction(value)
                and value.__module__ == module.__name__
            ):
                found.add(value)
    return found


def test_check_registry__lists_each_check_once() -> None:
    functions = [check for check, _ in CHECKS]
    assert len(functions) == len(set(functions))


def test_check_registry__lists_every_check_the_topic_modules_define() -> None:
    listed = {check for check, _ in CHECKS}
    assert len(listed) > 10
    assert defined_checks() == listed


def test_check_registry__django_runs_each_check_under_its_tag() -> None:
    register_checks()  # again: the registry is a set, so nothing runs twice
    registered = list(registry.registered_checks)
    for check, tag in CHECKS:
        assert registered.count(check) == 1
        assert check.tags == (tag,)  # type: ignore[attr-defined]
        assert tag in (Tags.compatibility, Tags.database)


def test_check_ids__each_is_reported_by_one_topic_module() -> None:
    homes: dict[str, set[str]] = {}
    for path in topic_modules():
        for check_id in CHECK_ID.findall(path.read_text()):
            homes.setdefault(check_id, set()).add(path.relative_to(PACKAGE).as_posix())
    assert len(homes) > 40
    assert {check_id: where for check_id, where in homes.items() if len(where) > 1} == {}
