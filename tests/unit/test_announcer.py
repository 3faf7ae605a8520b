"""The announcer thread: committed batches handled in order, off the leader's thread."""

from __future__ import annotations

import threading
from typing import Any

from awa_django.announcer import Announcer


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
