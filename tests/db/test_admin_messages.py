"""Messages of the console show names as they are written, never capitalised."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from awa_django.operations import owners
from tests.factories import CronJobFactory

pytestmark = pytest.mark.django_db

SCHEDULES = reverse("admin:awa_django_cronjob_changelist")


def test_messages__a_refusal_keeps_the_schedule_name_lower_case(admin_client: Client) -> None:
    CronJobFactory(name="tick")
    owners.retire(actor="x", apply=True, name="tick")
    response = admin_client.post(
        SCHEDULES, {"action": "pause_schedules", "_selected_action": ["tick"]}, follow=True
    )
    page = response.content.decode()
    # Django's admin template capitalises each message's first letter.
    assert "schedule &#x27;tick&#x27; is retired" in page
    assert "Tick" not in page
