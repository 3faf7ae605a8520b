"""ownership.py: adopt, retire and restore owned schedules (dry run unless applied)."""

from __future__ import annotations

import pytest

from awa_django.exceptions import OperationRefused, ScheduleNotFound
from awa_django.models import CronJob
from awa_django.operations import owners
from awa_django.operations.common import ActionResult
from tests.factories import CronJobFactory

pytestmark = pytest.mark.django_db


def test_dry_run_selects_and_changes_nothing() -> None:
    CronJobFactory(name="nightly")
    plan = owners.retire("nightly", actor="ops")
    assert plan == ActionResult("retire", ["nightly"], False)
    assert plan.as_json() == {"action": "retire", "schedules": ["nightly"], "applied": False}
    assert CronJob.objects.get(name="nightly").retired_at is None


def test_retire_then_restore_a_schedule() -> None:
    CronJobFactory(name="nightly")
    assert owners.retire("nightly", actor="ops", apply=True).applied
    assert CronJob.objects.get(name="nightly").retired_at is not None
    owners.restore("nightly", actor="ops", apply=True)
    row = CronJob.objects.get(name="nightly")
    assert row.retired_at is None and row.last_enqueued_at is not None  # restored from now


def test_adopt_checks_the_expected_owner() -> None:
    CronJobFactory(name="nightly")
    with pytest.raises(OperationRefused):
        owners.adopt("nightly", "billing", expected_owner="someone", actor="ops", apply=True)
    owners.adopt("nightly", "billing", expected_owner=None, actor="ops", apply=True)
    assert CronJob.objects.get(name="nightly").owner_id == "billing"


def test_retire_owner_selects_every_schedule_of_the_owner() -> None:
    CronJobFactory(name="b1", owner_id="billing")
    CronJobFactory(name="b2", owner_id="billing")
    CronJobFactory(name="other", owner_id="shop")
    plan = owners.retire_owner("billing", actor="ops", apply=True)
    assert plan.schedules == ["b1", "b2"]
    assert sorted(CronJob.objects.filter(retired_at__isnull=False).values_list("name", flat=True)) == [
        "b1",
        "b2",
    ]


def test_missing_name_and_unknown_schedule() -> None:
    with pytest.raises(ValueError, match="retire needs a schedule name"):
        owners.retire("", actor="ops")
    with pytest.raises(ScheduleNotFound):
        owners.retire("ghost", actor="ops")
