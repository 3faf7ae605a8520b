"""The worker's LISTEN connection: its alias, and no reconnect storm while it fails."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from django.test.utils import override_settings

from awa_django.db import sessions
from awa_django.worker.loop import Worker


@pytest.mark.django_db
def test_worker__listen_uses_awa_listen_database_and_backs_off_after_a_failure(monkeypatch: Any) -> None:
    attempts: list[str] = []

    def failing_connection(alias: str, role: str) -> Any:
        attempts.append(alias)
        raise psycopg.OperationalError("connection refused (test)")

    monkeypatch.setattr(sessions, "dedicated_connection", failing_connection)
    with override_settings(AWA_LISTEN_DATABASE="listen-direct", AWA_POLL_INTERVAL=60.0):
        worker = Worker()
        assert worker._listener.connection() is None
        # Within the poll interval the worker polls instead of reconnecting.
        assert [worker._listener.connection() for _ in range(5)] == [None] * 5
        assert attempts == ["listen-direct"]
        worker._listener._retry_at = 0.0
        assert worker._listener.connection() is None
    assert attempts == ["listen-direct", "listen-direct"]
