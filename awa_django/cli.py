"""Parsing and output pieces of ``manage.py awa`` (the command is in
:mod:`awa_django.management.commands.awa`)."""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.db import DatabaseError

from . import health
from .actions import schedules
from .actions.celery_beat import BATCH_SIZE as IMPORT_BATCH_SIZE
from .conf import MAX_RETENTION, conf
from .cron.describe import describe_schedule
from .db import jsonb
from .db.guards import lock_wait_timed_out, privilege_error
from .db.jsonb import Undecodable
from .db.migration_state import require_migrated
from .exceptions import NotMigrated
from .models import CronJob, Job, JobState
from .schedules import validation
from .schedules.ranges import RANGES
from .schedules.shape import DEFINITION_KEYS, SETTINGS_KEYS
from .terminal import printable

# The most a ``cron plan --manifest FILE`` reads: far above any real
# deployment's manifest, and a device or endless pipe ends with an error.
MAX_MANIFEST_FILE_BYTES = 16 * 1024 * 1024

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
# undefined_table, undefined_function: what a database without awa_django's
# migrations answers.
UNDEFINED_OBJECT = frozenset({"42P01", "42883"})
# The most jobs ``awa jobs list`` prints (``--limit``): a listing, not an export.
MAX_JOBS_LISTED = 10000
# The largest process id (pid_t is a 32-bit int) ``awa health --pid`` takes.
MAX_PID = 2**31 - 1
# import-celery-beat --batch-size: larger batches hold the protocol lock longer.
MAX_IMPORT_BATCH = 10_000


def plain(value: Any) -> Any:
    """``value`` as JSON-ready data (datetimes as ISO text, tuples as lists)."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, Undecodable):  # a stored value too large or deep to decode: its reason
        return str(value)
    return value


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


def bounded_int(low: int, high: int) -> Callable[[str], int]:
    """argparse type: a whole number from ``low`` to ``high``."""

    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
        if not low <= number <= high:
            raise argparse.ArgumentTypeError(f"must be a whole number from {low} to {high}, got {value!r}")
        return number

    return parse


def text_of(
    what: str, problem: Callable[[Any], str | None] = validation.text_problem
) -> Callable[[str], str]:
    """argparse type: ``what`` (a schedule name, an owner, ...) that ``problem`` accepts.

    By default, text PostgreSQL can store: a NUL or a lone surrogate would
    otherwise fail deep in the driver, with an error naming no argument.
    """

    def parse(value: str) -> str:
        found = problem(value)
        if found:
            raise argparse.ArgumentTypeError(f"{what} {value!r}: {found}")
        return value

    return parse


# Names an operator types to reach rows: any stored text (raw SQL may have
# written control characters; the row must stay reachable).
schedule_name = text_of("schedule name")
owner_name = text_of("owner")
# Actors are recorded and shown to other operators: no control characters.
actor_name = text_of("actor", validation.name_problem)


def default_actor() -> str:
    try:
        # Escaped: a login name with control characters would be recorded raw.
        return f"cli:{printable(getpass.getuser())}"
    except Exception:  # no passwd entry in some containers
        return "cli"


def add_actor(parser: Any, help_text: str = "operator recorded for audit (default: cli:<user>)") -> None:
    """The ``--actor`` option of the verbs that change something."""
    parser.add_argument("--actor", type=actor_name, default=default_actor(), help=help_text)


def database_error(exc: DatabaseError) -> str:
    """The operator's message for ``exc``: a missing grant, missing migrations
    (instead of "relation ... does not exist" and a SQL excerpt), or the error."""
    message = privilege_error(exc)
    if message:
        return message
    if lock_wait_timed_out(exc):
        first_line = (str(exc).strip().splitlines() or ["timeout"])[0]
        return (
            f"gave up waiting for another session ({first_line}; AWA_LOCK_TIMEOUT="
            f"{conf.LOCK_TIMEOUT:g}s, AWA_STATEMENT_TIMEOUT={conf.STATEMENT_TIMEOUT:g}s); try again"
        )
    if getattr(exc.__cause__, "sqlstate", None) in UNDEFINED_OBJECT:
        try:
            require_migrated()
        except NotMigrated as missing:
            return str(missing)
        except DatabaseError:  # the check itself failed: report the first error
            pass
    return str(exc)


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


def add_arguments(parser: Any) -> None:
    """Every group and verb of ``manage.py awa``."""
    groups = parser.add_subparsers(
        dest="group", required=True, metavar="{cron,queue,jobs,health,import-celery-beat}"
    )
    add_schedule_verbs(groups)
    add_queue_verbs(groups)
    add_jobs_verbs(groups)
    add_health(groups)
    add_import_celery_beat(groups)


def add_schedule_verbs(groups: Any) -> None:
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
    add_runtime_verbs(verb)
    add_lifecycle_verbs(verbs)


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


def add_runtime_verbs(verb: Callable[..., Any]) -> None:
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


def add_lifecycle_verbs(verbs: Any) -> None:
    """Owner-scoped reconciliation: lifecycle verbs are dry runs unless --apply."""

    def lifecycle(name: str, help_text: str, *positionals: str) -> Any:
        sub = verbs.add_parser(name, help=help_text + " Dry run unless --apply.")
        for positional in positionals:
            sub.add_argument(positional, type=schedule_name if positional == "name" else owner_name)
        sub.add_argument("--apply", action="store_true", help="perform the action (default: dry run)")
        add_actor(sub)
        sub.add_argument("--json", action="store_true", help="machine-readable output")
        return sub

    adopt = lifecycle("adopt", "Give a schedule to an owner.", "name", "owner")
    adopt.add_argument(
        "--expected-owner",
        type=owner_name,
        default=None,
        help="the current owner you expect (default: unowned)",
    )
    lifecycle("retire", "Retire a schedule (durable tombstone; never fires).", "name")
    lifecycle("restore", "Restore a retired schedule from now on (no replay).", "name")
    lifecycle("retire-owner", "Retire every schedule of an owner.", "owner")
    lifecycle("restore-owner", "Restore every retired schedule of an owner.", "owner")
    plan = verbs.add_parser("plan", help="Explain what reconciliation of an owner would do (read-only).")
    plan.add_argument("owner", type=owner_name)
    plan.add_argument(
        "--manifest",
        metavar="FILE",
        help="preview this JSON list of schedule definitions instead of the published one "
        f"(at most {MAX_MANIFEST_FILE_BYTES // (1024 * 1024)} MiB)",
    )
    plan.add_argument("--json", action="store_true", help="machine-readable output")
    owners = verbs.add_parser("owners", help="List owners with their live plan summary.")
    owners.add_argument("--json", action="store_true", help="machine-readable output")


def add_queue_verbs(groups: Any) -> None:
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


def add_jobs_verbs(groups: Any) -> None:
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


def add_health(groups: Any) -> None:
    """``awa health``."""
    probe = groups.add_parser("health", help="Health probe: exit 0 if healthy, 1 if not.")
    probe.set_defaults(verb="probe")
    probe.add_argument(
        "--role",
        choices=sorted(health.ROLES),
        help="also check the runcron (cron) or runtasks (tasks) process on this host",
    )
    probe.add_argument(
        "--local", action="store_true", help="only check this host's process (a liveness probe); needs --role"
    )
    probe.add_argument(
        "--pid", type=bounded_int(1, MAX_PID), help="only the process with this pid (with --role)"
    )
    probe.add_argument("--json", action="store_true", help="machine-readable output")


def add_import_celery_beat(groups: Any) -> None:
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


def read_manifest_file(path: str) -> Any:
    """The JSON in the manifest file ``path``, read up to :data:`MAX_MANIFEST_FILE_BYTES`.

    Raises ValueError naming the file: unreadable, too large (a device such as
    ``/dev/urandom`` included: it is never read to its end), not UTF-8, or
    nested deeper than a manifest may be (checked before decoding).
    """
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_MANIFEST_FILE_BYTES + 1)
    except OSError as exc:
        raise ValueError(f"cannot read manifest {path}: {exc}") from exc
    if len(data) > MAX_MANIFEST_FILE_BYTES:
        raise ValueError(
            f"cannot read manifest {path}: larger than {MAX_MANIFEST_FILE_BYTES} bytes, "
            "the most `cron plan --manifest` reads"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"cannot read manifest {path}: not UTF-8 text: {exc}") from None
    value = jsonb.decode(text, "file", wraps=jsonb.MANIFEST_WRAPS, size_limit=sys.maxsize)
    if isinstance(value, Undecodable):
        raise ValueError(f"cannot read manifest {path}: the file {value.reason}")
    return value
