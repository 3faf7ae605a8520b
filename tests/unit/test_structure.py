"""The structure rules of issue 12, checked on every run: no module of awa_django over
400 lines, no function over 60 lines (multi-line string literals, i.e. SQL, excluded)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "awa_django"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "migrations" not in p.parts)


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
def test_module__is_at_most_400_lines(path: Path) -> None:
    assert len(path.read_text().splitlines()) <= MAX_MODULE_LINES


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
