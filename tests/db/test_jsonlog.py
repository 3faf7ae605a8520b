"""JSON-lines logging: the formatter, and one fire followed from slot to completion."""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

from awa_django import jobcontext as context
from awa_django.jsonlog import JsonFormatter, bind_process, json_logging


def record(msg: str = "hello %s", args: tuple[Any, ...] = ("world",), **extra: Any) -> logging.LogRecord:
    rec = logging.LogRecord("awa_django.test", logging.WARNING, __file__, 1, msg, args, None)
    for key, value in extra.items():
        setattr(rec, key, value)
    return rec


def test_json_formatter__one_line_with_extras_and_standard_fields() -> None:
    line = JsonFormatter().format(record(event="cron.fired", schedule="nightly", job_id=7, tags=("a",)))
    assert "\n" not in line
    data = json.loads(line)
    assert (
        data["message"] == "hello world"
        and data["level"] == "WARNING"
        and data["logger"] == "awa_django.test"
    )
    assert data["event"] == "cron.fired" and data["schedule"] == "nightly" and data["job_id"] == 7
    assert data["tags"] == ["a"] and data["ts"].endswith("+00:00") and isinstance(data["pid"], int)
    assert "args" not in data and "msg" not in data


def test_json_formatter__inside_a_task_adds_the_job_and_its_fire() -> None:
    job = context.JobInfo(
        id=42,
        attempt=2,
        max_attempts=3,
        queue="mail",
        kind="x.y",
        metadata={"cron_name": "hourly", "cron_fire_at": "2026-03-29T01:00:00+00:00"},
    )
    with context.running(job):
        data = json.loads(JsonFormatter().format(record()))
    assert (data["job_id"], data["attempt"], data["queue"]) == (42, 2, "mail")
    assert data["schedule"] == "hourly" and data["fire_at"] == "2026-03-29T01:00:00+00:00"


def test_json_formatter__exception_and_process_fields() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        rec = logging.LogRecord("awa_django", logging.ERROR, __file__, 1, "failed", None, sys.exc_info())
    bind_process(instance_id="i-1", role="runcron")
    try:
        data = json.loads(JsonFormatter().format(rec))
    finally:
        from awa_django import jsonlog

        jsonlog._process_fields.clear()
    assert "ValueError: boom" in data["exception"]
    assert data["instance_id"] == "i-1" and data["role"] == "runcron"


def test_json_logging__is_a_valid_dictconfig() -> None:
    import logging.config

    config = json_logging("DEBUG", root=False)
    logging.config.dictConfig(
        {**config, "loggers": {"awa_django.jsonlog_test": config["loggers"]["awa_django"]}}
    )
    handler = logging.getLogger("awa_django.jsonlog_test").handlers[0]
    assert isinstance(handler.formatter, JsonFormatter)


def test_every_log_call_of_awa_django_names_an_event() -> None:
    """Operators filter on ``event``: no awa_django log call may omit it."""
    import ast
    from pathlib import Path

    import awa_django

    missing = []
    for path in Path(awa_django.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "logger"
                and node.func.attr in {"debug", "info", "warning", "error", "exception", "critical"}
            ):
                continue
            extra = next((k.value for k in node.keywords if k.arg == "extra"), None)
            if not (
                isinstance(extra, ast.Dict)
                and any(isinstance(k, ast.Constant) and k.value == "event" for k in extra.keys)
            ):
                missing.append(f"{path.name}:{node.lineno}")
    assert missing == []
