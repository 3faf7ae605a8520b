"""Import django-celery-beat's ``PeriodicTask`` rows as runtime schedules.

``manage.py awa import-celery-beat`` reads the rows of the project's database
and creates one runtime schedule per row whose timing and task have a faithful
equivalent (:func:`~awa_django.actions.runtime_schedules.create_schedule`);
every other row, and every attribute of an imported row that has no
equivalent, is reported row by row. The whole import is one transaction.

The mapping of timing is pure (:func:`crontab_expression`,
:func:`interval_expression`; an interval no expression says exactly becomes
an interval schedule, ``every=``, anchored at the row's last run or start); django-celery-beat's models are imported only
when an import runs, so awa_django never needs the package.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.apps import apps
from django.db import transaction

from ..cron import search
from ..cron.interval import describe_every
from ..db import jsonb, sessions
from ..exceptions import InvalidSchedule, OperationRefused
from ..models import CronJob
from ..schedules import validation
from ..schedules.runtime import build_runtime_schedule
from ..tasks.compat import TASK_MAX_PRIORITY, TASK_MIN_PRIORITY
from . import runtime_schedules, schedules
from .common import require_actor

__all__ = [
    "INTERVAL_UNSUPPORTED",
    "ImportReport",
    "ImportRow",
    "crontab_expression",
    "import_celery_beat",
    "interval_expression",
    "interval_seconds",
    "parse_task_map",
]

# Why an interval is not mapped to a cron expression (it becomes an interval
# schedule, every=, when its period is a whole number of seconds).
INTERVAL_UNSUPPORTED = "no cron expression says this interval exactly"
# An interval schedule counts its slots from its anchor: the row's last run (or start).
INTERVAL_ANCHOR = (
    "interval schedule (every=) anchored at {anchor} ({what}): slots are {anchor} + k x {every} s"
)
# Celery counts an interval from the last run (or the start); a cron slot is on the clock.
INTERVAL_PHASE = (
    "interval mapped to clock-aligned slots: the phase may differ from celery's (counted from the last run)"
)
# The row beat adds by itself to expire Celery results.
CELERY_CLEANUP = "celery.backend_cleanup"
_PERIOD_SECONDS = {"days": 86400, "hours": 3600, "minutes": 60, "seconds": 1}
_WEEKDAYS = {
    "sunday": "sun",
    "monday": "mon",
    "tuesday": "tue",
    "wednesday": "wed",
    "thursday": "thu",
    "friday": "fri",
    "saturday": "sat",
}


def _divides(step: int, whole: int) -> bool:
    return 1 <= step < whole and whole % step == 0


def interval_expression(every: int, period: str) -> tuple[str | None, str | None]:
    """The cron expression firing exactly every ``every`` ``period``, or (None, why not).

    Exact only where the interval divides the next larger unit of the clock:
    seconds dividing a minute (awa's six-field form), minutes dividing an
    hour, hours dividing a day, or one day. Anything else needs interval
    schedules.
    """
    unit = _PERIOD_SECONDS.get(period)
    if unit is None or isinstance(every, bool) or not isinstance(every, int) or every < 1:
        return None, f"{INTERVAL_UNSUPPORTED}: every {every} {period}"
    seconds = every * unit
    if seconds == 1:
        return "* * * * * *", None
    if _divides(seconds, 60):
        return f"*/{seconds} * * * * *", None
    minutes, hours = divmod(seconds, 60), divmod(seconds, 3600)
    if minutes[1] == 0 and (minutes[0] == 1 or _divides(minutes[0], 60)):
        return ("* * * * *" if minutes[0] == 1 else f"*/{minutes[0]} * * * *"), None
    if hours[1] == 0 and (hours[0] == 1 or _divides(hours[0], 24)):
        return ("0 * * * *" if hours[0] == 1 else f"0 */{hours[0]} * * *"), None
    if seconds == 86400:
        return "0 0 * * *", None
    return None, f"{INTERVAL_UNSUPPORTED}: every {every} {period}"


def interval_seconds(every: Any, period: str) -> int | None:
    """``every`` ``period`` in whole seconds, or None when it is no valid interval."""
    unit = _PERIOD_SECONDS.get(period)
    if unit is None or isinstance(every, bool) or not isinstance(every, int) or every < 1:
        return None
    return every * unit


def _interval_timing(source: Any, row: ImportRow, now: datetime) -> str | None:
    """An interval: a cron expression when one says it exactly, else ``every=``; or why not."""
    row.cron, reason = interval_expression(source.interval.every, source.interval.period)
    if row.cron is not None:
        row.notes.append(INTERVAL_PHASE)
        return None
    seconds = interval_seconds(source.interval.every, source.interval.period)
    if seconds is None:
        return reason
    last_run, start = getattr(source, "last_run_at", None), getattr(source, "start_time", None)
    anchor, what = (
        (last_run, "its last run")
        if last_run
        else (start, "its start_time")
        if start
        else (now, "the import")
    )
    row.every = seconds
    row.options["anchor"] = anchor.astimezone(UTC).replace(microsecond=0)
    row.notes.append(
        INTERVAL_ANCHOR.format(anchor=row.options["anchor"].isoformat(), what=what, every=seconds)
    )
    return None


def _field(text: Any) -> str:
    """A celery crontab field as cron text: spaces dropped, weekday names shortened."""
    value = "".join(str(text).split()).lower()
    for name, short in _WEEKDAYS.items():
        value = value.replace(name, short)
    return value or "*"


def crontab_expression(
    minute: Any, hour: Any, day_of_month: Any, month_of_year: Any, day_of_week: Any
) -> tuple[str | None, str | None]:
    """The five-field cron expression of a celery crontab, or (None, why not).

    Celery fires on a day matching both day fields; cron (Vixie's rule) on a
    day matching either when both are restricted: such a crontab is refused.
    """
    fields = [_field(v) for v in (minute, hour, day_of_month, month_of_year, day_of_week)]
    dom, dow = fields[2], fields[4]
    if not dom.startswith("*") and not dow.startswith("*"):
        return None, (
            f"day_of_month {dom!r} and day_of_week {dow!r} are both restricted: celery fires on days "
            "matching both, cron on days matching either; split it into schedules cron can say"
        )
    expression = " ".join(fields)
    problem = validation.expression_problem(expression)
    if problem is None:
        try:
            search.parse_cron(expression)
        except search.CronError as exc:
            problem = str(exc)
    if problem:
        return None, f"crontab {expression!r} is not a cron expression awa accepts: {problem}"
    return expression, None


def parse_task_map(pairs: list[str]) -> dict[str, str]:
    """``CELERY_NAME=DOTTED.PATH`` pairs as a mapping; ValueError names a malformed one."""
    mapping: dict[str, str] = {}
    for pair in pairs:
        name, sep, path = pair.partition("=")
        if not sep or not name.strip() or not path.strip():
            raise ValueError(f"--task-map {pair!r} is not CELERY_NAME=DOTTED.PATH")
        mapping[name.strip()] = path.strip()
    return mapping


@dataclass
class ImportRow:
    """What happens to one ``PeriodicTask``: ``status`` is ``imported`` or ``skipped``.

    ``reasons`` say why a row is skipped; ``notes`` name what an imported row
    does not carry over (or differs in).
    """

    celery_name: str
    celery_task: str
    status: str = "skipped"
    celery_schedule: str = ""
    cron: str | None = None
    every: int | None = None  # an interval schedule's seconds (cron is then None)
    timezone: str | None = None
    task: str | None = None
    state: str | None = None
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class ImportReport:
    """The rows of one import, in the order of the source rows' names."""

    dry_run: bool
    rows: list[ImportRow]

    def as_json(self) -> dict[str, Any]:
        rows = [{k: v for k, v in asdict(r).items() if k != "options"} for r in self.rows]
        return {
            "dry_run": self.dry_run,
            "imported": sum(r.status == "imported" for r in self.rows),
            "skipped": sum(r.status == "skipped" for r in self.rows),
            "rows": rows,
        }

    def render(self) -> list[str]:
        """The text report, one block per row."""
        head = "dry run: nothing written" if self.dry_run else "import done"
        data = self.as_json()
        lines = [f"{head}: {data['imported']} imported, {data['skipped']} skipped"]
        for row in self.rows:
            what = (
                f"{row.cron or describe_every(row.every or 0)} ({row.timezone}) -> {row.task}, {row.state}"
                if row.status == "imported"
                else ""
            )
            lines.append(f"{row.status}: {row.celery_name} [{row.celery_schedule}] {what}".rstrip())
            lines.extend(f"  not imported: {reason}" for reason in row.reasons)
            lines.extend(f"  note: {note}" for note in row.notes)
        return lines


def _periodic_task_model() -> Any:
    """django-celery-beat's ``PeriodicTask``, or a refusal saying what is missing."""
    if not apps.is_installed("django_celery_beat"):
        raise OperationRefused(
            "django_celery_beat is not in INSTALLED_APPS: install django-celery-beat and add "
            "'django_celery_beat' to INSTALLED_APPS (its tables hold the rows to import)"
        )
    return apps.get_app_config("django_celery_beat").get_model("PeriodicTask")


def _timing(source: Any, row: ImportRow, now: datetime) -> None:
    """Set ``row``'s celery schedule type, expression and zone from the source's schedule, or a reason."""
    if source.crontab is not None:
        crontab = source.crontab
        row.celery_schedule = "crontab"
        row.timezone = str(getattr(crontab.timezone, "key", crontab.timezone) or "UTC")
        row.cron, reason = crontab_expression(
            crontab.minute, crontab.hour, crontab.day_of_month, crontab.month_of_year, crontab.day_of_week
        )
    elif source.interval is not None:
        row.celery_schedule, row.timezone = "interval", "UTC"
        reason = _interval_timing(source, row, now)
    elif source.clocked is not None:
        row.celery_schedule = "clocked"
        reason = (
            f"one-off (clocked) schedule at {source.clocked.clocked_time.isoformat()}: a schedule recurs; "
            "enqueue the task once with run_after instead"
        )
    elif source.solar is not None:
        row.celery_schedule = "solar"
        reason = f"solar schedule ({source.solar.event}): cron cannot say solar events"
    else:
        row.celery_schedule, reason = "none", "no schedule"
    if reason:
        row.reasons.append(reason)


def _call_arguments(source: Any, row: ImportRow) -> None:
    """``args`` and ``kwargs`` (JSON text in the source row) into ``row.options``."""
    for key, empty, kind in (("args", "[]", list), ("kwargs", "{}", dict)):
        text = getattr(source, key) or empty
        value = jsonb.decode(text, key)  # bounded: the source row is any text
        if isinstance(value, jsonb.Undecodable):
            row.reasons.append(f"{key} {value.reason}")
            continue
        if not isinstance(value, kind):
            row.reasons.append(f"{key} is not a JSON {'list' if kind is list else 'object'}: {text[:80]!r}")
            continue
        row.options[key] = value


def _delivery(source: Any, row: ImportRow) -> None:
    """Queue and priority into ``row.options``; what has no equivalent into notes or reasons."""
    if source.queue:
        row.options["queue"] = source.queue
    if source.priority is not None:
        if TASK_MIN_PRIORITY <= source.priority <= TASK_MAX_PRIORITY:
            row.options["priority"] = source.priority
            row.notes.append(
                "priority kept as a number: celery's order depends on the broker, awa runs higher first"
            )
        else:
            row.notes.append(
                f"priority {source.priority} not imported: outside {TASK_MIN_PRIORITY}..{TASK_MAX_PRIORITY}"
            )
    if (source.headers or "{}").strip() not in ("{}", ""):
        row.notes.append("headers not imported: jobs have no message headers")
    for key in ("exchange", "routing_key"):
        if getattr(source, key):
            row.notes.append(f"{key} {getattr(source, key)!r} not imported: there is no broker")


def _lifetime(source: Any, row: ImportRow, now: datetime) -> bool:
    """One-off, expiry and start time: reasons or notes; True to import the row paused.

    Celery no longer runs a row past ``expires`` and not yet before
    ``start_time``: an expired row is skipped, one that starts later is
    imported paused (resume it then), so the import never fires what beat
    would not.
    """
    if source.one_off:
        row.reasons.append("one_off: celery runs it once then disables it; a schedule recurs")
    if source.expires is not None:
        if source.expires <= now:
            row.reasons.append(f"expired at {source.expires.isoformat()}: celery no longer runs it")
        else:
            row.notes.append(f"expires {source.expires.isoformat()} not imported: the schedule never expires")
    if source.expire_seconds:
        # Celery drops a message a worker receives later than this; the nearest
        # awa_django option skips a slot the leader reaches later than this.
        row.options["starting_deadline"] = source.expire_seconds
        row.notes.append(
            f"expire_seconds {source.expire_seconds} became starting_deadline: a slot fired later "
            "than this is skipped; a job already enqueued still runs however late"
        )
    if source.start_time is not None and source.start_time > now:
        row.notes.append(
            f"start_time {source.start_time.isoformat()} not imported: imported paused, resume it then"
        )
        return True
    return False


def _task_path(source: Any, task_map: Mapping[str, str], row: ImportRow) -> None:
    row.task = task_map.get(source.task, source.task)
    if not row.task:
        row.reasons.append("no task name")
    elif row.task == CELERY_CLEANUP:
        row.reasons.append(
            "celery's own result cleanup: the runcron leader prunes finished jobs (AWA_JOB_RETENTION)"
        )


def _validate(row: ImportRow, taken: set[str], using: str) -> None:
    """Check ``row`` as ``create_schedule`` will: definition, then name clashes."""
    options = {
        "cron": row.cron,
        "every": row.every,
        "task": row.task,
        "timezone": row.timezone,
        **row.options,
    }
    try:
        build_runtime_schedule(row.celery_name, options)
    except InvalidSchedule as exc:
        if exc.field == "queue" and "queue" in row.options:
            row.notes.append(
                f"queue {row.options.pop('queue')!r} not imported: {exc.reason}; the task's queue is used"
            )
            return _validate(row, taken, using)
        remedy = ""
        if exc.field == "task":
            remedy = f" (map celery task {row.celery_task!r} with --task-map {row.celery_task}=DOTTED.PATH)"
        row.reasons.append(f"{exc.field}: {exc.reason}{remedy}")
        return None
    clash = runtime_schedules.code_declaration(row.celery_name, using)
    if clash is not None:
        row.reasons.append(clash)
    elif row.celery_name in taken:
        row.reasons.append(f"schedule {row.celery_name!r} already exists as a runtime schedule")
    return None


def plan_row(
    source: Any,
    task_map: Mapping[str, str],
    taken: set[str],
    now: datetime | None = None,
    using: str = "default",
) -> ImportRow:
    """What importing one ``PeriodicTask`` would do (reads the database, writes nothing)."""
    row = ImportRow(celery_name=source.name, celery_task=source.task)
    now = now or sessions.database_now(using)
    _timing(source, row, now)
    _call_arguments(source, row)
    _delivery(source, row)
    starts_later = _lifetime(source, row, now)
    _task_path(source, task_map, row)
    if not row.reasons:
        _validate(row, taken, using)
    if row.reasons:
        row.cron = row.timezone = row.task = None
        row.every = None
        row.options.pop("anchor", None)
        row.notes.clear()  # what an import would not carry over: moot for a skipped row
        return row
    row.status, row.state = "imported", ("active" if source.enabled and not starts_later else "paused")
    return row


def _create(row: ImportRow, actor: str, using: str) -> None:
    """Create ``row``'s schedule (paused when the source was disabled), in a savepoint."""
    assert row.timezone is not None  # set on every imported row
    try:
        with transaction.atomic(using=using):
            runtime_schedules.create_schedule(
                row.celery_name,
                row.cron,
                row.task,
                every=row.every,
                timezone=row.timezone,
                actor=actor,
                using=using,
                **row.options,
            )
            if row.state == "paused":
                schedules.pause(row.celery_name, actor, using=using)
    except (InvalidSchedule, OperationRefused) as exc:  # a concurrent writer took the name
        row.status, row.state = "skipped", None
        row.reasons.append(str(exc))


def import_celery_beat(
    *, actor: str, task_map: Mapping[str, str] | None = None, dry_run: bool = False, using: str = "default"
) -> ImportReport:
    """Import every ``PeriodicTask`` (by name) as a runtime schedule, in one transaction.

    ``task_map`` maps a celery task name to a ``django.tasks`` task's dotted
    path; an unmapped name is used as the path. ``dry_run`` writes nothing and
    returns the same report.
    """
    actor = require_actor(actor)
    model = _periodic_task_model()
    task_map = dict(task_map or {})
    sources = (
        model.objects.using(using).select_related("crontab", "interval", "clocked", "solar").order_by("name")
    )
    with transaction.atomic(using=using):
        # Runtime schedules already there, retired ones too: create_schedule refuses both.
        taken = set(
            CronJob.objects.using(using)
            .filter(owner_id=runtime_schedules.RUNTIME_OWNER)
            .values_list("name", flat=True)
        )
        now = sessions.database_now(using)  # the clock every scheduling decision uses
        rows = [plan_row(source, task_map, taken, now, using) for source in sources]
        if not dry_run:
            for row in rows:
                if row.status == "imported":
                    _create(row, actor, using)
    return ImportReport(dry_run=dry_run, rows=rows)
