"""System checks (``manage.py check``). Ids are stable and documented in
docs/reference/checks.md; never reuse a retired id."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, Warning, register

from .conf import SETTINGS, Kind, conf
from .exceptions import InvalidSchedule, UnknownScheduleOption
from .schedules.declaration import finite, registry, settings_schedules

# Field of an invalid schedule -> check id. One id per kind of mistake so
# operators can silence or grep them precisely.
FIELD_IDS = {
    "AWA_SCHEDULES": "awa_django.E001",
    "name": "awa_django.E002",
    "cron": "awa_django.E003",
    "timezone": "awa_django.E004",
    "task": "awa_django.E005",
    "queue": "awa_django.E006",
    "priority": "awa_django.E007",
    "max_attempts": "awa_django.E008",
    "args": "awa_django.E009",
    "kwargs": "awa_django.E009",
    "metadata": "awa_django.E009",
    "missed_fire_policy": "awa_django.E010",
    "tags": "awa_django.E011",
}
UNKNOWN_OPTION_ID = "awa_django.E012"

HINTS = {
    "awa_django.E001": "AWA_SCHEDULES maps schedule names to dicts with 'cron' and 'task'.",
    "awa_django.E002": "Names are 1-200 characters, unique across settings and cron.py.",
    "awa_django.E003": "Use 5 fields, 6 fields with seconds first, or @hourly/@daily/...",
    "awa_django.E004": "Use an IANA zone name such as 'Europe/Berlin' or 'UTC'.",
    "awa_django.E005": "Point 'task' at a function decorated with django.tasks.task.",
    "awa_django.E006": "Add the queue to the task backend's QUEUES in settings.TASKS.",
    "awa_django.E007": "django.tasks priorities are whole numbers from -100 to 100.",
    "awa_django.E008": "max_attempts is a whole number from 1 to 1000.",
    "awa_django.E009": "args must be a list, kwargs/metadata dicts, all JSON-serialisable.",
    "awa_django.E010": "missed_fire_policy is 'coalesce' (default) or 'catch_up'.",
    "awa_django.E011": "tags is a list of at most 20 non-empty strings.",
    "awa_django.E012": "Allowed options: see docs/reference/settings.md#awa_schedules.",
    "awa_django.E020": "Seconds: intervals > 0, other durations >= 0; counts: see the reference.",
    "awa_django.E021": "awa_django stores timestamptz; set USE_TZ = True.",
    "awa_django.E022": "awa_django needs a PostgreSQL database.",
    "awa_django.E030": "The AwaBackend's OPTIONS['DATABASE'] must be a PostgreSQL alias.",
    "awa_django.E031": "OPTIONS['MAX_ATTEMPTS'] of an AwaBackend is a whole number 1-1000.",
    "awa_django.E050": "Run manage.py migrate; if it is applied, re-install the SQL file (see docs).",
    "awa_django.E040": "Authoritative mode needs AWA_OWNER: 1-200 bytes, not blank, no NUL.",
    "awa_django.E041": "Authoritative mode needs AWA_REVISION (a deploy label, e.g. a git SHA).",
    "awa_django.E042": "AWA_AUTHORITATIVE is True or False.",
}

# Settings reported as E020 when out of range, by kind (the tests loop over
# them): durations that may be 0 (no grace, retry at once, prune everything
# finished, no drain) and intervals that drive loops, which must be > 0.
DURATION_SETTINGS = tuple(
    s.name for s in SETTINGS if s.check_id == "awa_django.E020" and s.kind in (Kind.SECONDS, Kind.RETENTION)
)
INTERVAL_SETTINGS = tuple(
    s.name for s in SETTINGS if s.check_id == "awa_django.E020" and s.kind is Kind.INTERVAL
)


def _error(check_id: str, msg: str, obj: Any = None) -> Error:
    return Error(msg, hint=HINTS.get(check_id), obj=obj, id=check_id)


def schedule_error(exc: InvalidSchedule) -> Error:
    """Turn an :class:`InvalidSchedule` into a check ``Error`` with a stable id."""
    if isinstance(exc, UnknownScheduleOption):
        check_id = UNKNOWN_OPTION_ID
    else:
        check_id = FIELD_IDS.get(exc.field, UNKNOWN_OPTION_ID)
    return _error(check_id, str(exc), obj=f"AWA_SCHEDULES[{exc.schedule!r}]")


@register(Tags.compatibility)
def check_schedules(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """Every ``AWA_SCHEDULES`` entry is valid and no name is declared twice."""
    schedules, errors = settings_schedules()
    messages: list[CheckMessage] = [schedule_error(exc) for exc in errors]
    for schedule in schedules:
        twin = registry.lookalike(schedule.name)
        if twin is not None:
            also = (
                "" if twin.name == schedule.name else f" (as {twin.name!r}: only case or Unicode form differ)"
            )
            messages.append(
                _error(
                    "awa_django.E002",
                    f"schedule {schedule.name!r}: field 'name': declared in AWA_SCHEDULES and in a cron.py{also}",
                    obj=f"AWA_SCHEDULES[{schedule.name!r}]",
                )
            )
    return messages


@register(Tags.compatibility)
def check_settings(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """Rescue outlives two heartbeats; USE_TZ is on (ranges: :func:`check_setting_limits`)."""
    messages: list[CheckMessage] = []
    rescue, beat = conf.RESCUE_AFTER, conf.HEARTBEAT_INTERVAL
    if finite(rescue) and finite(beat) and 0 < rescue <= 2 * beat:
        messages.append(
            _error(
                "awa_django.E020",
                f"AWA_RESCUE_AFTER ({rescue}) must exceed twice AWA_HEARTBEAT_INTERVAL ({beat}), "
                "or live tasks get rescued",
            )
        )
    if not settings.USE_TZ:
        messages.append(_error("awa_django.E021", "awa_django requires USE_TZ = True"))
    return messages


@register(Tags.compatibility)
def check_setting_limits(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """Every ``AWA_*`` setting has the type and range of its row in ``conf.SETTINGS``.

    Settings whose validity depends on more than their value (aliases, the
    owner labels, the schedules) have dedicated checks below.
    """
    messages: list[CheckMessage] = []
    for setting in SETTINGS:
        problem = setting.problem()
        if problem is not None:
            messages.append(_error(setting.check_id, problem))
    return messages


@register(Tags.compatibility)
def check_database(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """The leader database alias exists and is PostgreSQL."""
    from django.db import connections

    alias = conf.LEADER_DATABASE
    if not isinstance(alias, str) or alias not in settings.DATABASES:
        return [_error("awa_django.E022", f"AWA_LEADER_DATABASE {alias!r} is not in DATABASES")]
    if connections[alias].vendor != "postgresql":
        return [_error("awa_django.E022", f"database {alias!r} is not PostgreSQL")]
    return []


@register(Tags.compatibility)
def check_reconciliation(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """Authoritative mode has a valid owner and revision."""
    from .reconciliation.persistence import validate_label

    if conf.AUTHORITATIVE is not True:
        return []  # a non-bool is reported by check_setting_limits (E042)
    messages: list[CheckMessage] = []
    for key, value, check_id in (
        ("AWA_OWNER", conf.OWNER, "awa_django.E040"),
        ("AWA_REVISION", conf.REVISION, "awa_django.E041"),
    ):
        try:
            validate_label(value, key)
        except ValueError as exc:
            messages.append(_error(check_id, str(exc)[:200]))
    return messages


@register(Tags.database)
def check_sql_objects(app_configs: Any = None, databases: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """Every SQL function of the applied migrations is installed, at its version, as shipped.

    Runs with ``manage.py check --database default`` (and before ``migrate``).
    Reports functions that were dropped, re-commented or replaced by hand
    (``CREATE OR REPLACE`` keeps the comment, so the body itself is compared:
    the hash of ``pg_proc.prosrc`` against the hash of the body in the SQL file),
    which the migration history cannot see.
    """
    from django.db import connections
    from django.db.migrations.recorder import MigrationRecorder

    from .db.sqlfiles import body_hash, migration_sql_files, shipped_function_hashes

    messages: list[CheckMessage] = []
    for alias in databases or ():
        connection = connections[alias]
        if connection.vendor != "postgresql":
            continue
        recorder = MigrationRecorder(connection)
        if not recorder.has_table():
            continue
        applied = {name for app, name in recorder.applied_migrations() if app == "awa_django"}
        # Function name -> (its SQL file, hash of its shipped body); a later file wins.
        expected: dict[str, tuple[str, str]] = {}
        for migration, files in migration_sql_files().items():
            if migration in applied:
                for file_name in files:
                    for name, digest in shipped_function_hashes(file_name).items():
                        expected[name] = (file_name, digest)
        if not expected:
            continue
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT p.proname, obj_description(p.oid, 'pg_proc'), p.prosrc FROM pg_proc p "
                "JOIN pg_namespace n ON n.oid = p.pronamespace "
                "WHERE n.nspname = current_schema() AND p.proname = ANY(%s)",
                [list(expected)],
            )
            installed = {name: (comment, source) for name, comment, source in cursor.fetchall()}
        for name, (file_name, digest) in sorted(expected.items()):
            if name not in installed:
                state = "missing"
            elif installed[name][0] != f"awa_django {file_name}":
                state = f"outdated ({installed[name][0]!r})"
            elif body_hash(installed[name][1]) != digest:
                state = f"not as shipped in {file_name}.sql (replaced by hand)"
            else:
                continue
            messages.append(
                _error("awa_django.E050", f"SQL function {name} is {state} in database {alias!r}")
            )
    return messages


HINTS["awa_django.E090"] = "The admin marks a schedule overdue when its next fire is this far in the past."


# --- Hostile input and bounded waits (issue 8): E060-E069, W060-W069 ----------
HINTS.update(
    {
        "awa_django.E060": "AWA_MAX_ARGS_BYTES: bytes >= 1 (default 1048576); AWA_MAX_JSON_DEPTH: 1-200 (32).",
        "awa_django.E061": "Timeouts are seconds from 0 (off) to 2147483.647 (PostgreSQL's limit); defaults 5, 60.",
        "awa_django.E062": "Keepalive idle and interval are whole seconds 1-32767; the count is 1-127.",
    }
)
W060_HINT = "Set AWA_LOCK_TIMEOUT > 0 so a frozen peer cannot stall every process."


@register(Tags.compatibility)
def check_hardening(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """A lock timeout of 0 leaves waits unbounded (ranges: :func:`check_setting_limits`)."""
    lock_timeout = conf.LOCK_TIMEOUT
    if finite(lock_timeout) and lock_timeout == 0:
        return [
            Warning(
                "AWA_LOCK_TIMEOUT is 0: waits on other processes' locks are unbounded",
                hint=W060_HINT,
                id="awa_django.W060",
            )
        ]
    return []


HINTS.update(
    {
        "awa_django.E070": "Add 'awa_django' to INSTALLED_APPS and run manage.py migrate.",
        "awa_django.E072": "Add a TASKS entry with BACKEND 'awa_django.backend.AwaBackend'.",
        "awa_django.E073": "Use an AwaBackend alias for the task (@task(backend=...)) or in TASKS.",
        "awa_django.E075": "Move the task into an installed app, or list its module in AWA_TASK_MODULES.",
    }
)


@register(Tags.database)
def check_migrations_applied(
    app_configs: Any = None, databases: Any = None, **kwargs: Any
) -> list[CheckMessage]:
    """awa_django's migrations are all applied (``manage.py check --database default``)."""
    from django.core.checks import Warning as CheckWarning
    from django.db import DatabaseError, connections

    from .db.migration_state import unapplied_migrations

    messages: list[CheckMessage] = []
    for alias in databases or ():
        if connections[alias].vendor != "postgresql":
            continue
        try:
            missing = unapplied_migrations(alias)
        except DatabaseError:
            continue  # an unreachable database is reported by Django itself
        if missing:
            shown = ", ".join(missing[:3]) + (f" (+{len(missing) - 3})" if len(missing) > 3 else "")
            # A warning, not an error: `manage.py migrate` runs the database
            # checks first, and an error would stop the very command that fixes it.
            messages.append(
                CheckWarning(
                    f"database {alias!r}: awa_django migrations not applied: {shown}",
                    hint="Run manage.py migrate.",
                    id="awa_django.W071",
                )
            )
    return messages


@register(Tags.compatibility)
def check_task_backend(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """Declared schedules need an AwaBackend: their fires are rows only runtasks runs."""
    from django.tasks import task_backends
    from django.utils.module_loading import import_string

    from .schedules.declaration import registry
    from .tasks.backend import AwaBackend

    schedules, _ = settings_schedules()  # invalid ones are reported by check_schedules
    schedules = [*schedules, *registry]
    if not schedules:
        return []
    awa_aliases = set()
    for alias, config in task_backends.settings.items():
        try:
            backend_class = import_string(config["BACKEND"])
        except (ImportError, KeyError):
            continue  # Django's own tasks checks report it
        if isinstance(backend_class, type) and issubclass(backend_class, AwaBackend):
            awa_aliases.add(alias)
    if not awa_aliases:
        return [
            _error(
                "awa_django.E072",
                f"{len(schedules)} schedule(s) declared but no TASKS backend is an AwaBackend",
            )
        ]
    from .tasks.paths import is_allowed_module

    messages: list[CheckMessage] = []
    for schedule in sorted(schedules, key=lambda s: s.name):
        if not is_allowed_module(schedule.kind.rpartition(".")[0]):
            messages.append(
                _error(
                    "awa_django.E075",
                    f"schedule {schedule.name!r}: task module is outside INSTALLED_APPS and AWA_TASK_MODULES",
                    obj=f"schedule {schedule.name!r}",
                )
            )
        try:
            backend_alias = import_string(schedule.kind).backend
        except (ImportError, AttributeError):
            continue  # check_schedules reports it
        if backend_alias not in awa_aliases:
            messages.append(
                _error(
                    "awa_django.E073",
                    f"schedule {schedule.name!r}: task backend {backend_alias!r} is not an AwaBackend",
                    obj=f"schedule {schedule.name!r}",
                )
            )
    return messages


HINTS["awa_django.E074"] = "See docs/reference/settings.md for the worker settings' types and ranges."


# Checks of production setups (poolers, health and metrics settings) live in
# their own module; importing it registers them.
from . import production_checks  # noqa: E402, F401

# Warning W080 (issue 14). Kept out of HINTS, which lists the error ids of the reference.
CHANGED_DAY_RULES_HINT = "See docs/explanation/semantics.md#cron-expressions; rewrite or silence."


@register(Tags.compatibility)
def check_changed_day_rules(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """Warn about declared schedules whose fire times changed with classic day matching.

    awa_django used croniter's day rules before; a schedule stored then keeps its
    expression but may now fire on other days (CHANGELOG, issue 14).
    """
    from django.core.checks import Warning

    from .cron.search import legacy_difference

    schedules = {s.name: s for s in settings_schedules()[0]}
    schedules.update({s.name: s for s in registry})
    messages: list[CheckMessage] = []
    for name in sorted(schedules):
        schedule = schedules[name]
        reason = legacy_difference(schedule.cron)
        if reason is not None:
            from_settings = schedule.source == "settings.AWA_SCHEDULES"
            messages.append(
                Warning(
                    f"schedule {name!r}: cron {schedule.cron.text!r} now fires at other times: {reason}",
                    hint=CHANGED_DAY_RULES_HINT,
                    obj=f"AWA_SCHEDULES[{name!r}]" if from_settings else schedule.source,
                    id="awa_django.W080",
                )
            )
    return messages
