"""The analysis half of ``docs/benchmarks.md``: the targets of issue 10 with,
for each one missed, what bounds the number and how far it is from that bound;
"Where the time goes" (py-spy, auto_explain); how the costs were measured.
Everything is computed from the run's results."""

from __future__ import annotations

from typing import Any

from bench.report_cpu import enqueue_bound, method_note, peer_bound, scaling_bound

AWA = "awa_django"
Row = tuple[str, str, bool, str]


def f(value: Any, digits: int = 1) -> str:
    if value is None or value == "":
        return "-"
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    return f"{number:,.{digits}f}"


def ratio(ours: Any, theirs: Any, digits: int = 1) -> str:
    try:
        return f"{float(ours) / float(theirs):.{digits}f}"
    except (TypeError, ValueError, ZeroDivisionError):
        return "-"


def w3_key(run: dict[str, Any]) -> tuple[int, int]:
    """A W3 run's (processes, concurrency); older results have no concurrency: 1."""
    return int(run["processes"]), int(run.get("concurrency") or 1)


def split(profile: dict[str, Any], thread_hint: str) -> dict[str, float] | None:
    """The activity split of the profiled thread whose name or entry matches."""
    for t in profile.get("threads", []):
        if thread_hint in t["thread"] or thread_hint in t["runs"]:
            return {k: float(v) for k, v in t["by_kind"].items()}
    return None


def burst_rows(w: dict[str, Any]) -> list[Row]:
    out: list[Row] = []
    bursts = {int(r["n"]): r for r in w["w2_burst"][AWA]}
    spy = w.get("profile", {}).get("runcron", {})
    main = split(spy, "MainThread")
    for n, limit in ((10_000, 1_500), (100_000, 15_000)):
        if n not in bursts:
            continue
        r = bursts[n]
        met = float(r["ms_max"]) <= limit and not float(r["dropped"])
        per_fire, budget = float(r["ms_max"]) / n, limit / n
        bound = ""
        if not met:
            bound = (
                f"{per_fire:.3f} ms per fire against a budget of {budget:.3f} ms ({per_fire / budget:.1f}x "
                f"over); {f(r.get('statements_per_unit'), 3)} statements, "
                f"{f(r.get('transactions_per_unit'), 3)} transactions and {f(r.get('wal_bytes_per_unit'), 0)} "
                "WAL bytes per fire."
            )
            if main:
                bound += (
                    f" During the profiled {int(spy.get('n', 0)):,}-row burst, runcron's main thread was "
                    f"{main.get('python', 0):.0f}% in Python and {main.get('psycopg', 0):.0f}% in psycopg "
                    f"(waiting on PostgreSQL): about {per_fire * main.get('python', 0) / 100:.3f} ms of "
                    f"Python and {per_fire * main.get('psycopg', 0) / 100:.3f} ms of PostgreSQL per fire."
                )
        out.append(
            (
                f"{n:,} due in the same second: all committed within {limit / 1000:g} s, none dropped",
                f"last {f(r['ms_max'], 0)} ms after the slot, {f(r['dropped'], 0)} not fired",
                met,
                bound,
            )
        )
        if n == 100_000 and r.get("runcron_peak_rss_mb"):
            rss = float(r["runcron_peak_rss_mb"])
            out.append(("runcron peak RSS <= 150 MB at 100,000", f"{rss:.0f} MB", rss <= 150, ""))
    return out


def w4_row(w: dict[str, Any]) -> Row:
    w4 = w["w4_every_second"][AWA]
    met = float(w4["ms_p99"]) <= 50 and not float(w4["skipped"]) and not float(w4["doubled"])
    bound = ""
    same = [r for r in w["w2_burst"][AWA] if int(r["n"]) == int(w4["n"])]
    if not met and same:
        burst, n = float(same[0]["ms_max"]), int(w4["n"])
        if burst > 50:
            bound = (
                f"Each second all {n:,} rows are due at once: W2 at N = {n:,} (the same pass) commits its "
                f"last fire {burst:,.0f} ms after the slot, so W4's p99 is bounded near that pass time; the "
                f"target needs it {burst / 50:.1f}x shorter."
            )
        else:
            bound = (
                f"Not the fire itself: one burst of the same {n:,} rows (W2) commits its last fire "
                f"{burst:,.0f} ms after the slot (p50 {f(same[0]['ms_p50'], 0)} ms), within the target. In "
                f"W4's steady state the same fire lands at p50 {f(w4['ms_p50'], 0)} ms: every second also adds "
                f"{n:,} jobs and updates {n:,} schedule rows (growing tables and indexes, autovacuum on the "
                "same two cores) and announces the previous second's jobs. This run does not profile W4, "
                f"so how those shares add up to the {float(w4['ms_p99']) - 50:,.0f} ms over the target is not "
                "measured."
            )
    return (
        f"{int(w4['n']):,} every-second schedules: p99 <= 50 ms, none skipped or doubled",
        f"p99 {f(w4['ms_p99'], 0)} ms, {f(w4['skipped'], 0)} skipped, {f(w4['doubled'], 0)} doubled",
        met,
        bound,
    )


def worker_rows(w: dict[str, Any]) -> list[Row]:
    ours = {w3_key(r): r for r in w["w3_worker"][AWA]}
    singles = {c: r for (p, c), r in ours.items() if p == 1}
    if not singles:
        return []
    # One process at its best concurrency (the target is per process).
    concurrency, one = max(singles.items(), key=lambda item: float(item[1]["jobs_per_s"]))
    jps = float(one["jobs_per_s"])
    commits = float(w.get("commit_rate", {}).get("commits_per_s") or 0)
    per_job_xact = float(one.get("transactions_per_unit") or 0)
    bound = f"{1000 / jps:.2f} ms per job"
    if commits and per_job_xact:
        limit = commits / per_job_xact
        bound += (
            f"; {per_job_xact:.2f} transactions per job, and one connection here commits {commits:,.0f}/s, "
            f"so work that commits each job is bounded near {limit:,.0f} jobs/s (this is {jps / limit:.0%} "
            "of it)"
        )
    spy = w.get("profile", {}).get("runtasks", {})
    for hint, label in (("MainThread", "main (claiming) thread"), ("_Runner", "task thread")):
        part = split(spy, hint)
        if part:
            bound += (
                f"; {label}: {part.get('python', 0):.0f}% Python, {part.get('psycopg', 0):.0f}% psycopg, "
                f"{part.get('idle', 0):.0f}% idle"
            )
    at = f"{jps:,.0f} jobs/s (concurrency {concurrency})"
    out: list[Row] = [
        ("one runtasks process >= 1,000 no-op jobs/s", at, jps >= 1000, "" if jps >= 1000 else bound + ".")
    ]
    peers = {s: runs for s, runs in w["w3_worker"].items() if s != AWA}
    best = {
        s: max(float(r["jobs_per_s"]) for r in runs if int(r["processes"]) == 1) for s, runs in peers.items()
    }
    if best:
        worst = min(jps / v for v in best.values())
        need = 4 * max(best.values())
        cpu = peer_bound(one, need, best_runs(peers))
        out.append(
            (
                "one runtasks process >= 4x each peer's one process (each at its best concurrency)",
                ", ".join(f"{jps / v:.1f}x {s}" for s, v in best.items()),
                worst >= 4,
                ""
                if worst >= 4
                else f"needs {need:,.0f} jobs/s ({need / jps:.1f}x this run's); "
                + (cpu or "bounded as in the row above."),
            )
        )
    if (2, concurrency) in ours:
        two = float(ours[(2, concurrency)]["jobs_per_s"])
        scale = two / jps
        cpu = scaling_bound(one, ours[(2, concurrency)])
        out.append(
            (
                f"two processes scale near-linearly (>= 1.8x one, concurrency {concurrency})",
                f"{scale:.2f}x",
                scale >= 1.8,
                ""
                if scale >= 1.8
                else f"{two:,.0f} jobs/s with two processes, {jps:,.0f} with one, "
                f"{f(ours[(2, concurrency)].get('transactions_per_unit'), 2)} transactions per job; "
                + (
                    cpu
                    or "the two workers and PostgreSQL share the machine's cores (the profile covers one process only)."
                ),
            )
        )
    return out


def best_runs(peers: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Each peer's fastest one-process run."""
    return {
        s: max((r for r in runs if int(r["processes"]) == 1), key=lambda r: float(r["jobs_per_s"]))
        for s, runs in peers.items()
    }


def enqueue_rows(w: dict[str, Any]) -> list[Row]:
    mine = w["enqueue"][AWA]
    commits = float(w.get("commit_rate", {}).get("commits_per_s") or 0)
    peer_bulk = {s: r["bulk_per_s"] for s, r in w["enqueue"].items() if s != AWA and r.get("bulk_per_s")}
    single = float(mine["single_per_s"])
    bulk = float(mine.get("bulk_per_s") or 0)
    cores = next((int(r["cpu_cores"]) for r in w["w3_worker"][AWA] if r.get("cpu_cores")), None)
    single_bound = enqueue_bound(mine, w.get("commit_rate", {}), cores) or (
        f"each single call is its own transaction: one connection commits {commits:,.0f}/s here, "
        f"so single enqueues are bounded near that ({single / commits:.0%} of it)."
        if commits
        else ""
    )
    bulk_bound = (
        "in the same run "
        + ", ".join(f"{s}'s bulk reached {float(v):,.0f}/s" for s, v in peer_bulk.items())
        + "."
        if peer_bulk
        else ""
    )
    return [
        (
            "single enqueue() >= 20,000 jobs/s",
            f"{single:,.0f} jobs/s",
            single >= 20_000,
            "" if single >= 20_000 else single_bound,
        ),
        (
            "bulk enqueue >= 20,000 jobs/s",
            f"{bulk:,.0f} jobs/s" if bulk else "no bulk path",
            bulk >= 20_000,
            "" if bulk >= 20_000 else bulk_bound,
        ),
    ]


def targets(w: dict[str, Any]) -> list[str]:
    rows: list[Row] = []
    idle = w["w1_idle"][AWA]
    worst = max(float(r["ms_p50"]) for r in idle)
    queries = max(float(r["queries"]) for r in idle)
    rows.append(
        (
            f"idle pass <= 2 ms and <= 2 queries at every N up to {int(idle[-1]['n']):,}",
            f"at most {worst:.2f} ms, {queries:.0f} queries",
            worst <= 2 and queries <= 2,
            "",
        )
    )
    rows += burst_rows(w)
    rows.append(w4_row(w))
    for r in w.get("w5_startup", {}).get(AWA, []):
        if int(r["n"]) == 10_000:
            met = float(r["unchanged_s"]) <= 3
            small = [x for x in w["w5_startup"][AWA] if int(x["n"]) < 10_000]
            bound = (
                ""
                if met
                else (
                    f"the whole command, Django's start-up included (with {int(small[0]['n']):,} declared it takes "
                    f"{f(small[0]['unchanged_s'], 1)} s), so about "
                    f"{(float(r['unchanged_s']) - float(small[0]['unchanged_s'])) / (10_000 - int(small[0]['n'])) * 1e3:.2f}"
                    " ms per declared schedule on an unchanged start; start-up is not profiled by this run."
                    if small
                    else "start-up is not profiled by this run."
                )
            )
            rows.append(
                (
                    "runcron starts in <= 3 s with 10,000 declared (unchanged)",
                    f"{f(r['unchanged_s'], 1)} s (first start {f(r['first_s'], 1)} s)",
                    met,
                    bound,
                )
            )
    rows += worker_rows(w) + enqueue_rows(w)
    lines = [
        "## Against the targets of issue 10",
        "",
        "Where a target is missed, the last column says what bounds the number and how far it is from "
        "that bound, from this run's measurements (the profiles are in the next section).",
        "",
        "| target | measured | met | what bounds it |",
        "|---|---|---|---|",
    ]
    lines += [f"| {t} | {m} | {'yes' if ok else '**no**'} | {b} |" for t, m, ok, b in rows]
    return lines + [""]


def profile_block(title: str, spy: dict[str, Any], what: str) -> list[str]:
    if not spy or spy.get("error"):
        return [f"### {title}", "", f"Not profiled: {spy.get('error', 'no profile in this run')}.", ""]
    lines = [
        f"### {title}",
        "",
        f"py-spy at 200 Hz, every thread, idle ones included, {what} "
        f"({f(spy.get('seconds'), 1)} s). *psycopg*: the innermost frame is in psycopg (waiting on "
        "PostgreSQL, sending, decoding); *idle*: sleeping or waiting for a notification or another "
        "thread; *Python*: the rest.",
        "",
        "| thread | runs | samples | Python % | psycopg % | idle % |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for t in spy["threads"]:
        k = t["by_kind"]
        lines.append(
            f"| {t['thread']} | `{t['runs']}` | {t['samples']} | {f(k.get('python', 0))} | "
            f"{f(k.get('psycopg', 0))} | {f(k.get('idle', 0))} |"
        )
    lines += [
        "",
        "Busiest functions over the busy (not idle) samples of every thread:",
        "",
        "| self time | % | inclusive (awa_django, Django) | % |",
        "|---|---:|---|---:|",
    ]
    for i in range(max(len(spy["self"]), len(spy["inclusive"]))):
        s = spy["self"][i] if i < len(spy["self"]) else ("", "")
        c = spy["inclusive"][i] if i < len(spy["inclusive"]) else ("", "")
        lines.append(
            f"| {'`' + s[0] + '`' if s[0] else ''} | {f(s[1])} | {'`' + c[0] + '`' if c[0] else ''} "
            f"| {f(c[1])} |"
        )
    return lines + [""]


def plan_block(title: str, explain: dict[str, Any], shown: int = 3) -> list[str]:
    if not explain or explain.get("error"):
        return [f"### {title}", "", f"Not measured: {explain.get('error', 'no plans in this run')}.", ""]
    lines = [
        f"### {title}",
        "",
        "| statement (literals folded) | calls | total ms | slowest ms |",
        "|---|---:|---:|---:|",
    ]
    for s in explain["statements"]:
        text = s["text"].replace("|", "\\|")
        lines.append(
            f"| `{text[:140]}{'…' if len(text) > 140 else ''}` | {s['count']} | {f(s['total_ms'], 2)} | "
            f"{f(s['max_ms'], 3)} |"
        )
    # A function call's own plan is one node; the statements inside it carry the plans worth reading.
    for s in [s for s in explain["statements"] if s["plan"].count("(cost=") > 1][:shown]:
        lines_of_plan = s["plan"].splitlines()
        first = next((i for i, line in enumerate(lines_of_plan) if "(cost=" in line), 0)
        plan = "\n".join(lines_of_plan[first : first + 40])
        lines += ["", f"Slowest call of `{s['text'][:80]}`:", "", "```text", plan, "```"]
    return lines + [""]


def where_the_time_goes(w: dict[str, Any]) -> list[str]:
    p = w.get("profile", {})
    fire, claim = p.get("explain_fire", {}), p.get("explain_claim", {})
    return [
        "## Where the time goes",
        "",
        "Regenerated by every `make bench` in separate, unmeasured runs (the profiler and auto_explain "
        "slow what they watch).",
        "",
        *profile_block(
            f"runcron during a {int(p.get('runcron', {}).get('n', 0)):,}-row W2 burst",
            p.get("runcron", {}),
            "from half a second before the slot until every job existed",
        ),
        *profile_block(
            f"one runtasks draining {int(p.get('runtasks', {}).get('jobs', 0)):,} no-op jobs",
            p.get("runtasks", {}),
            "launched by py-spy, from start to exit",
        ),
        "PostgreSQL's `auto_explain` (`ANALYZE`, `BUFFERS`, nested statements: the statements inside "
        "awa_django's SQL functions too), loaded in the sessions of a real `runcron` and `runtasks`; "
        "statements by total time.",
        "",
        *plan_block(f"What runcron sends during a {int(fire.get('n', 0)):,}-row burst (the fire)", fire),
        *plan_block(
            f"What runtasks sends for {int(claim.get('jobs', 0)):,} jobs (the claim, the completion)", claim
        ),
    ]


def method(results: dict[str, Any]) -> list[str]:
    config = results["config"]
    burst = config["w2_burst"]
    few = [
        f"W2 at N = {int(n):,}: {burst['reps'].get(str(n), burst['reps'].get(n, 1))} of awa_django, "
        f"{burst['peer_reps'].get(str(n), burst['peer_reps'].get(n, 1))} of each peer"
        for n in burst["n"]
    ]
    return [
        "## How the costs were measured",
        "",
        "- **WAL bytes**: the change of `pg_current_wal_insert_lsn()` around the measured window. It is "
        "cluster-wide: anything else writing on the server during the window is counted too.",
        "- **Transactions**: the change of `xact_commit + xact_rollback` in `pg_stat_database` for the "
        "benchmark's database, read after the measured processes exited (a backend reports its counts "
        "when it exits), minus the benchmark's own polling statements. `pg_stat_statements` is not "
        "loaded on this server (it needs a restart), so statements are counted in-process instead:",
        "- **Statements**: counted on Django's connections inside each measured process (an execute "
        "wrapper in `bench/benchapp`); procrastinate does not use Django, so its statements are not "
        "counted (*-*).",
        *method_note(results["workloads"]),
        "- W2's window runs from the scheduler's start to its last fire, so its per-fire costs include "
        "the start-up and idle passes divided over N.",
        f"- Repetitions: W1 idle, the median of {config['w1_idle']['reps']} passes per system and N; "
        + "; ".join(few)
        + f"; W3 {config['w3_worker']['reps']}, enqueue {config['enqueue']['reps']}; W4 one "
        f"{config['w4']['seconds']} s run per system; W1 planning pass and W5 one run per N (awa_django "
        "only). Fewer than 5 where a repetition takes minutes (a peer's large burst runs to its cut-off; "
        "W4 is a minute per system), to keep `make bench` near 15 minutes.",
        "",
    ]
