"""Schedules that differ from this code's declarations are shown everywhere an operator looks.

A row of this deployment (here: additive, no owner) that no declaration names
any more keeps firing: ``awa cron list``, the admin's schedule list (a filter
and a badge) and ``awa health`` (a warning that keeps the report healthy) all
say so, with the command that stops it. A schedule this code declares but an
authoritative owner owns shows the conflict in the admin.
"""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import Client, override_settings
from django.urls import reverse

from awa_django.health import probe, render
from awa_django.operations import declarations
from tests.factories import CronJobFactory
from tests.helpers.health import HOST, add_runtime, by_name

pytestmark = pytest.mark.django_db

DECLARED = {"kept": {"cron": "0 3 * * *", "task": "tests.testapp.tasks.record"}}
SCHEDULES = reverse("admin:awa_django_cronjob_changelist")


def awa(*args: str) -> str:
    out = StringIO()
    call_command("awa", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def gone() -> None:
    """``kept`` is declared; ``gone`` is a row of this deployment no code declares."""
    CronJobFactory(name="kept")
    CronJobFactory(name="gone")
    CronJobFactory(name="owned-gone", owner_id="billing")  # another owner's business


@override_settings(AWA_SCHEDULES=DECLARED)
def test_undeclared_rows__only_this_deployments_live_rows_no_code_names(gone: None) -> None:
    assert [r.name for r in declarations.undeclared_rows()] == ["gone"]
    with override_settings(AWA_OWNER="billing"):
        assert [r.name for r in declarations.undeclared_rows()] == ["owned-gone"]


@override_settings(AWA_SCHEDULES=DECLARED)
def test_cron_list__marks_a_schedule_no_longer_declared_with_its_remedy(gone: None) -> None:
    lines = awa("cron", "list").splitlines()
    row = next(line for line in lines if line.startswith("gone "))
    assert "active (no longer declared)" in row
    assert "no longer declared" not in next(line for line in lines if line.startswith("kept "))
    assert (
        "gone: no longer declared in this code; it keeps firing until you run "
        "`manage.py awa cron remove gone`" in lines
    )
    data = {d["name"]: d for d in json.loads(awa("cron", "list", "--json"))}
    assert data["gone"]["no_longer_declared"] and not data["kept"]["no_longer_declared"]


@override_settings(AWA_SCHEDULES=DECLARED)
def test_admin_schedule_list__badge_and_filter(admin_client: Client, gone: None) -> None:
    page = admin_client.get(SCHEDULES).content.decode()
    assert page.count(">no longer declared</span>") == 1
    assert "keeps firing until: manage.py awa cron remove gone" in page
    filtered = admin_client.get(SCHEDULES + "?declared=no").context["cl"].result_list
    assert [r.name for r in filtered] == ["gone"]
    detail = admin_client.get(reverse("admin:awa_django_cronjob_change", args=["gone"])).content.decode()
    assert "no longer declared in this code: it keeps firing until `manage.py awa cron remove gone`" in detail


@override_settings(AWA_SCHEDULES=DECLARED)
def test_health__an_undeclared_schedule_is_a_warning_not_a_failure(gone: None) -> None:
    add_runtime(leader=True, pass_ago=1)
    report = probe("cron", hostname=HOST)
    check = by_name(report)["declarations"]
    assert report.healthy and check.ok and check.warning
    assert "gone (run `manage.py awa cron remove gone`)" in check.detail
    assert "warn declarations: no longer declared" in render(report)
    reported = {c["name"]: c for c in report.as_json()["checks"]}
    assert reported["declarations"]["warning"] is True


@override_settings(AWA_SCHEDULES=DECLARED)
def test_health__every_schedule_declared_is_no_warning() -> None:
    CronJobFactory(name="kept")
    assert not by_name(probe(None))["declarations"].warning


@override_settings(AWA_SCHEDULES=DECLARED)
def test_admin__a_declared_schedule_owned_elsewhere_shows_the_conflict(admin_client: Client) -> None:
    CronJobFactory(name="kept", owner_id="billing")  # adopted by an authoritative deployment
    page = admin_client.get(SCHEDULES).content.decode()
    assert ">declared here, owned elsewhere</span>" in page
    filtered = admin_client.get(SCHEDULES + "?declared=elsewhere").context["cl"].result_list
    assert [r.name for r in filtered] == ["kept"]
    detail = admin_client.get(reverse("admin:awa_django_cronjob_change", args=["kept"])).content.decode()
    assert "conflict: owned by billing: this code&#x27;s declaration of it is ignored" in detail


@override_settings(
    AWA_SCHEDULES={**DECLARED, "broken": {"cron": "0 25 * * 1-5", "task": "tests.testapp.tasks.record"}}
)
def test_declarations__while_one_is_invalid_no_row_is_called_undeclared(
    admin_client: Client, gone: None
) -> None:
    # A web process starts with an invalid declaration (the checks report it):
    # what this code declares is unknown, so no row is flagged on a guess.
    assert declarations.declared_names() is None
    assert list(declarations.undeclared_rows()) == []
    page = admin_client.get(SCHEDULES).content.decode()
    assert ">no longer declared</span>" not in page
    assert list(admin_client.get(SCHEDULES + "?declared=no").context["cl"].result_list) == []
    detail = admin_client.get(reverse("admin:awa_django_cronjob_change", args=["gone"])).content.decode()
    assert "unknown: a declaration of this code is invalid (see manage.py check)" in detail


@override_settings(AWA_SCHEDULES=DECLARED)
def test_health__a_parked_or_paused_undeclared_schedule_is_not_said_to_fire(gone: None) -> None:
    CronJobFactory(name="stuck")
    CronJobFactory(name="held")
    # Raw SQL, as the leader parks a row it cannot evaluate, and an 'infinity' no datetime holds.
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE awa_cron_jobs SET parked_at = 'infinity', parked_reason = 'bad' WHERE name = 'stuck'"
        )
        cursor.execute("UPDATE awa_cron_jobs SET paused_at = now(), paused_by = 'ops' WHERE name = 'held'")
    add_runtime(leader=True, pass_ago=1)
    check = by_name(probe("cron", hostname=HOST))["declarations"]
    assert check.ok and check.warning
    assert check.detail == (
        "no longer declared in this code, still firing: gone (run `manage.py awa cron remove gone`); "
        "parked, not firing: stuck (run `manage.py awa cron remove stuck`); "
        "paused, not firing: held (run `manage.py awa cron remove held`)"
    )
