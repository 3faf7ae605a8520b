"""Tasks used by the test-suite."""

from __future__ import annotations

from django.tasks import task


@task
def record(label: str = "", **extra: object) -> str:
    return label


@task(queue_name="mail", priority=5)
def send_mail(to: str = "") -> str:
    return to


def not_a_task() -> None:
    """A plain function, for validation tests."""
