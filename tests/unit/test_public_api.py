"""The public surface: the modules ``docs/reference/api.md`` lists, and the older paths.

- The modules the page documents are exactly the modules declared public here.
- Each documented name resolves, without a warning; where a public module has an
  ``__all__``, it names exactly what the page documents.
- Each older path still gives the same object as its new path, and warns naming
  the new path, at the line that imports it; the page's table of deprecated paths
  is this module's.
- The package's own modules never import an older path, and the older paths load
  nothing until a name is used.
"""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "awa_django"
API_PAGE = PACKAGE.parent / "docs" / "reference" / "api.md"
PUBLIC = {
    "awa_django",
    "awa_django.backend",
    "awa_django.exceptions",
    "awa_django.jobcontext",
    "awa_django.jsonlog",
    "awa_django.metrics",
    "awa_django.models",
    "awa_django.operations",
    "awa_django.testing",
}
# Public modules that hold their own code (no __all__): only the documented names are public.
OWN_CODE = {"awa_django.exceptions", "awa_django.jsonlog", "awa_django.metrics", "awa_django.models"}
# Older path -> the public module its names moved to; removed in the next release.
DEPRECATED = {
    "awa_django.cronexpr": "awa_django",
    "awa_django.evaluator": "awa_django.testing",
    "awa_django.manifest": "awa_django.operations",
    "awa_django.ownership": "awa_django.operations",
    "awa_django.queues": "awa_django.operations",
    "awa_django.sync": "awa_django.testing",
    "awa_django.taskpaths": "awa_django",
    "awa_django.tasks.backend": "awa_django.backend",
    "awa_django.tasks.compat": "awa_django",
    "awa_django.worker": "awa_django.testing",
}
HEADING = re.compile(r"^## (?:`(?P<module>awa_django[\w.]*)`|(?P<title>.+))$")
NAME_CELL = re.compile(r"^\| `(?P<name>[A-Za-z_]\w*)")
DEPRECATED_ROW = re.compile(r"^\| `(?P<old>awa_django[\w.]*)` \| `(?P<new>awa_django[\w.]*)` \|$")


def documented() -> tuple[dict[str, list[str]], dict[str, str]]:
    """The names each module's section lists, and the table of deprecated paths."""
    names: dict[str, list[str]] = {}
    moved: dict[str, str] = {}
    section = None
    for line in API_PAGE.read_text().splitlines():
        if heading := HEADING.match(line):
            section = heading["module"] or heading["title"]
            if heading["module"]:
                names[section] = []
        elif section == "Deprecated paths" and (row := DEPRECATED_ROW.match(line)):
            moved[row["old"]] = row["new"]
        elif section in names and (cell := NAME_CELL.match(line)):
            names[section].append(cell["name"])
    return names, moved


def deprecated_names() -> list[tuple[str, str]]:
    # ``_MOVED_TO``: the names each deprecated path still hands on (``awa_django.worker``
    # is also the worker's package, whose ``__all__`` names its own modules).
    return [(old, name) for old in sorted(DEPRECATED) for name in importlib.import_module(old)._MOVED_TO]


def test_the_page__documents_the_public_modules_and_only_them() -> None:
    names, _ = documented()
    assert set(names) == PUBLIC
    assert all(names.values())


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_public_module__every_documented_name_resolves(module: str) -> None:
    public = importlib.import_module(module)
    names = documented()[0][module]
    assert len(names) == len(set(names))
    for name in names:
        assert getattr(public, name) is not None, f"{module}.{name}"


@pytest.mark.parametrize("module", sorted(PUBLIC - OWN_CODE))
def test_public_module__all_names_what_the_page_documents(module: str) -> None:
    public = importlib.import_module(module)
    assert sorted(public.__all__) == sorted(documented()[0][module])


@pytest.mark.parametrize("module", sorted(OWN_CODE))
def test_public_module_of_its_own_code__defines_what_the_page_documents(module: str) -> None:
    public = importlib.import_module(module)
    assert {name: getattr(public, name).__module__ for name in documented()[0][module]} == dict.fromkeys(
        documented()[0][module], module
    )


def test_the_top_level__refuses_an_unknown_name() -> None:
    import awa_django

    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        awa_django.nonexistent  # noqa: B018
    assert {"periodic", "enqueue", "task"} <= set(dir(awa_django))


def test_the_page__lists_every_deprecated_path_with_its_new_path() -> None:
    assert documented()[1] == DEPRECATED


@pytest.mark.parametrize(("old", "name"), deprecated_names())
def test_deprecated_path__warns_naming_the_new_path_and_gives_the_same_object(old: str, name: str) -> None:
    new = DEPRECATED[old]
    module = importlib.import_module(old)
    with pytest.warns(
        DeprecationWarning, match=rf"^{re.escape(old)} is deprecated; import {name} from {new}$"
    ) as caught:
        value = getattr(module, name)
    assert value is getattr(importlib.import_module(new), name)
    assert name in documented()[0][new]
    assert [w.filename for w in caught] == [__file__]  # the warning points at the caller's line


def test_deprecated_path__from_import_warns_at_the_importing_line() -> None:
    message = "^awa_django.queues is deprecated; import pause_queue from awa_django.operations$"
    here = sys._getframe().f_lineno
    with pytest.warns(DeprecationWarning, match=message) as caught:
        from awa_django.queues import pause_queue
    from awa_django.operations import pause_queue as public

    assert pause_queue is public
    assert (caught[0].filename, caught[0].lineno) == (__file__, here + 2)


@pytest.mark.parametrize("old", sorted(DEPRECATED))
def test_deprecated_path__refuses_an_unknown_name_without_a_warning(old: str) -> None:
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        importlib.import_module(old).nonexistent  # noqa: B018


def test_deprecated_paths__load_nothing_until_a_name_is_used() -> None:
    # No settings configured: the task framework would fail to load if imported.
    code = (
        "import sys, awa_django\n"
        f"for old in {sorted(DEPRECATED)!r}:\n"
        "    __import__(old)\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('awa_django.'))\n"
        f"assert set(loaded) == {{'awa_django.exceptions', 'awa_django.lazy', 'awa_django.tasks', *{sorted(DEPRECATED)!r}}}, loaded\n"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(PACKAGE.parent)}
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", code], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def imported_modules(path: Path, package: Path = PACKAGE) -> set[str]:
    """Every module of the package ``path`` imports, relative imports resolved;
    ``from package import name`` yields ``package.name`` as well (it may be a module)."""
    parts = ["awa_django", *path.relative_to(package).with_suffix("").parts]
    base = parts[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            anchor = base[: len(base) - node.level + 1] if node.level else []
            target = ".".join([*anchor, *([node.module] if node.module else [])])
            found |= {target, *(f"{target}.{alias.name}" for alias in node.names)}
    return found


def through_deprecated(path: Path, package: Path = PACKAGE) -> set[str]:
    """``old.name`` for each name ``path`` takes from a deprecated path (a module of
    the worker's package, which shares its name with one, does not count)."""
    found = set()
    for target in imported_modules(path, package):
        old, _, name = target.rpartition(".")
        if (
            old in DEPRECATED
            and name in importlib.import_module(old)._MOVED_TO
            or target in DEPRECATED
            and not (package / target.split(".", 1)[1]).is_dir()
        ):
            found.add(target)
    return found


def test_the_package__never_imports_a_deprecated_path() -> None:
    through_old = sorted(
        f"{path.relative_to(PACKAGE)} imports {target}"
        for path in PACKAGE.rglob("*.py")
        if "migrations" not in path.parts
        for target in through_deprecated(path)
    )
    assert through_old == []


def test_the_import_scan__sees_each_way_of_naming_a_module(tmp_path: Path) -> None:
    module = tmp_path / "awa_django" / "scheduler" / "sample.py"
    module.parent.mkdir(parents=True)
    module.write_text("from .. import queues\nfrom ..worker import Worker\nimport awa_django.sync\n")
    assert {"awa_django.queues", "awa_django.worker", "awa_django.sync"} <= imported_modules(
        module, tmp_path / "awa_django"
    )
