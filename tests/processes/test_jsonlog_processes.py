"""With ``LOGGING = json_logging(...)`` real ``runcron`` and ``runtasks`` write JSON only.

Both processes run with ``DEBUG = True`` (where Django's own console handler
also prints ``django.tasks`` records) and a task that fails with a traceback:
every line either writes, start-up and stop lines included, is one JSON object,
and each ``django.tasks`` record appears once.
"""

from __future__ import annotations

import json
import signal
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from awa_django.models import Job
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

JSON_DEBUG = {"AWA_JSON_LOGS": "1", "AWA_TEST_DEBUG": "1", "AWA_LOG_LEVEL": "INFO"}
SCHEDULES = {
    "fails": {"cron": "* * * * * *", "task": "tests.testapp.tasks.always_fails"},
    "records": {"cron": "* * * * * *", "task": "tests.testapp.tasks.record"},
}


def records(output: str) -> list[dict[str, Any]]:
    """Every line of the output parsed as JSON (a plain line fails the test)."""
    parsed = []
    for line in output.splitlines():
        try:
            parsed.append(json.loads(line))
        except ValueError:
            pytest.fail(f"not a JSON line: {line!r}\n--- whole output:\n{output}")
    return parsed


def test_runcron_and_runtasks__every_line_is_one_json_record(
    runcron: Callable[..., Any], runtasks: Callable[..., Any]
) -> None:
    cron = runcron(SCHEDULES, env=JSON_DEBUG)
    wait_for(lambda: Job.objects.filter(kind__endswith="always_fails").exists(), timeout=60)
    wait_for(lambda: Job.objects.filter(kind__endswith="record").exists(), timeout=60)
    cron.signal(signal.SIGTERM)
    assert cron.wait() == 0, cron.output()
    cron_records = records(cron.output())
    events = [r.get("event") for r in cron_records]
    assert "runcron.started" in events and "runcron.stopped" in events and "cron.fired" in events

    worker = runtasks("--burst", env={**JSON_DEBUG, "AWA_RETRY_BACKOFF": "0"})
    assert worker.wait(timeout=120) == 0, worker.output()
    task_records = records(worker.output())
    events = [r.get("event") for r in task_records]
    assert "runtasks.started" in events and "runtasks.stopped" in events
    # django.tasks, or django_tasks: the backport's logger on Django 5.2.
    django_tasks = [r for r in task_records if r["logger"] in ("django.tasks", "django_tasks")]
    assert any("exception" in r for r in django_tasks)  # the failed attempt's traceback, as JSON
    seen = Counter((r["message"], r.get("attempt"), r.get("ts")) for r in django_tasks)
    repeated = [key for key, n in seen.items() if n > 1]
    assert repeated == []
