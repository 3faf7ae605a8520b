"""A poisoned schedule row is parked alone, with its reason, and never fails a pass.

Rows are poisoned with raw SQL, as an old writer or a hand edit would leave
them; a healthy every-second schedule next to each must keep firing.
"""

from __future__ import annotations

import json
import logging
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import override_settings

from awa_django.leader import evaluator
from awa_django.leader.evaluator import evaluate
from awa_django.leader.loop import Leader
from awa_django.models import CronJob, Job
from tests.factories import CronJobFactory
from tests.helpers.rows import POISONS, parked, poison

pytestmark = pytest.mark.django_db


def fired(name: str) -> int:
    return Job.objects.filter(metadata__cron_name=name).count()


@pytest.mark.parametrize("case", sorted(POISONS))
def test_evaluate__poisoned_row_is_parked_with_its_reason_and_healthy_rows_fire(
    case: str, caplog: pytest.LogCaptureFixture
) -> None:
    column, value = POISONS[case]
    CronJobFactory(name="healthy", cron_expr="* * * * * *")
    CronJobFactory(name="poisoned", cron_expr="* * * * * *")
    poison("poisoned", column, value)
    with caplog.at_level(logging.ERROR, logger="awa_django"):
        evaluate()
        assert fired("healthy") == 1
        assert fired("poisoned") == 0
        is_parked, reason = parked("poisoned")
        assert is_parked and reason
        assert {"cron_expr": "cron"}.get(column, column) in reason  # names the column
        # Re-evaluated (as maintenance does): still parked, logged only once.
        evaluator.reevaluate_parked()
        evaluate()
    assert fired("poisoned") == 0
    parked_logs = [r for r in caplog.records if getattr(r, "event", "") == "cron.parked"]
    assert [r.schedule for r in parked_logs] == ["poisoned"]  # type: ignore[attr-defined]
    assert "poisoned" in parked_logs[0].getMessage()


def test_evaluate__every_poison_at_once_leaves_the_healthy_row_firing() -> None:
    CronJobFactory(name="healthy", cron_expr="* * * * * *")
    for case, (column, value) in POISONS.items():
        CronJobFactory(name=case, cron_expr="* * * * * *")
        poison(case, column, value)
    result = evaluate()
    assert [j["metadata"]["cron_name"] for j in result.jobs] == ["healthy"]
    assert all(parked(case)[0] for case in POISONS)


def test_evaluate__parked_row_that_is_fixed_fires_and_is_unparked() -> None:
    CronJobFactory(name="poisoned", cron_expr="* * * * * *")
    poison("poisoned", "args", "'[1]'")
    evaluate()
    assert parked("poisoned")[0]
    poison("poisoned", "args", """'{"args": [], "kwargs": {}}'""")
    evaluator.reevaluate_parked()
    evaluate()
    assert fired("poisoned") == 1
    assert parked("poisoned") == (False, None)


def test_evaluate__an_unforeseen_database_error_fails_one_row_not_the_pass() -> None:
    """The set-based statement failing anyway (here: a hand-made constraint on
    awa_jobs that only one schedule's jobs violate) falls back to row by row."""
    CronJobFactory(name="healthy", cron_expr="* * * * * *")
    CronJobFactory(name="rejected", cron_expr="* * * * * *", queue="mail")
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE awa_jobs ADD CONSTRAINT no_mail CHECK (queue <> 'mail')")
    result = evaluate()
    assert [j["metadata"]["cron_name"] for j in result.jobs] == ["healthy"]
    is_parked, reason = parked("rejected")
    assert is_parked and reason and "no_mail" in reason


def test_leader__run_once_survives_every_poison() -> None:
    CronJobFactory(name="healthy", cron_expr="* * * * * *")
    for case, (column, value) in POISONS.items():
        CronJobFactory(name=case, cron_expr="* * * * * *")
        poison(case, column, value)
    Leader(schedules=[]).maintain()
    result = evaluate()
    assert fired("healthy") == 1 and len(result.jobs) == 1


def test_cli__cron_list_and_show_display_parked_rows_with_their_reason() -> None:
    CronJobFactory(name="healthy", cron_expr="* * * * * *")
    CronJobFactory(name="poisoned", cron_expr="* * * * * *")
    poison("poisoned", "last_enqueued_at", "'infinity'")
    evaluate()
    out = StringIO()
    call_command("awa", "cron", "list", stdout=out)
    listing = out.getvalue()
    assert "parked" in listing and "healthy" in listing
    out = StringIO()
    call_command("awa", "cron", "show", "poisoned", "--json", stdout=out)
    data = json.loads(out.getvalue())
    assert data["state"] == "parked"
    assert "last_enqueued_at" in data["parked_reason"] and "infinity" in data["parked_reason"]
    assert data["last_enqueued_at"] == "infinity"


@override_settings(AWA_MAX_ARGS_BYTES=100)
def test_evaluate__stored_args_over_the_size_limit_are_parked() -> None:
    CronJobFactory(name="big", cron_expr="* * * * * *", args={"args": ["x" * 200], "kwargs": {}})
    evaluate()
    assert fired("big") == 0
    assert "AWA_MAX_ARGS_BYTES" in (parked("big")[1] or "")


def test_reevaluate_parked__requeues_only_parked_active_rows() -> None:
    CronJobFactory(name="ok", cron_expr="0 0 1 1 *")
    CronJobFactory(name="bad", cron_expr="0 0 1 1 *")
    poison("bad", "metadata", "'[]'")
    evaluate()
    assert evaluator.reevaluate_parked() == 1
    assert CronJob.objects.get(name="bad").next_fire_at is None
    assert CronJob.objects.get(name="ok").next_fire_at is not None


def test_leader_maintain__a_row_parked_by_a_leader_that_could_not_evaluate_it_comes_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A leader whose tz database lacks the zone parks the row; the next leader
    that has it (here: the same process, fixed) fires it after maintenance."""
    from awa_django.cron import search

    CronJobFactory(name="berlin", cron_expr="* * * * * *", timezone="Europe/Berlin")
    real = search.parse_timezone

    def without_berlin(name: str) -> Any:
        if name == "Europe/Berlin":
            raise search.CronError(f"unknown timezone {name!r}")
        return real(name)

    monkeypatch.setattr(search, "parse_timezone", without_berlin)
    evaluate()
    assert parked("berlin") == (True, "unknown timezone 'Europe/Berlin'")
    assert evaluate().evaluated == 0  # parked: not re-read every pass
    monkeypatch.setattr(search, "parse_timezone", real)
    Leader(schedules=[]).maintain()  # at election and every AWA_SYNC_INTERVAL
    evaluate()
    assert fired("berlin") == 1
    assert parked("berlin") == (False, None)
