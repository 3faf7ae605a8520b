"""``manage.py awa cron adopt|retire|restore|retire-owner|restore-owner|plan|owners``."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from awa_django.models import CronJob
from tests.factories import CronJobFactory
from tests.helpers.reconcile import PLAN_KEYS, job, publish

pytestmark = pytest.mark.django_db(transaction=True)


def awa(*args: str) -> str:
    out = StringIO()
    call_command("awa", "cron", *args, stdout=out)
    return out.getvalue()


def test_lifecycle_verbs__dry_run_unless_apply() -> None:
    CronJobFactory(name="legacy")
    dry = json.loads(awa("retire", "legacy", "--actor", "ops", "--json"))
    assert dry == {"action": "retire", "schedules": ["legacy"], "applied": False}
    assert CronJob.objects.get(name="legacy").retired_at is None
    assert awa("retire", "legacy", "--actor", "ops", "--apply").strip() == "retire: applied: legacy"
    row = CronJob.objects.get(name="legacy")
    assert (row.retired_by, row.retired_revision) == ("ops", "operator")
    restored = json.loads(awa("restore", "legacy", "--actor", "ops", "--apply", "--json"))
    assert restored == {"action": "restore", "schedules": ["legacy"], "applied": True}
    assert CronJob.objects.get(name="legacy").retired_at is None


def test_adopt__expected_owner_guards_transfers() -> None:
    CronJobFactory(name="invoice")
    awa("adopt", "invoice", "billing", "--actor", "ops", "--apply")
    assert CronJob.objects.get(name="invoice").owner_id == "billing"
    with pytest.raises(CommandError, match="expected <unowned>, found billing"):
        awa("adopt", "invoice", "mail", "--actor", "ops", "--apply")
    awa("adopt", "invoice", "mail", "--expected-owner", "billing", "--actor", "ops", "--apply")
    assert CronJob.objects.get(name="invoice").owner_id == "mail"


def test_owner_verbs__retire_and_restore_every_schedule_of_an_owner() -> None:
    publish("billing", [job("invoice"), job("statement")])
    assert json.loads(awa("retire-owner", "billing", "--actor", "ops", "--json"))["schedules"] == [
        "invoice",
        "statement",
    ]
    awa("retire-owner", "billing", "--actor", "ops", "--apply")
    assert CronJob.objects.filter(owner_id="billing", retired_at__isnull=False).count() == 2
    awa("restore-owner", "billing", "--actor", "ops", "--apply")
    assert CronJob.objects.filter(owner_id="billing", retired_at__isnull=True).count() == 2


def test_plan__json_shape_and_text(tmp_path: Path) -> None:
    publish("billing", [job("invoice"), job("statement")], grace_ms=60_000)
    data = json.loads(awa("plan", "billing", "--json"))
    assert set(data) == PLAN_KEYS
    assert data["blockers"] == ["grace_period"] and data["applied"] is False
    assert set(data["declarations"][0]) == {
        "instance_id",
        "revision",
        "desired_hash",
        "grace_ms",
        "expires_at",
    }
    assert awa("plan", "billing").startswith("owner billing: grace_period")
    # A proposed manifest (statement removed, report added) is previewed, not published.
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps([job("invoice").definition(), job("report").definition()]))
    preview = json.loads(awa("plan", "billing", "--manifest", str(manifest), "--json"))
    assert preview["additions"] == ["report"] and preview["retirements"] == ["statement"]
    assert "manifest_not_published" in preview["blockers"]
    assert not CronJob.objects.filter(name="report").exists()


def test_plan__bad_manifest_file_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(CommandError, match="cannot read manifest"):
        awa("plan", "billing", "--manifest", str(bad))
    bad.write_text(json.dumps({"name": "x"}))
    with pytest.raises(CommandError, match="JSON list"):
        awa("plan", "billing", "--manifest", str(bad))


def test_owners__lists_each_owner_with_its_state() -> None:
    publish("billing", [job("invoice")])
    publish("mail", [job("reminder")], grace_ms=60_000)
    text = awa("owners")
    assert "billing: converged" in text and "mail: grace_period" in text
    assert [p["owner_id"] for p in json.loads(awa("owners", "--json"))] == ["billing", "mail"]


def test_remove__refuses_owned_rows() -> None:
    publish("billing", [job("invoice")])
    with pytest.raises(CommandError, match="owned by 'billing'; retire it"):
        call_command("awa", "cron", "remove", "invoice", stdout=StringIO())
