"""django-celery-beat's side of W1 (idle pass): its ``DatabaseScheduler``
through its public API, with a Celery app whose sends are recorded in-process
(no broker). Run in the benchmark's own virtualenv; prints one JSON object."""

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
from django_celery_beat.models import CrontabSchedule, PeriodicTask  # noqa: E402
from django_celery_beat.schedulers import DatabaseScheduler  # noqa: E402

SENT: list[float] = []


class RecordingScheduler(DatabaseScheduler):  # type: ignore[misc]
    """Sends are recorded, not published: the benchmark measures the scheduler."""

    def send_task(self, *args: Any, **kwargs: Any) -> None:
        SENT.append(time.time())


def app() -> Celery:
    celery = Celery("bench", broker="memory://")
    celery.conf.timezone = "UTC"
    return celery


def w1_idle(n: int, reps: int) -> dict[str, Any]:
    PeriodicTask.objects.all().delete()
    crontab, _ = CrontabSchedule.objects.get_or_create(minute="0", hour="0", day_of_month="1",
                                                       month_of_year="1", day_of_week="*", timezone="UTC")
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
    return {"n": n, "ms_p50": statistics.median(times), "ms_min": min(times),
            "queries": statistics.median(queries)}


WORKLOADS = {"w1_idle": w1_idle}

if __name__ == "__main__":
    print(json.dumps(WORKLOADS[sys.argv[1]](**json.loads(sys.argv[2])), default=str))
