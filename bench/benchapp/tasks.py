"""The task every worker benchmark runs: it does nothing, so the numbers are the worker's."""

from __future__ import annotations

from django.tasks import task


@task
def noop() -> None:
    """Return at once."""
