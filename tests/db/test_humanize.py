"""Human-readable cron expressions (cron-descriptor), in the CLI and the admin."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from awa_django.cron.describe import describe_cron
from tests.factories import CronJobFactory


@pytest.mark.parametrize(
    ("expression", "description"),
    [
        ("0 9 * * 1-5", "At 09:00, Monday through Friday"),
        # Seconds first: the same schedule, and a seconds step.
        ("0 0 9 * * 1-5", "At 09:00, Monday through Friday"),
        ("15 0 9 * * 1-5", "At 09:00:15, Monday through Friday"),
        ("*/5 * * * * *", "Every 5 seconds"),
        # A 6-field expression whose last field could pass for a year stays seconds-first.
        ("0 30 2 * * 0", "At 02:30, only on Sunday"),
        ("30 2 * * 7", "At 02:30, only on Sunday"),
        ("@daily", "At 00:00"),
        ("* * * * *", "Every minute"),
        ("0 0 L * *", "At 00:00, on the last day of the month"),
    ],
)
def test_describe_cron__reads_our_expressions(expression: str, description: str) -> None:
    assert describe_cron(expression) == description


def test_describe_cron__invalid_expression_is_returned_as_is() -> None:
    assert describe_cron("0 25 * * *") == "0 25 * * *"


@pytest.mark.django_db
def test_awa_cron_list__shows_the_description() -> None:
    CronJobFactory(name="digest", cron_expr="0 9 * * 1-5", timezone="Europe/Berlin")
    out = StringIO()
    call_command("awa", "cron", "list", stdout=out)
    header, row = out.getvalue().splitlines()[:2]
    assert "DESCRIPTION" in header
    assert "At 09:00, Monday through Friday" in row
    out = StringIO()
    call_command("awa", "cron", "list", "--json", stdout=out)
    assert json.loads(out.getvalue())[0]["description"] == "At 09:00, Monday through Friday"


@pytest.mark.django_db
def test_awa_cron_show__shows_the_description() -> None:
    CronJobFactory(name="every-5s", cron_expr="*/5 * * * * *")
    out = StringIO()
    call_command("awa", "cron", "show", "every-5s", stdout=out)
    assert "description: Every 5 seconds" in out.getvalue().splitlines()
