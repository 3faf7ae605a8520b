"""``manage.py awa ...``: operate schedules from the shell.

A thin parser over :mod:`awa_django.operations` (the same functions the admin
uses). ``--json`` prints machine-readable output; errors go to stderr with a
non-zero exit status.
"""

from __future__ import annotations

import getpass
import json
from datetime import datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from awa_django import operations
from awa_django.exceptions import OperationRefused, ScheduleNotFound
from awa_django.models import CronJob

ROW_FIELDS = (
    "name",
    "cron_expr",
    "timezone",
    "kind",
    "queue",
    "args",
    "priority",
    "max_attempts",
    "tags",
    "metadata",
    "missed_fire_policy",
    "last_enqueued_at",
    "next_fire_at",
    "created_at",
    "updated_at",
    "paused_at",
    "paused_by",
    "retired_at",
    "retired_by",
    "retired_revision",
)


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, tuple):
        return list(value)
    return value


def schedule_dict(row: CronJob, upcoming: int = 0) -> dict[str, Any]:
    """A schedule row as JSON-ready data (the ``--json`` shape)."""
    data = {f: _plain(getattr(row, f)) for f in ROW_FIELDS}
    data["state"] = "retired" if row.retired_at else "paused" if row.paused_at else "active"
    if upcoming:
        data["upcoming_fires"] = [f.isoformat() for f in operations.upcoming_fires(row, upcoming)]
    return data


def default_actor() -> str:
    try:
        return f"cli:{getpass.getuser()}"
    except Exception:  # no passwd entry in some containers
        return "cli"


class Command(BaseCommand):
    help = "Operate awa_django: schedules (cron ...)."

    def add_arguments(self, parser: Any) -> None:
        groups = parser.add_subparsers(dest="group", required=True, metavar="{cron}")
        cron = groups.add_parser("cron", help="Inspect and operate cron schedules.")
        verbs = cron.add_subparsers(dest="verb", required=True, metavar="VERB")

        def verb(name: str, help_text: str, *, needs_name: bool = True, mutates: bool = False) -> Any:
            sub = verbs.add_parser(name, help=help_text)
            if needs_name:
                sub.add_argument("name", help="schedule name")
            if mutates:
                sub.add_argument("--actor", default=default_actor(), help="operator recorded for audit (default: cli:<user>)")
            sub.add_argument("--json", action="store_true", help="machine-readable output")
            return sub

        verb("list", "List schedules.", needs_name=False)
        show = verb("show", "Show one schedule with its next fires.")
        show.add_argument("--next", type=int, default=5, help="how many upcoming fires to show")
        verb("pause", "Pause automatic fires (manual triggers still work).", mutates=True)
        verb("resume", "Resume automatic fires.", mutates=True)
        verb("trigger", "Enqueue one job now, even while paused.", mutates=True)
        verb("remove", "Delete an unowned, active schedule row.", mutates=True)

    def handle(self, *args: Any, **options: Any) -> None:
        handler = getattr(self, f"cron_{options['verb']}")
        try:
            handler(options)
        except ScheduleNotFound as exc:
            raise CommandError(str(exc)) from exc
        except (OperationRefused, ValueError) as exc:
            raise CommandError(str(exc)) from exc

    def emit(self, options: dict[str, Any], data: Any, text: str) -> None:
        if options["json"]:
            self.stdout.write(json.dumps(data, indent=2, sort_keys=True))
        else:
            self.stdout.write(text)

    # -- verbs ---------------------------------------------------------------
    def cron_list(self, options: dict[str, Any]) -> None:
        rows = operations.list_schedules()
        data = [schedule_dict(r) for r in rows]
        if not rows:
            self.emit(options, data, "No cron schedules found.")
            return
        header = ("NAME", "CRON", "TIMEZONE", "POLICY", "QUEUE", "STATE", "LAST FIRE", "NEXT FIRE")
        table = [header]
        for row, item in zip(rows, data, strict=True):
            upcoming = operations.upcoming_fires(row, 1)
            table.append(
                (
                    row.name,
                    row.cron_expr,
                    row.timezone,
                    row.missed_fire_policy,
                    row.queue,
                    item["state"],
                    row.last_enqueued_at.isoformat() if row.last_enqueued_at else "never",
                    upcoming[0].isoformat() if upcoming else "-",
                )
            )
        widths = [max(len(str(r[i])) for r in table) for i in range(len(header))]
        lines = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in table]
        lines.append(f"{len(rows)} schedule(s).")
        self.emit(options, data, "\n".join(lines))

    def cron_show(self, options: dict[str, Any]) -> None:
        row = operations.get_schedule(options["name"])
        data = schedule_dict(row, upcoming=max(0, options["next"]))
        lines = [f"{k}: {json.dumps(v) if isinstance(v, (dict, list)) else v}" for k, v in data.items()]
        self.emit(options, data, "\n".join(lines))

    def _action(self, options: dict[str, Any], func: Any) -> None:
        result = func(options["name"], options["actor"])
        data = {"action": result.action, "schedule": result.name, "changed": result.changed, "detail": result.detail}
        text = f"{result.action}: {result.name}: " + ("done" if result.changed else f"no change ({result.detail})")
        self.emit(options, data, text)

    def cron_pause(self, options: dict[str, Any]) -> None:
        self._action(options, operations.pause)

    def cron_resume(self, options: dict[str, Any]) -> None:
        self._action(options, operations.resume)

    def cron_remove(self, options: dict[str, Any]) -> None:
        self._action(options, operations.remove)

    def cron_trigger(self, options: dict[str, Any]) -> None:
        job = operations.trigger(options["name"], options["actor"])
        data = {k: _plain(v) for k, v in job.items()}
        self.emit(options, data, f"trigger: {options['name']}: enqueued job {job['id']} on queue {job['queue']}")
