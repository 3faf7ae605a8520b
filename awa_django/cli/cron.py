"""``manage.py awa cron ...``: the ``cron`` group, and its verbs that inspect and
operate schedules (list, show, history, pause, resume, trigger, remove).

The group's other verbs live with their own concern: runtime schedules in
:mod:`.runtime` (create, edit, delete), owners and reconciliation in
:mod:`.owners` (adopt, retire, restore, plan, owners, ...).
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand

from ..cron.describe import describe_schedule
from ..declarations.shape import DEFINITION_KEYS
from ..models import CronJob
from ..operations import declarations, history, schedules
from ..terminal import printable
from . import owners, runtime
from .arguments import add_actor, bounded_int, schedule_name
from .output import Handler, emit, plain

__all__ = ["HANDLERS", "MAX_HISTORY", "MAX_UPCOMING", "ROW_FIELDS", "add_parser", "schedule_dict"]

# The definition (as in a manifest), then the state columns.
ROW_FIELDS = (
    *DEFINITION_KEYS,
    "last_enqueued_at",
    "next_fire_at",
    "created_at",
    "updated_at",
    "paused_at",
    "paused_by",
    "retired_at",
    "retired_by",
    "retired_revision",
    "owner_id",
    "parked_at",
    "parked_reason",
)


# The most upcoming fires ``awa cron show --next`` computes: the bound of
# actions.schedules.upcoming_fires (one at a time, in Python).
MAX_UPCOMING = schedules.MAX_UPCOMING
# The most slot outcomes ``awa cron history`` prints.
MAX_HISTORY = 1000


def schedule_dict(row: CronJob, upcoming: int = 0) -> dict[str, Any]:
    """A schedule row as JSON-ready data (the ``--json`` shape)."""
    data = {f: plain(getattr(row, f)) for f in ROW_FIELDS}
    for f in ROW_FIELDS:
        # A timestamp no datetime can hold ('infinity'): show the database's text.
        if data[f] is None and getattr(row, f"{f}_text", None) is not None:
            data[f] = getattr(row, f"{f}_text")
    data["state"] = (
        "retired"
        if row.is_retired
        else "paused"
        if row.is_paused
        else "parked"
        if row.is_parked
        else "active"
    )
    data["description"] = describe_schedule(row.cron_expr, row.every_seconds)
    if upcoming:
        data["upcoming_fires"] = [f.isoformat() for f in schedules.upcoming_fires(row, upcoming)]
    return data


def mismatch_notes(rows: list[Any], found: list[declarations.Mismatch]) -> list[str]:
    """Lines under ``cron list`` for rows that differ from this code's declarations."""
    notes = []
    for row, mismatch in zip(rows, found, strict=True):
        if mismatch.undeclared:
            notes.append(
                printable(
                    f"{row.name}: no longer declared in this code; it keeps firing until you run "
                    f"`{declarations.undeclared_remedy(row)}`"
                )
            )
        if mismatch.owned_elsewhere is not None:
            notes.append(
                printable(f"{row.name}: {declarations.owned_elsewhere_remedy(mismatch.owned_elsewhere)}")
            )
    return notes


def add_parser(groups: Any) -> None:
    """``awa cron ...``: inspect and operate schedules, and the lifecycle verbs."""
    cron = groups.add_parser("cron", help="Inspect and operate cron schedules.")
    verbs = cron.add_subparsers(dest="verb", required=True, metavar="VERB")

    def verb(name: str, help_text: str, *, needs_name: bool = True, mutates: bool = False) -> Any:
        sub = verbs.add_parser(name, help=help_text)
        if needs_name:
            sub.add_argument("name", type=schedule_name, help="schedule name")
        if mutates:
            add_actor(sub)
        sub.add_argument("--json", action="store_true", help="machine-readable output")
        return sub

    verb("list", "List schedules.", needs_name=False)
    show = verb("show", "Show one schedule with its next fires.")
    show.add_argument(
        "--next",
        type=bounded_int(0, MAX_UPCOMING),
        default=5,
        metavar="N",
        help=f"how many upcoming fires to show (0-{MAX_UPCOMING})",
    )
    history = verb("history", "What became of the schedule's recent slots.")
    history.add_argument(
        "--limit",
        type=bounded_int(1, MAX_HISTORY),
        default=50,
        metavar="N",
        help=f"how many slots to show, newest first (1-{MAX_HISTORY})",
    )
    verb("pause", "Pause automatic fires (manual triggers still work).", mutates=True)
    verb("resume", "Resume automatic fires.", mutates=True)
    verb("trigger", "Enqueue one job now, even while paused.", mutates=True)
    verb("remove", "Delete a schedule row that is neither owned nor retired.", mutates=True)
    runtime.add_verbs(verb)
    owners.add_verbs(verbs)


def cron_list(command: BaseCommand, options: dict[str, Any]) -> None:
    rows = schedules.list_schedules()
    names = declarations.declared_names()
    data = [schedule_dict(r) for r in rows]
    mismatches = [declarations.mismatch(r, names) for r in rows]
    for item, found in zip(data, mismatches, strict=True):
        item["no_longer_declared"] = found.undeclared
        item["declared_here_owned_by"] = found.owned_elsewhere
    if not rows:
        emit(command, options, data, "No cron schedules found.")
        return
    header = (
        "NAME",
        "CRON",
        "DESCRIPTION",
        "TIMEZONE",
        "POLICY",
        "QUEUE",
        "OWNER",
        "STATE",
        "LAST FIRE",
        "NEXT FIRE",
    )
    table: list[tuple[str, ...]] = [header]
    for row, item in zip(rows, data, strict=True):
        upcoming = schedules.upcoming_fires(row, 1)
        table.append(
            tuple(
                printable(cell)
                for cell in (
                    row.name,
                    row.timing_text,
                    item["description"],
                    row.timezone,
                    row.missed_fire_policy,
                    row.queue,
                    row.owner_id or "-",
                    item["state"] + (" (no longer declared)" if item["no_longer_declared"] else ""),
                    item["last_enqueued_at"] or "never",
                    upcoming[0].isoformat() if upcoming else "-",
                )
            )
        )
    widths = [max(len(str(r[i])) for r in table) for i in range(len(header))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in table]
    lines.extend(mismatch_notes(rows, mismatches))
    lines.append(f"{len(rows)} schedule(s).")
    emit(command, options, data, "\n".join(lines))


def cron_show(command: BaseCommand, options: dict[str, Any]) -> None:
    row = schedules.get_schedule(options["name"])
    data = schedule_dict(row, upcoming=options["next"])
    data["slots_skipped"] = history.skip_counts(row.name)
    lines = [
        f"{k}: {json.dumps(v) if isinstance(v, (dict, list)) else printable(v)}" for k, v in data.items()
    ]
    emit(command, options, data, "\n".join(lines))


def cron_history(command: BaseCommand, options: dict[str, Any]) -> None:
    row = schedules.get_schedule(options["name"])
    outcomes = history.slot_history(row.name, options["limit"])
    data = [o.as_json() for o in outcomes]
    lines = [
        "  ".join(
            (
                o.slot.isoformat(),
                o.outcome.ljust(15),
                f"job {o.job_id}" if o.job_id is not None else "",
                f"(job {o.blocked_by} unfinished)" if o.blocked_by is not None else "",
            )
        ).rstrip()
        for o in outcomes
    ]
    counts = history.skip_counts(row.name)
    lines.append(
        printable(f"{row.name}: {len(outcomes)} slot(s) shown; never enqueued: ")
        + f"{counts.get('overlap', 0)} for overlap, {counts.get('unique', 0)} for a held unique key, "
        + f"{counts.get('deadline', 0)} past the deadline."
    )
    emit(command, options, data, "\n".join(lines))


def act(command: BaseCommand, options: dict[str, Any], func: Any) -> None:
    """Run the schedule verb ``func`` (pause, resume, remove) and report its result."""
    result = func(options["name"], options["actor"])
    data = {
        "action": result.action,
        "schedule": result.name,
        "changed": result.changed,
        "detail": result.detail,
    }
    text = printable(f"{result.action}: {result.name}: ") + (
        "done" if result.changed else printable(f"no change ({result.detail})")
    )
    emit(command, options, data, text)


def cron_pause(command: BaseCommand, options: dict[str, Any]) -> None:
    act(command, options, schedules.pause)


def cron_resume(command: BaseCommand, options: dict[str, Any]) -> None:
    act(command, options, schedules.resume)


def cron_remove(command: BaseCommand, options: dict[str, Any]) -> None:
    act(command, options, schedules.remove)


def cron_trigger(command: BaseCommand, options: dict[str, Any]) -> None:
    job = schedules.trigger(options["name"], options["actor"])
    data = {k: plain(v) for k, v in job.items()}
    emit(
        command,
        options,
        data,
        printable(f"trigger: {options['name']}: enqueued job {job['id']} on queue {job['queue']}"),
    )


HANDLERS: dict[tuple[str, str], Handler] = {
    ("cron", "list"): cron_list,
    ("cron", "show"): cron_show,
    ("cron", "history"): cron_history,
    ("cron", "pause"): cron_pause,
    ("cron", "resume"): cron_resume,
    ("cron", "trigger"): cron_trigger,
    ("cron", "remove"): cron_remove,
}
