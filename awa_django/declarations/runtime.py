"""Runtime schedules: the reserved owner, and validating a definition given at runtime.

A runtime schedule is created, changed and deleted by an operator (the API of
:mod:`awa_django.operations.runtime_schedules`, the admin, ``manage.py awa cron
create|edit|delete``) instead of being declared in code. Its row belongs to
the reserved owner :data:`RUNTIME_OWNER`: code declarations never overwrite an
owned row (the additive sync skips it, an authoritative owner needs an
explicit adoption), and owner reconciliation never retires it (no deployment
declares for that owner; :func:`is_reserved_owner` refuses it as
``AWA_OWNER``).

Validation is that of a declaration: :func:`build_runtime_schedule` calls
:func:`~awa_django.declarations.builder.build_schedule`, so the errors are the
same :class:`~awa_django.exceptions.InvalidSchedule`, naming the field. One
rule more: a runtime definition is data (a form, a CLI flag, a stored row, an
imported celery-beat row), so its task path is imported only when its module
is in an installed app or ``AWA_TASK_MODULES``, the allow-list ``runtasks``
applies (:func:`~awa_django.client.paths.outside_problem`); ``task='this.x'``
never imports ``this``. Declarations in code keep importing what their code
names (system check ``awa_django.E075`` reports a task outside the list).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..client.compat import Task
from ..client.paths import outside_problem
from ..exceptions import InvalidSchedule, UnknownScheduleOption
from ..validation import kind_problem
from .builder import build_schedule
from .flow import split_flow
from .shape import FIELDS, SETTINGS_KEYS, Schedule

__all__ = [
    "RUNTIME_OWNER",
    "RUNTIME_SOURCE",
    "build_runtime_schedule",
    "declared_in_code",
    "is_reserved_owner",
    "row_options",
]

# The owner of every runtime schedule. The colon keeps it apart from owner ids
# a deployment would choose; no deployment may declare for it.
RUNTIME_OWNER = "awa:runtime"
# What Schedule.source says for a runtime schedule.
RUNTIME_SOURCE = "runtime (awa:runtime)"


def is_reserved_owner(owner_id: Any) -> bool:
    """True for an owner id no deployment may use (``AWA_OWNER``)."""
    return isinstance(owner_id, str) and owner_id.strip() == RUNTIME_OWNER


def build_runtime_schedule(name: Any, options: Mapping[str, Any]) -> Schedule:
    """Validate a runtime definition given as ``AWA_SCHEDULES`` options.

    ``options`` holds ``task``, ``cron`` or ``every`` (and ``anchor``), and any option a declaration
    accepts (:data:`~awa_django.declarations.shape.SETTINGS_KEYS`); any other key
    is an :class:`~awa_django.exceptions.UnknownScheduleOption`.
    """
    label = name if isinstance(name, str) else None
    unknown = sorted(map(str, set(options) - SETTINGS_KEYS))
    if unknown:
        raise UnknownScheduleOption(
            label, unknown[0], f"is not a schedule option (unknown: {', '.join(unknown)})"
        )
    task = options.get("task")
    if task is None:
        raise InvalidSchedule(label, "task", "is required")
    _refuse_outside_task(label, task)
    extra = {k: v for k, v in options.items() if k not in ("cron", "task")}
    return build_schedule(name, options.get("cron"), options["task"], source=RUNTIME_SOURCE, **extra)


def _refuse_outside_task(label: str | None, task: Any) -> None:
    """Refuse a task outside the allow-list before its path is imported."""
    if isinstance(task, str):
        problem = kind_problem(task) or outside_problem(task)
    elif isinstance(task, Task):  # already imported by code: runtasks would still not run it
        problem = outside_problem(task.module_path)
    else:
        return  # build_schedule names what it is instead of a task
    if problem:
        raise InvalidSchedule(label, "task", problem)


# Definition columns whose option has another name or shape (the rest map
# one column to the one option of the same name, so fields added to
# shape.FIELDS flow through unchanged).
_RENAMED = {"cron_expr": "cron", "kind": "task"}


def row_options(definition: Mapping[str, Any]) -> dict[str, Any]:
    """The options of a stored definition (a row's columns keyed as in :mod:`.shape`)."""
    options: dict[str, Any] = {}
    for item in FIELDS:
        if item.key == "name" or item.key not in definition:
            continue
        value = definition[item.key]
        if item.key == "args":
            stored = value if isinstance(value, Mapping) else {}
            options["args"] = stored.get("args", [])
            options["kwargs"] = stored.get("kwargs", {})
        elif item.key in _RENAMED:
            options[_RENAMED[item.key]] = value
        elif len(item.settings) == 1:
            options[item.settings[0]] = list(value) if item.key == "tags" else value
    # Flow-control options are stored in the metadata (see .flow): back to options.
    options["metadata"], flow = split_flow(options.get("metadata"))
    if options["metadata"] is None:
        del options["metadata"]
    options.update(flow)
    return options


def declared_in_code(name: str) -> str | None:
    """Where this process declares ``name`` (or a look-alike) in code, or None.

    ``AWA_SCHEDULES`` entries that fail validation still count: the name is
    taken by code all the same.
    """
    from django.conf import settings

    from .declaration import registry

    declared = registry.lookalike(name)
    if declared is not None:
        return declared.source or "a cron.py"
    from .declaration import name_identity

    entries = getattr(settings, "AWA_SCHEDULES", None)
    if isinstance(entries, Mapping):
        identity = name_identity(name)
        for key in entries:
            if isinstance(key, str) and name_identity(key) == identity:
                return "settings.AWA_SCHEDULES"
    return None
