"""Flow control held by real processes: concurrency keys across two ``runtasks``,
one job from 50 concurrent enqueues in 5 processes, and a queue rate limit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import awa_django
from awa_django.models import Job
from tests.helpers.database import database_url
from tests.helpers.processes import ROOT
from tests.helpers.waiting import wait_for
from tests.testapp import tasks

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def all_completed(count: int) -> bool:
    return Job.objects.filter(state="completed").count() == count


def overlapping(intervals: list[tuple[datetime, datetime]]) -> int:
    """The most intervals [start, end) that hold one instant."""
    events = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals])
    most = now = 0
    for _, step in events:
        now += step
        most = max(most, now)
    return most


def stop(*procs: Any) -> None:
    for p in procs:
        p.signal(15)
    assert [p.wait() for p in procs] == [0] * len(procs)


def started(*procs: Any) -> None:
    wait_for(lambda: all(p.started_line in p.output() for p in procs), timeout=60)


def test_concurrency_keys__two_workers_never_run_two_jobs_of_one_key_at_once(runtasks: Any) -> None:
    workers = [runtasks("--concurrency", "4"), runtasks("--concurrency", "4")]
    started(*workers)  # both compete for every job from the first one
    for _ in range(10):
        for key in ("a", "b"):
            awa_django.enqueue(tasks.sleeps, kwargs={"seconds": 0.05, "label": key}, concurrency_key=key)
        tasks.sleeps.enqueue(seconds=0.05, label="free")
    wait_for(lambda: all_completed(30), timeout=60)
    stop(*workers)
    for key in ("a", "b"):
        rows = Job.objects.filter(concurrency_key=key).values_list("attempted_at", "finished_at")
        assert len(rows) == 10 and overlapping(list(rows)) == 1, key


# Run by `django shell -c` in each of 5 processes: 10 threads each wait for the
# go file, then enqueue with one unique key at once; print the result ids.
ENQUEUE_RACE = """
import json, os, threading, time
import awa_django
from django.db import connection
from tests.testapp.tasks import record
ids, errors = [], []
def one(n):
    try:
        while not os.path.exists(os.environ["GO_FILE"]):
            time.sleep(0.001)
        ids.append(awa_django.enqueue(record, args=[n], unique_key="race").id)
    except Exception as exc:
        errors.append(repr(exc))
    finally:
        connection.close()
threads = [threading.Thread(target=one, args=(n,)) for n in range(10)]
[t.start() for t in threads]
[t.join() for t in threads]
print(json.dumps({"ids": ids, "errors": errors}))
"""


def test_unique_key__fifty_concurrent_enqueues_in_five_processes_create_one_job(tmp_path: Path) -> None:
    go = tmp_path / "go"
    env = dict(
        os.environ, DJANGO_SETTINGS_MODULE="tests.settings", DATABASE_URL=database_url(), GO_FILE=str(go)
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "django", "shell", "-c", ENQUEUE_RACE],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(5)
    ]
    go.touch()
    outputs = [p.communicate(timeout=120) for p in procs]
    results = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]
    assert [r["errors"] for r in results] == [[]] * 5
    ids = [i for r in results for i in r["ids"]]
    assert len(ids) == 50 and len(set(ids)) == 1
    assert Job.objects.filter(unique_key="race").count() == 1


def test_queue_limits__a_rate_limited_queue_never_exceeds_its_rate_in_any_window(runtasks: Any) -> None:
    limits = json.dumps({"mail": {"rate": "4/s", "concurrency": 2}})
    for _ in range(12):
        tasks.send_mail.enqueue("x@example.com")
    for _ in range(4):
        tasks.sleeps.enqueue(seconds=0.05, label="free")
    workers = [runtasks("--concurrency", "4", env={"AWA_TEST_QUEUE_LIMITS": limits}) for _ in range(2)]
    started(*workers)
    wait_for(lambda: all_completed(16), timeout=60)
    stop(*workers)
    rows = list(Job.objects.filter(queue="mail").values_list("attempted_at", "finished_at"))
    starts = sorted(s for s, _ in rows)
    window = timedelta(seconds=1)
    assert max(sum(1 for t in starts if s <= t < s + window) for s in starts) <= 4
    assert overlapping(rows) <= 2
    assert {j.attempt for j in Job.objects.all()} == {1}
