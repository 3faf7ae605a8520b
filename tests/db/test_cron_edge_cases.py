"""Cron edge cases that need the database: ``manage.py check`` on a
non-ASCII digit, and the admin's overdue column for a schedule that never fired."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.checks import run_checks
from django.db import connection
from django.test import Client, override_settings
from django.urls import reverse

from awa_django.db import sessions
from awa_django.leader import evaluator
from awa_django.models import CronJob
from tests.factories import CronJobFactory
from tests.helpers.admin import live_leader

pytestmark = pytest.mark.django_db

SCHEDULES = reverse("admin:awa_django_cronjob_changelist")


@pytest.mark.parametrize(
    ("expr", "field"),
    [
        ("*/\u0665 * * * *", "minute"),
        ("0 0 \u0661\u0665W * *", "day-of-month"),
        ("0 0 * * 5#\uff13", "day-of-week"),
    ],
)
def test_check__non_ascii_digit_in_awa_schedules_names_the_cron_field(expr: str, field: str) -> None:
    options = {"cron": expr, "task": "tests.testapp.tasks.record"}
    with override_settings(AWA_SCHEDULES={"digits": options}):
        messages = [m for m in run_checks() if (m.id or "").startswith("awa_django.")]
    assert len(messages) == 1, [str(m) for m in messages]
    assert "field 'cron'" in messages[0].msg and f"{field} field" in messages[0].msg


def test_schedule_list__never_fired_row_is_overdue_from_the_slot_the_leader_fires(
    admin_client: Client,
) -> None:
    """Created 30 s after its daily slot, ten minutes ago: the leader fires that slot (60 s
    look-back), so the row is overdue since then, not due tomorrow."""
    live_leader()
    slot = (sessions.database_now() - timedelta(minutes=10)).replace(second=0, microsecond=0)
    CronJobFactory(name="daily", cron_expr=f"{slot.minute} {slot.hour} * * *", timezone="UTC")
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE awa_cron_jobs SET created_at = %s, next_fire_at = NULL WHERE name = 'daily'",
            [slot + timedelta(seconds=30)],
        )
    rows = {r.name: r for r in admin_client.get(SCHEDULES).context["cl"].result_list}
    assert rows["daily"]._awa.overdue_since == slot
    # The leader's own next fire for the row, before it fires: the same slot.
    row = CronJob.objects.get(name="daily")
    plan = evaluator._plan_valid_row(
        evaluator.ScheduleRow.from_row(
            {
                "name": row.name,
                "last_enqueued_at": None,
                "created_at": row.created_at,
                "prev_text": None,
                "created_text": None,
                "cron_expr": row.cron_expr,
                "timezone": row.timezone,
                "missed_fire_policy": "coalesce",
                "starting_deadline": None,
                "now": slot - timedelta(seconds=1),  # nothing due yet, only the next fire
            }
        ),
        limit=10,
    )
    assert plan.fires == () and plan.next_fire_at == slot.isoformat()
