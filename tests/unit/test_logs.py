"""awa_django.logs: one escaping filter on every awa_django logger."""

from __future__ import annotations

import ast
import logging
from pathlib import Path

from awa_django import logs

PACKAGE = Path(logs.__file__).resolve().parent


def logger_names_in_sources() -> set[str]:
    names: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        if "migrations" in path.parts:
            continue
        module = "awa_django." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "getLogger" and node.args:
                arg = node.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    names.add(arg.value)
                elif isinstance(arg, ast.Name) and arg.id == "__name__":
                    names.add(module.removesuffix(".__init__"))
    return names


def test_logger_names__cover_every_logger_of_the_package() -> None:
    assert logger_names_in_sources() <= set(logs.LOGGER_NAMES)


def test_install__puts_the_filter_on_every_awa_logger_once() -> None:
    logs.install()
    logs.install()
    for name in logs.LOGGER_NAMES:
        assert sum(isinstance(f, logs.EscapingFilter) for f in logging.getLogger(name).filters) == 1


def record(msg: str, args: object, **extra: object) -> logging.LogRecord:
    made = logging.LogRecord("awa_django.worker", logging.ERROR, __file__, 1, msg, args, None)  # type: ignore[arg-type]
    made.__dict__.update(extra)
    return made


def test_filter__escapes_arguments_and_string_extras_only() -> None:
    made = record("job %s failed: %s (%d)", (7, ValueError("a\x1b[2J\nb"), 3), schedule="x\u202ey", job_id=7)
    logs.EscapingFilter().filter(made)
    assert made.getMessage() == "job 7 failed: a\\x1b[2J\\nb (3)"
    assert (made.schedule, made.job_id) == ("x\\u202ey", 7)  # type: ignore[attr-defined]
    plain = record("%(name)s", ({"name": "ok\r"},))
    logs.EscapingFilter().filter(plain)
    assert plain.getMessage() == "ok\\r"


def test_filter__a_traceback_cannot_forge_a_record() -> None:
    try:
        raise RuntimeError("boom\n2026-01-01 INFO forged\x1b[2J")
    except RuntimeError:
        import sys

        made = logging.LogRecord(
            "awa_django.worker", logging.ERROR, __file__, 1, "failed", None, sys.exc_info()
        )
    logs.EscapingFilter().filter(made)
    text = logging.Formatter().format(made)
    assert "\x1b" not in text
    assert "\n    2026-01-01 INFO forged\\x1b[2J" in text
    assert not any(line.startswith("2026") for line in text.splitlines())
