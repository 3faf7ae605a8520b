"""Where the time goes: ``py-spy`` on a real ``runcron`` during a due burst and
on a real ``runtasks`` draining the queue, and PostgreSQL's ``auto_explain``
(``ANALYZE, BUFFERS``, nested statements) of what each one sends.

Run by ``bench/run.py`` in the project's virtualenv as
``python -m bench.profile WORKLOAD JSON-ARGS``; prints one JSON object. These
runs are not measured runs: py-spy and auto_explain slow what they watch.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench.awa_side import Statements, insert_jobs, manage, prepare_burst, sql, wait_for_jobs

TOP = 10


def py_spy() -> str | None:
    beside = Path(sys.executable).parent / "py-spy"
    return str(beside) if beside.exists() else shutil.which("py-spy")


def attach(pid: int, output: str) -> subprocess.Popen[bytes]:
    """py-spy sampling ``pid`` (all threads, idle ones too: waiting on
    PostgreSQL is part of the story) until it gets SIGINT."""
    spy = py_spy()
    assert spy, "py-spy not found"
    return subprocess.Popen(
        [
            spy,
            "record",
            "--pid",
            str(pid),
            "--idle",
            "--threads",
            "--nonblocking",
            "--rate",
            "200",
            "--format",
            "raw",
            "--output",
            output,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def stop(spy: subprocess.Popen[bytes]) -> str:
    spy.send_signal(signal.SIGINT)
    try:
        _, err = spy.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        spy.kill()
        _, err = spy.communicate()
    return err.decode(errors="replace")[-500:]


IDLE = "idle"
PSYCOPG = "psycopg"
PYTHON = "python"


def classify(frames: list[str]) -> str:
    """What a sample was doing: ``idle`` (sleeping, waiting for a signal,
    another thread or a notification: ``notifies`` anywhere in the stack),
    ``psycopg`` (innermost frame in psycopg: waiting on PostgreSQL, sending,
    decoding), ``python`` (everything else)."""
    leaf = frames[-1]
    if any("notifies" in f for f in frames) or any(
        word in leaf for word in ("sleep", "wait (threading", "_wait_for_tstate_lock", "select (", "poll (")
    ):
        return IDLE
    return PSYCOPG if "psycopg" in leaf else PYTHON


def summarize(raw: str) -> dict[str, Any]:
    """py-spy's raw stacks (``--threads``): per thread, the share of its samples
    by activity; over the busy (not idle) samples of all threads, the top
    functions by self time and by inclusive time (awa_django's and Django's)."""
    threads: dict[str, Counter[str]] = {}
    entry: dict[str, Counter[str]] = {}
    self_time: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    busy = 0
    for line in raw.splitlines():
        stack, _, count_text = line.rpartition(" ")
        frames = [f.strip() for f in stack.split(";") if f.strip()]
        if not frames or not count_text.isdigit():
            continue
        count, thread = int(count_text), frames[0].partition(": ")[2] or frames[0]
        kind = classify(frames) if len(frames) > 1 else IDLE
        threads.setdefault(thread, Counter())[kind] += count
        ours = [short(f) for f in frames[1:] if "awa_django" in f]
        if ours:
            entry.setdefault(thread, Counter())[ours[0]] += count
        if kind == IDLE:
            continue
        busy += count
        self_time[short(frames[-1])] += count
        for name in {short(f) for f in frames[1:] if "awa_django" in f or "/django/" in f}:
            inclusive[name] += count
    return {
        "busy_samples": busy,
        "threads": [
            {
                "thread": name,
                "runs": entry[name].most_common(1)[0][0] if name in entry else "-",
                "samples": sum(kinds.values()),
                "by_kind": {k: round(100 * c / sum(kinds.values()), 1) for k, c in kinds.most_common()},
            }
            for name, kinds in sorted(threads.items(), key=lambda kv: -sum(kv[1].values()) + kv[1][IDLE])
        ],
        "self": [(name, round(100 * c / busy, 1)) for name, c in self_time.most_common(TOP)] if busy else [],
        "inclusive": [(name, round(100 * c / busy, 1)) for name, c in inclusive.most_common(TOP)]
        if busy
        else [],
    }


def short(frame: str) -> str:
    """``func (path/to/module.py:12)`` -> ``func (module.py)``."""
    name, _, where = frame.partition(" (")
    path = where.rstrip(")").rsplit(":", 1)[0]
    parts = path.split("/")
    return f"{name} ({'/'.join(parts[-2:]) if 'awa_django' in parts else parts[-1]})"


def profile_runcron(n: int, lead: float) -> dict[str, Any]:
    """py-spy on ``runcron`` from just before a slot with ``n`` due rows until their jobs exist."""
    if not py_spy():
        return {"error": "py-spy is not installed in the project's virtualenv"}
    slot = prepare_burst(n, lead)
    runcron = manage("runcron")
    output = str(Path(tempfile.mkdtemp(prefix="awa-bench-spy-")) / "stacks.txt")
    time.sleep(max(0.0, slot.timestamp() - time.time() - 0.5))
    spy = attach(runcron.pid, output)
    start = time.monotonic()
    wait_for_jobs(runcron, n, 300)
    seconds = time.monotonic() - start
    err = stop(spy)
    if not Path(output).exists():
        return {"error": f"py-spy wrote nothing: {err}"}
    return {"n": n, "seconds": seconds, **summarize(Path(output).read_text())}


def profile_runtasks(jobs: int) -> dict[str, Any]:
    """py-spy launching one ``runtasks --burst`` that drains ``jobs`` no-op jobs."""
    spy = py_spy()
    if not spy:
        return {"error": "py-spy is not installed in the project's virtualenv"}
    insert_jobs(jobs)
    output = str(Path(tempfile.mkdtemp(prefix="awa-bench-spy-")) / "stacks.txt")
    start = time.monotonic()
    worker = manage(
        "runtasks",
        "--burst",
        "--concurrency",
        "1",
        prefix=(
            spy,
            "record",
            "--idle",
            "--threads",
            "--rate",
            "200",
            "--format",
            "raw",
            "--output",
            output,
            "--",
        ),
    )
    worker.wait(600)
    seconds = time.monotonic() - start
    if not Path(output).exists():
        return {"error": "py-spy wrote nothing (can it launch processes here?)"}
    return {"jobs": jobs, "seconds": seconds, **summarize(Path(output).read_text())}


def plans(counted: Statements, top: int = 6) -> dict[str, Any]:
    """The statements the watched processes sent (auto_explain), biggest total time first."""
    merged: dict[str, dict[str, Any]] = {}
    for data in counted.files():
        for text, entry in data.get("plans", {}).items():
            into = merged.setdefault(text, {"count": 0, "total_ms": 0.0, "max_ms": 0.0, "plan": ""})
            into["count"] += entry["count"]
            into["total_ms"] += entry["total_ms"]
            if entry["max_ms"] >= into["max_ms"]:
                into["max_ms"], into["plan"] = entry["max_ms"], entry["plan"]
    if not merged:
        errors = {data["auto_explain_error"] for data in counted.files() if data.get("auto_explain_error")}
        return {"error": f"no plan came back ({'; '.join(errors) or 'auto_explain not loaded'})"}
    ranked = sorted(merged.items(), key=lambda kv: -kv[1]["total_ms"])[:top]
    return {"statements": [{"text": text, **entry} for text, entry in ranked]}


def explain_runcron(n: int, lead: float) -> dict[str, Any]:
    prepare_burst(n, lead)
    counted = Statements(BENCH_AUTO_EXPLAIN="1")
    wait_for_jobs(manage("runcron", env=counted.env), n, lead + 120)
    return {"n": n, **plans(counted)}


def explain_runtasks(jobs: int) -> dict[str, Any]:
    insert_jobs(jobs)
    counted = Statements(BENCH_AUTO_EXPLAIN="1")
    manage("runtasks", "--burst", "--concurrency", "1", env=counted.env).wait(600)
    done = sql("SELECT count(*) FROM awa_jobs WHERE state = 'completed'")[0][0]
    return {"jobs": jobs, "completed": done, **plans(counted)}


WORKLOADS = {
    "profile_runcron": profile_runcron,
    "profile_runtasks": profile_runtasks,
    "explain_runcron": explain_runcron,
    "explain_runtasks": explain_runtasks,
}

if __name__ == "__main__":
    print(json.dumps(WORKLOADS[sys.argv[1]](**json.loads(sys.argv[2])), default=str))
