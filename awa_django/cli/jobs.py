"""``manage.py awa jobs list|cancel|retry|prune``: inspect, cancel, retry and
prune jobs, and how a job's duration and last error read in a listing."""

from __future__ import annotations

import argparse
from datetime import datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from .. import contract
from ..conf import MAX_RETENTION
from ..db import sessions, timestamps
from ..models import Job, JobState
from ..operations import queues
from ..store import jobs_admin
from ..terminal import printable
from .arguments import add_actor, bounded_int, schedule_name, text_of
from .output import Handler, emit, plain

__all__ = [
    "HANDLERS",
    "MAX_JOBS_LISTED",
    "MIN_PRUNE_AGE",
    "add_parser",
    "format_duration",
    "job_duration",
    "last_error",
    "positive_seconds",
]

# The most jobs ``awa jobs list`` prints (``--limit``): a listing, not an export.
MAX_JOBS_LISTED = 10000


# The youngest age ``awa jobs prune --older-than`` takes: a microsecond, the
# resolution of a timedelta and of PostgreSQL's timestamps (a smaller age is 0,
# "everything finished", which the option refuses like -1).
MIN_PRUNE_AGE = 0.000001


def positive_seconds(value: str) -> float:
    """argparse type: a number of seconds from 1 µs to ``conf.MAX_RETENTION``
    (``-1`` would prune everything; ``1e15`` overflows a timedelta)."""
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds") from None
    if not MIN_PRUNE_AGE <= seconds <= MAX_RETENTION:  # False for nan too
        raise argparse.ArgumentTypeError(
            f"must be a number of seconds from {MIN_PRUNE_AGE:f} to {MAX_RETENTION}, got {value!r}"
        )
    return seconds


def job_duration(job: Job, now: datetime | None) -> float | None:
    """Seconds the latest attempt ran (so far, if it is running); None if never started."""
    if job.attempted_at is None:
        return None
    end = job.finished_at if job.finished_at is not None else now if job.state == JobState.RUNNING else None
    if end is None:
        return None
    return max(0.0, (end - job.attempted_at).total_seconds())


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def last_error(job: Job, width: int = 60) -> str | None:
    """``Class: last traceback line`` of the job's latest error, shortened."""
    errors = job.errors if isinstance(job.errors, list) else []
    if not errors or not isinstance(errors[-1], dict):
        return None
    entry = errors[-1]
    name = str(entry.get("exception_class_path", "?")).rpartition(".")[2]
    lines = [line for line in str(entry.get("traceback", "")).strip().splitlines() if line.strip()]
    detail = lines[-1].strip() if lines else ""
    if detail.startswith(name + ":") or detail == name:
        text = detail
    else:
        text = f"{name}: {detail}" if detail else name
    return text if len(text) <= width else text[: width - 3] + "..."


def add_parser(groups: Any) -> None:
    """``awa jobs ...``."""
    jobs = groups.add_parser("jobs", help="Inspect, cancel, retry and prune jobs.")
    jverbs = jobs.add_subparsers(dest="verb", required=True, metavar="VERB")
    jlist = jverbs.add_parser("list", help="List recent jobs.")
    jlist.add_argument("--state", choices=JobState.values)
    jlist.add_argument("--queue", type=text_of("queue name"))
    jlist.add_argument("--cron", type=schedule_name, metavar="NAME", help="only jobs of this schedule")
    jlist.add_argument(
        "--limit",
        type=bounded_int(0, MAX_JOBS_LISTED),
        default=50,
        metavar="N",
        help=f"how many jobs to list, newest first (0-{MAX_JOBS_LISTED}, default 50)",
    )
    jcancel = jverbs.add_parser(
        "cancel", help="Cancel one job by id, or the not-yet-running jobs of a schedule."
    )
    jcancel.add_argument("id", type=int, nargs="?", help="job id")
    jcancel.add_argument(
        "--cron",
        type=schedule_name,
        metavar="NAME",
        help="cancel every not-yet-running job of this schedule",
    )
    jretry = jverbs.add_parser("retry", help="Make a failed or cancelled job available again.")
    jretry.add_argument("id", type=int, help="job id")
    jprune = jverbs.add_parser("prune", help="Delete finished jobs older than AWA_JOB_RETENTION.")
    jprune.add_argument(
        "--older-than",
        type=positive_seconds,
        metavar="SECONDS",
        help=f"override AWA_JOB_RETENTION for this run ({MIN_PRUNE_AGE:f} to {MAX_RETENTION})",
    )
    jprune.add_argument(
        "--dry-run", action="store_true", help="count the jobs that would be deleted; delete nothing"
    )
    for sub in (jlist, jcancel, jretry, jprune):
        sub.add_argument("--json", action="store_true", help="machine-readable output")
    for sub in (jcancel, jretry):
        add_actor(sub)


def jobs_list(command: BaseCommand, options: dict[str, Any]) -> None:
    flt = queues.job_filter(options["state"], options["queue"], options["cron"])
    # A row holding 'infinity' (raw SQL, or stored before the check of
    # migration 0024) is listed, flagged, instead of failing the listing.
    rows = jobs_admin.newest_jobs(flt, max(0, options["limit"]))
    now = sessions.database_now() if rows else None
    data = [
        {
            "id": j.id,
            "kind": j.kind,
            "queue": j.queue,
            "state": j.state,
            "attempt": j.attempt,
            "max_attempts": j.max_attempts,
            "run_at": plain(j.run_at) if j.run_at is not None else getattr(j, "run_at_text", None),
            "invalid_timestamps": timestamps.invalid(j),
            "cron_name": j.cron_name,
            # metadata may be any JSON value, or undecodable (db.jsonb), in a raw row.
            "cron_fire_at": (j.metadata if isinstance(j.metadata, dict) else {}).get(
                contract.CRON_FIRE_AT_KEY
            ),
            "triggered_manually": bool(j.cron_name and j.metadata.get(contract.TRIGGERED_MANUALLY_KEY)),
            "duration_seconds": job_duration(j, now),
            "last_error": last_error(j),
        }
        for j in rows
    ]
    if not data:
        emit(command, options, data, "No jobs found.")
        return
    header = ("ID", "STATE", "QUEUE", "ATTEMPT", "TASK", "SCHEDULE", "DURATION", "LAST ERROR")
    table: list[tuple[str, ...]] = [header]
    for d in data:
        schedule = "-"
        if d["cron_name"]:
            schedule = (
                f"{d['cron_name']} manual"
                if d["triggered_manually"] or not d["cron_fire_at"]
                else f"{d['cron_name']} @ {d['cron_fire_at']}"
            )
        # Escaped cell by cell, before the widths are measured, so a
        # value shown as \x1b keeps its column aligned.
        cells = (
            str(d["id"]),
            d["state"]
            + (f" (invalid timestamp: {d['invalid_timestamps']})" if d["invalid_timestamps"] else ""),
            d["queue"],
            f"{d['attempt']}/{d['max_attempts']}",
            d["kind"],
            schedule,
            format_duration(d["duration_seconds"]),
            d["last_error"] or "-",
        )
        table.append(tuple(printable(cell) for cell in cells))
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in table]
    emit(command, options, data, "\n".join(lines))


def jobs_cancel(command: BaseCommand, options: dict[str, Any]) -> None:
    if (options["id"] is None) == (options["cron"] is None):
        raise CommandError("give a job id or --cron NAME (one of them)", returncode=2)
    if options["id"] is not None:
        queues.cancel_job(options["id"], options["actor"])
        emit(
            command,
            options,
            {"action": "cancel", "job": options["id"], "changed": True},
            f"cancel: job {options['id']} cancelled",
        )
        return
    ids = queues.cancel_cron_jobs(options["cron"], options["actor"])
    emit(
        command,
        options,
        {"action": "cancel", "schedule": options["cron"], "jobs": ids},
        printable(f"cancel: {len(ids)} job(s) of {options['cron']} cancelled"),
    )


def jobs_retry(command: BaseCommand, options: dict[str, Any]) -> None:
    if not queues.retry_job(options["id"], options["actor"]):
        raise CommandError(f"job {options['id']} does not exist or is not failed/cancelled")
    emit(
        command,
        options,
        {"action": "retry", "job": options["id"], "changed": True},
        f"retry: job {options['id']} is available again",
    )


def jobs_prune(command: BaseCommand, options: dict[str, Any]) -> None:
    if options["dry_run"]:
        count = queues.prune_jobs(options["older_than"], dry_run=True)
        emit(
            command,
            options,
            {"action": "prune", "dry_run": True, "deleted": 0, "would_delete": count},
            f"prune: dry run: {count} finished job(s) would be deleted",
        )
        return
    count = queues.prune_jobs(options["older_than"])
    emit(command, options, {"action": "prune", "deleted": count}, f"prune: {count} finished job(s) deleted")


HANDLERS: dict[tuple[str, str], Handler] = {
    ("jobs", "list"): jobs_list,
    ("jobs", "cancel"): jobs_cancel,
    ("jobs", "retry"): jobs_retry,
    ("jobs", "prune"): jobs_prune,
}
