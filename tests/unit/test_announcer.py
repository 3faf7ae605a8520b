"""The announcer thread: committed batches handled in order, off the leader's thread."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from awa_django.leader.announcer import Announcer


def test_announcer__handles_batches_in_order_on_its_own_thread() -> None:
    seen: list[tuple[list[int], str]] = []
    announcer = Announcer(
        lambda jobs: seen.append(([j["id"] for j in jobs], threading.current_thread().name))
    )
    for start in range(0, 30, 3):
        announcer.submit([{"id": i} for i in range(start, start + 3)])
    announcer.submit([])  # nothing to announce
    announcer.drain()
    assert [i for ids, _ in seen for i in ids] == list(range(30))
    assert {name for _, name in seen} == {"awa-announcer"}
    announcer.close()


def test_announcer__an_error_is_logged_and_the_next_batch_still_handled(caplog: Any) -> None:
    seen: list[int] = []

    def handle(jobs: Any) -> None:
        if jobs[0]["id"] == 1:
            raise RuntimeError("boom")
        seen.append(jobs[0]["id"])

    announcer = Announcer(handle)
    for i in range(3):
        announcer.submit([{"id": i}])
    announcer.drain()
    assert seen == [0, 2]
    assert any(r.__dict__.get("event") == "cron.announce_failed" for r in caplog.records)
    announcer.close()


def test_announcer__close_handles_what_is_queued_then_stops() -> None:
    release = threading.Event()
    seen: list[int] = []

    def handle(jobs: Any) -> None:
        release.wait(60)
        seen.append(jobs[0]["id"])

    announcer = Announcer(handle)
    announcer.submit([{"id": 1}])
    announcer.submit([{"id": 2}])
    release.set()
    announcer.close(timeout=60)
    assert seen == [1, 2]
    assert not announcer._thread.is_alive()


def drained(announcer: Announcer, deadline: float = 60.0) -> bool:
    """drain() until it reports done (a released handler takes a moment to return)."""
    end = time.monotonic() + deadline
    while not announcer.drain():
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True


def test_announcer__a_hung_handler_is_waited_for_only_until_it_counts_as_stuck(caplog: Any) -> None:
    release = threading.Event()
    announcer = Announcer(lambda jobs: release.wait(120), stuck_after=0.2)
    try:
        announcer.submit([{"id": 1}])
        assert announcer.drain() is False  # returns although the handler still hangs
        assert announcer.stuck()
        stuck = [r for r in caplog.records if r.__dict__.get("event") == "cron.announce_stuck"]
        assert len(stuck) == 1 and "no receiver" in stuck[0].getMessage()
    finally:
        release.set()
    assert drained(announcer)
    assert not announcer.stuck()
    announcer.close(timeout=60)


def test_announcer__batches_that_find_the_queue_full_while_stuck_are_dropped_and_counted(caplog: Any) -> None:
    from awa_django.leader.announcer import QUEUE_BATCHES

    release = threading.Event()
    handled: list[int] = []

    def handle(jobs: Any) -> None:
        release.wait(120)
        handled.append(jobs[0]["id"])

    announcer = Announcer(handle, stuck_after=0.2)
    try:
        for i in range(QUEUE_BATCHES + 3):  # one in hand, QUEUE_BATCHES queued, two dropped
            announcer.submit([{"id": i}, {"id": -i}])
        assert announcer.dropped == 4  # two batches of two jobs: submit never blocked for good
        assert any(r.__dict__.get("event") == "cron.announce_dropped" for r in caplog.records)
    finally:
        release.set()
    assert drained(announcer)
    assert len(handled) == QUEUE_BATCHES + 1
    announcer.close(timeout=60)


def test_announcer__close_does_not_wait_for_a_stuck_handler() -> None:
    from awa_django.leader.announcer import QUEUE_BATCHES

    release = threading.Event()
    announcer = Announcer(lambda jobs: release.wait(120), stuck_after=0.2)
    for i in range(QUEUE_BATCHES + 1):
        announcer.submit([{"id": i}])
    announcer.close(timeout=120)  # the queue is full and the handler hung: returns anyway
    assert announcer._thread.is_alive()
    release.set()


def test_announcer_send__a_raising_receiver_is_logged_by_name_and_the_next_still_runs(caplog: Any) -> None:
    from django.dispatch import Signal

    signal = Signal()
    seen: list[Any] = []

    def broken_receiver(**kwargs: Any) -> None:
        raise RuntimeError("receiver bug")

    def counting_receiver(**kwargs: Any) -> None:
        seen.append(kwargs["task_result"])

    signal.connect(broken_receiver, weak=False)
    signal.connect(counting_receiver, weak=False)
    announcer = Announcer(lambda jobs: announcer.send(signal, object, task_result=jobs[0]["id"]))
    announcer.submit([{"id": 7}])
    assert announcer.drain()
    assert seen == [7]
    failed = [r for r in caplog.records if r.__dict__.get("event") == "cron.announce_failed"]
    assert len(failed) == 1
    assert failed[0].__dict__["receiver"].endswith("broken_receiver")
    assert "broken_receiver" in failed[0].getMessage() and "receiver bug" in failed[0].getMessage()
    announcer.close()


def test_announcer_send__an_async_receiver_is_called_too() -> None:
    from django.dispatch import Signal

    signal = Signal()
    seen: list[Any] = []

    async def async_receiver(**kwargs: Any) -> None:
        seen.append(kwargs["task_result"])

    signal.connect(async_receiver, weak=False)
    announcer = Announcer(lambda jobs: announcer.send(signal, object, task_result=jobs[0]["id"]))
    announcer.submit([{"id": 3}])
    assert announcer.drain()
    assert seen == [3]
    announcer.close()


def test_announcer__the_stuck_report_names_the_hung_receiver(caplog: Any) -> None:
    from django.dispatch import Signal

    signal = Signal()
    release = threading.Event()

    def hanging_receiver(**kwargs: Any) -> None:
        release.wait(120)

    signal.connect(hanging_receiver, weak=False)
    announcer = Announcer(lambda jobs: announcer.send(signal, object, task_result=None), stuck_after=0.2)
    try:
        announcer.submit([{"id": 1}])
        assert announcer.drain() is False
        stuck = [r for r in caplog.records if r.__dict__.get("event") == "cron.announce_stuck"]
        assert len(stuck) == 1
        assert stuck[0].__dict__["receiver"].endswith("hanging_receiver")
        assert "hanging_receiver" in stuck[0].getMessage()
    finally:
        release.set()
    assert drained(announcer)
    announcer.close(timeout=60)


def wait_until_stuck(announcer: Announcer, deadline: float = 60.0) -> None:
    end = time.monotonic() + deadline
    while not announcer.stuck():
        assert time.monotonic() < end, "the hung handler never counted as stuck"
        time.sleep(0.05)


def test_announcer__close_with_room_in_the_queue_does_not_wait_for_a_stuck_handler(caplog: Any) -> None:
    release = threading.Event()
    announcer = Announcer(lambda jobs: release.wait(120), stuck_after=0.2)
    try:
        announcer.submit([{"id": 1}])
        wait_until_stuck(announcer)
        started = time.monotonic()
        announcer.close(timeout=60)  # the end marker fits in the queue; the thread will not take it
        assert time.monotonic() - started < 30  # left behind, not joined for the whole timeout
        assert announcer._thread.is_alive()
        assert any(r.__dict__.get("event") == "cron.announce_stuck" for r in caplog.records)
    finally:
        release.set()


def test_announcer__a_batch_finding_the_queue_full_while_stuck_is_dropped_without_waiting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from awa_django.leader import announcer as module

    # A recheck this long makes any wait for room visible: a dropped batch must not wait at all.
    monkeypatch.setattr(module, "_RECHECK", 30.0)
    release = threading.Event()
    announcer = Announcer(lambda jobs: release.wait(120), stuck_after=0.2)
    try:
        announcer.submit([{"id": 0}])
        wait_until_stuck(announcer)
        for i in range(module.QUEUE_BATCHES):
            announcer.submit([{"id": i + 1}])  # room: queued at once
        started = time.monotonic()
        announcer.submit([{"id": 99}])
        announcer.submit([{"id": 100}])
        assert time.monotonic() - started < 25  # one recheck would be 30 s each
        assert announcer.dropped == 2
    finally:
        release.set()
