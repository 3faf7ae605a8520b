"""Import django-celery-beat's ``PeriodicTask`` rows as runtime schedules.

``manage.py awa import-celery-beat`` reads the rows of the project's database
and creates one runtime schedule per row whose timing and task have a faithful
equivalent; every other row, and every attribute of an imported row that has
no equivalent, is reported row by row, by its name. A row is data any
celery-beat admin user edits: a bad one (a time zone no database knows, an
``expires`` of ``'-infinity'``, arguments that are not JSON, a task path
outside the installed apps and ``AWA_TASK_MODULES``, never imported) is
skipped with its reason, and the others are imported.

One code path decides (:func:`plan_row`): a dry run plans every row exactly
as an import does and only does not write. Names an operator could not tell
apart (case, Unicode form, surrounding whitespace) are one name: the first
row (by id) has it, the others are reported as its duplicates. Rows are read
(:mod:`.celery_beat_rows`) and written in batches, each batch in its own short
transaction holding the protocol lock (``runcron``/``runtasks`` snapshots wait
for one batch at most), so the import runs in time linear in the rows.

The mapping of timing is pure (:func:`crontab_expression`,
:func:`interval_expression`; an interval no expression says exactly becomes
an interval schedule, ``every=``, anchored at the row's last run or start);
django-celery-beat's models are imported only when an import runs, so
awa_django never needs the package.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.apps import apps
from django.db import DatabaseError, DataError, IntegrityError, connections

from .. import validation
from ..client.compat import TASK_MAX_PRIORITY, TASK_MIN_PRIORITY
from ..client.payloads import exception_text
from ..cron import search
from ..cron.interval import describe_every
from ..db import jsonb, sessions
from ..declarations.declaration import name_identity
from ..declarations.runtime import RUNTIME_OWNER, build_runtime_schedule, declared_in_code
from ..declarations.shape import Schedule
from ..exceptions import InvalidSchedule, OperationRefused
from ..store import schedules as store
from . import runtime_schedules
from .celery_beat_rows import FarInstant, PeriodicTaskReader
from .common import require_actor

__all__ = [
    "BATCH_SIZE",
    "INTERVAL_UNSUPPORTED",
    "ImportProgress",
    "ImportReport",
    "ImportRow",
    "TakenNames",
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
# Source rows planned and written per transaction: the protocol lock is held
# for one batch's insert (milliseconds), never for the whole import.
BATCH_SIZE = 500
# A batch whose write takes longer than this makes the next one half as large.
BATCH_SECONDS = 0.25
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
    last_run, start = _usable(source, "last_run_at", row), _usable(source, "start_time", row)
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


def _usable(source: Any, attribute: str, row: ImportRow) -> datetime | None:
    """A timestamp of the source that can anchor an interval, or None (noting one that cannot)."""
    value = getattr(source, attribute, None)
    if isinstance(value, FarInstant):
        row.notes.append(f"{attribute} {value.text} cannot anchor an interval: ignored")
        return None
    return value if isinstance(value, datetime) else None


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


@dataclass(slots=True)
class ImportRow:
    """What happens to one ``PeriodicTask``: ``status`` is ``imported`` or ``skipped``.

    ``reasons`` say why a row is skipped; ``notes`` name what an imported row
    does not carry over (or differs in). ``name`` is the schedule's name: the
    row's, without surrounding whitespace.
    """

    celery_name: str
    celery_task: str
    status: str = "skipped"
    celery_schedule: str = ""
    name: str | None = None
    cron: str | None = None
    every: int | None = None  # an interval schedule's seconds (cron is then None)
    timezone: str | None = None
    task: str | None = None
    state: str | None = None
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict, repr=False)
    schedule: Schedule | None = field(default=None, repr=False)  # validated, until written


# ImportRow fields that are working state, not part of the report.
_UNREPORTED = ("options", "schedule")
_REPORTED = tuple(f for f in ImportRow.__dataclass_fields__ if f not in _UNREPORTED)


@dataclass
class ImportReport:
    """The rows of one import, in the order of the source rows' names.

    ``stopped`` says why a real import stopped before the last row (a batch
    failed to write); the batches before it stay written.
    """

    dry_run: bool
    rows: list[ImportRow]
    stopped: str | None = None

    def as_json(self) -> dict[str, Any]:
        rows = [{k: getattr(r, k) for k in _REPORTED} for r in self.rows]  # no deep copy
        data = {
            "dry_run": self.dry_run,
            "imported": sum(r.status == "imported" for r in self.rows),
            "skipped": sum(r.status == "skipped" for r in self.rows),
            "rows": rows,
        }
        if self.stopped:
            data["stopped"] = self.stopped
        return data

    def render(self) -> list[str]:
        """The text report, one block per row."""
        head = "dry run: nothing written" if self.dry_run else "import done"
        imported = sum(r.status == "imported" for r in self.rows)
        lines = [f"{head}: {imported} imported, {len(self.rows) - imported} skipped"]
        if self.stopped:
            lines[0] = f"import stopped: {imported} imported, {len(self.rows) - imported} skipped"
        for row in self.rows:
            what = (
                f"{row.cron or describe_every(row.every or 0)} ({row.timezone}) -> {row.task}, {row.state}"
                if row.status == "imported"
                else ""
            )
            lines.append(f"{row.status}: {row.celery_name} [{row.celery_schedule}] {what}".rstrip())
            lines.extend(f"  not imported: {reason}" for reason in row.reasons)
            lines.extend(f"  note: {note}" for note in row.notes)
        if self.stopped:
            lines.append(f"stopped: {self.stopped}")
        return lines


@dataclass(frozen=True)
class ImportProgress:
    """How far an import is, after each batch (for a progress line)."""

    read: int
    total: int
    imported: int
    skipped: int
    elapsed: float
    dry_run: bool

    def line(self) -> str:
        verb = "would import" if self.dry_run else "imported"
        return (
            f"import-celery-beat: {self.read}/{self.total} rows read, {self.imported} {verb}, "
            f"{self.skipped} skipped ({self.elapsed:.0f} s)"
        )


def import_identity(name: str) -> str:
    """What a name looks like to an operator: surrounding whitespace, case and Unicode form aside."""
    return name_identity(name.strip())


class TakenNames:
    """The names an import may not create, by look-alike identity (:func:`import_identity`).

    The names stored when the import starts (any owner, retired ones too), the
    names code declares here, and every row already planned in this import:
    the first row with an identity claims it, whatever becomes of that row.
    """

    def __init__(self, stored: Iterable[tuple[str, str | None, bool]] = ()) -> None:
        self._stored: dict[str, tuple[str, str | None, bool]] = {}
        for name, owner_id, retired in stored:
            self._stored.setdefault(import_identity(name), (name, owner_id, retired))
        self._rows: dict[str, str] = {}

    @classmethod
    def load(cls, using: str = "default") -> TakenNames:
        with connections[using].cursor() as cursor:
            return cls(store.stored_names(cursor))

    def add_stored(self, name: str) -> None:
        """Count ``name`` as a stored runtime schedule."""
        self._stored.setdefault(import_identity(name), (name, RUNTIME_OWNER, False))

    def claim(self, name: str, celery_name: str) -> str | None:
        """Why the source row ``celery_name`` cannot create the schedule ``name``, or None."""
        identity = import_identity(name)
        first = self._rows.get(identity)
        if first is not None:
            return (
                f"duplicate of the row {first!r}: names differing only in case, Unicode form or "
                "surrounding whitespace are one name, and the first row (by id) has it"
            )
        self._rows[identity] = celery_name
        if declared_in_code(name) is not None:
            return f"schedule {name!r} is {runtime_schedules.where_declared(name, None)}"
        stored = self._stored.get(identity)
        if stored is None:
            return None
        other, owner_id, retired = stored
        alike = (
            "" if other == name else f" ({name!r} differs from it only in case, Unicode form or whitespace)"
        )
        if owner_id != RUNTIME_OWNER:
            return f"schedule {other!r} is {runtime_schedules.where_declared(other, owner_id)}{alike}"
        kind = "a retired runtime schedule" if retired else "a runtime schedule"
        return f"schedule {other!r} already exists as {kind}{alike}"


def _lifetime(source: Any, row: ImportRow, now: datetime) -> bool:
    """One-off, expiry and start time: reasons or notes; True to import the row paused.

    Celery no longer runs a row past ``expires`` and not yet before
    ``start_time``: an expired row is skipped, one that starts later is
    imported paused (resume it then), so the import never fires what beat
    would not. A timestamp no ``datetime`` holds (``'-infinity'``, beyond
    year 9999) counts by its side of now.
    """
    if source.one_off:
        row.reasons.append("one_off: celery runs it once then disables it; a schedule recurs")
    expires = source.expires
    if expires is not None:
        if _before(expires, now):
            row.reasons.append(f"expired at {expires.isoformat()}: celery no longer runs it")
        else:
            row.notes.append(f"expires {expires.isoformat()} not imported: the schedule never expires")
    if source.expire_seconds:
        # Celery drops a message a worker receives later than this; the nearest
        # awa_django option skips a slot the leader reaches later than this.
        row.options["starting_deadline"] = source.expire_seconds
        row.notes.append(
            f"expire_seconds {source.expire_seconds} became starting_deadline: a slot fired later "
            "than this is skipped; a job already enqueued still runs however late"
        )
    start = source.start_time
    if start is not None and _after(start, now):
        row.notes.append(f"start_time {start.isoformat()} not imported: imported paused, resume it then")
        return True
    return False


def _before(instant: datetime | FarInstant, now: datetime) -> bool:
    return not instant.future if isinstance(instant, FarInstant) else instant <= now


def _after(instant: datetime | FarInstant, now: datetime) -> bool:
    return instant.future if isinstance(instant, FarInstant) else instant > now


def _task_path(source: Any, task_map: Mapping[str, str], row: ImportRow) -> None:
    row.task = task_map.get(source.task, source.task)
    if not row.task:
        row.reasons.append("no task name")
    elif row.task == CELERY_CLEANUP:
        row.reasons.append(
            "celery's own result cleanup: the runcron leader prunes finished jobs (AWA_JOB_RETENTION)"
        )


def _validate(row: ImportRow) -> None:
    """Validate ``row`` as ``create_schedule`` will; keep the schedule, or add the reason."""
    assert row.name is not None
    options = {
        "cron": row.cron,
        "every": row.every,
        "task": row.task,
        "timezone": row.timezone,
        **row.options,
    }
    try:
        row.schedule = build_runtime_schedule(row.name, options)
    except InvalidSchedule as exc:
        if exc.field == "queue" and "queue" in row.options:
            row.notes.append(
                f"queue {row.options.pop('queue')!r} not imported: {exc.reason}; the task's queue is used"
            )
            return _validate(row)
        remedy = ""
        if exc.field == "task":
            remedy = f" (map celery task {row.celery_task!r} with --task-map {row.celery_task}=DOTTED.PATH)"
        row.reasons.append(f"{exc.field}: {exc.reason}{remedy}")
    return None


def plan_row(
    source: Any,
    task_map: Mapping[str, str],
    taken: TakenNames | Collection[str],
    now: datetime | None = None,
    using: str = "default",
) -> ImportRow:
    """What importing one ``PeriodicTask`` would do (reads the database, writes nothing).

    The one decision of both a dry run and an import. ``taken`` is the import's
    :class:`TakenNames` (this row claims its name in it); a plain collection of
    names means the stored names and those.
    """
    if not isinstance(taken, TakenNames):
        names = TakenNames.load(using)
        for other in taken:
            names.add_stored(other)
        taken = names
    row = ImportRow(celery_name=source.name, celery_task=source.task)
    row.name = source.name.strip() if isinstance(source.name, str) else source.name
    now = now or sessions.database_now(using)
    _timing(source, row, now)
    _call_arguments(source, row)
    _delivery(source, row)
    starts_later = _lifetime(source, row, now)
    _task_path(source, task_map, row)
    clash = taken.claim(row.name or "", source.name)
    if not row.reasons and not clash:
        _validate(row)
    if clash:
        row.reasons.append(clash)
    if row.reasons:
        row.cron = row.timezone = row.task = row.name = row.schedule = None
        row.every = None
        row.options.clear()
        row.notes.clear()  # what an import would not carry over: moot for a skipped row
        return row
    if row.name != source.name:
        row.notes.append(f"imported as {row.name!r}: surrounding whitespace dropped from the name")
    row.status, row.state = "imported", ("active" if source.enabled and not starts_later else "paused")
    return row


def _write_batch(rows: list[ImportRow], actor: str, using: str) -> None:
    """Create the batch's imported rows in one short transaction (a row failing the database alone)."""
    planned = [row for row in rows if row.status == "imported"]
    try:
        created = _create(planned, actor, using)
    except (IntegrityError, DataError):
        # A row the validation let through and a constraint refuses: find it, write the others.
        created = set()
        for row in planned:
            try:
                created |= _create([row], actor, using)
            except (IntegrityError, DataError) as exc:
                row.reasons.append(f"refused by the database: {exception_text(exc)}")
    for row in planned:
        if row.name not in created:
            row.status, row.state = "skipped", None
            if not row.reasons:
                row.reasons.append(f"schedule {row.name!r} was created by another writer during the import")
        row.schedule = None
        row.options.clear()


def _create(rows: list[ImportRow], actor: str, using: str) -> set[str]:
    schedules = [row.schedule for row in rows if row.schedule is not None]
    paused = [row.name for row in rows if row.state == "paused" and row.name]
    return runtime_schedules.create_imported_schedules(schedules, paused=paused, actor=actor, using=using)


def _not_written(rows: list[ImportRow], why: str) -> None:
    for row in rows:
        if row.status == "imported":
            row.status, row.state, row.schedule = "skipped", None, None
            row.options.clear()
            row.reasons.append(f"not written: {why}")


class _Batches:
    """The size of the next batch: halved after one whose write took over
    :data:`BATCH_SECONDS`, doubled (up to the maximum) after a quick one, so a
    batch holds the protocol lock well under a second even on a loaded server."""

    def __init__(self, maximum: int) -> None:
        self.maximum = self.size = maximum

    def written(self, seconds: float) -> None:
        if seconds > BATCH_SECONDS:
            self.size = max(1, self.size // 2)
        elif seconds < BATCH_SECONDS / 4:
            self.size = min(self.maximum, self.size * 2)


def _stop_message(page: list[Any], done: int, exc: DatabaseError) -> str:
    return (
        f"writing the batch of rows {page[0].name!r} to {page[-1].name!r} failed: "
        f"{exception_text(exc)}; the {done} rows before it are done, and the rows after it "
        "were not read; run the import again: it skips what exists"
    )


def import_celery_beat(
    *,
    actor: str,
    task_map: Mapping[str, str] | None = None,
    dry_run: bool = False,
    using: str = "default",
    batch_size: int = BATCH_SIZE,
    progress: Callable[[ImportProgress], None] | None = None,
) -> ImportReport:
    """Import every ``PeriodicTask`` as a runtime schedule, at most ``batch_size`` rows at a time.

    ``task_map`` maps a celery task name to a ``django.tasks`` task's dotted
    path; an unmapped name is used as the path. Each batch of source rows is
    planned (:func:`plan_row`), then, unless ``dry_run``, written in its own
    short transaction: the protocol lock is held for one batch, never for the
    whole import. A batch that fails to write stops the import
    (``report.stopped``); the batches before it stay, and a rerun skips the
    schedules they created. ``progress`` is called after each batch.
    """
    actor = require_actor(actor)
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a whole number >= 1, got {batch_size!r}")
    reader = PeriodicTaskReader(_periodic_task_model(), using)
    task_map, batches = dict(task_map or {}), _Batches(batch_size)
    total, started = reader.count(), time.monotonic()
    now = sessions.database_now(using)  # the clock every scheduling decision uses
    taken = TakenNames.load(using)
    report, imported = ImportReport(dry_run=dry_run, rows=[]), 0
    for page in reader.pages(lambda: batches.size):
        rows = [plan_row(source, task_map, taken, now, using) for source in page]
        if not dry_run:
            writing = time.monotonic()
            try:
                _write_batch(rows, actor, using)
            except DatabaseError as exc:
                report.stopped = _stop_message(page, len(report.rows), exc)
                _not_written(rows, "its batch failed (see stopped)")
            batches.written(time.monotonic() - writing)
        for row in rows:
            row.schedule = None  # written, or a dry run: only the report stays
            imported += row.status == "imported"
        report.rows.extend(rows)
        if progress is not None:
            elapsed = time.monotonic() - started
            progress(
                ImportProgress(
                    len(report.rows), total, imported, len(report.rows) - imported, elapsed, dry_run
                )
            )
        if report.stopped:
            break
    report.rows.sort(key=lambda r: r.celery_name)
    return report
