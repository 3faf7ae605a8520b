"""``manage.py awa cron create|edit|delete``: runtime schedules (owner
``awa:runtime``), their flags and their handlers."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from ..declarations.ranges import RANGES
from ..declarations.runtime import RUNTIME_OWNER
from ..declarations.shape import SETTINGS_KEYS
from ..exceptions import InvalidSchedule
from ..operations import runtime_schedules
from ..terminal import printable
from .output import Handler, emit

__all__ = ["HANDLERS", "RUNTIME_FLAGS", "add_verbs", "runtime_options"]


def json_value(value: str) -> Any:
    """argparse type: a JSON value (``--args '[1, 2]'``, ``--kwargs '{"a": 1}'``)."""
    try:
        return json.loads(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"is not JSON ({exc})") from None
    except RecursionError:
        raise argparse.ArgumentTypeError("is nested too deeply to read") from None


def option_pair(value: str) -> tuple[str, Any]:
    """argparse type of ``--option KEY=VALUE``: VALUE read as JSON, else as text."""
    key, sep, text = value.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"{value!r} is not KEY=VALUE")
    if key not in SETTINGS_KEYS:
        # Only a declaration's options: never the call's own keywords (name, actor, using).
        raise argparse.ArgumentTypeError(
            f"{key!r} is not a schedule option (one of {', '.join(sorted(SETTINGS_KEYS))})"
        )
    try:
        return key, json.loads(text)
    except ValueError:
        return key, text
    except RecursionError:
        raise argparse.ArgumentTypeError(f"{key}: is nested too deeply to read") from None


# Runtime schedule flags (argparse dests) -> the declaration keyword each one
# sets. --args/--kwargs have other dests: call_command() keeps "args" for itself.
RUNTIME_FLAGS = {
    "cron": "cron",
    "every": "every",
    "anchor": "anchor",
    "task": "task",
    "call_args": "args",
    "call_kwargs": "kwargs",
    "timezone": "timezone",
    "queue": "queue",
    "priority": "priority",
    "max_attempts": "max_attempts",
    "missed_fire_policy": "missed_fire_policy",
    "tags": "tags",
    "metadata": "metadata",
}


def interval_seconds(text: str) -> int:
    """``--every``: a whole number of seconds in the range of ``every`` (schedules.ranges)."""
    bounds = RANGES["every"]
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {bounds.describe()}, got {text[:60]!r}") from None
    problem = bounds.problem(value)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return value


def ranged_int(option: str) -> Callable[[str], int]:
    """argparse type of a whole-number flag: in the range of ``option`` (schedules.ranges)."""
    bounds = RANGES[option]

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {bounds.describe()}, got {text[:60]!r}") from None
        problem = bounds.problem(value)
        if problem:
            raise argparse.ArgumentTypeError(problem)
        return value

    parse.__name__ = option  # argparse names the type in its messages
    return parse


def aware_datetime(text: str) -> datetime:
    """``--anchor``: an ISO 8601 instant with its offset."""
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 datetime: {text!r}") from None
    if value.tzinfo is None:
        raise argparse.ArgumentTypeError(f"give the offset (e.g. {text}+00:00): {text!r}")
    return value


def add_verbs(verb: Callable[..., Any]) -> None:
    """``awa cron create|edit|delete``: runtime schedules (owner awa:runtime)."""
    create = verb("create", "Create a runtime schedule (owner awa:runtime).", mutates=True)
    edit = verb("edit", "Change a runtime schedule; only the options given change.", mutates=True)
    verb("delete", "Delete a runtime schedule (slots it fired never fire again).", mutates=True)
    for sub, required in ((create, True), (edit, False)):
        sub.add_argument("--cron", metavar="EXPR", help="cron expression (or --every)")
        sub.add_argument(
            "--every",
            type=interval_seconds,
            metavar="SECONDS",
            help=f"an interval schedule: whole seconds, 1 to {RANGES['every'].high}",
        )
        sub.add_argument(
            "--anchor",
            type=aware_datetime,
            metavar="ISO",
            help="with --every: the instant slots count from (default: the creation, to the second)",
        )
        sub.add_argument(
            "--task", required=required, metavar="PATH", help="dotted path of a django.tasks task"
        )
        sub.add_argument(
            "--args",
            dest="call_args",
            type=json_value,
            metavar="JSON",
            help="positional arguments (a JSON list)",
        )
        sub.add_argument(
            "--kwargs",
            dest="call_kwargs",
            type=json_value,
            metavar="JSON",
            help="keyword arguments (a JSON object)",
        )
        sub.add_argument("--timezone", metavar="TZ", help="IANA zone name (default UTC)")
        sub.add_argument("--queue", help="queue (default: the task's)")
        sub.add_argument(
            "--priority", type=ranged_int("priority"), help="priority, -100 to 100 (default: the task's)"
        )
        sub.add_argument(
            "--max-attempts", type=ranged_int("max_attempts"), metavar="N", help="attempts, 1 to 1000"
        )
        sub.add_argument(
            "--missed-fire-policy", choices=["coalesce", "catch_up"], help="coalesce (default) or catch_up"
        )
        sub.add_argument("--tags", type=json_value, metavar="JSON", help="tags (a JSON list of strings)")
        sub.add_argument("--metadata", type=json_value, metavar="JSON", help="job metadata (a JSON object)")
        sub.add_argument(
            "--option",
            type=option_pair,
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="any other declaration option (VALUE is JSON, or text)",
        )


def runtime_options(options: dict[str, Any]) -> dict[str, Any]:
    """The declaration keywords the flags of ``awa cron create|edit`` give."""
    given = {key: options[flag] for flag, key in RUNTIME_FLAGS.items() if options.get(flag) is not None}
    given.update(dict(options.get("option") or []))
    return given


def change(command: BaseCommand, options: dict[str, Any], action: str, call: Any) -> None:
    """Run ``call`` (a create, edit or delete returning what changed) and report it."""
    try:
        detail = call()
    except InvalidSchedule as exc:
        raise CommandError(printable(exc)) from exc
    data = {
        "action": action,
        "schedule": options["name"],
        "changed": bool(detail),
        "detail": detail or "",
    }
    text = printable(f"{action}: {options['name']}: ") + (
        printable(f"done ({detail})") if detail else "no change"
    )
    emit(command, options, data, text)


def cron_create(command: BaseCommand, options: dict[str, Any]) -> None:
    given = runtime_options(options)
    cron, task = given.pop("cron", None), given.pop("task")

    def create() -> str:
        runtime_schedules.create_schedule(options["name"], cron, task, actor=options["actor"], **given)
        return f"runtime schedule, owner {RUNTIME_OWNER}"

    change(command, options, "create", create)


def cron_edit(command: BaseCommand, options: dict[str, Any]) -> None:
    given = runtime_options(options)

    def edit() -> str:
        result = runtime_schedules.update_schedule(options["name"], actor=options["actor"], **given)
        return f"changed {result.detail}" if result.changed else ""

    change(command, options, "edit", edit)


def cron_delete(command: BaseCommand, options: dict[str, Any]) -> None:
    def delete() -> str:
        runtime_schedules.delete_schedule(options["name"], actor=options["actor"])
        return "deleted"

    change(command, options, "delete", delete)


HANDLERS: dict[tuple[str, str], Handler] = {
    ("cron", "create"): cron_create,
    ("cron", "edit"): cron_edit,
    ("cron", "delete"): cron_delete,
}
