"""vacuum.py: the leader vacuums awa_cron_jobs after many fires, never inside a transaction."""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest
from django.db import OperationalError, connection, transaction

from awa_django.maintenance import vacuum
from tests.factories import CronJobFactory

DEADLINE = 60.0


def _vacuum_count() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute("SELECT vacuum_count FROM pg_stat_user_tables WHERE relname = 'awa_cron_jobs'")
        return int(cursor.fetchone()[0])


@pytest.fixture(autouse=True)
def _fresh_counter() -> None:
    vacuum._since.clear()
    vacuum._last.clear()


@pytest.mark.django_db(transaction=True)
def test_after_fires__vacuums_once_enough_fires_accumulated() -> None:
    CronJobFactory(name="churn")
    before = _vacuum_count()
    assert vacuum.after_fires(3, every=5) is False
    assert vacuum.after_fires(2, every=5) is True
    deadline = time.monotonic() + DEADLINE
    while _vacuum_count() == before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _vacuum_count() > before
    # The count starts again from zero.
    assert vacuum.after_fires(4, every=5) is False


@pytest.mark.django_db(transaction=True)
def test_after_fires__not_twice_within_the_minimum_interval() -> None:
    assert vacuum.after_fires(5, every=5, min_interval=3600) is True
    assert vacuum.after_fires(50, every=5, min_interval=3600) is False  # too soon: still counted
    assert vacuum._since["default"] == 50
    assert vacuum.after_fires(0, every=5, min_interval=0) is True


@pytest.mark.django_db
def test_after_fires__inside_a_transaction_waits_for_a_later_batch() -> None:
    with transaction.atomic():
        assert vacuum.after_fires(10, every=5) is False
    assert vacuum._since["default"] == 10  # still counted: the next call outside vacuums


@pytest.mark.django_db(transaction=True)
def test_after_fires__a_database_error_is_logged_not_raised(monkeypatch: Any, caplog: Any) -> None:
    def refuse(*_args: Any, **_kwargs: Any) -> None:
        raise OperationalError("refused (test)")

    from django.db.backends.utils import CursorWrapper

    monkeypatch.setattr(CursorWrapper, "execute", lambda self, sql, params=None: refuse())
    with caplog.at_level(logging.ERROR, logger="awa_django.vacuum"):
        assert vacuum.after_fires(5, every=5) is False
    assert any(r.getMessage().startswith("VACUUM of awa_cron_jobs failed") for r in caplog.records)
