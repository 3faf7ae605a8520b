"""Parked and poisoned schedule rows in the admin.

A row written by raw SQL with a timestamp no Python datetime can hold must not
break the schedule list for every row, and a parked row shows why it is quiet.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse

from awa_django.leader.evaluator import evaluate
from awa_django.models import CronJob
from awa_django.operations import schedules
from tests.factories import CronJobFactory
from tests.helpers.database import operator_context

pytestmark = pytest.mark.django_db

SCHEDULES = reverse("admin:awa_django_cronjob_changelist")


def poison(name: str, column: str, value: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE awa_cron_jobs SET {column} = {value} WHERE name = %s", [name])


@pytest.mark.parametrize("column", ["last_enqueued_at", "created_at"])
@pytest.mark.parametrize("value", ["'infinity'", "'-infinity'", "'0001-01-01 00:00+00'"])
def test_schedule_list__a_row_with_an_unloadable_timestamp_shows_parked(
    admin_client: Client, column: str, value: str
) -> None:
    CronJobFactory(name="healthy", cron_expr="* * * * * *")
    CronJobFactory(name="poisoned", cron_expr="* * * * * *")
    poison("poisoned", column, value)

    # Before any leader pass: the list still renders, every row in it.
    page = admin_client.get(SCHEDULES)
    assert page.status_code == 200
    assert {r.name for r in page.context["cl"].result_list} == {"healthy", "poisoned"}

    evaluate()  # the leader parks the row, with its reason
    page = admin_client.get(SCHEDULES)
    assert page.status_code == 200
    html = page.content.decode()
    assert "awa-parked" in html
    reason = CronJob.objects.values_list("parked_reason", flat=True).get(name="poisoned")
    assert reason and column in reason

    parked = admin_client.get(SCHEDULES + "?state=parked")
    assert [r.name for r in parked.context["cl"].result_list] == ["poisoned"]

    detail = admin_client.get(reverse("admin:awa_django_cronjob_change", args=["poisoned"]))
    assert detail.status_code == 200
    assert "awa-parked" in detail.content.decode()


def test_with_safe_timestamps__loads_the_text_of_an_infinite_timestamp() -> None:
    CronJobFactory(name="poisoned")
    poison("poisoned", "last_enqueued_at", "'infinity'")
    row = schedules.with_safe_timestamps(CronJob.objects.filter(name="poisoned")).get()
    assert row.last_enqueued_at is None
    assert row.last_enqueued_at_text == "infinity"  # type: ignore[attr-defined]
    assert row.created_at is not None  # in range: loaded as usual


@pytest.mark.parametrize(
    ("column", "badge_class", "button"),
    [
        ("paused_at", "awa-paused", "resume_schedules"),
        ("retired_at", "awa-retired", "restore_schedules"),
    ],
)
def test_schedule_admin__an_infinite_paused_or_retired_at_still_shows_the_state(
    admin_client: Client, column: str, badge_class: str, button: str
) -> None:
    CronJobFactory(name="healthy", cron_expr="* * * * * *")
    CronJobFactory(name="poisoned", cron_expr="* * * * * *")
    with operator_context():  # lifecycle columns change only under the operator context
        poison("poisoned", column, "'infinity'")
    page = admin_client.get(SCHEDULES)
    assert page.status_code == 200
    html = page.content.decode()
    assert badge_class in html and "since infinity" in html
    detail = admin_client.get(reverse("admin:awa_django_cronjob_change", args=["poisoned"]))
    assert detail.status_code == 200
    assert button in detail.content.decode()
