"""upsert.py: the one upsert of schedule definitions, in its additive form (code
declarations, unowned rows) and its owned form (an owner's manifest)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import connection

from awa_django.db import sessions
from awa_django.declarations.declaration import Schedule, build_schedule
from awa_django.models import CronJob, CronManifest, CronOwner
from awa_django.reconciliation.manifest import manifest_for
from awa_django.store import schedule_upsert as upsert
from tests.factories import CronJobFactory
from tests.helpers.database import operator_context

pytestmark = pytest.mark.django_db

TASK = "tests.testapp.tasks.record"


def schedule(name: str, cron: str = "* * * * *", **options: Any) -> Schedule:
    return build_schedule(name, cron, TASK, **options)


def additive(*schedules: Schedule) -> list[tuple[str, str]]:
    with connection.cursor() as cursor:
        return sorted(upsert.sync_additive(cursor, [s.definition() for s in schedules]))


def manifest(owner: str, *schedules: Schedule) -> str:
    """Store ``owner``'s manifest of ``schedules`` (as publication does); its hash."""
    built = manifest_for(schedules)
    CronOwner.objects.get_or_create(owner_id=owner)
    CronManifest.objects.create(
        owner_id=owner, desired_hash=built.desired_hash, manifest=json.loads(built.text)
    )
    return built.desired_hash


def stored(name: str) -> CronJob:
    return CronJob.objects.get(name=name)


def test_sync_additive__inserts_then_writes_only_changed_definitions() -> None:
    assert additive(schedule("a"), schedule("b", tags=["x"])) == [("a", "written"), ("b", "written")]
    assert stored("b").tags == ["x"] and stored("a").owner_id is None
    first_update = stored("a").updated_at
    assert additive(schedule("a"), schedule("b", tags=["x"])) == []  # nothing changed: nothing written
    assert stored("a").updated_at == first_update
    assert additive(schedule("a", "*/5 * * * *"), schedule("b", tags=["x"])) == [("a", "written")]
    assert stored("a").cron_expr == "*/5 * * * *"


def test_sync_additive__never_touches_the_fire_clock_or_pause() -> None:
    additive(schedule("a"))
    with operator_context():
        CronJob.objects.filter(name="a").update(paused_by="alice", paused_at=stored("a").created_at)
    with connection.cursor() as cursor:
        cursor.execute("UPDATE awa_cron_jobs SET last_enqueued_at = created_at WHERE name = 'a'")
    before = stored("a")
    assert additive(schedule("a", "0 * * * *", priority=3)) == [("a", "written")]
    after = stored("a")
    assert (after.cron_expr, after.priority) == ("0 * * * *", 3)
    assert (after.last_enqueued_at, after.paused_at, after.paused_by) == (
        before.last_enqueued_at,
        before.paused_at,
        "alice",
    )


def test_sync_additive__reports_owned_rows_and_leaves_them_and_tombstones_alone() -> None:
    with operator_context():
        CronJobFactory(name="owned", owner_id="billing", cron_expr="0 0 * * *")
        CronJobFactory(name="buried", cron_expr="0 0 * * *")
        CronJob.objects.filter(name="buried").update(
            retired_at=stored("buried").created_at, retired_by="ops", retired_revision="operator"
        )
    result = additive(schedule("owned"), schedule("buried"), schedule("new"))
    assert result == [("new", "written"), ("owned", "owned")]
    assert (stored("owned").cron_expr, stored("owned").owner_id) == ("0 0 * * *", "billing")
    assert stored("buried").cron_expr == "0 0 * * *"


def test_insert_new_names__inserts_only_names_no_row_has_yet_owned() -> None:
    CronJobFactory(name="existing", cron_expr="0 0 * * *")
    digest = manifest("billing", schedule("existing"), schedule("fresh", queue="mail"))
    with connection.cursor() as cursor:
        upsert.insert_new_names(cursor, "billing", digest)
    fresh = stored("fresh")
    assert (fresh.owner_id, fresh.queue, fresh.cron_expr) == ("billing", "mail", "* * * * *")
    existing = stored("existing")
    assert (existing.owner_id, existing.cron_expr) == (None, "0 0 * * *")


def test_insert_new_names__reads_only_that_owners_manifest_of_that_hash() -> None:
    digest = manifest("billing", schedule("a"))
    manifest("shipping", schedule("b"))
    with connection.cursor() as cursor:
        upsert.insert_new_names(cursor, "shipping", digest)  # no such manifest for shipping
        assert not CronJob.objects.exists()
        upsert.insert_new_names(cursor, "billing", digest)
    assert list(CronJob.objects.values_list("name", "owner_id")) == [("a", "billing")]


def test_sync_owned__makes_the_owners_active_rows_match_its_manifest() -> None:
    with operator_context():
        CronJobFactory(name="mine", owner_id="billing", cron_expr="0 0 * * *")
        CronJobFactory(name="same", owner_id="billing", cron_expr="* * * * *")
        CronJobFactory(name="theirs", owner_id="shipping", cron_expr="0 0 * * *")
        CronJobFactory(name="loose", cron_expr="0 0 * * *")
        CronJobFactory(name="buried", owner_id="billing", cron_expr="0 0 * * *")
        CronJob.objects.filter(name="buried").update(
            retired_at=stored("buried").created_at, retired_by="ops", retired_revision="operator"
        )
    same_updated = stored("same").updated_at
    digest = manifest(
        "billing",
        *(schedule(n, "*/10 * * * *") for n in ("mine", "theirs", "loose", "buried")),
        schedule("same"),
    )
    with connection.cursor() as cursor, sessions.owner_context(cursor, "billing"):
        upsert.sync_owned(cursor, "billing", digest)
    assert stored("mine").cron_expr == "*/10 * * * *"
    assert stored("same").updated_at == same_updated  # unchanged definition: not written
    # Rows of another owner, unowned rows and tombstones are not the owner's to change.
    assert [stored(n).cron_expr for n in ("theirs", "loose", "buried")] == ["0 0 * * *"] * 3
    assert (stored("theirs").owner_id, stored("loose").owner_id) == ("shipping", None)
