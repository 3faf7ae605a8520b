"""Tasks of the demo app: ordinary django.tasks tasks."""

from __future__ import annotations

from awa_django import task


@task
def heartbeat(message: str = "tick") -> str:
    print(f"heartbeat: {message}", flush=True)
    return message


@task(queue_name="reports")
def nightly_report(fmt: str = "pdf") -> str:
    return f"report.{fmt}"
