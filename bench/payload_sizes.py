"""Does a pass cost more beside payloads at the size limit? ``python bench/payload_sizes.py``.

A measurement, not a test. Two runs of a real ``runcron`` over the same every-second
schedules (1,000; ``--quick``: 100), one alone and one beside 5 more schedules
whose args are exactly ``AWA_MAX_ARGS_BYTES`` as jsonb prints them (the widest
shape: ``[[], [], ...]``, which a depth check reads bracket by bracket), created
through the runtime API and firing every ``--big-every`` seconds (10: each of
their fires copies a megabyte into a job, which the leader returns but decodes
only for a ``task_enqueued`` receiver that may read it: a cost of the fire, not of
the pass). For each run: the fire lateness (job
``created_at`` minus its slot) of the small schedules' jobs, p50 and p99, and
their slots missed in the window (expected minus fired); the big schedules'
fires. The target: no slot missed beside the big payloads, and p99 within 1.2x
of the run without them.

The database comes from ``BENCH_DATABASE_URL`` (default ``awa_bench`` on the
local server; created and migrated when missing). Prints a Markdown table and
writes the results (with the machine) to ``--out`` (JSON).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")

BIG = 5
TARGET_RATIO = 1.2


def setup_database() -> None:
    import django
    import psycopg
    from django.conf import settings

    django.setup()
    params = settings.DATABASES["default"]
    admin = psycopg.connect(
        host=params["HOST"],
        port=params["PORT"] or 5432,
        user=params["USER"],
        dbname="postgres",
        autocommit=True,
    )
    with admin:
        if not admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", [params["NAME"]]).fetchone():
            admin.execute(f'CREATE DATABASE "{params["NAME"]}"')
    from django.core.management import call_command

    call_command("migrate", verbosity=0, skip_checks=True)


def widest_args(limit: int) -> list[Any]:
    """Positional args whose stored ``{"args": [...], "kwargs": {}}`` prints as
    exactly ``limit`` bytes of jsonb text: empty arrays, then one string to pad."""
    shell = len(json.dumps({"args": [""], "kwargs": {}}))  # with the padding string, empty
    arrays = max(0, (limit - shell) // 4 - 1)  # each "[], " is 4 bytes
    args: list[Any] = [[] for _ in range(arrays)]
    args.append("x" * (limit - len(json.dumps({"args": [*args, ""], "kwargs": {}}))))
    assert len(json.dumps({"args": args, "kwargs": {}})) == limit
    return args


def run(schedules: int, seconds: float, warmup: float, big: int, big_every: int = 10) -> dict[str, Any]:
    from awa_django.conf import conf
    from awa_django.operations.runtime_schedules import create_schedule
    from bench.awa_side import insert_schedules, manage, reset, sql

    reset()
    insert_schedules(schedules, "* * * * * *", None)
    limit = int(conf.MAX_ARGS_BYTES)
    args = widest_args(limit) if big else []
    for i in range(big):
        create_schedule(
            f"bench-big-{i}", every=big_every, task="bench.benchapp.tasks.noop", args=args, actor="bench"
        )
    measured = sql("SELECT max(args_bytes) FROM awa_cron_jobs WHERE name LIKE 'bench-big-%%'")[0][0]
    runcron = manage("runcron")
    try:
        time.sleep(warmup)
        first_id, start = sql("SELECT coalesce(max(id), 0), statement_timestamp() FROM awa_jobs")[0]
        time.sleep(seconds)
        end = sql("SELECT statement_timestamp()")[0][0]
    finally:
        runcron.send_signal(signal.SIGTERM)
        runcron.wait(60)
    # The slots strictly inside the window, which every schedule should have fired.
    window = (
        "id > %s AND metadata ? 'cron_fire_at' AND (metadata->>'cron_fire_at')::timestamptz > %s + interval '1 second'"
        " AND (metadata->>'cron_fire_at')::timestamptz <= %s - interval '2 seconds'"
    )
    slots = max(0, int((end - start).total_seconds()) - 3)
    small_fired = sql(
        f"SELECT count(*) FROM awa_jobs WHERE {window} AND metadata->>'cron_name' NOT LIKE 'bench-big-%%'",
        [first_id, start, end],
    )[0][0]
    big_fired = sql(
        f"SELECT count(*) FROM awa_jobs WHERE {window} AND metadata->>'cron_name' LIKE 'bench-big-%%'",
        [first_id, start, end],
    )[0][0]
    late = sql(
        "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY l), percentile_cont(0.99) WITHIN GROUP (ORDER BY l),"
        " max(l) FROM (SELECT EXTRACT(EPOCH FROM created_at - (metadata->>'cron_fire_at')::timestamptz) * 1000"
        " AS l FROM awa_jobs WHERE id > %s AND metadata ? 'cron_fire_at'"
        " AND metadata->>'cron_name' NOT LIKE 'bench-big-%%') s",
        [first_id],
    )[0]
    parked = sql("SELECT count(*) FROM awa_cron_jobs WHERE parked_at IS NOT NULL")[0][0]
    reset()
    return {
        "schedules": schedules,
        "big": big,
        "big_args_bytes": measured,
        "seconds": seconds,
        "slots": slots,
        "small_expected": slots * schedules,
        "small_fired": small_fired,
        "small_missed": max(0, slots * schedules - small_fired),
        "big_every": big_every,
        "big_expected": slots * big // big_every,
        "big_fired": big_fired,
        "parked": parked,
        "p50_ms": round(float(late[0] or 0), 2),
        "p99_ms": round(float(late[1] or 0), 2),
        "max_ms": round(float(late[2] or 0), 2),
    }


def table(results: list[dict[str, Any]], ratio: float) -> str:
    lines = [
        "| run | every-second schedules | big (bytes each) | slots missed | big fired | p50 ms | p99 ms | max ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {'beside big payloads' if r['big'] else 'alone'} | {r['schedules']:,} | "
            f"{r['big']} ({r['big_args_bytes'] or 0:,}) | {r['small_missed']} of {r['small_expected']:,} | "
            f"{r['big_fired']} of {r['big_expected']} | {r['p50_ms']} | {r['p99_ms']} | {r['max_ms']} |"
        )
    lines.append(f"\np99 beside / alone: {ratio:.2f} (target <= {TARGET_RATIO})")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 schedules for 10 s (a smoke run)")
    parser.add_argument("--schedules", type=int, default=None)
    parser.add_argument("--seconds", type=float, default=None)
    parser.add_argument("--big-every", type=int, default=10, help="seconds between the big schedules' fires")
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    options = parser.parse_args()
    schedules = options.schedules or (100 if options.quick else 1000)
    seconds = options.seconds or (10.0 if options.quick else 60.0)
    warmup = 5.0 if options.quick else 10.0
    setup_database()
    results = [
        run(schedules, seconds, warmup, 0),
        run(schedules, seconds, warmup, BIG, options.big_every),
    ]
    alone, beside = results
    ratio = beside["p99_ms"] / alone["p99_ms"] if alone["p99_ms"] else float("inf")
    print(table(results, ratio))
    ok = beside["small_missed"] == 0 and beside["parked"] == 0 and ratio <= TARGET_RATIO
    print("target met" if ok else "target NOT met")
    if options.out:
        machine = {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
        }
        options.out.write_text(
            json.dumps({"machine": machine, "results": results, "p99_ratio": ratio}, indent=2)
        )
    return 0 if ok or options.quick else 1


if __name__ == "__main__":
    sys.exit(main())
