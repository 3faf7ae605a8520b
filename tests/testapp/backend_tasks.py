"""Tasks used by tests/db/test_backend.py and tests/db/test_queues.py."""

from __future__ import annotations

from typing import Any

from awa_django.client.compat import task


@task
def echo(*args: Any, **kwargs: Any) -> dict[str, Any]:
    """Return what it was called with (args/kwargs round-trip tests)."""
    return {"args": list(args), "kwargs": kwargs}


@task(queue_name="reports", priority=-7)
def report(name: str = "") -> str:
    return name


@task
async def async_echo(*args: Any) -> list[Any]:
    return list(args)


def without_context(label: str = "") -> str:
    """Module level, but its first argument is not ``context``."""
    return label


def with_context(context: Any, label: str = "") -> str:
    """Module level, first argument ``context``."""
    return label
