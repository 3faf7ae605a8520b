"""``manage.py awa queue list|pause|resume``: inspect, pause and resume queues."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from .. import validation
from ..client.limits import limit_label
from ..operations import queues
from ..terminal import printable
from .arguments import add_actor, text_of
from .output import Handler, emit, plain

__all__ = ["HANDLERS", "add_parser"]


def add_parser(groups: Any) -> None:
    """``awa queue ...``."""
    queue = groups.add_parser("queue", help="Inspect, pause and resume queues.")
    qverbs = queue.add_subparsers(dest="verb", required=True, metavar="VERB")
    for name, help_text in (
        ("list", "List queues with job counts."),
        ("pause", "Stop workers claiming from a queue (enqueue continues)."),
        ("resume", "Let workers claim from a queue again."),
    ):
        sub = qverbs.add_parser(name, help=help_text)
        if name != "list":
            # Pause names a queue jobs can be in; resume reaches any stored pause.
            problem = validation.queue_problem if name == "pause" else validation.text_problem
            sub.add_argument("name", type=text_of("queue name", problem), help="queue name")
            add_actor(sub)
        sub.add_argument("--json", action="store_true", help="machine-readable output")


def queue_list(command: BaseCommand, options: dict[str, Any]) -> None:
    statuses = queues.list_queues()
    data = [
        {
            "queue": q.queue,
            "paused_at": plain(q.paused_at),
            "paused_by": q.paused_by,
            "counts": q.counts,
            "limits": q.limits,
        }
        for q in statuses
    ]
    if not statuses:
        emit(command, options, data, "No queues found.")
        return
    lines = []
    for q in statuses:
        state = f"paused by {q.paused_by}" if q.paused_at else "active"
        counts = ", ".join(f"{k}={v}" for k, v in sorted(q.counts.items())) or "no jobs"
        limits = f"; limits {limit_label(q.limits)}" if q.limits else ""
        lines.append(printable(f"{q.queue}: {state}; {counts}{limits}"))
    emit(command, options, data, "\n".join(lines))


def queue_action(command: BaseCommand, options: dict[str, Any], action: str, func: Any) -> None:
    """Run the queue verb ``func`` (pause, resume) and report whether it changed anything."""
    changed = func(options["name"], options["actor"]).changed
    data = {"action": action, "queue": options["name"], "changed": changed}
    emit(
        command,
        options,
        data,
        printable(f"{action}: queue {options['name']}: ") + ("done" if changed else "no change"),
    )


def queue_pause(command: BaseCommand, options: dict[str, Any]) -> None:
    queue_action(command, options, "pause", queues.pause_queue)


def queue_resume(command: BaseCommand, options: dict[str, Any]) -> None:
    queue_action(command, options, "resume", queues.resume_queue)


HANDLERS: dict[tuple[str, str], Handler] = {
    ("queue", "list"): queue_list,
    ("queue", "pause"): queue_pause,
    ("queue", "resume"): queue_resume,
}
