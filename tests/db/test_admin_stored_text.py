"""Every stored text the console shows reaches the page with control characters written out.

Raw SQL can put ESC, BEL, U+2028 or U+202E into any text column: a hostname,
a worker id, a job's error traceback, a queue name, a schedule's description.
Every admin page (each list and each detail page) writes such characters out
(``\\x1b``, ``\\u202e``), as ``manage.py awa`` does, so no stored text can
reorder or hide what the page says; a traceback keeps its line breaks.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from html.parser import HTMLParser

import pytest
from django.db import connection, transaction
from django.test import Client
from django.urls import reverse

from awa_django.models import RuntimeInstance
from tests.factories import CronJobFactory, JobFactory
from tests.helpers.reconcile import job, publish

pytestmark = pytest.mark.django_db

HOSTILE = "evil\x1b[2J\x07\u2028\u202ecod\x85"
FORBIDDEN = {"\x1b", "\x07", "\u2028", "\u202e", "\x85"}


def set_every_text(table: str, where: str) -> list[str]:
    """Write HOSTILE into every text column of ``table``'s row that takes it; the columns written."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = %s "
            "AND data_type = 'text' ORDER BY ordinal_position",
            [table],
        )
        columns = [r[0] for r in cursor.fetchall()]
    written = []
    for column in columns:
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("SELECT set_config('awa.cron_admin', 'on', true)")
                cursor.execute(
                    f"UPDATE {table} SET {column} = COALESCE({column}, '') || %s WHERE {where}", [HOSTILE]
                )
                written.append(column)
        except Exception:  # a constraint or a fence refuses this column: not storable
            continue
    return written


class ShownText(HTMLParser):
    """What a page shows: its text and its titles (tooltips), not the values a
    form posts back (an action's checkbox carries the exact primary key)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.shown: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.shown.extend(value or "" for name, value in attrs if name in ("title", "alt", "placeholder"))

    def handle_data(self, data: str) -> None:
        self.shown.append(data)


def assert_escaped(client: Client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, url
    parser = ShownText()
    parser.feed(response.content.decode())
    page = "".join(parser.shown)
    leaks = [page[max(0, i - 60) : i + 10] for i, c in enumerate(page) if c in FORBIDDEN]
    assert not leaks, (url, leaks[:3])
    return page


def test_runtimes__hostname_version_role_and_queues_are_escaped(admin_client: Client) -> None:
    instance = uuid.uuid4()
    RuntimeInstance.objects.create(
        instance_id=instance,
        hostname="box",
        pid=42,
        version="t",
        role="runtasks",
        started_at=datetime.now(UTC),
        snapshot_interval_ms=10_000,
        queues=["default", HOSTILE],
    )
    assert {"hostname", "version", "role"} <= set(set_every_text("awa_runtime_instances", "true"))
    assert_escaped(admin_client, reverse("admin:awa_django_runtimeinstance_changelist"))
    page = assert_escaped(admin_client, reverse("admin:awa_django_runtimeinstance_change", args=[instance]))
    assert "boxevil\\x1b[2J\\x07\\u2028\\u202ecod\\x85" in page


def test_jobs__error_traceback_worker_and_queue_are_escaped_lines_kept(admin_client: Client) -> None:
    error = {
        "attempt": 1,
        "exception_class_path": "builtins.ValueError" + HOSTILE,
        "traceback": "Traceback (most recent call last):\n  boom\nValueError: " + HOSTILE,
        "worker_id": "w" + HOSTILE,
    }
    row = JobFactory(state="failed", attempt=1, finished_at=datetime.now(UTC), errors=[error])
    set_every_text("awa_jobs", f"id = {row.id}")
    with connection.cursor() as cursor:
        cursor.execute("UPDATE awa_jobs SET worker_ids = ARRAY[%s] WHERE id = %s", ["w" + HOSTILE, row.id])
    assert_escaped(admin_client, reverse("admin:awa_django_job_changelist"))
    page = assert_escaped(admin_client, reverse("admin:awa_django_job_change", args=[row.id]))
    assert "Traceback (most recent call last):\n  boom\nValueError: evil\\x1b" in page


def test_schedules_queues_and_owners__every_stored_text_is_escaped(admin_client: Client) -> None:
    CronJobFactory(name="plain", tags=["t" + HOSTILE])
    written = set_every_text("awa_cron_jobs", "name LIKE 'plain%%'")
    assert {"name", "timezone", "paused_by", "parked_reason", "retired_by"} <= set(written), written
    JobFactory(queue="q")
    with connection.cursor() as cursor:
        cursor.execute("UPDATE awa_jobs SET queue = %s", ["q" + HOSTILE])
        cursor.execute(
            "INSERT INTO awa_queue_meta (queue, paused_at, paused_by) VALUES (%s, now(), %s)",
            ["q" + HOSTILE, "ops" + HOSTILE],
        )
    owner = "billing" + HOSTILE
    publish(owner, [job("invoice")], revision="rev" + HOSTILE)
    for model in ("cronjob", "queue", "cronowner"):
        assert_escaped(admin_client, reverse(f"admin:awa_django_{model}_changelist"))
    from awa_django.models import CronJob, Queue

    for model, pk in (
        ("cronjob", CronJob.objects.get(name__startswith="plain").pk),
        ("queue", Queue.objects.get(queue__startswith="qevil").pk),
        ("cronowner", owner),
    ):
        from django.contrib.admin.utils import quote

        assert_escaped(admin_client, reverse(f"admin:awa_django_{model}_change", args=[quote(pk)]))
