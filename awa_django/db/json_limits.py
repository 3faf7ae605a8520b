"""Why a JSON value is over the payload limits, in the words every refusal uses.

``AWA_MAX_ARGS_BYTES`` bounds a value's encoded size and ``AWA_MAX_JSON_DEPTH``
its nesting. The decoder of stored JSON (:mod:`.jsonb`), the schedules'
validation and the evaluator's row checks all word a value over them here.
"""

from __future__ import annotations

__all__ = ["depth_problem", "size_problem"]


def size_problem(size: int, limit: int) -> str | None:
    """A JSON value whose encoded size exceeds ``AWA_MAX_ARGS_BYTES``."""
    if size > limit:
        return f"is {size} bytes as JSON; the limit is AWA_MAX_ARGS_BYTES={limit}"
    return None


def depth_problem(depth: int, limit: int) -> str | None:
    """A JSON value nested deeper than ``AWA_MAX_JSON_DEPTH`` (arrays and objects within one another)."""
    if depth > limit:
        return f"is nested deeper than {limit} levels (AWA_MAX_JSON_DEPTH={limit})"
    return None
