"""Queue limits: ``TASKS[alias]["OPTIONS"]["QUEUE_LIMITS"]``.

    "QUEUE_LIMITS": {"emails": {"rate": "100/m", "concurrency": 5}}

``rate`` is ``"<count>/<period>"``: at most ``count`` attempts of the queue
start in any sliding window of ``period`` (``s``, ``m``, ``h``, ``d``, or a
number of them, ``"10/30s"``). ``concurrency`` is how many of its jobs may run
at once. Both hold fleet-wide: the claim (``awa_claim_v3``) counts the queue's
starts and running jobs in the database. Checked at start-up (E032).
"""

from __future__ import annotations

import re
from typing import Any

from .. import contract
from ..validation import queue_problem

__all__ = [
    "RATE",
    "claim_limits",
    "limit_label",
    "queue_limits_problems",
    "require_limits",
    "unlisted_queues",
]

RATE = re.compile(r"([1-9][0-9]{0,8})/([1-9][0-9]{0,5})?(s|m|h|d)")
UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
MAX_CONCURRENCY = contract.CONCURRENCY_LIMIT_MAX
KNOWN = ("rate", "concurrency")


def rate_problem(value: Any) -> str | None:
    """Why ``value`` is not a rate such as ``"100/m"`` or ``"10/30s"``, or None."""
    if not isinstance(value, str) or not RATE.fullmatch(value):
        return f"must be a string '<count>/<period>' such as '100/m' or '10/30s' (s, m, h, d), got {value!r:.100}"
    return None


def parse_rate(value: str) -> tuple[int, int]:
    """``"100/m"`` -> (100, 60): the count and the period in seconds."""
    match = RATE.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise ValueError(rate_problem(value))
    count, many, unit = match.groups()
    return int(count), int(many or 1) * UNIT_SECONDS[unit]


def queue_limits_problems(value: Any) -> list[str]:
    """Every reason ``QUEUE_LIMITS`` cannot be used, each naming what is wrong."""
    if value is None:
        return []
    if not isinstance(value, dict):
        return [f"QUEUE_LIMITS must be a dict of queue name -> limits, not {type(value).__name__}"]
    problems: list[str] = []
    for queue, limits in value.items():
        problem = queue_problem(queue)
        if problem:
            problems.append(f"QUEUE_LIMITS queue name {queue!r:.100} {problem}")
            continue
        where = f"QUEUE_LIMITS[{queue!r}]"
        if not isinstance(limits, dict) or not limits:
            problems.append(f"{where} must be a dict with 'rate' and/or 'concurrency', got {limits!r:.100}")
            continue
        problems += [
            f"{where} has unknown key {k!r:.50} (known: rate, concurrency)" for k in limits if k not in KNOWN
        ]
        if "rate" in limits and rate_problem(limits["rate"]):
            problems.append(f"{where}['rate'] {rate_problem(limits['rate'])}")
        if "concurrency" in limits:
            n = limits["concurrency"]
            if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_CONCURRENCY:
                problems.append(
                    f"{where}['concurrency'] must be a whole number 1-{MAX_CONCURRENCY}, got {n!r:.100}"
                )
    return problems


def unlisted_queues(value: Any, queues: Any) -> list[str]:
    """Queues ``QUEUE_LIMITS`` names that the backend's ``QUEUES`` does not list
    (none when ``QUEUES`` is empty: every queue is allowed). No task can be
    enqueued to them, so their limits never apply: a typo, most likely (W105)."""
    if not isinstance(value, dict) or not queues:
        return []
    return sorted(str(queue) for queue in value if queue not in queues)


def require_limits(value: Any, alias: str) -> dict[str, dict[str, int]]:
    """:func:`claim_limits` for a worker that is about to claim: an invalid
    ``QUEUE_LIMITS`` raises ValueError naming the queue and the value, so no
    worker runs a limited queue unlimited (``--skip-checks`` skips E032, not this)."""
    problems = queue_limits_problems(value)
    if problems:
        raise ValueError(
            f"task backend {alias!r}: OPTIONS {'; '.join(problems)}; not starting, "
            "as the queues would run without their limits (see check awa_django.E032)"
        )
    return claim_limits(value)


def claim_limits(value: Any) -> dict[str, dict[str, int]]:
    """The claim's ``p_limits``: ``{queue: {"rate": n, "period": seconds, "concurrency": m}}``.

    ``{}`` when ``value`` is absent or invalid (the system check reports it;
    ``runtasks`` does not start with it).
    """
    if not value or queue_limits_problems(value):
        return {}
    out: dict[str, dict[str, int]] = {}
    for queue, limits in value.items():
        entry: dict[str, int] = {}
        if "rate" in limits:
            entry["rate"], entry["period"] = parse_rate(limits["rate"])
        if "concurrency" in limits:
            entry["concurrency"] = limits["concurrency"]
        out[queue] = entry
    return out


def limit_label(limits: dict[str, int] | None) -> str:
    """A queue's limits for people: ``"100/60s, 5 at once"``, or ``""``."""
    if not limits:
        return ""
    parts = []
    if "rate" in limits:
        parts.append(f"{limits['rate']}/{limits['period']}s")
    if "concurrency" in limits:
        parts.append(f"{limits['concurrency']} at once")
    return ", ".join(parts)
