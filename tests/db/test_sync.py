"""sync.py: additive sync of declared schedules into ``awa_cron_jobs`` (upsert only)."""

from __future__ import annotations

import logging

import pytest
from django.utils import timezone

from awa_django.declarations.declaration import build_schedule
from awa_django.declarations.sync import sync_schedules
from awa_django.models import CronJob
from tests.factories import CronJobFactory
from tests.helpers.database import operator_context

pytestmark = pytest.mark.django_db

RECORD = "tests.testapp.tasks.record"


def test_sync__inserts_then_writes_only_what_changed() -> None:
    a, b = build_schedule("a", "0 3 * * *", RECORD), build_schedule("b", "0 4 * * *", RECORD)
    assert sync_schedules([b, a]) == ["a", "b"]
    assert sync_schedules([a, b]) == []  # unchanged rows are skipped
    assert sync_schedules([build_schedule("a", "0 5 * * *", RECORD), b]) == ["a"]
    assert CronJob.objects.get(name="a").cron_expr == "0 5 * * *"
    assert sync_schedules([]) == []


def test_sync__never_deletes_and_keeps_runtime_and_lifecycle_columns() -> None:
    CronJobFactory(name="other-deployment")
    sync_schedules([build_schedule("a", "0 3 * * *", RECORD)])
    fired = timezone.now().replace(microsecond=0)
    with operator_context():
        CronJob.objects.filter(name="a").update(last_enqueued_at=fired, paused_at=fired, paused_by="ops")
    assert sync_schedules([build_schedule("a", "0 4 * * *", RECORD)]) == ["a"]
    row = CronJob.objects.get(name="a")
    assert (row.last_enqueued_at, row.paused_at, row.paused_by) == (fired, fired, "ops")
    assert CronJob.objects.filter(name="other-deployment").exists()


def test_sync__an_owned_row_is_not_changed_and_is_reported(caplog: pytest.LogCaptureFixture) -> None:
    CronJobFactory(name="owned", owner_id="billing", cron_expr="0 1 * * *")
    with caplog.at_level(logging.WARNING, logger="awa_django.sync"):
        assert sync_schedules([build_schedule("owned", "0 2 * * *", RECORD)]) == []
    assert CronJob.objects.get(name="owned").cron_expr == "0 1 * * *"
    assert [getattr(r, "event", None) for r in caplog.records] == ["cron.sync_conflict"]
    assert caplog.records[0].levelno == logging.WARNING


def test_sync__a_leader_logs_each_ownership_conflict_once(caplog: pytest.LogCaptureFixture) -> None:
    CronJobFactory(name="owned", owner_id="billing", cron_expr="0 1 * * *")
    reported: set[str] = set()
    with caplog.at_level(logging.WARNING, logger="awa_django.sync"):
        for _ in range(3):  # three syncs of one process
            sync_schedules([build_schedule("owned", "0 2 * * *", RECORD)], reported=reported)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == [
        "schedule owned is owned by an authoritative deployment or is a runtime schedule "
        "(awa:runtime); this additive declaration is ignored (delete the runtime "
        "schedule, or remove it from this deployment's code)"
    ]
