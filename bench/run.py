"""The benchmark: ``make bench`` (a few minutes) or ``make bench-quick`` (under a minute).

Creates its own databases (``BENCH_DATABASE_URL``, default ``awa_bench``, and
the same name with ``_peer`` for the peers), installs the peers into its own
virtualenv under ``.cache/bench-venv`` (never project dependencies), runs every
workload of every system in the same run, repetitions interleaved, and writes
``.cache/bench/results-<mode>.json`` and ``.md``. ``--publish`` also writes
``docs/benchmarks.md`` and its plot.

It fails (exit 1) only when a benchmark is broken (a workload crashed, a job
was lost or doubled where exactly-once is promised); never on a timing.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # `python bench/run.py` puts bench/, not the root, on the path
from bench.suite import AWA, BEAT, PROCRASTINATE, TASKS_DB, BrokenBenchmark, Side, log, run_all  # noqa: E402

CACHE = ROOT / ".cache"
BENCH_VENV = CACHE / "bench-venv"
# Pinned: a published number names the version it was measured with.
PEER_REQUIREMENTS = [
    "django>=6.0,<6.1",
    "psycopg[binary]>=3.2",
    "django-tasks-db==0.13.0",
    "django-celery-beat==2.9.0",
    "procrastinate==3.10.0",
    "matplotlib>=3.8",
]

# Sizes and repetitions. The full run aims at about 15 minutes on an idle
# 2-core machine: the peers' W2 runs are cut off (peer_cut_off seconds after
# the slot, reporting what they fired by then) and take fewer repetitions at the
# larger N; W4 runs once per system (60 s each). docs/benchmarks.md prints the
# repetitions of every figure.
FLOW_VARIANTS = ["unkeyed", "keys_10", "keys_1000", "rate"]
QUICK: dict[str, Any] = {
    "w1_idle": {"n": [100, 1000], "reps": 3},
    "w1_plan": {"n": [1000]},
    "w2_burst": {"n": [500], "reps": {}, "peer_reps": {}, "lead": 2, "timeout": 20, "peer_cut_off": 2},
    "w3_worker": {"jobs": 50, "processes": [1], "concurrency": [1, 4], "reps": 1},
    "w3_flow": {"jobs": 50, "processes": 1, "concurrency": 4, "reps": 1, "variants": FLOW_VARIANTS},
    "enqueue": {"count": 100, "reps": 1},
    "w4": {"n": 50, "seconds": 4, "warmup": 2, "peers": False},
    "w5_startup": {"n": [100]},
    "profile": {"burst_n": 500, "jobs": 100, "explain_n": 200, "explain_jobs": 20},
}
FULL: dict[str, Any] = {
    "w1_idle": {"n": [100, 1000, 10000, 100000], "reps": 20},
    "w1_plan": {"n": [1000, 10000, 100000]},
    "w2_burst": {
        "n": [1000, 10000, 100000],
        "reps": {1000: 5, 10000: 5, 100000: 1},
        "peer_reps": {1000: 5, 10000: 3, 100000: 1},
        "lead": 5,
        "timeout": 300,
        "peer_cut_off": 20,
    },
    "w3_worker": {"jobs": 1000, "processes": [1, 2], "concurrency": [1, 8, 32], "reps": 5},
    "w3_flow": {"jobs": 2000, "processes": 2, "concurrency": 8, "reps": 3, "variants": FLOW_VARIANTS},
    "enqueue": {"count": 2000, "reps": 5},
    "w4": {"n": 1000, "seconds": 60},
    "w5_startup": {"n": [1000, 10000]},
    "profile": {"burst_n": 100000, "jobs": 1000, "explain_n": 1000, "explain_jobs": 200},
}


def psql(database: str, statement: str) -> None:
    url = urlparse(os.environ["BENCH_DATABASE_URL"])
    subprocess.run(
        [
            "psql",
            "-h",
            url.hostname or "127.0.0.1",
            "-p",
            str(url.port or 5432),
            "-U",
            url.username or "postgres",
            "-d",
            database,
            "-qc",
            statement,
        ],
        check=True,
    )


def create_databases(url: str) -> tuple[str, str]:
    name = urlparse(url).path.lstrip("/")
    peer = f"{name}_peer"
    for database in (name, peer):
        psql("postgres", f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        psql("postgres", f'CREATE DATABASE "{database}"')
    return name, peer


def project_env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT), DJANGO_SETTINGS_MODULE="bench.settings")


def peer_env(peer_database: str) -> dict[str, str]:
    url = urlparse(os.environ["BENCH_DATABASE_URL"])
    return dict(
        os.environ,
        PYTHONPATH=str(ROOT),
        BENCH_PEER_DATABASE=peer_database,
        BENCH_PGHOST=url.hostname or "127.0.0.1",
        BENCH_PGPORT=str(url.port or 5432),
        DJANGO_SETTINGS_MODULE="bench.peers.tasks_db_settings",
    )


def ensure_bench_venv() -> str | None:
    """The peers' virtualenv; None (with the reason logged) if it cannot be built."""
    stamp = BENCH_VENV / ".installed"
    wanted = "\n".join(PEER_REQUIREMENTS)
    python = BENCH_VENV / "bin" / "python"
    if stamp.exists() and stamp.read_text() == wanted:
        return str(python)
    try:
        if not python.exists():
            finder = subprocess.run(
                [str(ROOT / "scripts" / "find-python")], capture_output=True, text=True, check=True
            )
            subprocess.run([finder.stdout.strip(), "-m", "venv", str(BENCH_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", *PEER_REQUIREMENTS], check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        log(f"cannot build the peers' virtualenv ({exc}); peers are skipped")
        return None
    stamp.write_text(wanted)
    return str(python)


def run_side(python: str, module: str, env: dict[str, str], workload: str, **kwargs: Any) -> dict[str, Any]:
    started = time.monotonic()
    proc = subprocess.run(
        [python, "-m", module, workload, json.dumps(kwargs)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if proc.returncode != 0:
        raise BrokenBenchmark(f"{module} {workload} {kwargs} failed:\n{proc.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    log(f"  {module.rsplit('.', 1)[-1]} {workload} {json.dumps(kwargs)}: {time.monotonic() - started:.0f} s")
    return result


def peer_setup(peer_python: str, peer_db: str) -> None:
    """The peers' tables, in one database (their tables do not overlap)."""
    subprocess.run(
        [peer_python, "-m", "django", "migrate", "-v0"],
        cwd=ROOT,
        env=dict(peer_env(peer_db), DJANGO_SETTINGS_MODULE="bench.peers.celery_beat_settings"),
        check=True,
    )
    run_side(peer_python, "bench.peers.procrastinate_side", peer_env(peer_db), "setup")


def sides(awa_python: str, peer_python: str | None, peer_db: str) -> dict[str, Side]:
    """One callable per system (and the profiler), each in its own process and virtualenv."""

    def side(python: str, module: str, env: dict[str, str]) -> Side:
        return lambda workload, **kwargs: run_side(python, module, env, workload, **kwargs)

    out = {
        AWA: side(awa_python, "bench.awa_side", project_env()),
        "profile": side(awa_python, "bench.profile", project_env()),
    }
    if peer_python:
        beat_env = dict(peer_env(peer_db), DJANGO_SETTINGS_MODULE="bench.peers.celery_beat_settings")
        out[BEAT] = side(peer_python, "bench.peers.celery_beat_side", beat_env)
        out[TASKS_DB] = side(peer_python, "bench.peers.tasks_db_side", peer_env(peer_db))
        out[PROCRASTINATE] = side(peer_python, "bench.peers.procrastinate_side", peer_env(peer_db))
    return out


def run(mode: str) -> dict[str, Any]:
    config = QUICK if mode == "quick" else FULL
    url = os.environ.setdefault("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/awa_bench")
    _, peer_db = create_databases(url)
    awa_python = sys.executable
    subprocess.run([awa_python, "-m", "django", "migrate", "-v0"], cwd=ROOT, env=project_env(), check=True)
    peer_python = ensure_bench_venv()
    if peer_python:
        peer_setup(peer_python, peer_db)
    results: dict[str, Any] = {"mode": mode, "config": config, "machine": machine()}
    started = time.monotonic()
    results["workloads"] = run_all(sides(awa_python, peer_python, peer_db), config)
    results["versions"] = versions(awa_python, peer_python)
    results["elapsed_s"] = time.monotonic() - started
    results["machine"]["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    return results


def machine() -> dict[str, Any]:
    load = os.getloadavg()
    return {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "loadavg_at_start": [round(x, 2) for x in load],
        "postgres": subprocess.run(["psql", "--version"], capture_output=True, text=True).stdout.strip(),
    }


def versions(awa_python: str, peer_python: str | None) -> dict[str, str]:
    code = (
        "import importlib.metadata as m, json, sys; print(json.dumps({p: m.version(p) "
        "for p in sys.argv[1:] if __import__('importlib.util').util.find_spec(p.replace('-', '_'))}))"
    )
    out = json.loads(
        subprocess.run(
            [awa_python, "-c", code, "django", "croniter", "psycopg"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    out = {f"{k} (awa_django)": v for k, v in out.items()}
    if peer_python:
        peer = json.loads(
            subprocess.run(
                [
                    peer_python,
                    "-c",
                    code,
                    "django",
                    "django-tasks-db",
                    "django-celery-beat",
                    "celery",
                    "procrastinate",
                    "croniter",
                ],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
        out.update({f"{k} (peers)": v for k, v in peer.items()})
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="the CI smoke run (under a minute)")
    parser.add_argument("--publish", action="store_true", help="also write docs/benchmarks.md and its plot")
    args = parser.parse_args()
    mode = "quick" if args.quick else "full"
    try:
        results = run(mode)
    except BrokenBenchmark as exc:
        log(f"BROKEN: {exc}")
        return 1
    out_dir = CACHE / "bench"
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"results-{mode}.json").write_text(json.dumps(results, indent=2, default=str))
    from bench.report import markdown

    (out_dir / f"results-{mode}.md").write_text(markdown(results))
    log(f"results in {out_dir}/results-{mode}.json and .md ({results['elapsed_s']:.0f} s)")
    if args.publish:
        # The raw numbers behind docs/benchmarks.md, kept beside the harness.
        (ROOT / "bench" / f"results-{mode}.json").write_text(json.dumps(results, indent=2, default=str))
        subprocess.run(
            [str(BENCH_VENV / "bin" / "python"), "-m", "bench.report", str(out_dir / f"results-{mode}.json")],
            cwd=ROOT,
            check=True,
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
