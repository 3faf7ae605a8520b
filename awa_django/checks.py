"""System checks (``manage.py check``), registered on import by the app's ``ready()``.

Each check writes the id, message and hint of what it reports where it reports
it. Ids are stable, documented in docs/reference/checks.md and never reused.
The task backend's own checks (E030, E031, E070) are
:meth:`awa_django.tasks.backend.AwaBackend.check`: Django runs them with its
check of ``TASKS``, also when awa_django is not installed.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, Warning, register

from .conf import SETTINGS, Kind, conf
from .exceptions import InvalidSchedule, UnknownScheduleOption
from .schedules.declaration import discovery_errors, finite, registry, settings_schedules
from .schedules.runtime import RUNTIME_OWNER, is_reserved_owner

__all__ = [
    "DURATION_SETTINGS",
    "FIELD_CHECKS",
    "INTERVAL_SETTINGS",
    "SETTING_HINTS",
    "UNKNOWN_OPTION",
    "check_changed_day_rules",
    "check_database",
    "check_lock_timeout",
    "check_migrations_applied",
    "check_pgbouncer_sessions",
    "check_poolers",
    "check_reconciliation",
    "check_runtime_names",
    "check_schedules",
    "check_setting_limits",
    "check_settings",
    "check_sql_objects",
    "check_task_backend",
    "check_task_framework_app",
    "schedule_error",
]

# --- AWA_SCHEDULES: E001-E016 -----------------------------------------------------------

_INTERVAL = (
    "awa_django.E016",
    "every: a timedelta or whole seconds >= 1 instead of cron; anchor: aware, whole second.",
)
_DATA = ("awa_django.E009", "args must be a list, kwargs/metadata dicts, all JSON-serialisable.")
# The field of an invalid AWA_SCHEDULES entry -> (check id, hint). One id per kind of
# mistake, so operators can silence or grep them precisely.
# Flow-control options: a key template that can render past a key's 500
# characters would be cut, losing what tells slots apart.
_FLOW = (
    "awa_django.E078",
    "unique_key/concurrency_key: {name} and {slot} only, rendering at most 500 characters; "
    "concurrency_limit 1-1000000 with a concurrency_key.",
)
FIELD_CHECKS: Mapping[str, tuple[str, str]] = MappingProxyType(
    {
        "AWA_SCHEDULES": (
            "awa_django.E001",
            "AWA_SCHEDULES maps schedule names to dicts with 'cron' and 'task'.",
        ),
        "name": ("awa_django.E002", "Names are 1-200 characters, unique across settings and cron.py."),
        "cron": ("awa_django.E003", "Use 5 fields, 6 fields with seconds first, or @hourly/@daily/..."),
        "timezone": ("awa_django.E004", "Use an IANA zone name such as 'Europe/Berlin' or 'UTC'."),
        "task": ("awa_django.E005", "Point 'task' at a function decorated with django.tasks.task."),
        "queue": ("awa_django.E006", "Add the queue to the task backend's QUEUES in settings.TASKS."),
        "priority": ("awa_django.E007", "django.tasks priorities are whole numbers from -100 to 100."),
        "max_attempts": ("awa_django.E008", "max_attempts is a whole number from 1 to 1000."),
        "args": _DATA,
        "kwargs": _DATA,
        "metadata": _DATA,
        "missed_fire_policy": (
            "awa_django.E010",
            "missed_fire_policy is 'coalesce' (default) or 'catch_up'.",
        ),
        "tags": ("awa_django.E011", "tags is a list of at most 20 non-empty strings."),
        "overlap": ("awa_django.E013", "overlap is 'allow' (default), 'skip' or 'buffer_one'."),
        "starting_deadline": (
            "awa_django.E014",
            "starting_deadline is a timedelta or seconds > 0, at most 100 years (None: no deadline).",
        ),
        "jitter": ("awa_django.E015", "jitter is a timedelta or seconds >= 0, below the shortest gap."),
        "every": _INTERVAL,
        "anchor": _INTERVAL,
        "unique_key": _FLOW,
        "concurrency_key": _FLOW,
        "concurrency_limit": _FLOW,
    }
)
# An option the schedule validator does not know (or a field without its own id).
UNKNOWN_OPTION = ("awa_django.E012", "Allowed options: see docs/reference/settings.md#awa_schedules.")


def schedule_error(exc: InvalidSchedule, obj: str | None = None) -> Error:
    """Turn an :class:`InvalidSchedule` into a check ``Error`` with a stable id.

    ``obj``: where it was declared (default: its ``AWA_SCHEDULES`` entry)."""
    if isinstance(exc, UnknownScheduleOption):
        check_id, hint = UNKNOWN_OPTION
    else:
        check_id, hint = FIELD_CHECKS.get(exc.field, UNKNOWN_OPTION)
    return Error(str(exc), hint=hint, obj=obj or f"AWA_SCHEDULES[{exc.schedule!r}]", id=check_id)


@register(Tags.compatibility)
def check_schedules(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """Every ``AWA_SCHEDULES`` entry and ``cron.py`` declaration is valid and no
    name is declared twice."""
    schedules, errors = settings_schedules()
    messages: list[CheckMessage] = [schedule_error(exc, where) for where, exc in discovery_errors()]
    messages += [schedule_error(exc) for exc in errors]
    check_id, hint = FIELD_CHECKS["name"]
    for schedule in schedules:
        twin = registry.lookalike(schedule.name)
        if twin is not None:
            also = (
                "" if twin.name == schedule.name else f" (as {twin.name!r}: only case or Unicode form differ)"
            )
            messages.append(
                Error(
                    f"schedule {schedule.name!r}: field 'name': declared in AWA_SCHEDULES and in a cron.py{also}",
                    hint=hint,
                    obj=f"AWA_SCHEDULES[{schedule.name!r}]",
                    id=check_id,
                )
            )
    return messages


@register(Tags.compatibility)
def check_changed_day_rules(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """Warn about declared schedules that fire at other times than under the
    croniter-based matching of earlier releases.

    The stored expression is the same, its fire times are not: see
    docs/explanation/semantics.md#cron-expressions and :mod:`awa_django.cron.legacy`.
    """
    from .cron.search import legacy_difference

    schedules = {s.name: s for s in settings_schedules()[0]}
    schedules.update({s.name: s for s in registry})
    messages: list[CheckMessage] = []
    for name in sorted(schedules):
        schedule = schedules[name]
        reason = None if schedule.cron is None else legacy_difference(schedule.cron)
        if reason is not None and schedule.cron is not None:
            from_settings = schedule.source == "settings.AWA_SCHEDULES"
            messages.append(
                Warning(
                    f"schedule {name!r}: cron {schedule.cron.text!r} now fires at other times: {reason}",
                    hint="See docs/explanation/semantics.md#cron-expressions; rewrite or silence.",
                    obj=f"AWA_SCHEDULES[{name!r}]" if from_settings else schedule.source,
                    id="awa_django.W080",
                )
            )
    return messages


# --- AWA_* settings: E020-E022, E040-E042, E060-E062, E074, E090, W060 ------------------

# The hint of an out-of-range AWA_* setting, by the check id of its row in conf.SETTINGS.
SETTING_HINTS: Mapping[str, str] = MappingProxyType(
    {
        "awa_django.E020": "Seconds: intervals > 0, other durations >= 0; counts: see the reference.",
        "awa_django.E042": "AWA_AUTHORITATIVE is True or False.",
        "awa_django.E060": "AWA_MAX_ARGS_BYTES: bytes >= 1 (default 1048576); AWA_MAX_JSON_DEPTH: 1-200 (32).",
        "awa_django.E061": (
            "Timeouts are seconds from 0 (off) to 2147483.647 (PostgreSQL's limit); defaults 5, 60."
        ),
        "awa_django.E062": "Keepalive idle and interval are whole seconds 1-32767; the count is 1-127.",
        "awa_django.E074": "See docs/reference/settings.md for the worker settings' types and ranges.",
        "awa_django.E090": "The admin marks a schedule overdue when its next fire is this far in the past.",
    }
)

# Settings reported as E020 when out of range, by kind (the tests loop over
# them): durations that may be 0 (no grace, retry at once, prune everything
# finished, no drain) and intervals that drive loops, which must be > 0.
DURATION_SETTINGS = tuple(
    s.name for s in SETTINGS if s.check_id == "awa_django.E020" and s.kind in (Kind.SECONDS, Kind.RETENTION)
)
INTERVAL_SETTINGS = tuple(
    s.name for s in SETTINGS if s.check_id == "awa_django.E020" and s.kind is Kind.INTERVAL
)


@register(Tags.compatibility)
def check_setting_limits(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """Every ``AWA_*`` setting has the type and range of its row in ``conf.SETTINGS``.

    Settings whose validity depends on more than their value (aliases, the
    owner labels, the schedules) have dedicated checks in this module.
    """
    messages: list[CheckMessage] = []
    for setting in SETTINGS:
        problem = setting.problem()
        if problem is not None:
            messages.append(Error(problem, hint=SETTING_HINTS[setting.check_id], id=setting.check_id))
    return messages


@register(Tags.compatibility)
def check_settings(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """Rescue outlives two heartbeats; USE_TZ is on (ranges: :func:`check_setting_limits`)."""
    messages: list[CheckMessage] = []
    rescue, beat = conf.RESCUE_AFTER, conf.HEARTBEAT_INTERVAL
    if finite(rescue) and finite(beat) and 0 < rescue <= 2 * beat:
        messages.append(
            Error(
                f"AWA_RESCUE_AFTER ({rescue}) must exceed twice AWA_HEARTBEAT_INTERVAL ({beat}), "
                "or live tasks get rescued",
                hint=SETTING_HINTS["awa_django.E020"],
                id="awa_django.E020",
            )
        )
    if not settings.USE_TZ:
        messages.append(
            Error(
                "awa_django requires USE_TZ = True",
                hint="awa_django stores timestamptz; set USE_TZ = True.",
                id="awa_django.E021",
            )
        )
    return messages


@register(Tags.compatibility)
def check_lock_timeout(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """A lock timeout of 0 leaves waits unbounded (ranges: :func:`check_setting_limits`)."""
    lock_timeout = conf.LOCK_TIMEOUT
    if finite(lock_timeout) and lock_timeout == 0:
        return [
            Warning(
                "AWA_LOCK_TIMEOUT is 0: waits on other processes' locks are unbounded",
                hint="Set AWA_LOCK_TIMEOUT > 0 so a frozen peer cannot stall every process.",
                id="awa_django.W060",
            )
        ]
    return []


@register(Tags.compatibility)
def check_error_max_chars(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """An error cut to AWA_ERROR_MAX_CHARS fits in a job's errors (ranges: :func:`check_setting_limits`)."""
    from .bounded_text import BYTES_PER_CHAR, MIN_CHARS

    chars, limit = conf.ERROR_MAX_CHARS, conf.MAX_ARGS_BYTES
    if not (Kind.COUNT.accepts(chars) and Kind.COUNT.accepts(limit)):
        return []  # reported as E074 / E060
    if chars * BYTES_PER_CHAR <= limit:
        return []
    return [
        Warning(
            f"AWA_ERROR_MAX_CHARS ({chars}) is more than an eighth of AWA_MAX_ARGS_BYTES ({limit}): "
            f"errors are cut to {max(limit // BYTES_PER_CHAR, MIN_CHARS)} characters instead",
            hint="A job's errors must stay within AWA_MAX_ARGS_BYTES for its next attempt to run; "
            "lower AWA_ERROR_MAX_CHARS or raise AWA_MAX_ARGS_BYTES.",
            id="awa_django.W112",
        )
    ]


@register(Tags.compatibility)
def check_reconciliation(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """Authoritative mode has a valid owner and revision."""
    from .reconciliation.persistence import validate_label

    if conf.AUTHORITATIVE is not True:
        return []  # a non-bool is reported by check_setting_limits (E042)
    messages: list[CheckMessage] = []
    for key, value, check_id, hint in (
        (
            "AWA_OWNER",
            conf.OWNER,
            "awa_django.E040",
            "Authoritative mode needs AWA_OWNER: 1-200 bytes, not blank, no NUL.",
        ),
        (
            "AWA_REVISION",
            conf.REVISION,
            "awa_django.E041",
            "Authoritative mode needs AWA_REVISION (a deploy label, e.g. a git SHA).",
        ),
    ):
        try:
            validate_label(value, key)
        except ValueError as exc:
            messages.append(Error(str(exc)[:200], hint=hint, id=check_id))
    if is_reserved_owner(conf.OWNER):
        messages.append(
            Error(
                f"AWA_OWNER {RUNTIME_OWNER!r} is reserved for runtime schedules",
                hint="Choose another owner id for this deployment, such as 'billing'.",
                id="awa_django.E040",
            )
        )
    return messages


@register(Tags.database)
def check_runtime_names(app_configs: Any = None, databases: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """No name declared in code is also a runtime schedule's (the declaration would be ignored)."""
    from django.db import DatabaseError, connections

    declared = {s.name: s.source for s in registry}
    entries = conf.SCHEDULES
    if isinstance(entries, Mapping):
        declared.update({k: "settings.AWA_SCHEDULES" for k in entries if isinstance(k, str)})
    messages: list[CheckMessage] = []
    for alias in databases or ():
        if not declared or connections[alias].vendor != "postgresql":
            continue
        try:
            with connections[alias].cursor() as cursor:
                cursor.execute(
                    "SELECT name FROM awa_cron_jobs WHERE owner_id = %s AND name = ANY(%s) ORDER BY name",
                    [RUNTIME_OWNER, sorted(declared)],
                )
                clashes = [row[0] for row in cursor.fetchall()]
        except DatabaseError:
            continue  # not migrated yet: E050 reports it
        messages.extend(
            Error(
                f"schedule {name!r} is declared in code and is a runtime schedule",
                hint=(
                    f"Declared at {declared[name]}; the declaration is ignored while the runtime schedule "
                    f"exists. Adopt it (manage.py awa cron adopt {name} OWNER "
                    f"--expected-owner {RUNTIME_OWNER} --apply), delete it (manage.py awa cron delete "
                    f"{name}), or rename one of them."
                ),
                obj=name,
                id="awa_django.E043",
            )
            for name in clashes
        )
    return messages


# --- Databases: E022, E050, W071 --------------------------------------------------------


@register(Tags.compatibility)
def check_database(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """The leader database alias exists and is PostgreSQL."""
    from django.db import connections

    hint = "awa_django needs a PostgreSQL database."
    alias = conf.LEADER_DATABASE
    if not isinstance(alias, str) or alias not in settings.DATABASES:
        return [Error(f"AWA_LEADER_DATABASE {alias!r} is not in DATABASES", hint=hint, id="awa_django.E022")]
    if connections[alias].vendor != "postgresql":
        return [Error(f"database {alias!r} is not PostgreSQL", hint=hint, id="awa_django.E022")]
    return []


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

    from .db.sqlfiles import body_hash, expected_function_hashes

    messages: list[CheckMessage] = []
    for alias in databases or ():
        connection = connections[alias]
        if connection.vendor != "postgresql":
            continue
        recorder = MigrationRecorder(connection)
        if not recorder.has_table():
            continue
        applied = {name for app, name in recorder.applied_migrations() if app == "awa_django"}
        # Function name -> (its SQL file, hash of its shipped body).
        expected = expected_function_hashes(applied)
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
                Error(
                    f"SQL function {name} is {state} in database {alias!r}",
                    hint="Run manage.py migrate; if it is applied, re-install the SQL file (see docs).",
                    id="awa_django.E050",
                )
            )
    return messages


# The PostgreSQL major versions awa_django supports and tests (make test-matrix).
OLDEST_POSTGRESQL = 14
NEWEST_TESTED_POSTGRESQL = 18


def _server_version_num(connection: Any) -> int:
    """``server_version_num`` of the alias's server, on a connection of its own:
    Django refuses to open its connection to a server older than it supports,
    and the check names the version all the same."""
    import psycopg

    params = dict(connection.get_connection_params())
    for key in ("cursor_factory", "context", "prepare_threshold"):
        params.pop(key, None)
    with psycopg.connect(autocommit=True, **params) as raw:
        return int(raw.info.server_version)


@register(Tags.database)
def check_server_version(app_configs: Any = None, databases: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """The alias's PostgreSQL is a supported major version (E051), and one awa_django
    is tested on (W051) (``manage.py check --database default``)."""
    import psycopg
    from django.db import connections

    messages: list[CheckMessage] = []
    supported = f"PostgreSQL {OLDEST_POSTGRESQL} to {NEWEST_TESTED_POSTGRESQL}"
    for alias in databases or ():
        connection = connections[alias]
        if connection.vendor != "postgresql":
            continue
        try:
            number = _server_version_num(connection)
        except psycopg.Error:
            continue  # an unreachable database is reported by Django itself
        major, minor = number // 10000, number % 10000
        if major < OLDEST_POSTGRESQL:
            messages.append(
                Error(
                    f"database {alias!r}: PostgreSQL {major}.{minor} is not supported by awa_django",
                    hint=f"awa_django supports {supported}; upgrade the server.",
                    id="awa_django.E051",
                )
            )
        elif major > NEWEST_TESTED_POSTGRESQL:
            messages.append(
                Warning(
                    f"database {alias!r}: PostgreSQL {major}.{minor} is newer than awa_django is tested on",
                    hint=f"awa_django is tested on {supported}.",
                    id="awa_django.W051",
                )
            )
    return messages


@register(Tags.database)
def check_migrations_applied(
    app_configs: Any = None, databases: Any = None, **kwargs: Any
) -> list[CheckMessage]:
    """awa_django's migrations are all applied (``manage.py check --database default``).

    Silent while ``migrate`` runs: it runs these checks before applying the
    very migrations the warning would name.
    """
    from django.db import DatabaseError, connections

    from .db.migration_state import migrate_in_progress, unapplied_migrations

    messages: list[CheckMessage] = []
    if migrate_in_progress():
        return messages  # migrate is the remedy, and is applying them now
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
                Warning(
                    f"database {alias!r}: awa_django migrations not applied: {shown}",
                    hint="Run manage.py migrate.",
                    id="awa_django.W071",
                )
            )
    return messages


# --- The task framework's app: E077 ----------------------------------------------------


@register(Tags.compatibility)
def check_task_framework_app(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """On Django 5.2, the django-tasks backport is in ``INSTALLED_APPS`` (E077).

    :data:`awa_django.tasks.compat.APPS` names the apps the installed task
    framework needs (none on Django 6, ``django_tasks`` on 5.2), read when the
    check runs: a test sets it to see the check fire on any Django. Without the
    app, the backport's own system checks do not run and the task log lines
    (``Task id=... state=...``) the quick start shows are never written.
    """
    import django
    from django.apps import apps

    from .tasks import compat

    return [
        Error(
            f"{app!r} is not in INSTALLED_APPS: Django {django.get_version()} runs tasks "
            "through the django-tasks backport, which needs its app installed",
            hint=f'Add "{app}" to INSTALLED_APPS.',
            id="awa_django.E077",
        )
        for app in compat.APPS
        if not apps.is_installed(app)
    ]


# --- Task backend of declared schedules: E072, E073, E075 -------------------------------


@register(Tags.compatibility)
def check_task_backend(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """Declared schedules need an AwaBackend: their fires are rows only runtasks runs."""
    from django.utils.module_loading import import_string

    from .tasks.backend import AwaBackend
    from .tasks.compat import task_backends
    from .tasks.paths import is_allowed_module

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
            Error(
                f"{len(schedules)} schedule(s) declared but no TASKS backend is an AwaBackend",
                hint="Add a TASKS entry with BACKEND 'awa_django.backend.AwaBackend'.",
                id="awa_django.E072",
            )
        ]
    messages: list[CheckMessage] = []
    for schedule in sorted(schedules, key=lambda s: s.name):
        if not is_allowed_module(schedule.kind.rpartition(".")[0]):
            messages.append(
                Error(
                    f"schedule {schedule.name!r}: task module is outside INSTALLED_APPS and AWA_TASK_MODULES",
                    hint="Move the task into an installed app, or list its module in AWA_TASK_MODULES.",
                    obj=f"schedule {schedule.name!r}",
                    id="awa_django.E075",
                )
            )
        try:
            backend_alias = import_string(schedule.kind).backend
        except (ImportError, AttributeError):
            continue  # check_schedules reports it
        if backend_alias not in awa_aliases:
            messages.append(
                Error(
                    f"schedule {schedule.name!r}: task backend {backend_alias!r} is not an AwaBackend",
                    hint="Use an AwaBackend alias for the task (@task(backend=...)) or in TASKS.",
                    obj=f"schedule {schedule.name!r}",
                    id="awa_django.E073",
                )
            )
    return messages


# --- Connection poolers: E100, W100-W104 ------------------------------------------------


def _served_aliases() -> list[str]:
    """Databases an AwaBackend serves (the worker LISTENs there by default)."""
    aliases = ["default"] if "default" in settings.DATABASES else []
    for spec in getattr(settings, "TASKS", {}).values():
        if isinstance(spec, dict) and str(spec.get("BACKEND", "")).startswith("awa_django."):
            alias = (spec.get("OPTIONS") or {}).get("DATABASE", "default")
            if isinstance(alias, str) and alias in settings.DATABASES and alias not in aliases:
                aliases.append(alias)
    return aliases


def _listen_alias_error() -> Error | None:
    """AWA_LISTEN_DATABASE is None or a PostgreSQL alias of DATABASES (E100)."""
    listen = conf.LISTEN_DATABASE
    if listen is None:
        return None
    if not isinstance(listen, str) or listen not in settings.DATABASES:
        problem = "is not in DATABASES"
    elif "postg" not in str(settings.DATABASES[listen].get("ENGINE", "")):  # postgresql, postgis
        problem = "is not PostgreSQL"
    else:
        return None
    return Error(
        f"AWA_LISTEN_DATABASE {listen!r} {problem}",
        hint="Set AWA_LISTEN_DATABASE to None or to a PostgreSQL alias of DATABASES.",
        id="awa_django.E100",
    )


@register(Tags.compatibility)
def check_poolers(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """Session-bound connections (leader lock, LISTEN) avoid transaction poolers."""
    from .db.aliases import leader_alias, listen_alias, pooler_warning

    listen_error = _listen_alias_error()
    messages: list[CheckMessage] = [] if listen_error is None else [listen_error]
    leader = leader_alias()
    if isinstance(leader, str) and leader in settings.DATABASES:
        reason = pooler_warning(leader)
        if reason:
            messages.append(
                Warning(
                    f"leader alias {leader!r} {reason}: the lock needs a session",
                    hint="Point AWA_LEADER_DATABASE at an alias that connects directly (see docs).",
                    id="awa_django.W100",
                )
            )
    if listen_error is None:
        for served in _served_aliases():
            alias = listen_alias(served)
            reason = pooler_warning(alias)
            if reason:
                messages.append(
                    Warning(
                        f"LISTEN alias {alias!r} {reason}: wake-ups need a session",
                        hint="Point AWA_LISTEN_DATABASE at an alias that connects directly (see docs).",
                        id="awa_django.W101",
                    )
                )
    for alias, entry in settings.DATABASES.items():
        if not pooler_warning(alias):
            continue
        if entry.get("DISABLE_SERVER_SIDE_CURSORS") is not True:
            messages.append(
                Warning(
                    f"database {alias!r} is pooled but keeps server-side cursors",
                    hint="Under transaction pooling set DISABLE_SERVER_SIDE_CURSORS = True.",
                    id="awa_django.W102",
                )
            )
        if (entry.get("OPTIONS") or {}).get("prepare_threshold") is not None:
            messages.append(
                Warning(
                    f"database {alias!r} is pooled but enables prepared statements",
                    hint="Remove OPTIONS['prepare_threshold'] (prepared statements) for this alias.",
                    id="awa_django.W103",
                )
            )
    return messages


@register(Tags.database)
def check_pgbouncer_sessions(
    app_configs: Any = None, databases: Any = None, **kwargs: Any
) -> list[CheckMessage]:
    """The leader and LISTEN aliases do not answer as a non-session PgBouncer.

    Runs with ``manage.py check --database ALIAS`` (and ``migrate``): it
    connects to the virtual ``pgbouncer`` database behind each alias, so a
    PostgreSQL server logs one failed connection to database "pgbouncer". The
    mode is the one PgBouncer applies to the alias's database and user (per
    user, per database, then global), not only the global ``pool_mode``.
    """
    from .db.aliases import leader_alias, listen_alias, probe_pgbouncer

    requested = set(databases or ())
    if not requested:
        return []
    roles: dict[str, list[str]] = {}
    leader = leader_alias()
    if isinstance(leader, str) and leader in settings.DATABASES:
        roles.setdefault(leader, []).append("leader lock")
    listen = conf.LISTEN_DATABASE
    if listen is None or (isinstance(listen, str) and listen in settings.DATABASES):
        for served in _served_aliases():
            roles.setdefault(listen_alias(served), []).append("LISTEN")
    messages: list[CheckMessage] = []
    for alias, uses in roles.items():
        # Only aliases the caller allowed us to query, and that are PostgreSQL.
        if alias not in requested or "postg" not in str(settings.DATABASES[alias].get("ENGINE", "")):
            continue
        mode = probe_pgbouncer(alias)
        if mode is not None and mode != "session":
            messages.append(
                Warning(
                    f"alias {alias!r} ({', '.join(sorted(set(uses)))}) is a PgBouncer, pool_mode={mode}",
                    hint=(
                        "Point the alias at PostgreSQL directly, or give its PgBouncer database and user "
                        "pool_mode = session (the [users] and [databases] entries override the global one)."
                    ),
                    id="awa_django.W104",
                )
            )
    return messages


# --- Job rows: W110, W111 ---------------------------------------------------------------


@register(Tags.database)
def check_job_timestamps(app_configs: Any = None, databases: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """Once migration 0024 is applied, ``awa_jobs_timestamps_check`` is on ``awa_jobs``
    and validated (W110); without it, how many unfinished jobs hold a timestamp no
    datetime holds (W111: each fails when a worker claims it). Runs with
    ``manage.py check --database default`` (and ``migrate``)."""
    from django.db import DatabaseError, connections
    from django.db.migrations.recorder import MigrationRecorder

    from .db.timestamps import JOB_TIMESTAMPS_CHECK
    from .store.job_timestamps import unfinished_out_of_range

    messages: list[CheckMessage] = []
    for alias in databases or ():
        connection = connections[alias]
        if connection.vendor != "postgresql":
            continue
        try:
            recorder = MigrationRecorder(connection)
            if ("awa_django", "0024_job_timestamps") not in recorder.applied_migrations():
                continue  # not migrated yet: W071 reports it
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT convalidated FROM pg_constraint "
                    "WHERE conrelid = 'awa_jobs'::regclass AND conname = %s",
                    [JOB_TIMESTAMPS_CHECK],
                )
                row = cursor.fetchone()
                if row is not None and row[0]:
                    continue
                bad = unfinished_out_of_range(cursor)
        except DatabaseError:
            continue  # an unreachable database is reported by Django itself
        state = "missing" if row is None else "not validated"
        messages.append(
            Warning(
                f"database {alias!r}: the check {JOB_TIMESTAMPS_CHECK} on awa_jobs is {state}",
                hint="Fail the jobs W111 counts, then add and validate the check (see docs).",
                id="awa_django.W110",
            )
        )
        if bad:
            messages.append(
                Warning(
                    f"database {alias!r}: {bad} unfinished job(s) hold a timestamp no datetime holds",
                    hint="Each fails when a worker claims it; to fail them all now, see docs.",
                    id="awa_django.W111",
                )
            )
    return messages
