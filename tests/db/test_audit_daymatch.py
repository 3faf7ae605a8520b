"""Audit "daymatch", the parts that need the database: ``manage.py check`` on a
non-ASCII digit, and the admin's overdue column for a schedule that never fired."""

from __future__ import annotations

import pytest
from django.core.checks import run_checks
from django.test import override_settings
from django.urls import reverse

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
