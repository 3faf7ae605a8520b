"""CPU time in ``docs/benchmarks.md``: W3's CPU per job and CPU-bound ceiling,
and the "what bounds it" texts of the worker and enqueue targets that follow
from them. Every figure comes from the run's results (``bench/timing.py``
measures them); results without CPU fields (older runs) give None or "" here,
and the report keeps its texts without CPU."""

from __future__ import annotations

from typing import Any

from bench.timing import cpu_bound


def cpu_figures(run: dict[str, Any]) -> dict[str, float] | None:
    """One W3 run's (the medians') CPU per job and what follows from it: worker,
    pg and total ms per job, ceiling (jobs/s the cores allow at that CPU per
    job), utilization (jobs/s / ceiling), busy (cores kept busy), cores."""
    worker, pg, cores = run.get("worker_cpu_ms_per_job"), run.get("pg_cpu_ms_per_job"), run.get("cpu_cores")
    if worker is None or pg is None or not cores:
        return None
    total = float(worker) + float(pg)
    jps = float(run["jobs_per_s"])
    bound = cpu_bound(jps, total, int(cores))
    if bound["cpu_ceiling_per_s"] is None:
        return None
    return {
        "worker": float(worker),
        "pg": float(pg),
        "total": total,
        "ceiling": float(bound["cpu_ceiling_per_s"]),
        "utilization": float(bound["cpu_utilization"] or 0),
        "busy": jps * total / 1000,
        "cores": float(cores),
    }


OVERCOUNTED = (
    " (more CPU than the run's wall time allows: PostgreSQL's figure counts the whole server, so other "
    "work on it during the run was counted too; see the notes)"
)


def overcounted(*shares: float) -> str:
    """The warning if a share of a ceiling or of the wall time is above 100%."""
    return OVERCOUNTED if any(s > 1.0 for s in shares) else ""


def uses(c: dict[str, float]) -> str:
    return f"{c['total']:.2f} ms of CPU per job ({c['worker']:.2f} ms in the worker, {c['pg']:.2f} ms in PostgreSQL)"


def scaling_bound(one: dict[str, Any], two: dict[str, Any], target: float = 1.8) -> str:
    """Why two processes do or do not reach ``target`` x one, from their CPU."""
    c1, c2 = cpu_figures(one), cpu_figures(two)
    if not c1 or not c2:
        return ""
    jps = float(one["jobs_per_s"])
    reach = c2["ceiling"] / jps
    text = (
        f"one process at {jps:,.0f} jobs/s already keeps {c1['busy']:.2f} of the {c1['cores']:.0f} cores busy "
        f"with {uses(c1)}; with two processes a job takes {c2['total']:.2f} ms of CPU, so the cores allow at "
        f"most {c2['ceiling']:,.0f} jobs/s, {reach:.2f}x one process"
    )
    warning = overcounted(c1["utilization"], c2["utilization"])
    if reach < target:
        need = c1["cores"] * 1000 / (target * jps)
        return text + (
            f": {target}x is out of reach on this machine at this CPU per job (it needs at most {need:.2f} ms "
            f"per job); two processes reached {c2['utilization']:.0%} of that ceiling{warning}."
        )
    return text + (
        f": the CPU allows {target}x, and two processes reached {c2['utilization']:.0%} of that "
        f"ceiling{warning}, so what holds them back is not CPU time (waiting: round trips, commits, locks)."
    )


def peer_bound(one: dict[str, Any], need: float, peers: dict[str, dict[str, Any]]) -> str:
    """Why one process does or does not reach ``need`` jobs/s, from its CPU;
    ``peers``: each peer's one-process run at its best concurrency."""
    c = cpu_figures(one)
    if not c:
        return ""
    jps = float(one["jobs_per_s"])
    text = (
        f"at {jps:,.0f} jobs/s one process takes {uses(c)}, keeping {c['busy']:.2f} of the "
        f"{c['cores']:.0f} cores busy: the cores allow at most {c['ceiling']:,.0f} jobs/s"
    )
    ceiling = c["ceiling"]
    if c["worker"]:  # one Python process runs Python on one core at a time (the GIL)
        ceiling = min(ceiling, 1000 / c["worker"])
        text += f", the worker's own CPU (one core at most: one Python process, the GIL) {1000 / c['worker']:,.0f}"
    text += f"; this run reached {jps / ceiling:.0%} of the lower ceiling{overcounted(jps / ceiling)}"
    if ceiling < need:
        text += (
            f". {need:,.0f} jobs/s is beyond it at this CPU per job: it needs at most "
            f"{c['cores'] * 1000 / need:.2f} ms of CPU per job in all and {1000 / need:.2f} ms in the worker"
        )
    else:
        text += f". The CPU allows {need:,.0f} jobs/s: the rest of the way is waiting, not CPU"
    for system, run in peers.items():
        theirs = cpu_figures(run)
        if theirs:
            text += f". {system} takes {uses(theirs)}"
    return text + "."


def enqueue_bound(mine: dict[str, Any], rate: dict[str, Any], cores: int | None) -> str:
    """Which bound a single enqueue() meets first: one commit per call (the
    commit rate) or the CPU per call (this process's and PostgreSQL's)."""
    client, pg = mine.get("single_client_cpu_ms"), mine.get("single_pg_cpu_ms")
    commits = float(rate.get("commits_per_s") or 0)
    if client is None or pg is None or not commits:
        return ""
    single = float(mine["single_per_s"])
    cpu, wall, commit_ms = float(client) + float(pg), 1000 / single, 1000 / commits
    serial = 1000 / cpu if cpu > 0 else float("inf")
    text = (
        f"each call takes {wall:.3f} ms, {cpu:.3f} ms of it CPU ({float(client):.3f} ms in the enqueuing process, "
        f"{float(pg):.3f} ms in PostgreSQL) and {max(0.0, wall - cpu):.3f} ms waiting. One caller's CPU alone "
        f"allows {serial:,.0f} calls/s"
    )
    if cores and cpu > 0:
        text += f" ({cores * 1000 / cpu:,.0f}/s with callers on all {cores} cores)"
    commit_cpu = [rate.get("commit_client_cpu_ms"), rate.get("commit_pg_cpu_ms")]
    text += (
        f"; each call commits, and one connection commits {commits:,.0f}/s here ({commit_ms:.3f} ms a commit"
    )
    if None not in commit_cpu:
        text += f", {sum(float(x) for x in commit_cpu if x is not None):.3f} ms of it CPU"
    which, limit = ("the commit rate", commits) if commits <= serial else ("the CPU per call", serial)
    return text + (
        f"). The lower, {which}, bounds it: this run reached {single / limit:.0%} of it"
        f"{overcounted(cpu / wall, single / limit)}. 20,000/s leaves "
        f"0.050 ms per call: the CPU per call alone is {cpu / 0.05:.1f}x that, a commit {commit_ms / 0.05:.1f}x."
    )


def method_note(w: dict[str, Any]) -> list[str]:
    runs = [r for rs in w.get("w3_worker", {}).values() for r in rs]
    if not any(cpu_figures(r) for r in runs):
        return []
    return [
        "- **CPU time** (W3, enqueue, commit rate): user + system seconds. The worker processes': "
        "`getrusage(RUSAGE_CHILDREN)` of the process that started and waited for them (every thread, "
        "every child). The enqueuing or committing process's: its own `getrusage(RUSAGE_SELF)`. "
        "PostgreSQL's: read before and after, every live `postgres` process on the machine (its "
        "`/proc/<pid>/schedstat` run time, in nanoseconds) plus what its postmaster reaped "
        "(`cutime + cstime` in `/proc/<pid>/stat`, 10 ms ticks: the sessions that ended, such as the "
        "workers'). So it counts the whole server: its background processes (walwriter, checkpointer, "
        "autovacuum) and any other session on it during the window, and it assumes the server runs on "
        "the benchmark's machine. W3 first runs the same worker processes on an empty queue and takes "
        "their CPU and PostgreSQL's in that run (start-up and exit: the *start-up* column) off the "
        "measured run's, so CPU per job is what the jobs cost. The *ceiling* is cores / total CPU per "
        "job: the jobs/s the machine's cores (`os.cpu_count()`) allow if they did nothing else; "
        "*reached* is jobs/s over that ceiling, *cores busy* jobs/s times CPU per job.",
    ]
