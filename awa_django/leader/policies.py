"""Execution policies in the planner: the starting deadline and the jitter offset.

The planner (:mod:`.evaluator`) splits each row's due slots into those it
fires and those it reaches too late (``starting_deadline``); the fire
statement (``awa_cron_fire_v8``) applies ``overlap`` and ``jitter`` under the
row's lock. Pure: no database, no settings.
"""

from __future__ import annotations

import hashlib
import math
from datetime import UTC, datetime, timedelta

__all__ = ["HISTORY", "jitter_offset", "split_deadline"]

# Slots a plan lists as missed for one row (the most recent ones); the count
# of all of them is sent alongside, so the counter stays exact.
HISTORY = 100


def split_deadline(
    fires: list[datetime], now: datetime, deadline: float | None
) -> tuple[list[datetime], list[datetime]]:
    """(fires inside the deadline, fires the leader reaches too late).

    A slot is too late when ``now`` is more than ``deadline`` seconds after it.
    """
    if deadline is None:
        return fires, []
    cutoff = now - timedelta(seconds=deadline)
    return [f for f in fires if f >= cutoff], [f for f in fires if f < cutoff]


def deadline_problem(value: object) -> str | None:
    """A stored ``starting_deadline`` or ``jitter`` no declaration produces (NaN, infinity)."""
    if value is not None and (not isinstance(value, (int, float)) or not math.isfinite(value)):
        return f"{value!r} is not a finite number of seconds"
    return None


def jitter_offset(name: str, slot: datetime, jitter: float) -> timedelta:
    """The delay of slot ``slot``'s job from its slot: in ``[0, jitter)``, a pure
    function of (name, slot). Mirrors the SQL function ``awa_cron_jitter_v1``."""
    if jitter <= 0:
        return timedelta(0)
    text = f"{name}@{slot.astimezone(UTC).strftime('%Y-%m-%dT%H:%M:%S')}+00:00"
    value = int(hashlib.md5(text.encode("utf-8"), usedforsecurity=False).hexdigest()[:15], 16)
    return timedelta(microseconds=value % max(1, round(jitter * 1_000_000)))
