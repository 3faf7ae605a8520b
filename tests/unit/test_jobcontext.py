"""jobcontext.py: what a running task learns about its job and its fire (no database)."""

from __future__ import annotations

import contextvars
from datetime import UTC, datetime
from typing import Any

from awa_django.jobcontext import CronFire, JobInfo, current_fire, current_job, running


def job(**metadata: Any) -> JobInfo:
    return JobInfo(
        id=7, attempt=1, max_attempts=3, queue="default", kind="tests.testapp.tasks.record", metadata=metadata
    )


def test_current_job__only_inside_running() -> None:
    assert current_job() is None and current_fire() is None
    info = job()
    with running(info):
        assert current_job() is info
        assert current_fire() is None  # not started by a schedule
    assert current_job() is None


def test_current_fire__automatic_fire_has_its_slot() -> None:
    with running(job(cron_name="nightly", cron_fire_at="2026-03-01T03:00:00+00:00")):
        assert current_fire() == CronFire("nightly", datetime(2026, 3, 1, 3, tzinfo=UTC), False, None)


def test_current_fire__manual_trigger_names_who() -> None:
    with running(job(cron_name="nightly", triggered_manually=True, triggered_by="alice")):
        assert current_fire() == CronFire("nightly", None, True, "alice")


def test_running__nests_and_restores_even_on_error() -> None:
    outer, inner = job(), job(cron_name="x")
    with running(outer):
        try:
            with running(inner):
                assert current_job() is inner
                raise RuntimeError
        except RuntimeError:
            pass
        assert current_job() is outer


def test_running__is_per_context_not_global() -> None:
    seen: list[JobInfo | None] = []
    with running(job()):
        contextvars.Context().run(lambda: seen.append(current_job()))
    assert seen == [None]
