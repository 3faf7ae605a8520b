"""Names with bidi controls, zero-width characters or 200 characters, shown by
the admin and ``manage.py awa``: escaped visibly, long ones cut with the whole
name on hover. Rows are written directly (declarations refuse such names)."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from awa_django.admin.common import shown_name
from tests.factories import CronJobFactory
from tests.testapp import tasks

pytestmark = pytest.mark.django_db

SPOOF = "invoice\u202egpj.exe\u200b\u2066x"
SHOWN = "invoice\\u202egpj.exe\\u200b\\u2066x"
LONG = "n" * 200


def awa(*args: str) -> str:
    out = StringIO()
    call_command("awa", *args, stdout=out)
    return out.getvalue()


def test_shown_name__escapes_and_keeps_the_whole_name_in_the_title() -> None:
    assert shown_name(SPOOF) == f'<span class="awa-name" title="{SHOWN}">{SHOWN}</span>'
    assert shown_name("<b>") == '<span class="awa-name" title="&lt;b&gt;">&lt;b&gt;</span>'


def test_admin__bidi_and_zero_width_names_are_escaped_in_lists_and_pages(admin_client: Client) -> None:
    CronJobFactory(name=SPOOF, queue=SPOOF)
    CronJobFactory(name=LONG)
    job = tasks.record.using(queue_name="default").enqueue()
    pages = [
        admin_client.get(reverse("admin:awa_django_cronjob_changelist")),
        admin_client.get(reverse("admin:awa_django_cronjob_change", args=[SPOOF])),
    ]
    for page in pages:
        assert page.status_code == 200
        # Form values identify the row for an action: raw, and never shown.
        html = re.sub(r'value="[^"]*"', "", page.content.decode())
        for char in ("\u202e", "\u200b", "\u2066"):
            assert char not in html
        assert SHOWN in html
    listing = pages[0].content.decode()
    assert f'<span class="awa-name" title="{LONG}">{LONG}</span>' in listing
    jobs_page = admin_client.get(reverse("admin:awa_django_job_changelist")).content.decode()
    assert 'class="awa-name" title="tests.testapp.tasks.record"' in jobs_page
    assert admin_client.get(reverse("admin:awa_django_job_change", args=[int(job.id)])).status_code == 200


def test_awa__bidi_and_zero_width_names_are_escaped() -> None:
    CronJobFactory(name=SPOOF)
    text = awa("cron", "list") + awa("cron", "show", SPOOF)
    for char in ("\u202e", "\u200b", "\u2066"):
        assert char not in text
    assert SHOWN in text
