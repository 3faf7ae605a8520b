"""How ``awa_jobs`` behaves with millions of finished jobs: ``python bench/jobs_at_scale.py``.

A measurement, not a test: on a private PostgreSQL cluster (started the way
``bench/chaos.py`` starts one, and deleted afterwards) it generates ``awa_jobs``
rows with SQL at each size (``--rows``, default 1 M and 10 M), half of them cron
fires of 1,000 schedules and half plain enqueues, all finished over the last 14
days (so the default 7-day retention makes half of them prunable), plus 1,000
ready jobs; it VACUUMs and ANALYZEs, then measures:

* the table's heap, index and total size;
* enqueue: ``Task.enqueue()`` through ``AwaBackend``, one call at a time;
* claim: one ready job claimed per statement (``awa_claim_v1``), as ``runtasks`` does;
* state count: ``SELECT state, count(*) ... GROUP BY state`` (an admin or a dashboard);
* prune: ``prune_jobs`` of the finished jobs older than 13 days (one day's worth:
  1/14 of the rows), reported as time and rows/s.

Prints a Markdown table and writes it (with the machine) to ``--out`` (JSON).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.chaos import Campaign  # noqa: E402

SCHEDULES = 1000
READY = 1000
DAYS = 14
CALLS = 200

GENERATE = """
INSERT INTO awa_jobs (kind, queue, args, state, priority, attempt, max_attempts, run_at, created_at,
                      attempted_at, started_at, finished_at, errors, result, tags, metadata, worker_ids)
SELECT 'tests.testapp.tasks.record', 'default', '{"args": [], "kwargs": {}}'::jsonb, 'completed', 0, 1, 3,
       t, t, t, t, t + interval '2 ms', '[]'::jsonb, 'null'::jsonb, '{}',
       CASE WHEN i %% 2 = 0
            THEN jsonb_build_object('cron_name', 'soak-' || lpad((i / 2 %% %(schedules)s::int)::text, 4, '0'),
                                    'cron_fire_at', to_char(t, 'YYYY-MM-DD"T"HH24:MI:SS.US') || '+00:00:' || i)
            ELSE '{}'::jsonb END,
       ARRAY['bench:1']
  FROM (SELECT i, now() - (i::float8 / %(rows)s::bigint) * make_interval(days => %(days)s::int) AS t
          FROM generate_series(%(start)s::bigint, %(stop)s::bigint) AS i) AS g
"""


def ms(values: list[float]) -> dict[str, float]:
    values = sorted(values)
    return {
        "p50_ms": round(statistics.median(values) * 1000, 3),
        "p99_ms": round(values[min(len(values) - 1, int(len(values) * 0.99))] * 1000, 3),
    }


def sizes(campaign: Campaign) -> dict[str, int]:
    row = campaign.sql(
        "SELECT pg_relation_size('awa_jobs'), pg_indexes_size('awa_jobs'), pg_total_relation_size('awa_jobs'), "
        "(SELECT count(*) FROM awa_jobs)"
    )[0]
    return {"heap_bytes": row[0], "index_bytes": row[1], "total_bytes": row[2], "rows": row[3]}


def generate(campaign: Campaign, rows: int) -> float:
    started = time.monotonic()
    campaign.sql("TRUNCATE awa_jobs")
    step = 1_000_000
    for start in range(0, rows, step):
        stop = min(rows, start + step) - 1
        params = {"rows": rows, "days": DAYS, "schedules": SCHEDULES, "start": start, "stop": stop}
        campaign.sql(GENERATE, params)
    campaign.sql(
        "INSERT INTO awa_jobs (kind, args, state) SELECT 'tests.testapp.tasks.record', "
        """'{"args": [], "kwargs": {}}'::jsonb, 'available' FROM generate_series(1, %s::int)""",
        [READY],
    )
    campaign.sql("VACUUM (ANALYZE) awa_jobs")
    return time.monotonic() - started


def measure(campaign: Campaign, rows: int) -> dict[str, Any]:
    from django.db import connection

    from awa_django.operations.queues import prune_jobs
    from awa_django.store import jobs
    from tests.testapp.tasks import record

    out: dict[str, Any] = {"rows_generated": rows, "generate_s": round(generate(campaign, rows), 1)}
    out.update(sizes(campaign))
    timings: list[float] = []
    for _ in range(CALLS):
        started = time.perf_counter()
        record.enqueue()
        timings.append(time.perf_counter() - started)
    out["enqueue"] = ms(timings)
    timings = []
    with connection.cursor() as cursor:
        for _ in range(CALLS):
            started = time.perf_counter()
            claimed = jobs.claim(cursor, None, 1, "scale:1")
            timings.append(time.perf_counter() - started)
            assert claimed, "no ready job to claim"
        out["claim"] = ms(timings)
        timings = []
        for _ in range(5):
            started = time.perf_counter()
            cursor.execute("SELECT state, count(*) FROM awa_jobs GROUP BY state")
            cursor.fetchall()
            timings.append(time.perf_counter() - started)
        out["state_count"] = ms(timings)
    started = time.perf_counter()
    pruned = prune_jobs(older_than=(DAYS - 1) * 24 * 3600)
    seconds = time.perf_counter() - started
    out["prune"] = {
        "rows": pruned,
        "s": round(seconds, 2),
        "rows_per_s": round(pruned / seconds) if seconds else None,
    }
    out["after_prune"] = sizes(campaign)
    out["loadavg"] = [round(x, 2) for x in os.getloadavg()]  # the machine may be shared: read with it
    return out


def table(results: list[dict[str, Any]]) -> str:
    lines = [
        "| rows | total size | heap | indexes | enqueue p50 / p99 (ms) | claim p50 / p99 (ms) "
        "| state count (ms) | prune one day (rows, s, rows/s) | load average |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    mb = 1024 * 1024
    for r in results:
        p = r["prune"]
        lines.append(
            f"| {r['rows']:,} | {r['total_bytes'] / mb:,.0f} MB | {r['heap_bytes'] / mb:,.0f} MB "
            f"| {r['index_bytes'] / mb:,.0f} MB | {r['enqueue']['p50_ms']} / {r['enqueue']['p99_ms']} "
            f"| {r['claim']['p50_ms']} / {r['claim']['p99_ms']} | {r['state_count']['p50_ms']:,.0f} "
            f"| {p['rows']:,}, {p['s']}, {p['rows_per_s']:,} | {r.get('loadavg', '-')} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--out", type=Path, default=ROOT / ".cache" / "jobs-at-scale.json")
    args = parser.parse_args()
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="awa-scale-") as tmp:
        campaign = Campaign(0, 0.0, Path(tmp))
        campaign.start_cluster()
        try:
            campaign.migrate()
            campaign.configure_django()
            for rows in args.rows:
                result = measure(campaign, rows)
                results.append(result)
                print(json.dumps(result), flush=True)
        finally:
            from django.db import connections

            connections.close_all()
            campaign.server.cleanup()
    text = table(results)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    machine = {"cpus": os.cpu_count(), "loadavg_at_end": [round(x, 2) for x in os.getloadavg()]}
    args.out.write_text(json.dumps({"machine": machine, "results": results, "table": text}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
