"""This checkout against another commit, in one run: ``make bench-against REV=<commit>``.

A change that should not change behaviour (a refactor, a move of statements)
must not change the numbers either. Timings on a shared machine drift by more
than a refactor's effect, so the two versions are measured in the same run,
repetitions interleaved (this, base, this, base, ...), each in its own process
and its own database, and compared as ratios of medians.

The other commit is checked out as a detached git worktree under
``.cache/bench-against/``; each side runs its own ``bench/awa_side.py`` against
its own database (``<BENCH_DATABASE_URL>_this`` and ``_base``), migrated by its
own code. Writes ``.cache/bench/against-<rev>.json`` and ``.md``; exits 1 only
when a workload is broken, never on a timing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse, urlunparse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.run import psql  # noqa: E402
from bench.suite import BrokenBenchmark, log  # noqa: E402

OUT = ROOT / ".cache" / "bench"
# (workload, its arguments, the figures compared, True where higher is better)
WORKLOADS: dict[str, list[tuple[str, dict[str, Any], dict[str, bool]]]] = {
    "quick": [
        ("w1_idle", {"n": 1000, "reps": 3}, {"ms_p50": False}),
        ("w2_burst", {"n": 500, "lead": 2, "timeout": 60}, {"ms_p50": False, "ms_p99": False}),
        ("w3_worker", {"jobs": 100, "processes": 1, "concurrency": 4}, {"jobs_per_s": True}),
        ("enqueue_rates", {"count": 100}, {"single_per_s": True, "bulk_per_s": True}),
        ("w4_every_second", {"n": 50, "seconds": 4, "warmup": 2}, {"ms_p99": False}),
    ],
    "full": [
        ("w1_idle", {"n": 10000, "reps": 20}, {"ms_p50": False}),
        ("w2_burst", {"n": 10000, "lead": 5, "timeout": 300}, {"ms_p50": False, "ms_p99": False}),
        ("w3_worker", {"jobs": 1000, "processes": 2, "concurrency": 8}, {"jobs_per_s": True}),
        ("enqueue_rates", {"count": 2000}, {"single_per_s": True, "bulk_per_s": True}),
        ("w4_every_second", {"n": 1000, "seconds": 30}, {"ms_p99": False}),
    ],
}


class Side:
    """One version of awa_django: its checkout, its database, its process per workload."""

    def __init__(self, name: str, checkout: Path, url: str) -> None:
        self.name, self.checkout, self.url = name, checkout, url

    def env(self) -> dict[str, str]:
        return dict(
            os.environ,
            PYTHONPATH=str(self.checkout),
            DJANGO_SETTINGS_MODULE="bench.settings",
            BENCH_DATABASE_URL=self.url,
        )

    def prepare(self) -> None:
        database = urlparse(self.url).path.lstrip("/")
        psql("postgres", f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        psql("postgres", f'CREATE DATABASE "{database}"')
        self.run_django("migrate", "-v0")

    def run_django(self, *args: str) -> None:
        subprocess.run([sys.executable, "-m", "django", *args], cwd=self.checkout, env=self.env(), check=True)

    def __call__(self, workload: str, **kwargs: Any) -> dict[str, Any]:
        proc = subprocess.run(
            [sys.executable, "-m", "bench.awa_side", workload, json.dumps(kwargs)],
            cwd=self.checkout,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=1800,
        )
        if proc.returncode != 0:
            raise BrokenBenchmark(f"{self.name} {workload} {kwargs} failed:\n{proc.stderr[-3000:]}")
        result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
        return result


def base_checkout(rev: str) -> Path:
    """A detached worktree of ``rev`` (made once, reused while it is that commit)."""
    commit = subprocess.run(
        ["git", "rev-parse", "--verify", f"{rev}^{{commit}}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    path = ROOT / ".cache" / "bench-against" / commit[:12]
    if not path.exists():
        subprocess.run(["git", "worktree", "add", "--detach", str(path), commit], cwd=ROOT, check=True)
    return path


def side_url(suffix: str) -> str:
    url = urlparse(os.environ["BENCH_DATABASE_URL"])
    return urlunparse(url._replace(path=f"{url.path}_{suffix}"))


def compare(
    sides: list[Side], plan: list[tuple[str, dict[str, Any], dict[str, bool]]], reps: int
) -> list[dict[str, Any]]:
    """Each workload ``reps`` times per side, interleaved; the medians and their ratio."""
    rows = []
    for workload, kwargs, figures in plan:
        runs: dict[str, list[dict[str, Any]]] = {side.name: [] for side in sides}
        for rep in range(reps):
            for side in sides if rep % 2 == 0 else reversed(sides):
                started = time.monotonic()
                runs[side.name].append(side(workload, **kwargs))
                log(f"  {side.name} {workload} rep {rep + 1}: {time.monotonic() - started:.0f} s")
        for figure, higher_is_better in figures.items():
            rows.append(figure_row(workload, figure, higher_is_better, runs))
    return rows


def figure_row(
    workload: str, figure: str, higher_is_better: bool, runs: dict[str, list[dict[str, Any]]]
) -> dict[str, Any]:
    """The medians, their ratio and a verdict: within noise while the two sides'
    ranges over the repetitions overlap, else better or worse."""
    this_values = [float(r[figure]) for r in runs["this"] if r.get(figure) is not None]
    base_values = [float(r[figure]) for r in runs["base"] if r.get(figure) is not None]
    this, base = statistics.median(this_values), statistics.median(base_values)
    ratio = this / base if base else float("nan")
    if min(this_values) <= max(base_values) and min(base_values) <= max(this_values):
        verdict = "within noise"
    else:
        verdict = "better" if (ratio > 1) == higher_is_better else "worse"
    return {
        "workload": workload, "figure": figure, "this": this, "base": base, "ratio": ratio, "verdict": verdict,
        "this_range": [min(this_values), max(this_values)], "base_range": [min(base_values), max(base_values)],
    }  # fmt: skip


def report(rev: str, rows: list[dict[str, Any]]) -> str:
    lines = [
        f"# This checkout against {rev}",
        "",
        "Medians of interleaved repetitions in one run; ratio = this / base.",
        "",
        "| workload | figure | this (range) | base (range) | ratio | verdict |",
        "|---|---|---:|---:|---:|---|",
    ]
    for r in rows:
        this = f"{r['this']:.2f} ({r['this_range'][0]:.2f}-{r['this_range'][1]:.2f})"
        base = f"{r['base']:.2f} ({r['base_range'][0]:.2f}-{r['base_range'][1]:.2f})"
        lines.append(
            f"| {r['workload']} | {r['figure']} | {this} | {base} | {r['ratio']:.3f} | {r['verdict']} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("rev", help="the commit to compare with (e.g. HEAD~1, a tag)")
    parser.add_argument("--quick", action="store_true", help="small workloads, a smoke run")
    parser.add_argument("--reps", type=int, default=3, help="repetitions per side (interleaved)")
    args = parser.parse_args()
    os.environ.setdefault("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/awa_bench")
    sides = [Side("this", ROOT, side_url("this")), Side("base", base_checkout(args.rev), side_url("base"))]
    try:
        for side in sides:
            side.prepare()
        rows = compare(sides, WORKLOADS["quick" if args.quick else "full"], args.reps)
    except BrokenBenchmark as exc:
        log(str(exc))
        return 1
    OUT.mkdir(parents=True, exist_ok=True)
    name = f"against-{args.rev.replace('/', '_')}"
    (OUT / f"{name}.json").write_text(json.dumps(rows, indent=2))
    text = report(args.rev, rows)
    (OUT / f"{name}.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
