"""runtime.py: each process's snapshot row, written without a thread (``write``) and cleaned up."""

from __future__ import annotations

import os
import socket

import pytest
from django.db import connection

from awa_django import __version__
from awa_django.health import Progress
from awa_django.models import RuntimeInstance
from awa_django.reconciliation.snapshots import RuntimeReporter, cleanup_snapshots

pytestmark = pytest.mark.django_db


def test_write__one_row_per_process_upserted() -> None:
    reporter = RuntimeReporter("runtasks", [], queues=["default", "mail"], is_leader=lambda: False)
    assert not reporter.authoritative and reporter.manifest is None
    reporter.write()
    reporter.write()
    row = RuntimeInstance.objects.get()
    assert str(row.instance_id) == reporter.instance_id
    assert (row.role, row.hostname, row.pid, row.version) == (
        "runtasks",
        socket.gethostname(),
        os.getpid(),
        __version__,
    )
    assert row.queues == ["default", "mail"] and not row.leader and not row.shutting_down


def test_write__reports_leadership_progress_and_shutting_down() -> None:
    leading = [False]
    progress = Progress()
    reporter = RuntimeReporter("runcron", [], is_leader=lambda: leading[0], progress=progress)
    reporter.write()
    row = RuntimeInstance.objects.get()
    assert not row.leader and row.last_pass_at is None  # no pass yet
    leading[0] = True
    progress.mark()
    reporter.write()
    row = RuntimeInstance.objects.get()
    assert row.leader and row.last_pass_at is not None
    reporter.write(shutting_down=True)
    assert RuntimeInstance.objects.get().shutting_down


def test_cleanup_snapshots__deletes_only_rows_not_seen_for_longer_than_the_limit() -> None:
    old, fresh = RuntimeReporter("runcron", []), RuntimeReporter("runtasks", [])
    old.write()
    fresh.write()
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE awa_runtime_instances SET last_seen_at = now() - interval '2 days' "
            "WHERE instance_id = %s",
            [old.instance_id],
        )
    assert cleanup_snapshots() == 1
    assert [str(i) for i in RuntimeInstance.objects.values_list("instance_id", flat=True)] == [
        fresh.instance_id
    ]
    assert cleanup_snapshots(older_than_seconds=3600) == 0
