"""The runtimes page of the console: a process that stopped cleanly reads "stopped"."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from awa_django.models import RuntimeInstance
from awa_django.reconciliation.snapshots import RuntimeReporter

pytestmark = pytest.mark.django_db

RUNTIMES = reverse("admin:awa_django_runtimeinstance_changelist")


def test_runtimes__a_clean_stop_reads_stopped_not_shutting_down(admin_client: Client) -> None:
    reporter = RuntimeReporter("runtasks", [])
    reporter.write()
    running = admin_client.get(RUNTIMES).content.decode()
    assert ">fresh</span>" in running and ">stopped</span>" not in running
    reporter.write(shutting_down=True)  # the last snapshot of a clean stop
    page = admin_client.get(RUNTIMES).content.decode()
    assert ">stopped</span>" in page and "shutting down" not in page
    assert admin_client.get(RUNTIMES + "?stopped=yes").context["cl"].result_count == 1
    assert admin_client.get(RUNTIMES + "?stopped=no").context["cl"].result_count == 0
    row = RuntimeInstance.objects.get()
    assert row.shutting_down
    detail = admin_client.get(reverse("admin:awa_django_runtimeinstance_change", args=[row.pk]))
    assert ">stopped</span>" in detail.content.decode()
    assert "shutting down" not in detail.content.decode().lower()
