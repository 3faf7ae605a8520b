"""The workloads of one benchmark run, every system in the same run.

``bench/run.py`` builds a ``Sides`` (one callable per system, each running a
workload in that system's process and virtualenv) and calls ``run_all``.
Repetitions are interleaved (rep 1 of every system, then rep 2, ...) so a slow
moment of a shared machine hits every system alike; each figure is the median.
"""

from __future__ import annotations

import functools
import statistics
import sys
from collections.abc import Callable
from typing import Any

Side = Callable[..., dict[str, Any]]
AWA = "awa_django"
BEAT = "django-celery-beat"
TASKS_DB = "django-tasks-db"
PROCRASTINATE = "procrastinate"


class BrokenBenchmark(Exception):
    """A workload crashed or broke a guarantee: the benchmark itself is wrong."""


def log(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


def median_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per key, the median of the numeric values over the repetitions."""
    out: dict[str, Any] = {"reps": len(runs)}
    for key in runs[0]:
        values = [r[key] for r in runs]
        try:
            out[key] = statistics.median(float(v) for v in values if v is not None)
        except (TypeError, ValueError, statistics.StatisticsError):
            out[key] = values[0]
    return out


def interleaved(
    sides: dict[str, Side], workload: str, repetitions: dict[str, int], **kwargs: Any
) -> dict[str, Any]:
    """``repetitions[system]`` runs of ``workload`` per system, interleaved; the medians."""
    runs: dict[str, list[dict[str, Any]]] = {system: [] for system in sides}
    for rep in range(max(repetitions.get(s, 0) for s in sides)):
        for system, side in sides.items():
            if rep < repetitions.get(system, 0):
                runs[system].append(side(workload, **kwargs))
    return {system: median_of(r) for system, r in runs.items() if r}


def with_peers(sides: dict[str, Side], names: tuple[str, ...]) -> dict[str, Side]:
    return {s: side for s, side in sides.items() if s == AWA or s in names}


def w1(sides: dict[str, Side], config: dict[str, Any], w: dict[str, Any]) -> None:
    log("W1 idle pass, planning pass")
    systems = with_peers(sides, (BEAT,))
    w["w1_idle"] = {s: [] for s in systems}
    for n in config["w1_idle"]["n"]:
        for system, result in interleaved(
            systems, "w1_idle", {s: 1 for s in systems}, n=n, reps=config["w1_idle"]["reps"]
        ).items():
            w["w1_idle"][system].append(result)
    w["w1_plan"] = {AWA: [sides[AWA]("w1_plan", n=n) for n in config["w1_plan"]["n"]]}


def w2(sides: dict[str, Side], config: dict[str, Any], w: dict[str, Any]) -> None:
    burst = config["w2_burst"]
    systems = with_peers(sides, (BEAT, PROCRASTINATE))
    w["w2_burst"] = {s: [] for s in systems}
    for n in burst["n"]:
        log(f"W2 due burst, N={n:,}")
        reps = {s: burst["reps"].get(n, 1) for s in systems}
        reps.update({s: burst["peer_reps"].get(n, 1) for s in systems if s != AWA})
        timeout = {s: burst["timeout"] if s == AWA else burst["peer_cut_off"] for s in systems}
        medians: dict[str, Any] = {s: [] for s in systems}
        for rep in range(max(reps.values())):
            for system, side in systems.items():
                if rep < reps[system]:
                    medians[system].append(side("w2_burst", n=n, lead=burst["lead"], timeout=timeout[system]))
        for system, runs in medians.items():
            result = median_of(runs)
            result["cut_off_s"] = timeout[system]
            if system == AWA and any(r["dropped"] for r in runs):
                log(f"W2 n={n}: fires missing after {timeout[system]} s")
            w["w2_burst"][system].append(result)


def w3(sides: dict[str, Side], config: dict[str, Any], w: dict[str, Any]) -> None:
    log("W3 worker throughput, enqueue rates, commit rate")
    systems = with_peers(sides, (TASKS_DB, PROCRASTINATE))
    w["w3_worker"] = {s: [] for s in systems}
    reps = {s: config["w3_worker"]["reps"] for s in systems}
    # Each process runs `concurrency` jobs at a time where the system has such
    # an option (django-tasks-db's db_worker has none: it runs at 1 only).
    for concurrency in config["w3_worker"].get("concurrency", [1]):
        runnable = systems if concurrency == 1 else {s: v for s, v in systems.items() if s != TASKS_DB}
        for processes in config["w3_worker"]["processes"]:
            for system, result in interleaved(
                runnable,
                "w3_worker",
                reps,
                jobs=config["w3_worker"]["jobs"],
                processes=processes,
                concurrency=concurrency,
            ).items():
                w["w3_worker"][system].append(result)
    w["enqueue"] = interleaved(
        systems,
        "enqueue_rates",
        {s: config["enqueue"]["reps"] for s in systems},
        count=config["enqueue"]["count"],
    )
    w["commit_rate"] = interleaved(
        {AWA: sides[AWA]}, "commit_rate", {AWA: config["enqueue"]["reps"]}, count=config["enqueue"]["count"]
    )[AWA]


def w3_flow(sides: dict[str, Side], config: dict[str, Any], w: dict[str, Any]) -> None:
    """W3 with flow control: each variant beside the unkeyed run, interleaved in one run."""
    log("W3 flow control: keyed jobs, a rate-limited queue")
    flow = config["w3_flow"]
    variants = {v: functools.partial(flow_side, sides[AWA], v) for v in flow["variants"]}
    w["w3_flow"] = interleaved(
        variants,
        "w3_flow",
        {v: flow["reps"] for v in variants},
        jobs=flow["jobs"],
        processes=flow["processes"],
        concurrency=flow["concurrency"],
    )


def flow_side(side: Side, variant: str, workload: str, **kwargs: Any) -> dict[str, Any]:
    return side(workload, variant=variant, **kwargs)


def w4(sides: dict[str, Side], config: dict[str, Any], w: dict[str, Any]) -> None:
    log("W4 every-second schedules")
    systems = with_peers(sides, (BEAT, PROCRASTINATE) if config["w4"].get("peers", True) else ())
    w["w4_every_second"] = interleaved(
        systems,
        "w4_every_second",
        {s: 1 for s in systems},
        n=config["w4"]["n"],
        seconds=config["w4"]["seconds"],
        warmup=config["w4"].get("warmup", 5),
    )
    if w["w4_every_second"][AWA]["doubled"]:
        raise BrokenBenchmark(f"W4: {w['w4_every_second'][AWA]['doubled']} slots fired twice")


def w5(sides: dict[str, Side], config: dict[str, Any], w: dict[str, Any]) -> None:
    log("W5 runcron start-up")
    w["w5_startup"] = {AWA: [sides[AWA]("w5_startup", n=n) for n in config["w5_startup"]["n"]]}


def profiles(sides: dict[str, Side], config: dict[str, Any], w: dict[str, Any]) -> None:
    log("Where the time goes: py-spy and auto_explain")
    p = config["profile"]
    w["profile"] = {
        "runcron": sides["profile"]("profile_runcron", n=p["burst_n"], lead=config["w2_burst"]["lead"]),
        "runtasks": sides["profile"]("profile_runtasks", jobs=p["jobs"]),
        "explain_fire": sides["profile"](
            "explain_runcron", n=p["explain_n"], lead=config["w2_burst"]["lead"]
        ),
        "explain_claim": sides["profile"]("explain_runtasks", jobs=p["explain_jobs"]),
    }


def run_all(sides: dict[str, Side], config: dict[str, Any]) -> dict[str, Any]:
    w: dict[str, Any] = {}
    for step in (w1, w2, w3, w3_flow, w4, w5, profiles):
        step(sides, config, w)
    return w
