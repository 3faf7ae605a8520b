"""The leader's maintenance services: their names and intervals, the loop that
runs them (a failing one does not stop the others) and when each is due."""

from __future__ import annotations

import logging

import pytest
from django.db import DatabaseError
from django.test import override_settings

from awa_django.leader.loop import Leader
from awa_django.maintenance.service import Rounds, run_services

EXPECTED = [
    "sync",
    "re-evaluation of parked rows",
    "reconciliation",
    "snapshot cleanup",
    "pruning",
    "catch-up vacuum",
    "index upkeep",
    "slot history trim",
]


class Recording:
    """A service that records its runs, and fails with ``error`` when given one."""

    def __init__(self, name: str, ran: list[str], error: BaseException | None = None, interval: float = 60.0):
        self.name = name
        self.ran = ran
        self.error = error
        self.interval = interval

    def run(self, using: str) -> None:
        self.ran.append(self.name)
        if self.error is not None:
            raise self.error


def test_leader_services__names_order_and_intervals() -> None:
    services = Leader(schedules=[]).services
    assert [s.name for s in services] == EXPECTED
    with override_settings(AWA_SYNC_INTERVAL=17):
        assert {s.interval for s in services} == {17.0}


def test_run_services__a_failing_service_does_not_stop_the_others(caplog: pytest.LogCaptureFixture) -> None:
    ran: list[str] = []
    services = [
        Recording("first", ran),
        Recording("broken", ran, DatabaseError("broke")),
        Recording("last", ran),
    ]
    with caplog.at_level(logging.ERROR, logger="awa_django.leader"):
        with pytest.raises(DatabaseError, match="broke"):
            run_services(services, "default")
    assert ran == ["first", "broken", "last"]
    assert [r.getMessage() for r in caplog.records] == ["maintenance step broken failed: broke"]


def test_run_services__the_first_error_is_the_one_raised() -> None:
    ran: list[str] = []
    services = [Recording("a", ran, DatabaseError("one")), Recording("b", ran, DatabaseError("two"))]
    with pytest.raises(DatabaseError, match="one"):
        run_services(services, "default")
    assert ran == ["a", "b"]


def test_run_services__times_each_service(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="awa_django.leader"):
        run_services([Recording("quick", [])], "default")
    (record,) = [r for r in caplog.records if getattr(r, "event", None) == "maintenance.ran"]
    assert record.service == "quick" and record.seconds >= 0  # type: ignore[attr-defined]


def test_rounds__all_due_at_first_then_each_after_its_interval_from_the_round_end() -> None:
    ran: list[str] = []
    fast, slow = Recording("fast", ran, interval=10.0), Recording("slow", ran, interval=30.0)
    rounds = Rounds([fast, slow])
    assert rounds.due(0.0) == [fast, slow]
    rounds.ran([fast, slow], finished=5.0)
    assert rounds.due(14.9) == [] and rounds.wait(14.0) == pytest.approx(1.0)
    assert rounds.due(15.0) == [fast]
    rounds.ran([fast], finished=15.5)
    assert rounds.due(25.4) == [] and rounds.wait(25.0) == pytest.approx(0.5)
    assert rounds.due(34.9) == [fast]
    assert rounds.due(35.0) == [fast, slow] and rounds.wait(35.0) == 0.0
