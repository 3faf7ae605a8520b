"""How the leader waits after a pass: the prepared fire at the next slot (no database)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.test.utils import override_settings

from awa_django.leader import prefire
from awa_django.leader.evaluator import PassResult
from awa_django.leader.loop import Leader


@pytest.fixture
def leader(monkeypatch: pytest.MonkeyPatch) -> Any:
    """A Leader whose waits and slot fires are recorded instead of done."""
    leader = Leader(schedules=[])
    leader.calls = []
    leader.notified = False

    def wait_for_change(deadline: float) -> bool:
        leader.calls.append(("wait", deadline - time.monotonic()))
        return bool(leader.notified)

    monkeypatch.setattr(leader, "wait_for_change", wait_for_change)
    monkeypatch.setattr(leader, "fire_next_slot", lambda: leader.calls.append(("fire", None)))
    leader._next_check = time.monotonic() + 3600
    return leader


@override_settings(AWA_EVALUATE_INTERVAL=1.0)
def test_wait__a_slot_within_the_interval_is_prepared_ahead_and_fired(leader: Any) -> None:
    leader._wait_after(PassResult(next_due_in=0.9))
    (kind, seconds), fire = leader.calls
    assert kind == "wait" and seconds == pytest.approx(0.9 - prefire.PREPARE_AHEAD, abs=0.2)
    assert fire == ("fire", None)


@override_settings(AWA_EVALUATE_INTERVAL=1.0)
def test_wait__a_slot_closer_than_ahead_is_prepared_at_once(leader: Any) -> None:
    leader._wait_after(PassResult(next_due_in=0.1))
    assert [kind for kind, _ in leader.calls] == ["wait", "fire"]
    assert leader.calls[0][1] <= 0.0


@override_settings(AWA_EVALUATE_INTERVAL=1.0)
def test_wait__a_notify_before_the_slot_means_an_ordinary_pass(leader: Any) -> None:
    leader.notified = True
    leader._wait_after(PassResult(next_due_in=0.9))
    assert [kind for kind, _ in leader.calls] == ["wait"]


@override_settings(AWA_EVALUATE_INTERVAL=1.0)
@pytest.mark.parametrize(
    "result",
    [
        PassResult(next_due_in=5.0),  # beyond the interval: an ordinary pass comes first
        PassResult(next_due_in=None),  # nothing scheduled
        PassResult(evaluated=3, fired=0, next_due_in=0.0),  # contended rows stay due
    ],
)
def test_wait__no_prepared_fire_without_a_slot_ahead(leader: Any, result: PassResult) -> None:
    leader._wait_after(result)
    assert [kind for kind, _ in leader.calls] == ["wait"]


@override_settings(AWA_EVALUATE_INTERVAL=1.0)
def test_wait__rows_awaiting_computation_mean_no_wait(leader: Any) -> None:
    leader._wait_after(PassResult(next_due_in=0.5, pending=True))
    assert leader.calls == []
