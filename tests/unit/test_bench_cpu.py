"""bench/timing.py and bench/report_cpu.py: the CPU-time arithmetic of the
benchmark (parsing /proc, CPU per job, the CPU-bound ceiling, the texts)."""

from __future__ import annotations

from typing import Any

import pytest

from bench import timing
from bench.report_cpu import cpu_figures, enqueue_bound, peer_bound, scaling_bound
from bench.timing import call_cpu, cpu_bound, parse_stat, postmasters, server_cpu, worker_cpu


def stat_line(
    pid: int, name: str, ppid: int, utime: int, stime: int, cutime: int = 0, cstime: int = 0
) -> str:
    rest = ["S", str(ppid), *["0"] * 9, str(utime), str(stime), str(cutime), str(cstime), *["0"] * 30]
    return f"{pid} ({name}) " + " ".join(rest)


def test_parse_stat__reads_name_parent_and_cpu_in_seconds() -> None:
    tick = timing.TICK
    name, ppid, cpu, reaped = parse_stat(stat_line(7, "odd) (name", 3, 2 * tick, tick, 5 * tick, tick))
    assert (name, ppid, cpu, reaped) == ("odd) (name", 3, 3.0, 6.0)


def test_server_cpu__is_every_postgres_process_plus_what_the_postmaster_reaped() -> None:
    stats = {
        1: ("systemd", 0, 50.0, 99.0),
        10: ("postgres", 1, 1.0, 20.0),  # the postmaster: its reaped sessions count
        11: ("postgres", 10, 2.0, 7.0),  # a session: its own CPU only
        12: ("python3", 1, 30.0, 0.0),
    }
    assert postmasters(stats) == [10]
    assert server_cpu(stats) == pytest.approx(23.0)


def test_server_cpu__is_none_without_postgres() -> None:
    assert server_cpu({1: ("systemd", 0, 1.0, 1.0)}) is None


def test_postgres_cpu__is_a_number_or_none() -> None:
    value = timing.postgres_cpu()
    assert value is None or value >= 0


def test_cpu_bound__is_cores_over_cpu_per_unit() -> None:
    assert cpu_bound(500, 2.0, 2) == {"cpu_ceiling_per_s": 1000.0, "cpu_utilization": 0.5}
    assert cpu_bound(500, 0.0, 2) == {"cpu_ceiling_per_s": None, "cpu_utilization": None}
    assert cpu_bound(500, None, 2)["cpu_ceiling_per_s"] is None


def test_worker_cpu__takes_the_empty_queue_run_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(timing.os, "cpu_count", lambda: 2)
    run = {"children_cpu_s": 1.5, "pg_cpu_s": 1.2, "cpu_wall_s": 2.0}
    idle = {"children_cpu_s": 0.5, "pg_cpu_s": 0.2}
    out = worker_cpu(run, idle, 1000, 400.0)
    assert out["worker_cpu_ms_per_job"] == pytest.approx(1.0)
    assert out["pg_cpu_ms_per_job"] == pytest.approx(1.0)
    assert out["total_cpu_ms_per_job"] == pytest.approx(2.0)
    assert out["startup_cpu_ms"] == pytest.approx(700.0)
    assert out["cpu_ceiling_per_s"] == pytest.approx(1000.0)
    assert out["cpu_utilization"] == pytest.approx(0.4)


def test_worker_cpu__without_postgres_has_no_ceiling() -> None:
    out = worker_cpu(
        {"children_cpu_s": 1.0, "pg_cpu_s": None}, {"children_cpu_s": 0.5, "pg_cpu_s": None}, 10, 1
    )
    assert out["worker_cpu_ms_per_job"] == pytest.approx(50.0)
    assert out["total_cpu_ms_per_job"] is None and out["cpu_ceiling_per_s"] is None


def test_call_cpu__per_call_in_ms() -> None:
    assert call_cpu({"self_cpu_s": 0.2, "pg_cpu_s": 0.1}, 1000, "single") == {
        "single_client_cpu_ms": pytest.approx(0.2),
        "single_pg_cpu_ms": pytest.approx(0.1),
    }


def run(jps: float, worker: float | None, pg: float | None, processes: int = 1) -> dict[str, Any]:
    return {
        "jobs_per_s": jps,
        "processes": processes,
        "worker_cpu_ms_per_job": worker,
        "pg_cpu_ms_per_job": pg,
        "cpu_cores": 2,
    }


def test_cpu_figures__ceiling_utilization_and_cores_busy() -> None:
    c = cpu_figures(run(500, 1.5, 0.5))
    assert c is not None
    assert (c["total"], c["ceiling"], c["utilization"], c["busy"]) == pytest.approx((2.0, 1000, 0.5, 1.0))
    assert cpu_figures(run(500, None, None)) is None
    assert cpu_figures({"jobs_per_s": 1, "processes": 1}) is None  # results from before CPU was measured


def test_scaling_bound__says_whether_the_cores_allow_the_target() -> None:
    # One process at 800/s on 1.6 ms a job uses 1.28 cores; two at 1.6 ms allow 1,250/s: 1.56x.
    out_of_reach = scaling_bound(run(800, 1.0, 0.6), run(1000, 1.0, 0.6, 2))
    assert (
        "1.28 of the 2 cores" in out_of_reach and "1.56x" in out_of_reach and "out of reach" in out_of_reach
    )
    # At 0.5 ms a job the cores allow 4,000/s, 5x: the CPU is not what holds two processes back.
    allowed = scaling_bound(run(800, 0.3, 0.2), run(1000, 0.3, 0.2, 2))
    assert "not CPU time" in allowed
    assert scaling_bound(run(800, None, None), run(1000, None, None, 2)) == ""


def test_peer_bound__names_the_lower_ceiling_and_the_cpu_the_need_leaves() -> None:
    # 1 ms a job on 2 cores: 2,000/s; the worker's 0.5 ms on one core: 2,000/s too.
    text = peer_bound(run(1500, 0.5, 0.5), 4000, {"procrastinate": run(1000, 1.0, 2.0)})
    assert "at most 2,000 jobs/s" in text and "reached 75% of the lower ceiling" in text
    assert "beyond it" in text and "0.50 ms of CPU per job in all and 0.25 ms in the worker" in text
    assert "procrastinate takes 3.00 ms of CPU per job" in text
    # The worker's own core is the lower ceiling: 1,000/s.
    assert "reached 90% of the lower ceiling" in peer_bound(run(900, 1.0, 0.1), 2000, {})
    assert "The CPU allows" in peer_bound(run(1000, 0.2, 0.2), 2000, {})
    assert peer_bound(run(1000, None, None), 2000, {}) == ""


def test_enqueue_bound__the_nearer_of_commit_rate_and_cpu() -> None:
    mine = {"single_per_s": 2000, "single_client_cpu_ms": 0.2, "single_pg_cpu_ms": 0.1}
    commit_bound = enqueue_bound(mine, {"commits_per_s": 2500}, 2)
    assert "0.300 ms of it CPU" in commit_bound and "The lower, the commit rate" in commit_bound
    assert "80% of it" in commit_bound
    cpu_bound_text = enqueue_bound(mine, {"commits_per_s": 5000, "commit_client_cpu_ms": 0.05}, 2)
    assert "The lower, the CPU per call" in cpu_bound_text
    assert enqueue_bound({"single_per_s": 2000}, {"commits_per_s": 2500}, 2) == ""


def test_the_texts_warn_when_the_cpu_is_more_than_the_wall_allows() -> None:
    # 2 ms a job on 2 cores: 1,000/s; measured 1,500/s is impossible unless other work was counted.
    assert "other work on it" in peer_bound(run(1500, 1.0, 1.0), 4000, {})
    assert "other work on it" in scaling_bound(run(1500, 1.0, 1.0), run(1600, 1.0, 1.0, 2))
    assert "other work on it" not in scaling_bound(run(800, 1.0, 0.6), run(1000, 1.0, 0.6, 2))
    mine = {"single_per_s": 2000, "single_client_cpu_ms": 0.2, "single_pg_cpu_ms": 0.5}  # 0.7 ms of 0.5 ms
    assert "other work on it" in enqueue_bound(mine, {"commits_per_s": 2500}, 2)
