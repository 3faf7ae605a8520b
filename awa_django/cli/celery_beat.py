"""``manage.py awa import-celery-beat``: django-celery-beat's rows as runtime
schedules, in batches, with its progress on stderr."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from ..operations import celery_beat
from ..operations.celery_beat import BATCH_SIZE as IMPORT_BATCH_SIZE
from ..terminal import printable
from .arguments import add_actor, bounded_int
from .output import Handler, emit

__all__ = ["HANDLERS", "MAX_IMPORT_BATCH", "PROGRESS_ROWS", "PROGRESS_SECONDS", "add_parser"]

# import-celery-beat --batch-size: larger batches hold the protocol lock longer.
MAX_IMPORT_BATCH = 10_000


# import-celery-beat's progress on stderr: a line every so many rows or seconds.
PROGRESS_ROWS = 10_000
PROGRESS_SECONDS = 5.0


def add_parser(groups: Any) -> None:
    """``awa import-celery-beat``: django-celery-beat's rows as runtime schedules."""
    sub = groups.add_parser(
        "import-celery-beat",
        help="Create runtime schedules from django-celery-beat's PeriodicTask rows (in batches).",
    )
    sub.set_defaults(verb="run")
    sub.add_argument("--dry-run", action="store_true", help="report what would be imported; write nothing")
    sub.add_argument(
        "--task-map",
        action="append",
        default=[],
        metavar="CELERY_NAME=DOTTED.PATH",
        help="the django.tasks task of a celery task name (default: the name itself, as a dotted path)",
    )
    sub.add_argument(
        "--batch-size",
        type=bounded_int(1, MAX_IMPORT_BATCH),
        default=IMPORT_BATCH_SIZE,
        metavar="N",
        help=f"rows written per transaction (default {IMPORT_BATCH_SIZE}): the protocol lock is held "
        "for one batch",
    )
    add_actor(sub)
    sub.add_argument("--json", action="store_true", help="machine-readable output")


def import_celery_beat_run(command: BaseCommand, options: dict[str, Any]) -> None:
    report = celery_beat.import_celery_beat(
        actor=options["actor"],
        task_map=celery_beat.parse_task_map(options["task_map"]),
        dry_run=options["dry_run"],
        batch_size=options["batch_size"],
        progress=import_progress(command) if options["verbosity"] >= 1 else None,
    )
    emit(command, options, report.as_json(), "\n".join(printable(line) for line in report.render()))
    if report.stopped:
        raise CommandError(printable(f"import stopped: {report.stopped}"))


def import_progress(command: BaseCommand) -> Any:
    """A progress line on stderr (never stdout, which holds the report or its JSON):
    every PROGRESS_ROWS rows or PROGRESS_SECONDS, and at the end."""
    last = {"read": 0, "at": time.monotonic()}

    def show(progress: celery_beat.ImportProgress) -> None:
        done = progress.read >= progress.total
        rows_due = progress.read - last["read"] >= PROGRESS_ROWS
        if done or rows_due or time.monotonic() - last["at"] >= PROGRESS_SECONDS:
            command.stderr.write(printable(progress.line()))
            last.update(read=progress.read, at=time.monotonic())

    return show


HANDLERS: dict[tuple[str, str], Handler] = {
    ("import-celery-beat", "run"): import_celery_beat_run,
}
