"""System checks of the task side: the task framework's app (E077) and the
task backend of every declared schedule (E072, E073, E075). The backend's own
checks (E030, E031, E070) are :meth:`awa_django.client.backend.AwaBackend.check`.

Registered with the others by :mod:`awa_django.checks`.
"""

from __future__ import annotations

from typing import Any

import django
from django.apps import apps
from django.core.checks import CheckMessage, Error
from django.utils.module_loading import import_string

from ..declarations.declaration import registry, settings_schedules
from . import compat
from .backend import AwaBackend
from .compat import task_backends
from .paths import is_allowed_module

__all__ = ["check_task_backend", "check_task_framework_app"]


def check_task_framework_app(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """On Django 5.2, the django-tasks backport is in ``INSTALLED_APPS`` (E077).

    :data:`awa_django.client.compat.APPS` names the apps the installed task
    framework needs (none on Django 6, ``django_tasks`` on 5.2), read when the
    check runs: a test sets it to see the check fire on any Django. Without the
    app, the backport's own system checks do not run and the task log lines
    (``Task id=... state=...``) the quick start shows are never written.
    """
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
