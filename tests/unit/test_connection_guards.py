"""connection_guards.py: bounded waits and keepalives (a recording cursor; no database)."""

from __future__ import annotations

import copy
from types import SimpleNamespace
from typing import Any

import pytest
from django.test import override_settings

from awa_django.db import guards as guards


class RecordingCursor:
    def __init__(self, atomic_depth: int = 1) -> None:
        self.db = SimpleNamespace(atomic_blocks=[object()] * atomic_depth)
        self.executed: list[tuple[str, list[Any]]] = []

    def execute(self, sql: str, params: list[Any]) -> None:
        self.executed.append((sql, params))


@override_settings(AWA_LOCK_TIMEOUT=2.5, AWA_STATEMENT_TIMEOUT=0.0001)
def test_bound_transaction_waits__sets_local_timeouts_in_milliseconds() -> None:
    cursor = RecordingCursor()
    guards.bound_transaction_waits(cursor)
    [(sql, params)] = cursor.executed
    assert (
        "set_config('lock_timeout', %s, true)" in sql and "set_config('statement_timeout', %s, true)" in sql
    )
    assert params == ["2500", "1"]  # never rounded down to 0, which would disable the timeout


@override_settings(AWA_LOCK_TIMEOUT=0, AWA_STATEMENT_TIMEOUT=60)
def test_bound_transaction_waits__zero_disables_and_nested_blocks_are_left_alone() -> None:
    cursor = RecordingCursor()
    guards.bound_transaction_waits(cursor)
    assert cursor.executed[0][1] == ["0", "60000"]
    nested = RecordingCursor(atomic_depth=2)  # inside the caller's own transaction
    guards.bound_transaction_waits(nested)
    assert nested.executed == []


class DbError(Exception):
    def __init__(self, sqlstate: str | None, text: str = "boom") -> None:
        super().__init__(text)
        self.sqlstate = sqlstate


@pytest.mark.parametrize(
    ("sqlstate", "timed_out"), [("55P03", True), ("57014", True), ("40P01", False), (None, False)]
)
def test_lock_wait_timed_out__by_sqlstate_of_the_cause(sqlstate: str | None, timed_out: bool) -> None:
    wrapped = RuntimeError("django wrapper")
    wrapped.__cause__ = DbError(sqlstate)
    assert guards.lock_wait_timed_out(wrapped) is timed_out
    assert guards.lock_wait_timed_out(DbError(sqlstate)) is timed_out


def test_privilege_error__names_the_missing_grant() -> None:
    message = guards.privilege_error(DbError("42501", "permission denied for table awa_jobs\nDETAIL: x"))
    assert message is not None
    assert message.startswith("missing database privilege: permission denied for table awa_jobs (grant it")
    assert guards.privilege_error(DbError("55P03")) is None


@override_settings(AWA_TCP_KEEPALIVES_IDLE=11, AWA_TCP_KEEPALIVES_INTERVAL=4, AWA_TCP_KEEPALIVES_COUNT=2)
def test_keepalive_options__from_settings() -> None:
    assert guards.keepalive_options() == {
        "keepalives": 1,
        "keepalives_idle": 11,
        "keepalives_interval": 4,
        "keepalives_count": 2,
    }


@override_settings(AWA_TCP_KEEPALIVES_IDLE=11)
def test_guard_process_connections__adds_keepalives_but_the_project_wins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from django.db import connections

    wrapper = connections["default"]
    entry = copy.deepcopy(wrapper.settings_dict)
    entry["OPTIONS"] = {"keepalives_count": 9}
    monkeypatch.setattr(wrapper, "settings_dict", entry)
    guards.guard_process_connections()
    assert entry["OPTIONS"]["keepalives_idle"] == 11 and entry["OPTIONS"]["keepalives"] == 1
    assert entry["OPTIONS"]["keepalives_count"] == 9


def test_stop_deadline__one_lock_timeout_away_or_none_when_the_timeout_is_off() -> None:
    import math
    import time

    with override_settings(AWA_LOCK_TIMEOUT=7):
        assert 6 < guards.stop_deadline() - time.monotonic() <= 7
    with override_settings(AWA_LOCK_TIMEOUT=0):
        assert math.isinf(guards.stop_deadline())
