"""Owner-scoped reconciliation (ADR-007), driven through the Python API.

Ports Awa's ``cron_reconciliation_test.rs`` scenarios and adds one test per
ADR requirement they leave implicit. Runtimes are simulated with real
:class:`RuntimeReporter` snapshot transactions (see ``tests.helpers.reconcile``);
"leader passes" are :func:`reconciliation.reconcile` calls. Grace periods are
100-200 ms and every wait is slightly longer; all clocks are the database's.
"""

from __future__ import annotations

import json
import threading
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.core.management import call_command
from django.db import DatabaseError, connection, transaction
from django.test.utils import override_settings

from awa_django.declarations.declaration import build_schedule
from awa_django.declarations.sync import sync_schedules
from awa_django.exceptions import OperationRefused, ScheduleNotFound
from awa_django.leader.evaluator import evaluate
from awa_django.leader.loop import Leader
from awa_django.models import CronDeclaration, CronJob, CronManifest, CronOwner, Job, RuntimeInstance
from awa_django.operations import owners as ownership
from awa_django.operations import schedules as operations
from awa_django.operations.common import ActionResult
from awa_django.reconciliation import evidence, persistence, snapshots
from awa_django.reconciliation.manifest import (
    REQUIRED_KEYS,
    InvalidManifest,
    build_manifest,
    manifest_for,
)
from awa_django.reconciliation.persistence import (
    CRON_PROTOCOL_VERSION,
    ReconciliationConfig,
    RegistrationConflict,
    configured,
    validate_label,
)
from awa_django.reconciliation.snapshots import RuntimeReporter
from tests.helpers.database import db_now, raw_connection
from tests.helpers.reconcile import (
    PLAN_KEYS,
    Background,
    age_evidence,
    execute,
    fire,
    fire_entry,
    holding_protocol_lock,
    job,
    legacy_runtime,
    owner_state,
    publish,
    row,
    shut_down,
    sleep_ms,
    sqlstate,
    table_snapshot,
    wait_until_blocked,
)
from tests.testapp.tasks import record

pytestmark = pytest.mark.django_db(transaction=True)

plan = persistence.plan
preview = persistence.preview
reconcile = persistence.reconcile

UNOWNED_CONFLICT = "{}: owned by <unowned>; explicit adoption/transfer required"
OWNED_CONFLICT = "{}: owned by {}; explicit adoption/transfer required"
RETIRED_CONFLICT = "{}: retired; explicit restore required"


def retired(name: str) -> bool:
    return row(name).retired_at is not None


def fire_at_of(job_row: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(job_row["metadata"]["cron_fire_at"])


# -- canonical manifests (pure) ------------------------------------------------


def test_manifest__hash_is_independent_of_declaration_order() -> None:
    a, b, c = job("a"), job("b"), job("c")
    first = manifest_for([a, b, c])
    assert manifest_for([c, a, b]).desired_hash == first.desired_hash
    assert manifest_for([b, c, a]).text == first.text
    assert first.names == ["a", "b", "c"]


def test_manifest__nested_key_order_of_args_and_metadata_does_not_matter() -> None:
    one = job(
        "x", kwargs={"k": {"b": 2, "a": [{"d": 1, "c": 0}]}}, metadata={"z": [{"b": 2, "a": 1}], "a": 0}
    )
    two = job(
        "x", kwargs={"k": {"a": [{"c": 0, "d": 1}], "b": 2}}, metadata={"a": 0, "z": [{"a": 1, "b": 2}]}
    )
    assert manifest_for([one]).desired_hash == manifest_for([two]).desired_hash
    # Array order is meaning, not formatting.
    three = job(
        "x", kwargs={"k": {"b": 2, "a": [{"d": 1, "c": 0}]}}, metadata={"z": [{"b": 2, "a": 1}, 1], "a": 0}
    )
    four = job(
        "x", kwargs={"k": {"b": 2, "a": [{"d": 1, "c": 0}]}}, metadata={"z": [1, {"b": 2, "a": 1}], "a": 0}
    )
    assert manifest_for([three]).desired_hash != manifest_for([four]).desired_hash


def test_manifest__explicit_empty_is_valid_and_differs_from_one_schedule() -> None:
    empty = manifest_for([])
    assert empty.entries == () and empty.text == "[]" and empty.names == []
    assert len(empty.desired_hash) == 64
    assert manifest_for([job("a")]).desired_hash != empty.desired_hash


def test_manifest__every_definition_field_is_part_of_the_hash() -> None:
    base = manifest_for([job("a")]).desired_hash
    variants = [
        job("a", "0 9 * * *"),
        job("a", timezone="Europe/Berlin"),
        job("a", queue="mail"),
        job("a", kwargs={"label": "other"}),
        job("a", args=[1]),
        job("a", priority=5),
        job("a", max_attempts=7),
        job("a", tags=["t"]),
        job("a", metadata={"team": "ops"}),
        job("a", missed_fire_policy="catch_up"),
        build_schedule_for_kind("a"),
    ]
    hashes = {manifest_for([v]).desired_hash for v in variants}
    assert base not in hashes and len(hashes) == len(variants)


def build_schedule_for_kind(name: str) -> Any:
    return build_schedule(
        name,
        "* * * * *",
        "tests.testapp.tasks.send_mail",
        queue="default",
        priority=0,
        kwargs={"label": name, "nested": {"b": 2, "a": 1}},
    )


def test_manifest__canonical_text_is_compact_sorted_json_of_full_definitions() -> None:
    manifest = manifest_for([job("b", metadata={"z": 1, "a": 2}), job("a")])
    entries = json.loads(manifest.text)
    assert [e["name"] for e in entries] == ["a", "b"]
    assert all(list(e) == sorted(REQUIRED_KEYS) for e in entries)
    assert list(entries[1]["metadata"]) == ["a", "z"]
    assert ", " not in manifest.text and ": " not in manifest.text
    assert manifest_for([job("a")]).entries[0] == json.loads(json.dumps(job("a").definition()))


def test_manifest__duplicate_blank_and_incomplete_entries_are_rejected() -> None:
    with pytest.raises(InvalidManifest, match="twice"):
        manifest_for([job("a"), job("a", "0 9 * * *")])
    definition = job("a").definition()
    with pytest.raises(InvalidManifest):
        build_manifest([{**definition, "name": "  "}])
    with pytest.raises(InvalidManifest):
        build_manifest([{**definition, "name": "x" * 201}])
    with pytest.raises(InvalidManifest, match="lacks"):
        build_manifest([{k: v for k, v in definition.items() if k != "queue"}])


def test_config__owner_and_revision_labels_are_validated() -> None:
    assert validate_label("billing", "owner") == "billing"
    for bad in ("", "   ", "a\x00b", "x" * 201, None, 7):
        with pytest.raises(ValueError):
            validate_label(bad, "owner")
    assert validate_label("é" * 100, "owner")  # 200 bytes
    with pytest.raises(ValueError):
        validate_label("é" * 101, "owner")  # 202 bytes


def test_config__authoritative_mode_is_opt_in() -> None:
    assert configured() is None
    with override_settings(AWA_OWNER="billing", AWA_REVISION="abc123"):
        assert configured() is None  # an owner alone does not make a deployment authoritative
    with override_settings(
        AWA_AUTHORITATIVE=True, AWA_OWNER="billing", AWA_REVISION="abc123", AWA_RECONCILE_GRACE=1.5
    ):
        assert configured() == ReconciliationConfig("billing", "abc123", 1500)
    with override_settings(AWA_AUTHORITATIVE=True, AWA_OWNER="billing", AWA_REVISION="abc123"):
        assert configured() == ReconciliationConfig("billing", "abc123", 60_000)
    with (
        override_settings(AWA_AUTHORITATIVE=True, AWA_OWNER=" ", AWA_REVISION="abc123"),
        pytest.raises(ValueError),
    ):
        configured()
    with (
        override_settings(AWA_AUTHORITATIVE=True, AWA_OWNER="billing", AWA_REVISION=None),
        pytest.raises(ValueError),
    ):
        configured()
    with (
        override_settings(
            AWA_AUTHORITATIVE=True, AWA_OWNER="billing", AWA_REVISION="r", AWA_RECONCILE_GRACE=-1
        ),
        pytest.raises(ValueError),
    ):
        configured()


# -- publication ---------------------------------------------------------------


def test_reporter__additive_runtime_reports_protocol_capability_without_declaring() -> None:
    reporter = RuntimeReporter("runtasks", [job("invoice")])
    assert reporter.config is None and not reporter.authoritative
    reporter.write(check=True)
    snapshot = RuntimeInstance.objects.get(instance_id=reporter.instance_id)
    assert snapshot.cron_protocol == CRON_PROTOCOL_VERSION and not snapshot.shutting_down
    assert not CronOwner.objects.exists() and not CronDeclaration.objects.exists()
    assert not CronJob.objects.exists()  # an additive runtime does not sync through its snapshot


def test_publish__stores_each_manifest_once_with_full_canonical_definitions() -> None:
    schedules = [job("b-job", metadata={"z": [{"b": 2, "a": 1}], "a": 0}, tags=["x", "y"]), job("a-job")]
    a = publish("billing", schedules)
    b = publish("billing", list(reversed(schedules)), revision="rev-2", grace_ms=5)
    expected = manifest_for(schedules)
    stored = list(CronManifest.objects.filter(owner_id="billing"))
    assert [m.desired_hash for m in stored] == [expected.desired_hash]
    assert stored[0].manifest == [s.definition() for s in sorted(schedules, key=lambda s: s.name)]
    declarations = {str(d.instance_id): d for d in CronDeclaration.objects.all()}
    assert set(declarations) == {a, b}
    assert {(d.owner_id, d.desired_hash) for d in declarations.values()} == {
        ("billing", expected.desired_hash)
    }
    assert (declarations[a].revision, declarations[a].grace_ms) == ("rev-1", 0)
    assert (declarations[b].revision, declarations[b].grace_ms) == ("rev-2", 5)
    # Every runtime publishes capability, whether or not it leads.
    assert set(RuntimeInstance.objects.values_list("cron_protocol", "leader")) == {
        (CRON_PROTOCOL_VERSION, False)
    }
    for schedule in schedules:
        stored_row = row(schedule.name)
        assert stored_row.owner_id == "billing"
        assert {k: getattr(stored_row, k) for k in REQUIRED_KEYS} == schedule.definition()


def test_publish__new_names_are_owned_at_once_and_definitions_sync_without_waiting_for_grace() -> None:
    a = publish("billing", [job("invoice", "0 9 * * *")], grace_ms=60_000)
    assert row("invoice").owner_id == "billing" and row("invoice").cron_expr == "0 9 * * *"
    changed = job("invoice", "0 10 * * *", queue="mail", tags=["t"], metadata={"k": {"b": 1, "a": 2}})
    publish("billing", [changed, job("statement")], instance=a, grace_ms=60_000)
    current = plan("billing")
    assert current.blockers == ["grace_period"] and current.grace_remaining_ms > 50_000
    invoice = row("invoice")
    assert {k: getattr(invoice, k) for k in REQUIRED_KEYS} == changed.definition()
    assert row("statement").owner_id == "billing"
    assert (
        owner_state("billing")["synced_hash"]
        == current.desired_hash
        == manifest_for([changed, job("statement")]).desired_hash
    )
    assert current.additions == [] and current.updates == [] and current.retirements == []


def test_publish__definitions_wait_for_every_live_runtime_to_speak_the_protocol() -> None:
    a = publish("billing", [job("invoice", "0 9 * * *")])
    old = legacy_runtime()
    publish("billing", [job("invoice", "0 10 * * *"), job("added")], instance=a)
    # New names are inserted at once even while blocked; existing definitions wait.
    assert row("added").owner_id == "billing"
    assert row("invoice").cron_expr == "0 9 * * *"
    result = reconcile("billing")
    assert not result.applied and result.blockers == ["unsupported_runtime_protocol"]
    assert result.updates == ["invoice"]
    assert row("invoice").cron_expr == "0 9 * * *"
    execute("DELETE FROM awa_runtime_instances WHERE instance_id = %s", [old])  # the old binary is gone
    publish("billing", [job("invoice", "0 10 * * *"), job("added")], instance=a)
    assert row("invoice").cron_expr == "0 10 * * *"


def test_publish__mixed_manifests_never_flip_definitions() -> None:
    manifest_a = [job("invoice", "0 9 * * *")]
    manifest_b = [job("invoice", "0 10 * * *"), job("new-name")]
    a = publish("billing", manifest_a)
    b = publish("billing", manifest_b)
    for _ in range(3):
        publish("billing", manifest_a, instance=a)
        assert row("invoice").cron_expr == "0 9 * * *"
        publish("billing", manifest_b, instance=b)
        assert row("invoice").cron_expr == "0 9 * * *"
        result = reconcile("billing")
        assert not result.applied and result.blockers == ["mixed_desired_manifests"]
        assert row("invoice").cron_expr == "0 9 * * *"
    new = row("new-name")
    assert new.owner_id == "billing" and new.retired_at is None
    publish("billing", manifest_b, instance=a)  # the rollout completes: one manifest
    assert row("invoice").cron_expr == "0 10 * * *"


def test_publish__conflicts_never_persist_agreement() -> None:
    sync_schedules([job("unowned")])
    a = publish("billing", [job("unowned")])
    for _ in range(2):
        publish("billing", [job("unowned")], instance=a)
        state = owner_state("billing")
        assert (
            state["synced_hash"],
            state["agreed_hash"],
            state["agreed_since"],
            state["evidence_until"],
        ) == (None,) * 4
        result = reconcile("billing")
        assert not result.applied and result.agreed_since is None
        assert result.blockers == ["ownership_or_retirement_conflict"]
        assert result.conflicts == [UNOWNED_CONFLICT.format("unowned")]
        assert owner_state("billing")["agreed_since"] is None
    assert row("unowned").owner_id is None


def test_publish__intruder_owner_declaring_an_owned_name_gets_a_conflict() -> None:
    publish("billing", [job("invoice")])
    publish("intruder", [job("invoice", queue="mail"), job("own")])
    intruder = plan("intruder")
    assert intruder.conflicts == [OWNED_CONFLICT.format("invoice", "billing")]
    assert intruder.blockers == ["ownership_or_retirement_conflict"]
    assert row("invoice").owner_id == "billing" and row("invoice").queue == "default"
    assert row("own").owner_id == "intruder"  # its genuinely new name is still inserted, owned
    assert CronJob.objects.filter(name="invoice").count() == 1  # names stay globally unique
    assert reconcile("intruder").applied is False
    assert owner_state("intruder")["agreed_since"] is None


# -- automatic retirement ------------------------------------------------------


def test_reconcile__explicit_empty_manifest_retires_only_its_owner() -> None:
    billing = publish("billing", [job("invoice")])
    publish("mail", [job("reminder")])
    sync_schedules([job("unowned")])
    assert [(r.name, r.owner_id) for r in CronJob.objects.all()] == [
        ("invoice", "billing"),
        ("reminder", "mail"),
        ("unowned", None),
    ]
    publish("billing", [], instance=billing)
    current = plan("billing")
    assert current.retirements == ["invoice"] and current.blockers == [] and not current.applied
    assert current.desired_hash == manifest_for([]).desired_hash
    assert not retired("invoice")

    result = reconcile("billing")
    assert result.applied and result.retirements == ["invoice"]
    invoice = row("invoice")
    assert invoice.retired_at is not None
    assert (invoice.retired_by, invoice.retired_revision, invoice.owner_id) == ("billing", "rev-1", "billing")
    for name in ("reminder", "unowned"):
        untouched = row(name)
        assert untouched.retired_at is None and untouched.retired_by is None
    assert row("reminder").owner_id == "mail" and row("unowned").owner_id is None
    mail = plan("mail")
    assert mail.retirements == [] and mail.blockers == []
    assert reconcile("mail").applied and not retired("reminder")
    again = reconcile("billing")
    assert again.applied and again.retirements == []  # idempotent


def test_reconcile__retires_absent_rows_atomically_naming_every_live_revision() -> None:
    a = publish("billing", [job("invoice"), job("statement"), job("keep")], revision="rev-2")
    b = publish("billing", [job("invoice"), job("statement"), job("keep")], revision="rev-1")
    publish("billing", [job("keep")], instance=a, revision="rev-2")
    publish("billing", [job("keep")], instance=b, revision="rev-1")
    result = reconcile("billing")
    assert result.applied and result.retirements == ["invoice", "statement"]
    rows = {r.name: r for r in CronJob.objects.all()}
    assert rows["invoice"].retired_revision == rows["statement"].retired_revision == "rev-1, rev-2"
    assert rows["invoice"].retired_at == rows["statement"].retired_at == rows["invoice"].updated_at
    assert rows["keep"].retired_at is None


def test_reconcile__transient_conflict_between_leader_passes_resets_grace() -> None:
    a = publish("billing", [job("invoice")], grace_ms=150)
    b = publish("billing", [job("invoice")], grace_ms=150)
    sleep_ms(200)
    assert plan("billing").blockers == []
    publish("billing", [], instance=b, grace_ms=150)
    assert plan("billing").blockers == ["mixed_desired_manifests"]
    publish("billing", [], instance=a, grace_ms=150)
    result = reconcile("billing")
    assert not result.applied and result.blockers == ["grace_period"]
    assert result.grace_remaining_ms > 0 and result.retirements == ["invoice"]
    assert not retired("invoice")
    sleep_ms(200)
    result = reconcile("billing")
    assert result.applied and result.blockers == [] and retired("invoice")


def test_publish__short_conflict_between_leader_passes_restarts_the_durable_clock() -> None:
    a = publish("billing", [job("invoice")], grace_ms=150)
    b = publish("billing", [job("invoice")], grace_ms=150)
    publish("billing", [], instance=a, grace_ms=150)
    publish("billing", [], instance=b, grace_ms=150)
    agreed = owner_state("billing")["agreed_since"]
    assert agreed is not None
    sleep_ms(200)
    assert plan("billing").blockers == []
    # Between two leader passes, b briefly declares something else, then returns.
    publish("billing", [job("invoice")], instance=b, grace_ms=150)
    assert owner_state("billing")["agreed_since"] is None
    publish("billing", [], instance=b, grace_ms=150)
    assert owner_state("billing")["agreed_since"] > agreed
    result = reconcile("billing")
    assert not result.applied and result.blockers == ["grace_period"] and not retired("invoice")
    sleep_ms(200)
    assert reconcile("billing").applied and retired("invoice")


def test_reconcile__legacy_runtime_and_outage_never_authorize_retirement() -> None:
    a = publish("billing", [job("invoice")])
    old = legacy_runtime()
    publish("billing", [], instance=a)
    current = plan("billing")
    assert current.blocking_instances == [old]
    assert current.blockers == ["unsupported_runtime_protocol"] and current.retirements == ["invoice"]
    assert not reconcile("billing").applied and not retired("invoice")

    age_evidence(3600)  # a full outage: nothing live
    current = plan("billing")
    assert current.blocking_instances == [] and current.declarations == []
    assert current.blockers == ["zero_live_declarations"]
    result = reconcile("billing")
    assert not result.applied and not retired("invoice")

    dry = ownership.retire_owner(actor="ops", owner_id="billing")
    assert dry == ActionResult("retire_owner", ["invoice"], False) and not retired("invoice")
    done = ownership.retire_owner(actor="ops", apply=True, owner_id="billing")
    assert done == ActionResult("retire_owner", ["invoice"], True)
    invoice = row("invoice")
    assert (invoice.retired_by, invoice.retired_revision) == ("ops", "operator") and invoice.retired_at


def test_reconcile__any_fresh_runtime_of_an_unknown_protocol_blocks() -> None:
    a = publish("billing", [job("invoice")])
    publish("billing", [], instance=a)
    future = legacy_runtime(protocol=CRON_PROTOCOL_VERSION + 1)
    result = reconcile("billing")
    assert result.blocking_instances == [future] and result.blockers == ["unsupported_runtime_protocol"]
    # A legacy runtime that is shutting down is still a live writer of the old protocol.
    execute("DELETE FROM awa_runtime_instances WHERE instance_id = %s", [future])
    stopping = legacy_runtime()
    execute("UPDATE awa_runtime_instances SET shutting_down = true WHERE instance_id = %s", [stopping])
    assert reconcile("billing").blocking_instances == [stopping]
    assert not retired("invoice")


def test_reconcile__waits_for_a_conflicting_publication_then_sees_mixed_manifests() -> None:
    a = publish("billing", [job("invoice")])
    publish("billing", [], instance=a)
    assert plan("billing").blockers == [] and plan("billing").retirements == ["invoice"]
    published, release = threading.Event(), threading.Event()

    def b_publishes() -> str:
        # The snapshot transaction of runtime b, held open after publishing.
        with transaction.atomic():
            instance = publish("billing", [job("invoice")])
            published.set()
            assert release.wait(15)
        return instance

    writer = Background(b_publishes)
    assert published.wait(15)
    reconciler = Background(lambda: reconcile("billing"))
    try:
        wait_until_blocked(reconciler, "advisory")
        assert not retired("invoice")
    finally:
        release.set()
    b = writer.result()
    result = reconciler.result()
    assert not result.applied and result.blockers == ["mixed_desired_manifests"]
    assert {d["instance_id"] for d in result.declarations} == {a, b}
    assert not retired("invoice")


def test_reconcile__owner_row_serialises_owner_state() -> None:
    a = publish("billing", [job("invoice")], grace_ms=150)
    publish("billing", [], instance=a, grace_ms=150)
    sleep_ms(200)
    assert plan("billing").blockers == []
    holder = raw_connection(autocommit=False)
    try:
        # Another writer of owner state restarts the clock, holding the owner row.
        holder.execute(
            "UPDATE awa_cron_owners SET agreed_hash = NULL, agreed_since = NULL, "
            "evidence_until = NULL WHERE owner_id = 'billing'"
        )
        reconciler = Background(lambda: reconcile("billing"))
        wait_until_blocked(reconciler, "transactionid")
        reader = Background(lambda: plan("billing"))
        assert reader.done_within(2.0), "a read-only plan waited for the owner row"
        assert reader.result().blockers == []  # its snapshot predates the uncommitted reset
        holder.commit()
    finally:
        holder.close()
    # Reconciliation decided on the owner state it waited for, not a stale read.
    result = reconciler.result()
    assert not result.applied and result.blockers == ["grace_period"] and not retired("invoice")
    sleep_ms(200)
    assert reconcile("billing").applied and retired("invoice")


def test_grace__survives_restarts_but_not_evidence_gaps() -> None:
    a = publish("billing", [job("invoice")], grace_ms=100)
    publish("billing", [], instance=a, grace_ms=100)
    since = owner_state("billing")["agreed_since"]
    assert since is not None
    call_command("migrate", "awa_django", verbosity=0)  # a redeploy re-runs migrations
    # Rolling restart: the new process starts (with its startup check), the old one stops.
    new = publish("billing", [], grace_ms=100, check=True)
    shut_down(a)
    sleep_ms(150)
    current = plan("billing")
    assert current.blockers == [] and current.agreed_since == since and current.grace_remaining_ms == 0
    assert [d["instance_id"] for d in current.declarations] == [new]

    execute(
        "UPDATE awa_cron_owners SET evidence_until = clock_timestamp() - interval '1 second' "
        "WHERE owner_id = 'billing'"
    )
    publish("billing", [], instance=new, grace_ms=100)
    current = plan("billing")
    assert current.blockers == ["grace_period"] and current.grace_remaining_ms > 0
    assert current.agreed_since > since
    assert not reconcile("billing").applied and not retired("invoice")
    sleep_ms(150)
    assert reconcile("billing").applied and retired("invoice")


def test_grace__every_live_declarations_grace_must_elapse() -> None:
    a = publish("billing", [job("invoice")], grace_ms=0)
    b = publish("billing", [job("invoice")], grace_ms=150)
    publish("billing", [], instance=a, grace_ms=0)
    publish("billing", [], instance=b, grace_ms=150)
    result = reconcile("billing")
    assert not result.applied and result.blockers == ["grace_period"]
    assert 0 < result.grace_remaining_ms <= 150
    sleep_ms(200)
    assert reconcile("billing").applied and retired("invoice")


def test_plan__freshness_is_the_larger_of_30_s_and_three_snapshot_intervals() -> None:
    with override_settings(AWA_SNAPSHOT_INTERVAL=20):
        slow = publish("billing", [job("invoice")])  # fresh for 3 x 20 s
    with override_settings(AWA_SNAPSHOT_INTERVAL=1):
        quick = publish("billing", [job("invoice")])  # fresh for the 30 s floor
    old = legacy_runtime()  # 10 s interval: 30 s
    current = plan("billing")
    assert {d["instance_id"] for d in current.declarations} == {slow, quick}
    seen = dict(execute("SELECT instance_id::text, last_seen_at FROM awa_runtime_instances"))
    expires = {d["instance_id"]: d["expires_at"] for d in current.declarations}
    assert expires[slow] - seen[slow] == timedelta(seconds=60)
    assert expires[quick] - seen[quick] == timedelta(seconds=30)

    age_evidence(25)
    current = plan("billing")
    assert {d["instance_id"] for d in current.declarations} == {slow, quick}
    assert current.blocking_instances == [old]
    age_evidence(10)  # 35 s old
    current = plan("billing")
    assert [d["instance_id"] for d in current.declarations] == [slow]
    assert current.blocking_instances == [] and current.blockers == []
    age_evidence(30)  # 65 s old
    assert plan("billing").blockers == ["zero_live_declarations"]


def test_plan__a_shutting_down_runtime_no_longer_declares() -> None:
    a = publish("billing", [job("invoice")])
    publish("billing", [], instance=a)
    shut_down(a)
    current = plan("billing")
    assert current.declarations == [] and current.blockers == ["zero_live_declarations"]
    assert not reconcile("billing").applied and not retired("invoice")


def test_plan__blockers_are_reported_in_protocol_order() -> None:
    sync_schedules([job("unowned")])
    legacy_runtime()
    assert plan("billing").blockers == ["unsupported_runtime_protocol", "zero_live_declarations"]
    publish("billing", [job("unowned")])
    assert plan("billing").blockers == ["unsupported_runtime_protocol", "ownership_or_retirement_conflict"]
    publish("billing", [])
    assert plan("billing").blockers == ["unsupported_runtime_protocol", "mixed_desired_manifests"]


def test_plan__as_json_has_the_documented_shape() -> None:
    a = publish("billing", [job("invoice")], grace_ms=60_000)
    data = plan("billing").as_json()
    json.dumps(data)
    assert set(data) == PLAN_KEYS
    assert data["owner_id"] == "billing" and data["blockers"] == ["grace_period"] and data["applied"] is False
    (declaration,) = data["declarations"]
    assert set(declaration) == {"instance_id", "revision", "desired_hash", "grace_ms", "expires_at"}
    assert (declaration["instance_id"], declaration["revision"], declaration["grace_ms"]) == (
        a,
        "rev-1",
        60_000,
    )
    assert datetime.fromisoformat(declaration["expires_at"]) > datetime.fromisoformat(data["evaluated_at"])
    assert datetime.fromisoformat(data["agreed_since"]) <= datetime.fromisoformat(data["evaluated_at"])


def test_plan__unknown_owner_is_blocked_and_nothing_is_written() -> None:
    result = reconcile("nobody")
    assert result.blockers == ["zero_live_declarations"] and not result.applied
    assert plan("nobody").blockers == ["zero_live_declarations"]
    assert not CronOwner.objects.exists()
    assert persistence.owners() == []


def test_plan__reads_one_repeatable_read_snapshot_without_the_protocol_lock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    a = publish("billing", [job("invoice")])
    publish("billing", [], instance=a)
    seen: list[tuple[Any, ...]] = []
    original = evidence.stored_rows

    def spy(*args: Any, **kwargs: Any) -> Any:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT current_setting('transaction_isolation'), current_setting('transaction_read_only'), "
                "(SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid())"
            )
            seen.append(cursor.fetchone())
        return original(*args, **kwargs)

    monkeypatch.setattr(evidence, "stored_rows", spy)
    plan("billing")
    preview("billing", [])
    assert seen == [("repeatable read", "on", 0), ("repeatable read", "on", 0)]
    seen.clear()
    reconcile("billing")  # apply re-evaluates under the serializer
    assert len(seen) == 1 and seen[0][1] == "off" and seen[0][2] == 1


# -- preview ---------------------------------------------------------------------


def test_preview__is_read_only_and_explains_every_change() -> None:
    publish("billing", [job("update"), job("remove")])
    sync_schedules([job("unowned")])
    before_plan = plan("billing")
    before = table_snapshot()
    proposal = [
        job("update", queue="mail").definition(),
        job("add").definition(),
        job("unowned").definition(),
    ]
    result = preview("billing", proposal)
    assert result.additions == ["add"]
    assert result.updates == ["update"]
    assert result.retirements == ["remove"]
    assert result.conflicts == [UNOWNED_CONFLICT.format("unowned")]
    assert "manifest_not_published" in result.blockers
    assert "ownership_or_retirement_conflict" in result.blockers
    assert not result.applied
    assert result.desired_hash == build_manifest(proposal).desired_hash != before_plan.desired_hash
    assert table_snapshot() == before
    after_plan = plan("billing")
    assert (after_plan.desired_hash, after_plan.agreed_since) == (
        before_plan.desired_hash,
        before_plan.agreed_since,
    )
    assert row("update").queue == "default" and not retired("remove")
    assert CronJob.objects.count() == 3

    published = preview("billing", [job("remove").definition(), job("update").definition()])
    assert published.blockers == [] and published.desired_hash == before_plan.desired_hash
    assert (published.additions, published.updates, published.retirements, published.conflicts) == (
        [],
        [],
        [],
        [],
    )
    stranger = preview("nobody", [job("add").definition()])
    assert stranger.blockers == ["zero_live_declarations", "manifest_not_published"]
    assert stranger.additions == ["add"]
    assert table_snapshot() == before
    with pytest.raises(ValueError):
        preview(" ", [])
    with pytest.raises(InvalidManifest):
        preview("billing", [job("add").definition(), job("add").definition()])


def test_plan__plans_previews_and_dry_runs_do_not_wait_for_a_protocol_lock_holder() -> None:
    a = publish("billing", [job("invoice")])
    publish("billing", [], instance=a)
    with holding_protocol_lock() as holder:
        holder.execute("SELECT 1 FROM awa_cron_owners FOR UPDATE")
        writer = Background(lambda: publish("billing", []))  # a writer does wait
        wait_until_blocked(writer, "advisory")
        reader = Background(
            lambda: (
                plan("billing"),
                preview("billing", [job("invoice").definition()]),
                ownership.retire_owner(actor="ops", owner_id="billing"),
                ownership.restore(actor="ops", name="invoice"),
                persistence.owners(),
            )
        )
        assert reader.done_within(2.0), "a read-only plan waited for the protocol lock"
        current, proposed, dry, dry_restore, owners = reader.result()
        assert current.retirements == ["invoice"] and not current.applied
        assert proposed.blockers == ["manifest_not_published"]
        assert dry == ActionResult("retire_owner", ["invoice"], False)
        assert dry_restore == ActionResult("restore", [], False)
        assert owners == ["billing"]
        assert not writer.finished.is_set()
    writer.result()


# -- operator actions ------------------------------------------------------------


def test_ownership__adoption_retirement_and_restore_need_explicit_operator_actions() -> None:
    sync_schedules([job("invoice")])
    billing = publish("billing", [job("invoice")])
    current = plan("billing")
    assert current.conflicts == [UNOWNED_CONFLICT.format("invoice")]
    assert "ownership_or_retirement_conflict" in current.blockers
    assert row("invoice").owner_id is None

    dry = ownership.adopt(actor="ops", name="invoice", owner_id="billing", expected_owner=None)
    assert dry == ActionResult("adopt", ["invoice"], False) and row("invoice").owner_id is None
    done = ownership.adopt(actor="ops", apply=True, name="invoice", owner_id="billing", expected_owner=None)
    assert done == ActionResult("adopt", ["invoice"], True) and row("invoice").owner_id == "billing"
    with pytest.raises(OperationRefused, match="expected <unowned>, found billing"):
        ownership.adopt(actor="ops", apply=True, name="invoice", owner_id="billing", expected_owner=None)

    # Additive sync of a changed definition cannot change an owned row.
    assert sync_schedules([job("invoice", queue="mail")]) == []
    assert row("invoice").queue == "default"

    publish("intruder", [job("invoice")])
    assert plan("intruder").conflicts == [OWNED_CONFLICT.format("invoice", "billing")]
    assert row("invoice").owner_id == "billing"

    ownership.retire(actor="ops", apply=True, name="invoice")
    publish("billing", [job("invoice")], instance=billing)
    invoice = row("invoice")
    assert invoice.retired_at is not None and (invoice.retired_by, invoice.retired_revision) == (
        "ops",
        "operator",
    )
    assert plan("billing").conflicts == [RETIRED_CONFLICT.format("invoice")]

    with pytest.raises(OperationRefused, match="retired"):
        operations.remove("invoice", "ops")
    with pytest.raises(DatabaseError) as deleted:
        execute("DELETE FROM awa_cron_jobs WHERE name = 'invoice'")
    assert sqlstate(deleted.value) == "55000"
    with pytest.raises(OperationRefused, match="retired"):
        operations.trigger("invoice", "ops")
    assert fire(fire_entry("invoice", db_now().replace(second=0, microsecond=0))) == []
    assert not Job.objects.exists() and row("invoice").last_enqueued_at is None

    before = db_now()
    restored = ownership.restore(actor="ops", apply=True, name="invoice")
    assert restored == ActionResult("restore", ["invoice"], True)
    invoice = row("invoice")
    assert (invoice.retired_at, invoice.retired_by, invoice.retired_revision) == (None, None, None)
    assert invoice.last_enqueued_at >= before and invoice.owner_id == "billing"


def test_ownership__owned_rows_refuse_physical_deletion() -> None:
    publish("billing", [job("invoice")])
    with pytest.raises(OperationRefused, match="owned by 'billing'"):
        operations.remove("invoice", "ops")
    with pytest.raises(DatabaseError) as deleted:
        execute("DELETE FROM awa_cron_jobs WHERE name = 'invoice'")
    assert sqlstate(deleted.value) == "55000" and "durable ownership" in str(deleted.value)
    assert CronJob.objects.filter(name="invoice").exists()


def test_operate__transfer_needs_the_expected_owner_and_resets_both_sides_only() -> None:
    publish("billing", [job("invoice")])
    publish("mail", [job("reminder")])
    publish("other", [job("other-job")])
    other_before = owner_state("other")
    with pytest.raises(OperationRefused, match="expected mail, found billing"):
        ownership.adopt(actor="ops", apply=True, name="invoice", owner_id="mail", expected_owner="mail")
    assert row("invoice").owner_id == "billing"
    done = ownership.adopt(actor="ops", apply=True, name="invoice", owner_id="mail", expected_owner="billing")
    assert done.applied and row("invoice").owner_id == "mail"
    for owner in ("billing", "mail"):
        state = owner_state(owner)
        assert (
            state["synced_hash"],
            state["agreed_hash"],
            state["agreed_since"],
            state["evidence_until"],
        ) == (None,) * 4
    assert owner_state("other") == other_before
    # Adoption into a brand-new owner creates its owner row.
    ownership.adopt(actor="ops", apply=True, name="other-job", owner_id="newcomer", expected_owner="other")
    assert CronOwner.objects.filter(owner_id="newcomer").exists()
    assert row("other-job").owner_id == "newcomer"


def test_operate__invalidates_the_certificate_so_publication_rescans_for_conflicts() -> None:
    a = publish("billing", [job("invoice")])
    certified = owner_state("billing")
    assert certified["synced_hash"] == manifest_for([job("invoice")]).desired_hash
    assert certified["agreed_since"] is not None
    ownership.retire(actor="ops", apply=True, name="invoice")
    publish("billing", [job("invoice")], instance=a)  # a heartbeat with the same manifest
    state = owner_state("billing")
    assert (state["synced_hash"], state["agreed_since"]) == (None, None)
    result = reconcile("billing")
    assert result.blockers == ["ownership_or_retirement_conflict"] and not result.applied


def test_operate__keeps_unrelated_owners_clocks_and_locks_only_its_rows() -> None:
    publish("billing", [job("invoice")])
    publish("mail", [job("reminder")])
    mail_before = owner_state("mail")
    assert mail_before["synced_hash"] and mail_before["agreed_since"]
    ownership.retire(actor="ops", apply=True, name="invoice")
    assert owner_state("mail") == mail_before  # not even rewritten (same xmin)
    billing = owner_state("billing")
    assert (
        billing["synced_hash"],
        billing["agreed_hash"],
        billing["agreed_since"],
        billing["evidence_until"],
    ) == (None,) * 4

    holder = raw_connection(autocommit=False)
    try:
        holder.execute("SELECT name FROM awa_cron_jobs WHERE name = 'reminder' FOR UPDATE")
        restore = Background(lambda: ownership.restore(actor="ops", apply=True, name="invoice"))
        assert restore.done_within(2.0), "restoring invoice waited for a lock on another row"
        assert restore.result().applied and not retired("invoice")
        # The held row lock is real: an action on that row does wait for it.
        blocked = Background(lambda: ownership.retire(actor="ops", apply=True, name="reminder"))
        wait_until_blocked(blocked, "transactionid")
    finally:
        holder.rollback()
        holder.close()
    assert blocked.result().applied and retired("reminder")


def test_operate__takes_the_protocol_lock_before_schedule_rows() -> None:
    publish("billing", [job("invoice")])
    holder = raw_connection(autocommit=False)
    try:
        holder.execute("SELECT name FROM awa_cron_jobs WHERE name = 'invoice' FOR UPDATE")
        action = Background(lambda: ownership.retire(actor="ops", apply=True, name="invoice"))
        wait_until_blocked(action, "transactionid")
        with raw_connection(autocommit=False) as probe:
            probe.execute("SET LOCAL lock_timeout = '100ms'")
            with pytest.raises(Exception) as timed_out:
                probe.execute("SELECT awa_cron_protocol_lock()")
            assert sqlstate(timed_out.value) == "55P03"  # lock_not_available: the action holds it
            probe.rollback()
    finally:
        holder.rollback()
        holder.close()
    assert action.result().applied and retired("invoice")


def test_operate__validates_actor_action_and_target() -> None:
    publish("billing", [job("invoice")])
    for actor in ("", "   "):
        with pytest.raises(ValueError, match="actor"):
            ownership.retire(actor=actor, name="invoice")
    with pytest.raises(ValueError):
        ownership.retire("", actor="ops")
    with pytest.raises(ValueError):
        ownership.adopt(actor="ops", name="invoice", owner_id=" ")
    for apply in (False, True):
        with pytest.raises(ScheduleNotFound):
            ownership.retire(actor="ops", apply=apply, name="missing")
    assert ownership.retire_owner(actor="ops", apply=True, owner_id="nobody") == ActionResult(
        "retire_owner", [], True
    )
    assert ownership.retire(actor="ops", apply=True, name="invoice").schedules == ["invoice"]
    assert ownership.retire(actor="ops", apply=True, name="invoice").schedules == []  # already retired
    assert ownership.restore_owner(actor="ops", owner_id="billing").schedules == ["invoice"]


def test_operate__retire_works_on_unowned_rows_and_keeps_pause_separate() -> None:
    sync_schedules([job("legacy")])
    operations.pause("legacy", "alice")
    ownership.retire(actor="ops", apply=True, name="legacy")
    legacy = row("legacy")
    assert legacy.retired_at is not None and legacy.paused_by == "alice" and legacy.owner_id is None
    with pytest.raises(OperationRefused, match="retired"):
        operations.resume("legacy", "alice")
    ownership.restore(actor="ops", apply=True, name="legacy")
    legacy = row("legacy")
    assert legacy.retired_at is None and legacy.paused_by == "alice"  # restore keeps the pause


def test_sync__retired_unowned_row_ignores_additive_sync_and_keeps_its_tombstone() -> None:
    sync_schedules([job("legacy")])
    ownership.retire(actor="ops", apply=True, name="legacy")
    tomb = row("legacy")
    for _ in range(2):
        assert sync_schedules([job("legacy", "0 1 * * *", queue="mail")]) == []
    after = row("legacy")
    assert (after.retired_at, after.retired_by, after.cron_expr, after.queue, after.updated_at) == (
        tomb.retired_at,
        "ops",
        "* * * * *",
        "default",
        tomb.updated_at,
    )
    with pytest.raises(DatabaseError) as deleted:
        execute("DELETE FROM awa_cron_jobs WHERE name = 'legacy'")
    assert sqlstate(deleted.value) == "55000"
    assert "retired" in str(deleted.value) and "durable ownership" not in str(deleted.value)
    with pytest.raises(OperationRefused, match="retired"):
        operations.remove("legacy", "ops")
    assert retired("legacy")


def test_restore__starts_from_database_now_and_never_replays_retired_time() -> None:
    publish("billing", [job("report", missed_fire_policy="catch_up")])
    execute(
        "UPDATE awa_cron_jobs SET last_enqueued_at = date_trunc('minute', clock_timestamp()) "
        "- interval '1 hour' WHERE name = 'report'"
    )
    ownership.retire(actor="ops", apply=True, name="report")
    assert evaluate().jobs == []
    before = db_now()
    ownership.restore(actor="ops", apply=True, name="report")
    assert row("report").last_enqueued_at >= before
    jobs = evaluate().jobs
    # Without the new boundary, catch-up would replay the hour (60 fires).
    assert len(jobs) <= 1 and all(fire_at_of(j) > before for j in jobs)


def test_retire__leaves_already_enqueued_jobs_and_user_enqueues_alone() -> None:
    publish("billing", [job("invoice")])
    fired = evaluate().jobs
    assert [j["metadata"]["cron_name"] for j in fired] == ["invoice"]
    ownership.retire_owner(actor="ops", apply=True, owner_id="billing")
    accepted = Job.objects.get(id=fired[0]["id"])
    assert accepted.state == "available" and accepted.metadata["cron_name"] == "invoice"
    record.enqueue(label="by hand")
    assert Job.objects.count() == 2
    assert evaluate().jobs == []


# -- startup --------------------------------------------------------------------


def test_startup__foreign_or_unowned_desired_names_fail_and_publish_nothing() -> None:
    publish("mail", [job("invoice")])
    sync_schedules([job("statement")])
    reporter = RuntimeReporter(
        "runcron",
        [job("invoice"), job("statement"), job("fresh")],
        config=ReconciliationConfig("billing", "rev-1", 0),
    )
    with pytest.raises(RegistrationConflict) as failure:
        reporter.start()
    message = str(failure.value)
    assert "invoice" in message and "statement" in message and "fresh" not in message
    assert not RuntimeInstance.objects.filter(instance_id=reporter.instance_id).exists()
    assert not CronDeclaration.objects.filter(owner_id="billing").exists()
    assert not CronOwner.objects.filter(owner_id="billing").exists()
    assert not CronManifest.objects.filter(owner_id="billing").exists()
    assert not CronJob.objects.filter(name="fresh").exists()
    assert row("invoice").owner_id == "mail" and row("statement").owner_id is None


def test_startup__retired_desired_names_start_inert_and_restore_owner_revives_them() -> None:
    schedules = [job("invoice"), job("statement")]
    a = publish("billing", schedules)
    operations.pause("invoice", "ops")
    ownership.retire_owner(actor="ops", apply=True, owner_id="billing")

    # A process with the same config and schedules starts (startup check included).
    reporter = RuntimeReporter("runcron", schedules, config=ReconciliationConfig("billing", "rev-1", 0))
    with override_settings(AWA_SNAPSHOT_INTERVAL=60):
        reporter.start()
        try:
            assert evaluate().jobs == []  # retired schedules stay inert
        finally:
            reporter.stop()
    assert RuntimeInstance.objects.get(instance_id=reporter.instance_id).shutting_down
    current = plan("billing")
    assert "ownership_or_retirement_conflict" in current.blockers
    assert current.conflicts == [RETIRED_CONFLICT.format("invoice"), RETIRED_CONFLICT.format("statement")]
    assert current.agreed_since is None and owner_state("billing")["agreed_since"] is None

    dry = ownership.restore_owner(actor="ops", owner_id="billing")
    assert dry == ActionResult("restore_owner", ["invoice", "statement"], False)
    assert retired("invoice") and retired("statement")
    before = db_now()
    done = ownership.restore_owner(actor="ops", apply=True, owner_id="billing")
    assert done == ActionResult("restore_owner", ["invoice", "statement"], True)
    invoice, statement = row("invoice"), row("statement")
    assert invoice.retired_at is None and statement.retired_at is None
    assert invoice.last_enqueued_at >= before and statement.last_enqueued_at >= before
    assert invoice.paused_at is not None and invoice.paused_by == "ops"
    assert statement.paused_at is None
    # Restored names are no longer conflicts: agreement can start again.
    assert plan("billing").blockers == []
    publish("billing", schedules, instance=a)
    state = owner_state("billing")
    assert state["agreed_since"] is not None and state["synced_hash"] == manifest_for(schedules).desired_hash


# -- housekeeping and the leader ------------------------------------------------


def test_cleanup__snapshots_older_than_a_day_go_with_their_declarations() -> None:
    old = publish("billing", [job("invoice")])
    fresh = publish("billing", [job("invoice")])
    legacy = legacy_runtime()
    execute(
        "UPDATE awa_runtime_instances SET last_seen_at = clock_timestamp() - interval '25 hours' "
        "WHERE instance_id = ANY(%s::uuid[])",
        [[old, legacy]],
    )
    assert snapshots.cleanup_snapshots() == 2
    assert [str(i) for i in RuntimeInstance.objects.values_list("instance_id", flat=True)] == [fresh]
    assert [str(i) for i in CronDeclaration.objects.values_list("instance_id", flat=True)] == [fresh]
    # No automatic decommissioning: the owner, its manifest and schedules stay.
    assert CronOwner.objects.filter(owner_id="billing").exists() and CronManifest.objects.exists()
    assert row("invoice").owner_id == "billing" and not retired("invoice")


def test_leader__maintenance_drops_day_old_declarations_and_still_reconciles() -> None:
    gone = publish("billing", [job("invoice")])
    execute(
        "UPDATE awa_runtime_instances SET last_seen_at = clock_timestamp() - interval '2 days' "
        "WHERE instance_id = %s",
        [gone],
    )
    a = publish("billing", [job("invoice")])
    publish("billing", [], instance=a)
    Leader(schedules=[]).run_once()
    assert retired("invoice")
    assert not RuntimeInstance.objects.filter(instance_id=gone).exists()
    assert not CronDeclaration.objects.filter(instance_id=gone).exists()


def test_leader__run_once_reconciles_every_owner() -> None:
    a = publish("billing", [job("invoice"), job("keep")])
    publish("billing", [job("keep")], instance=a)
    publish("mail", [job("reminder")])
    publish("mail", [])  # mail is mid-rollout: mixed manifests
    result = Leader(schedules=[]).run_once()
    invoice = row("invoice")
    assert invoice.retired_at is not None and invoice.retired_by == "billing"
    assert not retired("keep") and not retired("reminder")
    fired = {j["metadata"]["cron_name"] for j in result.jobs}
    assert fired == {"keep", "reminder"}
    # No tombstone purge, no owner decommissioning.
    assert CronJob.objects.count() == 3 and set(persistence.owners()) == {"billing", "mail"}


@override_settings(AWA_AUTHORITATIVE=True, AWA_OWNER="billing", AWA_REVISION="rev-2", AWA_RECONCILE_GRACE=0)
def test_leader__authoritative_settings_publish_the_declared_set_and_retire_the_rest() -> None:
    a = publish("billing", [job("invoice"), job("keep")])
    shut_down(a)
    result = Leader(schedules=[job("keep"), job("brand-new")]).run_once()
    invoice = row("invoice")
    assert invoice.retired_at is not None and (invoice.retired_by, invoice.retired_revision) == (
        "billing",
        "rev-2",
    )
    assert row("brand-new").owner_id == "billing" and not retired("keep")
    assert {j["metadata"]["cron_name"] for j in result.jobs} == {"keep", "brand-new"}
    # Its final snapshot is shutting_down: no live declaration remains.
    assert plan("billing").blockers == ["zero_live_declarations"]


@override_settings(AWA_AUTHORITATIVE=True, AWA_OWNER="billing", AWA_REVISION="rev-2")
def test_leader__authoritative_startup_conflict_fails_before_anything_is_written() -> None:
    sync_schedules([job("invoice")])
    with pytest.raises(RegistrationConflict, match="invoice"):
        Leader(schedules=[job("invoice")]).run_once()
    assert not RuntimeInstance.objects.exists() and not CronOwner.objects.exists()
    assert not Job.objects.exists()
