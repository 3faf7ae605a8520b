"""JSON columns outside the job tables, written by raw SQL, never break a reader.

A manifest (``awa_cron_manifests.manifest``) or a runtime's queues
(``awa_runtime_instances.queues``) nested 5,000 levels deep, which PostgreSQL
stores without complaint: the admin's owners and runtimes pages answer, the
CLI names the owner and the column, reconciliation fails that owner alone,
logged once, and the other owners reconcile. A manifest file given to
``awa cron plan --manifest`` is read up to a documented cap.
"""

from __future__ import annotations

import json
import logging
import uuid
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import connection, transaction
from django.test import Client
from django.urls import reverse

from awa_django.cli import owners as cli
from awa_django.db import sessions
from awa_django.exceptions import OperationRefused
from awa_django.models import CronJob, CronManifest, RuntimeInstance
from awa_django.operations import runtime_schedules
from awa_django.reconciliation import persistence
from awa_django.reconciliation.snapshots import RuntimeReporter
from tests.helpers.reconcile import job, publish

pytestmark = pytest.mark.django_db

DEEP = "[" * 5000 + "]" * 5000


def awa(*args: str) -> str:
    out = StringIO()
    call_command("awa", *args, stdout=out)
    return out.getvalue()


def raw(sql: str, params: list[object] | None = None) -> None:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


@pytest.fixture
def two_owners() -> None:
    """``billing`` publishes a manifest that raw SQL then nests 5,000 deep; ``web`` is healthy."""
    publish("billing", [job("invoice")])
    publish("web", [job("digest")])
    raw("UPDATE awa_cron_manifests SET manifest = %s::jsonb WHERE owner_id = 'billing'", [DEEP])


def test_manifest_model__a_deep_manifest_loads_as_its_reason(two_owners: None) -> None:
    stored = {m.owner_id: m.manifest for m in CronManifest.objects.all()}
    assert "nested deeper than 34 levels" in str(stored["billing"])
    assert [e["name"] for e in stored["web"]] == ["digest"]


def test_admin_owners__a_deep_manifest_is_a_named_error_not_500(
    admin_client: Client, two_owners: None
) -> None:
    page = admin_client.get(reverse("admin:awa_django_cronowner_changelist"))
    assert page.status_code == 200
    text = page.content.decode()
    assert "awa_cron_manifests.manifest is nested deeper than 34 levels" in text
    assert "web" in text
    detail = admin_client.get(reverse("admin:awa_django_cronowner_change", args=["billing"]))
    assert detail.status_code == 200
    assert "awa_cron_manifests.manifest is nested deeper" in detail.content.decode()


def test_admin_runtimes__deep_queues_show_their_reason_not_500(admin_client: Client) -> None:
    RuntimeReporter("runtasks", []).write()
    raw("UPDATE awa_runtime_instances SET queues = %s::jsonb", [DEEP])
    listing = admin_client.get(reverse("admin:awa_django_runtimeinstance_changelist"))
    assert listing.status_code == 200
    row = RuntimeInstance.objects.get()
    detail = admin_client.get(reverse("admin:awa_django_runtimeinstance_change", args=[row.pk]))
    assert detail.status_code == 200
    assert "queues is nested deeper than 32 levels" in detail.content.decode()


def test_cli_cron_plan__a_deep_manifest_names_owner_and_column(two_owners: None) -> None:
    with pytest.raises(
        CommandError,
        match=r"owner 'billing': stored manifest .* cannot be read: "
        r"awa_cron_manifests.manifest is nested deeper than 34 levels",
    ):
        awa("cron", "plan", "billing")
    assert "owner web: converged" in awa("cron", "plan", "web")


def test_cli_cron_owners__lists_every_owner_with_the_unreadable_one_named(two_owners: None) -> None:
    lines = awa("cron", "owners").splitlines()
    assert lines[0].startswith("billing: error: owner 'billing': stored manifest")
    assert lines[1] == "web: converged"
    data = json.loads(awa("cron", "owners", "--json"))
    assert "nested deeper" in data[0]["error"] and data[1]["owner_id"] == "web"


def test_cli_cron_plan__a_manifest_not_a_list_of_definitions_is_named(two_owners: None) -> None:
    raw("UPDATE awa_cron_manifests SET manifest = '{\"name\": 1}'::jsonb WHERE owner_id = 'billing'")
    with pytest.raises(CommandError, match="is an object, not a list of schedule definitions"):
        awa("cron", "plan", "billing")


def test_reconcile_all__a_deep_manifest_fails_its_owner_alone_logged_once(
    two_owners: None, caplog: pytest.LogCaptureFixture
) -> None:
    # web drops "old" from its manifest: its reconciliation retires it.
    web = publish("web", [job("digest"), job("old")], instance=str(uuid.uuid4()))
    publish("web", [job("digest")], instance=web)
    reported: dict[str, str] = {}
    with caplog.at_level(logging.DEBUG, logger="awa_django.reconciliation"):
        for _ in range(3):
            plans = persistence.reconcile_all(reported=reported)
            assert [p.owner_id for p in plans] == ["web"]
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1, [r.getMessage() for r in errors]
    assert errors[0].owner == "billing" and not errors[0].exc_info  # type: ignore[attr-defined]
    assert "awa_cron_manifests.manifest is nested deeper than 34 levels" in errors[0].getMessage()
    assert CronJob.objects.get(name="old").retired_at is not None


def test_cli_cron_plan__manifest_from_dev_urandom_is_a_usage_error() -> None:
    with pytest.raises(CommandError, match=r"cannot read manifest /dev/urandom: larger than 16777216 bytes"):
        awa("cron", "plan", "billing", "--manifest", "/dev/urandom")


def test_cli_cron_plan__manifest_file_over_the_cap_or_too_deep_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (cli.MAX_MANIFEST_FILE_BYTES + 1))
    with pytest.raises(CommandError, match="larger than 16777216 bytes"):
        awa("cron", "plan", "billing", "--manifest", str(big))
    deep = tmp_path / "deep.json"
    deep.write_text(DEEP)
    with pytest.raises(CommandError, match="the file is nested deeper than 34 levels"):
        awa("cron", "plan", "billing", "--manifest", str(deep))
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"[\xff]")
    with pytest.raises(CommandError, match="not UTF-8 text"):
        awa("cron", "plan", "billing", "--manifest", str(binary))


def test_runtime_schedule__deep_stored_args_refuse_edit_naming_schedule_and_column() -> None:
    runtime_schedules.create_schedule("poll", "* * * * *", "tests.testapp.tasks.record", actor="alice")
    # Raw SQL, as the runtime owner's writes do (the fence passes them).
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT set_config('awa.cron_owner', 'awa:runtime', true)")
        cursor.execute("UPDATE awa_cron_jobs SET args = %s::jsonb WHERE name = 'poll'", [DEEP])
        assert cursor.rowcount == 1
    refusal = r"schedule 'poll': stored args is nested deeper than 32 levels .*delete the schedule"
    with pytest.raises(OperationRefused, match=refusal):
        runtime_schedules.runtime_definition("poll")
    with pytest.raises(OperationRefused, match=refusal):
        runtime_schedules.update_schedule("poll", actor="alice", priority=3)
    assert CronJob.objects.get(name="poll").priority != 3


def test_dedicated_connection__hands_back_json_as_text_for_the_guarded_decoder() -> None:
    conn = sessions.dedicated_connection("default", "test")
    try:
        row = conn.execute("SELECT %s::jsonb, %s::json", [DEEP, '{"a": 1}']).fetchone()
    finally:
        conn.close()
    assert row is not None and row[0].startswith("[[[") and row[1] == '{"a": 1}'
