"""The composed reads of a foreign task table (store.celery_beat_source), on awa's own tables.

django-celery-beat is not installed here, so its table is stood in for by
``awa_cron_jobs`` joined to ``awa_cron_owners``: the statements are composed
from names alone, whatever the table.
"""

from __future__ import annotations

import pytest
from django.db import connection

from awa_django.store import celery_beat_source as source
from awa_django.store.celery_beat_source import SourceColumn, SourceJoin, SourceShape
from tests.factories import CronJobFactory

pytestmark = pytest.mark.django_db

SHAPE = SourceShape(
    table="awa_cron_jobs",
    pk="name",
    columns=(
        SourceColumn("p", "name"),
        SourceColumn("p", "created_at", "timestamp"),
        SourceColumn("p", "timezone", "text"),
        SourceColumn("p", None),  # a field this version lacks reads as NULL
        SourceColumn("r0", "owner_id"),
    ),
    joins=(SourceJoin("awa_cron_owners", "r0", "owner_id", "owner_id"),),
)


def test_source__counts_and_pages_in_key_order() -> None:
    for name in ("c", "a", "b"):
        CronJobFactory(name=name, timezone="UTC")
    with connection.cursor() as cursor:
        assert source.count(cursor, SHAPE) == 3
        first = source.page(cursor, SHAPE, None, 2)
        rest = source.page(cursor, SHAPE, first[-1][0], 2)
    assert [row[0] for row in first] == ["a", "b"] and [row[0] for row in rest] == ["c"]
    name, created_text, epoch, zone, missing, owner = first[0]
    assert isinstance(created_text, str) and float(epoch) > 0
    assert (zone, missing, owner) == ("UTC", None, None)
