"""models.py: the fields and properties the admin and the services read."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from awa_django.models import CronJob, Job, JobState, Queue, TextArrayField
from tests.factories import CronJobFactory, JobFactory
from tests.helpers.database import operator_context

pytestmark = pytest.mark.django_db


def test_text_array_field__round_trips_a_list_of_strings_as_text_array() -> None:
    field = TextArrayField()
    assert field.db_type(connection) == "text[]"
    assert field.get_prep_value([1, "a"]) == ["1", "a"] and field.get_prep_value(None) is None
    assert field.to_python(" a, ,b ") == ["a", "b"]  # a form's comma-separated text
    CronJobFactory(name="tagged", tags=["x", "y, z"])
    assert CronJob.objects.get(name="tagged").tags == ["x", "y, z"]
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_typeof(tags)::text FROM awa_cron_jobs WHERE name = 'tagged'")
        assert cursor.fetchone()[0] == "text[]"


def test_cron_job__paused_and_retired_properties() -> None:
    row = CronJobFactory(name="life")
    assert str(row) == "life" and not row.is_paused and not row.is_retired
    with operator_context():
        CronJob.objects.filter(name="life").update(
            paused_at=timezone.now(), paused_by="ops", retired_at=timezone.now()
        )
    row.refresh_from_db()
    assert row.is_paused and row.is_retired


def test_job__cron_name_from_metadata() -> None:
    fired = JobFactory(metadata={"cron_name": "nightly"})
    plain = JobFactory(metadata={})
    assert fired.cron_name == "nightly" and plain.cron_name is None
    assert str(plain) == f"{plain.kind}#{plain.id}"


def test_job__the_database_refuses_a_priority_out_of_range() -> None:
    with pytest.raises(IntegrityError), transaction.atomic():
        JobFactory(priority=101)


def test_queue_view__depth_by_state() -> None:
    JobFactory(queue="mail", state=JobState.AVAILABLE)
    JobFactory(queue="mail", state=JobState.FAILED)
    JobFactory(queue="mail", state=JobState.FAILED)
    mail = Queue.objects.get(queue="mail")
    assert (mail.available, mail.failed, mail.running, mail.paused_at) == (1, 2, 0, None)
    assert str(mail) == "mail"
    assert Job.objects.filter(queue="mail").count() == 3
