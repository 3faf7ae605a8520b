"""ownership.py: an applied verb that changes no row keeps the owner's clock.

ADR-007: "operator actions invalidate that certificate only for
affected owners". An owner none of whose rows changed is not affected: a
retire of an already retired row, a restore of an active one, or an owner
verb with nothing to do must leave ``synced_hash`` and the agreement clock
(``agreed_hash``, ``agreed_since``, ``evidence_until``) as they were, or a
repeated or scripted no-op would restart the owner's grace period.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from awa_django.models import CronJob, CronOwner
from awa_django.operations import owners
from tests.factories import CronJobFactory

pytestmark = pytest.mark.django_db


def agreed_owner(owner_id: str) -> tuple[Any, ...]:
    """Give ``owner_id`` a synced certificate and a running agreement clock; return it."""
    now = timezone.now()
    CronOwner.objects.update_or_create(
        owner_id=owner_id,
        defaults={
            "synced_hash": "h1",
            "agreed_hash": "h1",
            "agreed_since": now - timedelta(minutes=5),
            "evidence_until": now + timedelta(minutes=1),
        },
    )
    return clock(owner_id)


def clock(owner_id: str) -> tuple[Any, ...]:
    owner = CronOwner.objects.get(owner_id=owner_id)
    return (owner.synced_hash, owner.agreed_hash, owner.agreed_since, owner.evidence_until)


@pytest.fixture
def billing() -> None:
    """``invoice`` active and ``statement`` retired, both owned by billing."""
    CronJobFactory(name="invoice", owner_id="billing")
    CronJobFactory(name="statement", owner_id="billing")
    owners.retire("statement", actor="ops", apply=True)


@pytest.mark.usefixtures("billing")
def test_retire__an_already_retired_row_keeps_the_owner_clock() -> None:
    before = agreed_owner("billing")
    result = owners.retire("statement", actor="ops", apply=True)
    assert result.applied and result.schedules == []
    assert clock("billing") == before
    assert CronJob.objects.get(name="statement").retired_by == "ops"


@pytest.mark.usefixtures("billing")
def test_restore__an_active_row_keeps_the_owner_clock() -> None:
    before = agreed_owner("billing")
    last = CronJob.objects.get(name="invoice").last_enqueued_at
    result = owners.restore("invoice", actor="ops", apply=True)
    assert result.applied and result.schedules == []
    assert clock("billing") == before
    assert CronJob.objects.get(name="invoice").last_enqueued_at == last  # fire clock untouched too


def test_retire_owner__with_nothing_active_keeps_the_owner_clock() -> None:
    CronJobFactory(name="statement", owner_id="billing")
    owners.retire_owner("billing", actor="ops", apply=True)
    before = agreed_owner("billing")
    result = owners.retire_owner("billing", actor="ops", apply=True)
    assert result.applied and result.schedules == []
    assert clock("billing") == before


@pytest.mark.usefixtures("billing")
def test_restore_owner__with_nothing_retired_keeps_the_owner_clock() -> None:
    owners.restore_owner("billing", actor="ops", apply=True)
    before = agreed_owner("billing")
    result = owners.restore_owner("billing", actor="ops", apply=True)
    assert result.applied and result.schedules == []
    assert clock("billing") == before


@pytest.mark.usefixtures("billing")
def test_retire__a_change_still_resets_only_its_owner() -> None:
    CronJobFactory(name="reminder", owner_id="mail")
    agreed_owner("billing")
    mail = agreed_owner("mail")
    assert owners.retire("invoice", actor="ops", apply=True).schedules == ["invoice"]
    assert clock("billing") == (None, None, None, None)
    assert clock("mail") == mail


@pytest.mark.usefixtures("billing")
def test_restore__a_change_resets_its_owner() -> None:
    agreed_owner("billing")
    assert owners.restore("statement", actor="ops", apply=True).schedules == ["statement"]
    assert clock("billing") == (None, None, None, None)


@pytest.mark.usefixtures("billing")
def test_adopt__to_the_owner_it_already_has_changes_nothing() -> None:
    before = agreed_owner("billing")
    updated = CronJob.objects.get(name="invoice").updated_at
    result = owners.adopt("invoice", "billing", actor="ops", expected_owner="billing", apply=True)
    assert result.applied and result.schedules == []
    assert clock("billing") == before
    assert CronJob.objects.get(name="invoice").updated_at == updated


@pytest.mark.usefixtures("billing")
def test_adopt__a_real_transfer_still_resets_both_owners() -> None:
    agreed_owner("billing")
    agreed_owner("payroll")
    result = owners.adopt("invoice", "payroll", actor="ops", expected_owner="billing", apply=True)
    assert result.schedules == ["invoice"]
    assert clock("billing") == (None, None, None, None)
    assert clock("payroll") == (None, None, None, None)
    assert CronJob.objects.get(name="invoice").owner_id == "payroll"
