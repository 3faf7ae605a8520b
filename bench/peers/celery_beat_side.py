"""django-celery-beat's side of W1 (idle pass), W2 (due burst) and W4 (every
second): its ``DatabaseScheduler`` through its public API, with a Celery app
whose sends are recorded in-process (no broker), driven by the loop of
celery's ``beat.Service`` (tick, sleep what it asks). Run in the benchmark's
own virtualenv; prints one JSON object.

celery-beat's crontab has no seconds: W2 uses one-off ``ClockedSchedule``
rows at the slot, W4 ``IntervalSchedule`` rows of one second (their due time
is the previous send plus one second)."""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from typing import Any

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.peers.celery_beat_settings")
django.setup()

from celery import Celery  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402
from django.utils import timezone  # noqa: E402
from django_celery_beat.models import (  # noqa: E402
    ClockedSchedule,
    CrontabSchedule,
    IntervalSchedule,
    PeriodicTask,
)
from django_celery_beat.schedulers import DatabaseScheduler  # noqa: E402

from bench.timing import db_cost, per_unit  # noqa: E402

SENT: list[float] = []
# (send time, due time) of each send, W4's due time being the last send + 1 s.
SENDS: list[tuple[float, float | None]] = []


class RecordingScheduler(DatabaseScheduler):  # type: ignore[misc]
    """Sends are recorded, not published: the benchmark measures the scheduler."""

    def send_task(self, *args: Any, **kwargs: Any) -> None:
        SENT.append(time.time())

    def apply_entry(self, entry: Any, producer: Any = None) -> None:
        last = entry.last_run_at
        due = (
            last.timestamp() + 1
            if last is not None and entry.schedule.__class__.__name__ == "schedule"
            else None
        )
        super().apply_entry(entry, producer=producer)
        SENDS.append((SENT[-1] if SENT else time.time(), due))


def reset() -> None:
    """No schedules (one statement: a queryset delete sends a change signal per row)."""
    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {PeriodicTask._meta.db_table} CASCADE")


def app() -> Celery:
    celery = Celery("bench", broker="memory://")
    celery.conf.timezone = "UTC"
    return celery


def w1_idle(n: int, reps: int) -> dict[str, Any]:
    reset()
    crontab, _ = CrontabSchedule.objects.get_or_create(
        minute="0", hour="0", day_of_month="1", month_of_year="1", day_of_week="*", timezone="UTC"
    )
    PeriodicTask.objects.bulk_create(
        PeriodicTask(name=f"bench-{i:06d}", task="bench.noop", crontab=crontab) for i in range(n)
    )
    scheduler = RecordingScheduler(app=app(), lazy=False)
    scheduler.tick()  # load the schedule and build the heap
    times, queries = [], []
    for _ in range(reps):
        with CaptureQueriesContext(connection) as captured:
            start = time.perf_counter()
            scheduler.tick()
            times.append((time.perf_counter() - start) * 1000)
        queries.append(len(captured.captured_queries))
    assert not SENT, "an idle tick sent something"
    return {
        "n": n,
        "ms_p50": statistics.median(times),
        "ms_min": min(times),
        "queries": statistics.median(queries),
    }


def sql(statement: str) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(statement)
        return cursor.fetchall() if cursor.description else []


def beat_loop(until: float, stop: Any) -> None:
    """celery's ``beat.Service.start`` loop (tick; sleep what it asks), cut off at ``until``."""
    scheduler = RecordingScheduler(app=app(), lazy=False)
    while time.time() < until and not stop():
        interval = scheduler.tick()
        if interval and interval > 0:
            time.sleep(min(interval, max(0.0, until - time.time())))


def quantiles(values: list[float]) -> dict[str, Any]:
    if not values:
        return {"jobs": 0, "ms_p50": None, "ms_p99": None, "ms_max": None}
    values = sorted(values)
    return {
        "jobs": len(values),
        "ms_p50": statistics.median(values),
        "ms_p99": values[min(len(values) - 1, int(len(values) * 0.99))],
        "ms_max": values[-1],
    }


def w2_burst(n: int, lead: float, timeout: float) -> dict[str, Any]:
    """``n`` one-off clocked schedules at one slot ``lead`` s ahead; the scheduler
    starts before the slot and is cut off ``timeout`` s after it."""
    reset()
    # The same allowance as awa_django's side for inserting the rows (50 µs a row).
    slot = timezone.now().replace(microsecond=0) + timezone.timedelta(seconds=int(lead + n / 20_000 + 0.999))
    clocked = ClockedSchedule.objects.create(clocked_time=slot)
    PeriodicTask.objects.bulk_create(
        PeriodicTask(name=f"bench-{i:06d}", task="bench.noop", clocked=clocked, one_off=True)
        for i in range(n)
    )
    cost: dict[str, Any] = {}
    statements = [0]

    def count(execute: Any, *args: Any) -> Any:
        statements[0] += 1
        return execute(*args)

    with db_cost(sql, connection.close, cost), connection.execute_wrapper(count):
        beat_loop(slot.timestamp() + timeout, lambda: len(SENT) >= n)
    result = quantiles([(t - slot.timestamp()) * 1000 for t in SENT])
    result.update(
        n=n,
        dropped=n - len(SENT),
        cut_off_s=timeout,
        **per_unit(cost, len(SENT)),
        statements_per_unit=statements[0] / len(SENT) if SENT else None,
    )
    return result


def w4_every_second(n: int, seconds: float, warmup: float = 5) -> dict[str, Any]:
    reset()
    every, _ = IntervalSchedule.objects.get_or_create(every=1, period=IntervalSchedule.SECONDS)
    PeriodicTask.objects.bulk_create(
        PeriodicTask(name=f"bench-{i:06d}", task="bench.noop", interval=every) for i in range(n)
    )
    start = time.time()
    beat_loop(start + warmup + seconds, lambda: False)
    window = [(t, due) for t, due in SENDS if start + warmup < t <= start + warmup + seconds]
    result = quantiles([(t - due) * 1000 for t, due in window if due is not None])
    expected = int(seconds) * n
    result.update(
        n=n,
        seconds=seconds,
        expected_fires=expected,
        fired_in_window=len(window),
        skipped=max(0, expected - len(window)),
        doubled=0,
    )
    return result


WORKLOADS = {"w1_idle": w1_idle, "w2_burst": w2_burst, "w4_every_second": w4_every_second}

if __name__ == "__main__":
    print(json.dumps(WORKLOADS[sys.argv[1]](**json.loads(sys.argv[2])), default=str))
