"""Execution policies with real ``runcron`` and ``runtasks`` processes.

What is checked is what the processes left in ``awa_jobs`` (each job's
recorded start and end) and in the slot accounting, never durations.
"""

from __future__ import annotations

import signal
from datetime import datetime, timedelta
from typing import Any

import pytest

from awa_django.models import Job
from awa_django.operations import history
from tests.helpers.database import raw_connection
from tests.helpers.waiting import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

SLOW = "tests.testapp.tasks.sleeps"
QUICK = "tests.testapp.tasks.record"


def finished_runs(name: str) -> list[tuple[datetime, datetime]]:
    """(start, end) of every finished run of schedule ``name``, by start."""
    rows = Job.objects.filter(metadata__cron_name=name, state="completed").order_by("attempted_at")
    return [(j.attempted_at, j.finished_at) for j in rows if j.attempted_at and j.finished_at]


def stop(*procs: Any) -> None:
    for proc in procs:
        proc.signal(signal.SIGTERM)
    assert [proc.wait() for proc in procs] == [0] * len(procs)


def test_skip__a_slow_task_never_overlaps_itself_across_two_runcron_and_two_runtasks(
    runcron: Any, runtasks: Any
) -> None:
    schedules = {
        "slow": {
            "cron": "* * * * * *",
            "task": SLOW,
            "kwargs": {"seconds": 1.5, "label": "slow"},
            "overlap": "skip",
        }
    }
    procs = [
        runcron(schedules),
        runcron(schedules),
        runtasks("--concurrency", "2"),
        runtasks("--concurrency", "2"),
    ]
    wait_for(lambda: len(finished_runs("slow")) >= 3 and history.skip_counts("slow").get("overlap", 0) >= 3)
    stop(*procs)
    runs = finished_runs("slow")
    for (_, end), (start, _) in zip(runs, runs[1:], strict=False):
        assert start >= end, runs
    # Every slot is enqueued once or accounted for as skipped, none twice.
    enqueued = [o.slot for o in history.slot_history("slow", 1000) if o.outcome == "enqueued"]
    skipped = [o.slot for o in history.slot_history("slow", 1000) if o.outcome == "skipped_overlap"]
    assert len(set(enqueued)) == len(enqueued) and not set(enqueued) & set(skipped)


def test_starting_deadline__a_schedule_rewound_an_hour_enqueues_only_slots_inside_it(runcron: Any) -> None:
    schedules = {
        "report": {
            "cron": "* * * * * *",
            "task": QUICK,
            "missed_fire_policy": "catch_up",
            "starting_deadline": 30,
        }
    }
    proc = runcron(schedules)
    wait_for(lambda: Job.objects.filter(metadata__cron_name="report").exists())
    with raw_connection() as conn:
        rewound_at = conn.execute(
            "UPDATE awa_cron_jobs SET last_enqueued_at = date_trunc('second', clock_timestamp()) - interval '1 hour'"
            " WHERE name = 'report' RETURNING clock_timestamp()"
        ).fetchone()[0]
    # Every slot of the hour but its last half minute is past the deadline.
    wait_for(lambda: history.skip_counts("report").get("deadline", 0) >= 3600 - 60, timeout=120)
    wait_for(lambda: Job.objects.filter(metadata__cron_name="report", created_at__gt=rewound_at).count() >= 3)
    stop(proc)
    late = [
        j.metadata["cron_fire_at"]
        for j in Job.objects.filter(metadata__cron_name="report", created_at__gt=rewound_at)
        if datetime.fromisoformat(j.metadata["cron_fire_at"]) < rewound_at - timedelta(seconds=60)
    ]
    assert late == []
    assert history.skip_counts("report")["deadline"] <= 3600


def test_buffer_one__never_more_than_two_unfinished_jobs_and_runs_never_overlap(
    runcron: Any, runtasks: Any
) -> None:
    schedules = {
        "buffered": {
            "cron": "* * * * * *",
            "task": SLOW,
            # Longer than two slots: two workers are both busy at some slots.
            "kwargs": {"seconds": 2.5, "label": "buffered"},
            "overlap": "buffer_one",
        }
    }
    procs = [runcron(schedules), runtasks("--concurrency", "2")]
    wait_for(
        lambda: len(finished_runs("buffered")) >= 3 and history.skip_counts("buffered").get("overlap", 0) >= 2
    )
    stop(*procs)
    jobs = list(Job.objects.filter(metadata__cron_name="buffered").order_by("created_at"))
    # When each job was enqueued, at most one other was still unfinished.
    for job in jobs:
        unfinished = [
            other
            for other in jobs
            if other.created_at < job.created_at
            and (other.finished_at is None or other.finished_at > job.created_at)
        ]
        assert len(unfinished) <= 1, (job.pk, [o.pk for o in unfinished])
    # The waiting job started only once the running one had ended (its
    # concurrency key of limit 1 held it back at claim), across both slots.
    runs = finished_runs("buffered")
    for (_, end), (start, _) in zip(runs, runs[1:], strict=False):
        assert start >= end, runs
