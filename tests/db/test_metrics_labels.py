"""Metric label values never carry control, separator or bidi characters.

Schedule and queue names come from raw SQL as well as from declarations: an
ESC, a BEL, U+2028 or U+202E in a label would reach every dashboard and alert
that shows it. The exposition text, as a scrape reads it, carries each one
written out (``\\x1b``), as ``manage.py awa`` prints names.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import RequestFactory

from awa_django import metrics
from awa_django.terminal import printable
from tests.factories import JobFactory
from tests.helpers.metrics import parse, value

pytestmark = pytest.mark.django_db

HOSTILE = [
    "esc\x1b[31m",
    "bell\x07",
    "line\u2028sep",
    "para\u2029sep",
    "rtl\u202ecod",
    "iso\u2066x",
    "c1\x85",
    "nl\nx",
]
# C0 (but the exposition's own newlines), DEL, C1, line/paragraph separators, bidi embeddings and isolates.
FORBIDDEN = {
    *map(chr, range(0x00, 0x0A)),
    *map(chr, range(0x0B, 0x20)),
    *map(chr, range(0x7F, 0xA0)),
    "\u2028",
    "\u2029",
    *map(chr, range(0x202A, 0x202F)),
    *map(chr, range(0x2066, 0x206A)),
}


def scrape() -> str:
    response = metrics.metrics_view(RequestFactory().get("/metrics"))
    assert response.status_code == 200
    return response.content.decode()


def test_metrics__hostile_queue_and_schedule_names_reach_the_scrape_escaped() -> None:
    for name in HOSTILE:
        # Raw SQL, as a hand edit or another writer can store them.
        JobFactory(queue="default")
        with connection.cursor() as cursor:
            cursor.execute("UPDATE awa_jobs SET queue = %s WHERE queue = 'default'", [name])
    metrics.observe_fires([{"metadata": {"cron_name": name}} for name in HOSTILE])
    metrics.observe_claimed([{"queue": name} for name in HOSTILE])
    for name in HOSTILE:
        metrics.observe_finished({"queue": name}, "completed")
    text = scrape()
    assert not FORBIDDEN & set(text.replace("\n", "")), sorted(FORBIDDEN & set(text))
    samples = parse(text)
    for name in HOSTILE:
        shown = printable(name)
        assert shown != name
        assert value(samples, "awa_jobs", queue=shown, state="available") == 1
        assert value(samples, "awa_cron_fires_total", schedule=shown) >= 1
        assert value(samples, "awa_jobs_claimed_total", queue=shown) >= 1
        assert value(samples, "awa_jobs_finished_total", queue=shown, outcome="completed") >= 1
