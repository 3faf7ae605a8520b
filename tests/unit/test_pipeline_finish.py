"""finish_all: every fire pipeline is finished even after one has failed."""

from __future__ import annotations

import pytest

from awa_django.leader.pipeline import finish_all


class Lane:
    def __init__(self, error: Exception | None = None) -> None:
        self.error = error
        self.finished = False

    def finish(self) -> int:
        self.finished = True
        if self.error is not None:
            raise self.error
        return 0


def test_finish_all__finishes_every_lane_then_raises_the_first_error() -> None:
    first, second = RuntimeError("first"), RuntimeError("second")
    lanes = [Lane(first), Lane(), Lane(second)]
    with pytest.raises(RuntimeError) as raised:
        finish_all(lanes)  # type: ignore[arg-type]
    assert raised.value is first
    assert all(lane.finished for lane in lanes)


def test_finish_all__returns_when_every_lane_finished() -> None:
    lanes = [Lane(), Lane()]
    finish_all(lanes)  # type: ignore[arg-type]
    assert all(lane.finished for lane in lanes)
