"""System checks of the task side: the task framework's app (E077); the task
backend of every declared schedule (E072, E073, E075) is checked with the
declarations (:mod:`awa_django.declarations.checks`). The backend's own
checks (E030, E031, E070) are :meth:`awa_django.client.backend.AwaBackend.check`.

Registered with the others by :mod:`awa_django.checks`.
"""

from __future__ import annotations

from typing import Any

import django
from django.apps import apps
from django.core.checks import CheckMessage, Error

from . import compat

__all__ = ["check_task_framework_app"]


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
