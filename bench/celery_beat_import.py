"""``awa import-celery-beat`` at scale: ``python bench/celery_beat_import.py``.

A measurement, not a test. Needs django-celery-beat (the ``celery-beat``
dependency group) and a PostgreSQL server (``DATABASE_URL``; the database
``<name>_beat_bench`` is created on it and dropped afterwards). It writes
``--rows`` ``PeriodicTask`` rows (default 100,000: crontabs and intervals,
one in a hundred with a bad time zone, an ``expires`` of ``'-infinity'``,
arguments that are not JSON, or a name differing from another only in case),
then runs ``manage.py awa import-celery-beat --dry-run --json`` and the real
import as subprocesses, and measures for each:

* wall time and peak memory (the subprocess's maximum resident set);
* the longest wait for the protocol lock of a session taking it every 50 ms
  while the import runs, as every ``runcron`` and ``runtasks`` snapshot does
  (the import holds it for one batch at a time).

Prints the numbers and writes them to ``--out`` (JSON).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parent.parent

SOURCE_ROWS = """
import json
from zoneinfo import ZoneInfo
from django_celery_beat.models import CrontabSchedule, IntervalSchedule, PeriodicTask

hourly = CrontabSchedule.objects.create(minute="0", timezone=ZoneInfo("Europe/Paris"))
mars = CrontabSchedule.objects.create(minute="5")
every_90 = IntervalSchedule.objects.create(every=90, period="seconds")
quarter = IntervalSchedule.objects.create(every=15, period="minutes")
rows = []
for i in range(ROWS):
    kind = i % 100
    rows.append(PeriodicTask(
        name=f"Row-{i - 1:06}" if kind == 99 else f"row-{i:06}",  # a look-alike of the row before
        task="tests.testapp.tasks.record",
        crontab=mars if kind == 1 else hourly if i % 2 == 0 else None,
        interval=None if i % 2 == 0 or kind == 1 else every_90 if i % 4 == 1 else quarter,
        args="[1, " if kind == 3 else "[]",
        kwargs=json.dumps({"label": str(i)}),
    ))
PeriodicTask.objects.bulk_create(rows, batch_size=5000)
"""
HOSTILE = [
    "UPDATE django_celery_beat_crontabschedule SET timezone = 'Mars/Olympus' WHERE minute = '5'",
    "UPDATE django_celery_beat_periodictask SET expires = '-infinity' WHERE name LIKE '%02'",
]


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "django", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )


class LockProbe(threading.Thread):
    """Takes the protocol lock every 50 ms, as a snapshot does; records the longest wait."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url, self.longest, self.count = url, 0.0, 0
        self.done = threading.Event()

    def run(self) -> None:
        with psycopg.connect(self.url) as conn:
            while not self.done.is_set():
                started = time.monotonic()
                conn.execute("SELECT awa_cron_protocol_lock()")
                self.longest = max(self.longest, time.monotonic() - started)
                conn.commit()
                self.count += 1
                time.sleep(0.05)


def run_measured(env: dict[str, str], *args: str) -> tuple[int, str, str, float, int]:
    """A ``manage.py`` subprocess: (exit status, stdout, stderr, seconds, peak RSS in KiB)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, "-m", "django", *args], cwd=ROOT, env=env, stdout=out, stderr=err, text=True
        )
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own peak memory
        seconds = time.monotonic() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return proc.returncode, out.read(), err.read(), seconds, usage.ru_maxrss


def timed(env: dict[str, str], url: str, *args: str) -> dict[str, Any]:
    """One import subprocess: wall time, peak memory, longest protocol-lock wait, counts."""
    probe = LockProbe(url)
    probe.start()
    code, stdout, stderr, seconds, peak = run_measured(
        env, "awa", "import-celery-beat", "--json", "--actor", "bench", *args
    )
    probe.done.set()
    probe.join()
    if code != 0:
        raise SystemExit(stderr[-2000:])
    report = json.loads(stdout)
    return {
        "seconds": round(seconds, 1),
        "peak_rss_mb": round(peak / 1024),
        "longest_lock_wait_ms": round(probe.longest * 1000, 1),
        "lock_probes": probe.count,
        "imported": report["imported"],
        "skipped": report["skipped"],
        "progress_lines": stderr.count("rows read"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--out", type=Path, default=None)
    options = parser.parse_args()
    base = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/awa")
    name = f"{base.rsplit('/', 1)[1].split('?')[0]}_beat_bench"
    url = f"{base.rsplit('/', 1)[0]}/{name}"
    admin = f"{base.rsplit('/', 1)[0]}/postgres"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.celery_beat_settings", "DATABASE_URL": url}
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        for step in (("migrate", "-v0"), ("shell", "-c", SOURCE_ROWS.replace("ROWS", str(options.rows)))):
            result = manage(env, *step)
            if result.returncode != 0:
                raise SystemExit(result.stderr[-2000:])
        with psycopg.connect(url, autocommit=True) as conn:
            for statement in HOSTILE:
                conn.execute(statement)
        results = {
            "rows": options.rows,
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
            "dry_run": timed(env, url, "--dry-run"),
            "import": timed(env, url),
        }
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    print(json.dumps(results, indent=2))
    if options.out:
        options.out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
