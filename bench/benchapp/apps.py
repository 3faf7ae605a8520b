"""The benchmark's app: optional per-process instrumentation of Django's connections.

Every process the benchmark starts (``runcron``, ``runtasks``, ``db_worker``,
the sides themselves) loads this app. With ``BENCH_SQL_DIR`` set, it counts the
statements the process sends through Django's connections and, at exit, writes
``<BENCH_SQL_DIR>/<pid>.json``. With ``BENCH_AUTO_EXPLAIN`` also set, each new
connection loads PostgreSQL's ``auto_explain`` (``ANALYZE, BUFFERS``, nested
statements included) with its output sent to the client as notices, and the
file also holds, per statement text, the count, total time and slowest plan.
Both are off in the measured runs: the benchmark turns them on in its own
profiling runs only (auto_explain slows every statement).
"""

from __future__ import annotations

import atexit
import json
import os
import re
from pathlib import Path
from typing import Any

from django.apps import AppConfig

DURATION = re.compile(r"duration: ([0-9.]+) ms\s+plan:\s*", re.S)
LITERAL = re.compile(r"'[^']*'")
NUMBER = re.compile(r"\b\d+\b")
STATE: dict[str, Any] = {"statements": 0, "plans": {}}


def _count(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
    STATE["statements"] += 1
    return execute(sql, params, many, context)


def _on_notice(diagnostic: Any) -> None:
    message = diagnostic.message_primary or ""
    match = DURATION.match(message)
    if not match:
        return
    plan = message[match.end() :]
    text = plan.split("(cost=", 1)[0].removeprefix("Query Text:").rsplit("\n", 1)[0]
    # One entry per statement shape: literals (ids, names, times) folded.
    key = NUMBER.sub("?", LITERAL.sub("?", " ".join(text.split())))[:300]
    entry = STATE["plans"].setdefault(key, {"count": 0, "total_ms": 0.0, "max_ms": 0.0, "plan": ""})
    ms = float(match.group(1))
    entry["count"] += 1
    entry["total_ms"] += ms
    if ms >= entry["max_ms"]:
        entry["max_ms"], entry["plan"] = ms, plan


def _connected(sender: Any, connection: Any, **kwargs: Any) -> None:
    if _count not in connection.execute_wrappers:  # a reconnect reuses the wrapper object
        connection.execute_wrappers.append(_count)
    if not os.environ.get("BENCH_AUTO_EXPLAIN"):
        return
    raw = connection.connection
    try:
        with raw.cursor() as cursor:
            cursor.execute("LOAD 'auto_explain'")  # needs a superuser; without it, no plans, no harm
            for name, value in (
                ("log_min_duration", "0"),
                ("log_analyze", "on"),
                ("log_buffers", "on"),
                ("log_nested_statements", "on"),
                ("log_timing", "on"),
                ("log_level", "notice"),
            ):
                cursor.execute(f"SET auto_explain.{name} = '{value}'")
    except Exception as exc:  # reported in the results, never fatal
        STATE["auto_explain_error"] = str(exc)
        raw.rollback()
        return
    finally:
        if not raw.autocommit:
            raw.commit()
    raw.add_notice_handler(_on_notice)


def _dump(directory: str) -> None:
    Path(directory, f"{os.getpid()}.json").write_text(json.dumps(STATE))


class BenchAppConfig(AppConfig):
    name = "bench.benchapp"

    def ready(self) -> None:
        directory = os.environ.get("BENCH_SQL_DIR")
        if not directory:
            return
        from django.db.backends.signals import connection_created

        connection_created.connect(_connected)
        atexit.register(_dump, directory)
