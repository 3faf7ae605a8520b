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
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # `python bench/run.py` puts bench/, not the root, on the path
CACHE = ROOT / ".cache"
BENCH_VENV = CACHE / "bench-venv"
# Pinned: a published number names the version it was measured with.
PEER_REQUIREMENTS = ["django>=6.0,<6.1", "psycopg[binary]>=3.2", "django-tasks-db==0.13.0",
                     "django-celery-beat==2.9.0", "matplotlib>=3.8"]

QUICK: dict[str, Any] = {
    "w1_idle": {"n": [100, 1000, 10000], "reps": 5},
    "w1_plan": {"n": [1000]},
    "w2_burst": {"n": [1000], "reps": 1, "lead": 5, "timeout": 30},
    "w3_worker": {"jobs": 200, "processes": [1], "reps": 1},
    "enqueue": {"count": 200, "reps": 1},
    "w4": {"n": 100, "seconds": 4},
    "w5_startup": {"n": [100]},
}
FULL: dict[str, Any] = {
    "w1_idle": {"n": [100, 1000, 10000, 100000], "reps": 20},
    "w1_plan": {"n": [1000, 10000, 100000]},
    "w2_burst": {"n": [1000, 10000, 100000], "reps": 5, "reps_at_max": 1, "lead": 6, "timeout": 300},
    "w3_worker": {"jobs": 2000, "processes": [1, 2], "reps": 3},
    "enqueue": {"count": 2000, "reps": 5},
    "w4": {"n": 1000, "seconds": 60},
    "w5_startup": {"n": [1000, 10000]},
}


class BrokenBenchmark(Exception):
    """A workload crashed or broke a guarantee: the benchmark itself is wrong."""


def log(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


def psql(database: str, statement: str) -> None:
    url = urlparse(os.environ["BENCH_DATABASE_URL"])
    subprocess.run(["psql", "-h", url.hostname or "127.0.0.1", "-p", str(url.port or 5432), "-U",
                    url.username or "postgres", "-d", database, "-qc", statement], check=True)


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
    return dict(os.environ, PYTHONPATH=str(ROOT), BENCH_PEER_DATABASE=peer_database,
                BENCH_PGHOST=url.hostname or "127.0.0.1", BENCH_PGPORT=str(url.port or 5432),
                DJANGO_SETTINGS_MODULE="bench.peers.tasks_db_settings")


def ensure_bench_venv() -> str | None:
    """The peers' virtualenv; None (with the reason logged) if it cannot be built."""
    stamp = BENCH_VENV / ".installed"
    wanted = "\n".join(PEER_REQUIREMENTS)
    python = BENCH_VENV / "bin" / "python"
    if stamp.exists() and stamp.read_text() == wanted:
        return str(python)
    try:
        if not python.exists():
            finder = subprocess.run([str(ROOT / "scripts" / "find-python")], capture_output=True, text=True,
                                    check=True)
            subprocess.run([finder.stdout.strip(), "-m", "venv", str(BENCH_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", *PEER_REQUIREMENTS], check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        log(f"cannot build the peers' virtualenv ({exc}); peers are skipped")
        return None
    stamp.write_text(wanted)
    return str(python)


def run_side(python: str, module: str, env: dict[str, str], workload: str, **kwargs: Any) -> dict[str, Any]:
    proc = subprocess.run([python, "-m", module, workload, json.dumps(kwargs)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        raise BrokenBenchmark(f"{module} {workload} {kwargs} failed:\n{proc.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def median_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per key, the median of the numeric values over the repetitions."""
    out: dict[str, Any] = {"reps": len(runs)}
    for key in runs[0]:
        values = [r[key] for r in runs]
        try:
            out[key] = statistics.median(float(v) for v in values)
        except (TypeError, ValueError):
            out[key] = values[0]
    return out


def run(mode: str) -> dict[str, Any]:
    config = QUICK if mode == "quick" else FULL
    url = os.environ.setdefault("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/awa_bench")
    _, peer_db = create_databases(url)
    awa_python = sys.executable
    subprocess.run([awa_python, "-m", "django", "migrate", "-v0"], cwd=ROOT, env=project_env(), check=True)
    peer_python = ensure_bench_venv()
    peers: dict[str, str] = {}  # system -> the python that runs it
    if peer_python:
        # One database for both peers (their tables do not overlap).
        subprocess.run([peer_python, "-m", "django", "migrate", "-v0"], cwd=ROOT,
                       env=dict(peer_env(peer_db), DJANGO_SETTINGS_MODULE="bench.peers.celery_beat_settings"),
                       check=True)
        peers["django-tasks-db"] = peer_python
        peers["django-celery-beat"] = peer_python

    def awa(workload: str, **kwargs: Any) -> dict[str, Any]:
        return run_side(awa_python, "bench.awa_side", project_env(), workload, **kwargs)

    def tasks_db(workload: str, **kwargs: Any) -> dict[str, Any]:
        return run_side(peers["django-tasks-db"], "bench.peers.tasks_db_side", peer_env(peer_db),
                        workload, **kwargs)

    results: dict[str, Any] = {"mode": mode, "config": config, "machine": machine(), "versions": {},
                               "workloads": {}}
    w: dict[str, Any] = results["workloads"]
    started = time.monotonic()

    def celery_beat(workload: str, **kwargs: Any) -> dict[str, Any]:
        env = dict(peer_env(peer_db), DJANGO_SETTINGS_MODULE="bench.peers.celery_beat_settings")
        return run_side(peers["django-celery-beat"], "bench.peers.celery_beat_side", env, workload, **kwargs)

    log("W1 idle pass")
    w["w1_idle"] = {"awa_django": [], **({"django-celery-beat": []} if "django-celery-beat" in peers else {})}
    for n in config["w1_idle"]["n"]:
        w["w1_idle"]["awa_django"].append(awa("w1_idle", n=n, reps=config["w1_idle"]["reps"]))
        if "django-celery-beat" in peers:
            w["w1_idle"]["django-celery-beat"].append(celery_beat("w1_idle", n=n, reps=config["w1_idle"]["reps"]))
    log("W1 planning pass (rows awaiting computation)")
    w["w1_plan"] = {"awa_django": [awa("w1_plan", n=n) for n in config["w1_plan"]["n"]]}

    log("W2 due burst")
    burst = config["w2_burst"]
    w["w2_burst"] = {"awa_django": []}
    for n in burst["n"]:
        reps = burst.get("reps_at_max", burst["reps"]) if n == max(burst["n"]) else burst["reps"]
        runs = [awa("w2_burst", n=n, lead=burst["lead"], timeout=burst["timeout"]) for _ in range(reps)]
        for r in runs:
            if r["dropped"]:
                log(f"W2 n={n}: {r['dropped']} fires missing after {burst['timeout']} s")
        w["w2_burst"]["awa_django"].append(median_of(runs))

    log("W3 worker throughput")
    worker_peers = [p for p in peers if p == "django-tasks-db"]  # the peers with a task worker
    w["w3_worker"] = {"awa_django": [], **{p: [] for p in worker_peers}}
    for processes in config["w3_worker"]["processes"]:
        runs: dict[str, list[dict[str, Any]]] = {"awa_django": [], **{p: [] for p in worker_peers}}
        for _ in range(config["w3_worker"]["reps"]):  # interleaved: a slow moment hits both
            runs["awa_django"].append(awa("w3_worker", jobs=config["w3_worker"]["jobs"],
                                          processes=processes, concurrency=1))
            if "django-tasks-db" in peers:
                runs["django-tasks-db"].append(tasks_db("w3_worker", jobs=config["w3_worker"]["jobs"],
                                                        processes=processes, concurrency=1))
        for system, system_runs in runs.items():
            w["w3_worker"][system].append(median_of(system_runs))

    log("W3 enqueue rates")
    runs = {"awa_django": [], **{p: [] for p in worker_peers}}
    for _ in range(config["enqueue"]["reps"]):
        runs["awa_django"].append(awa("enqueue_rates", count=config["enqueue"]["count"]))
        if "django-tasks-db" in peers:
            runs["django-tasks-db"].append(tasks_db("enqueue_rates", count=config["enqueue"]["count"]))
    w["enqueue"] = {system: median_of(r) for system, r in runs.items()}

    log("W4 every-second schedules")
    w4 = awa("w4_every_second", n=config["w4"]["n"], seconds=config["w4"]["seconds"])
    if w4["doubled"]:
        raise BrokenBenchmark(f"W4: {w4['doubled']} slots fired twice")
    w["w4_every_second"] = {"awa_django": w4}

    log("W5 runcron start-up")
    w["w5_startup"] = {"awa_django": [awa("w5_startup", n=n) for n in config["w5_startup"]["n"]]}

    results["versions"] = versions(awa_python, peer_python)
    results["elapsed_s"] = time.monotonic() - started
    return results


def machine() -> dict[str, Any]:
    load = os.getloadavg()
    return {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count(),
            "loadavg_at_start": [round(x, 2) for x in load],
            "postgres": subprocess.run(["psql", "--version"], capture_output=True, text=True).stdout.strip()}


def versions(awa_python: str, peer_python: str | None) -> dict[str, str]:
    code = ("import importlib.metadata as m, json, sys; print(json.dumps({p: m.version(p) "
            "for p in sys.argv[1:] if __import__('importlib.util').util.find_spec(p.replace('-', '_'))}))")
    out = json.loads(subprocess.run([awa_python, "-c", code, "django", "croniter", "psycopg"],
                                    capture_output=True, text=True, check=True).stdout)
    out = {f"{k} (awa_django)": v for k, v in out.items()}
    if peer_python:
        peer = json.loads(subprocess.run([peer_python, "-c", code, "django", "django-tasks-db",
                                          "django-celery-beat", "celery"],
                                         capture_output=True, text=True, check=True).stdout)
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
        subprocess.run([str(BENCH_VENV / "bin" / "python"), "-m", "bench.report",
                        str(out_dir / f"results-{mode}.json")], cwd=ROOT, check=True,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
