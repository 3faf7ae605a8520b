"""shutdown.py: the first SIGTERM/SIGINT stops gracefully, the second exits at once (no database)."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest

from awa_django import shutdown


@pytest.fixture
def restored_handlers() -> Iterator[None]:
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


class Exited(Exception):
    pass


def test_two_stage_shutdown(
    restored_handlers: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    stops: list[int] = []

    def fake_exit(status: int) -> None:
        raise Exited(status)

    monkeypatch.setattr(shutdown.os, "_exit", fake_exit)
    shutdown.install_two_stage_shutdown(lambda: stops.append(1), "runtest", "finishing the pass")
    caplog.set_level("INFO", logger="awa_django.shutdown")
    os.kill(os.getpid(), signal.SIGTERM)  # handled in the main thread before kill() returns
    assert stops == [1]
    assert [getattr(r, "event", None) for r in caplog.records] == ["runtest.stopping"]
    assert "finishing the pass" in caplog.records[0].getMessage()
    with pytest.raises(Exited) as exited:
        os.kill(os.getpid(), signal.SIGINT)  # the second signal, of either kind
    assert exited.value.args == (1,)
    assert stops == [1]  # stop() is not called again
    assert getattr(caplog.records[-1], "event", None) == "runtest.killed"
