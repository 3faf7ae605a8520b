"""System checks of declared schedules: ``AWA_SCHEDULES`` and ``cron.py`` (E001-E016,
E078), their names against runtime schedules (E043) and their cron expressions'
fire times against earlier releases' (W080).

Registered with the others by :mod:`awa_django.checks`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from django.core.checks import CheckMessage, Error, Warning
from django.db import DatabaseError, connections
from django.utils.module_loading import import_string

from ..client.backend import AwaBackend
from ..client.compat import task_backends
from ..client.paths import is_allowed_module
from ..conf import conf
from ..cron.search import legacy_difference
from ..exceptions import InvalidSchedule, UnknownScheduleOption
from ..store.schema import runtime_name_clashes
from .declaration import discovery_errors, registry, settings_schedules
from .runtime import RUNTIME_OWNER

__all__ = [
    "check_task_backend",
    "FIELD_CHECKS",
    "UNKNOWN_OPTION",
    "check_changed_day_rules",
    "check_runtime_names",
    "check_schedules",
    "schedule_error",
]

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


def check_changed_day_rules(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """Warn about declared schedules that fire at other times than under the
    croniter-based matching of earlier releases.

    The stored expression is the same, its fire times are not: see
    docs/explanation/semantics.md#cron-expressions and :mod:`awa_django.cron.legacy`.
    """
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


def check_runtime_names(app_configs: Any = None, databases: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """No name declared in code is also a runtime schedule's (the declaration would be ignored)."""
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
                clashes = runtime_name_clashes(cursor, RUNTIME_OWNER, declared)
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


def check_task_backend(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """Declared schedules need an AwaBackend: their fires are rows only runtasks runs."""
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
