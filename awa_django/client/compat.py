"""The one place that knows which task framework is installed.

Django 6.0 and later ship the task framework as ``django.tasks``. On Django 5.2
LTS the ``django-tasks`` package (``pip install awa-django[django52]``)
provides the same API as ``django_tasks``; its exceptions carry an ``Error``
suffix. Everything in awa_django imports the framework from here, under the
``django.tasks`` names, so no other module needs to know which one it runs on.

Settings are the same for both: the ``TASKS`` setting, ``BACKEND`` paths of
``awa_django.backend.AwaBackend``. With the backport, add ``"django_tasks"`` to
``INSTALLED_APPS`` as its documentation asks (it registers the backends'
system checks); :data:`APPS` names what to add.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import django

__all__ = [
    "APPS",
    "DEFAULT_TASK_BACKEND_ALIAS",
    "DEFAULT_TASK_QUEUE_NAME",
    "DUMMY_BACKEND",
    "FRAMEWORK",
    "IMMEDIATE_BACKEND",
    "TASK_MAX_PRIORITY",
    "TASK_MIN_PRIORITY",
    "BaseTaskBackend",
    "InvalidTask",
    "InvalidTaskBackend",
    "Task",
    "TaskContext",
    "TaskError",
    "TaskResult",
    "TaskResultDoesNotExist",
    "TaskResultMismatch",
    "TaskResultStatus",
    "default_task_backend",
    "normalize_json",
    "task",
    "task_backends",
    "task_enqueued",
    "task_finished",
    "task_started",
]

if TYPE_CHECKING or django.VERSION >= (6, 0):
    from django.tasks import (
        DEFAULT_TASK_BACKEND_ALIAS,
        DEFAULT_TASK_QUEUE_NAME,
        default_task_backend,
        task_backends,
    )
    from django.tasks.backends.base import BaseTaskBackend
    from django.tasks.base import (
        TASK_MAX_PRIORITY,
        TASK_MIN_PRIORITY,
        Task,
        TaskContext,
        TaskError,
        TaskResult,
        TaskResultStatus,
        task,
    )
    from django.tasks.exceptions import (
        InvalidTask,
        InvalidTaskBackend,
        TaskResultDoesNotExist,
        TaskResultMismatch,
    )
    from django.tasks.signals import task_enqueued, task_finished, task_started
    from django.utils.json import normalize_json

    FRAMEWORK = "django.tasks"
    APPS: tuple[str, ...] = ()
else:  # Django 5.2 with the django-tasks backport
    try:
        import django_tasks  # noqa: F401
    except ImportError as error:
        raise ImportError(
            f"awa_django on Django {django.get_version()} needs the django-tasks backport: "
            "pip install 'awa-django[django52]'"
        ) from error
    from django_tasks import (
        DEFAULT_TASK_BACKEND_ALIAS,
        DEFAULT_TASK_QUEUE_NAME,
        default_task_backend,
        task_backends,
    )
    from django_tasks.backends.base import BaseTaskBackend
    from django_tasks.base import (
        TASK_MAX_PRIORITY,
        TASK_MIN_PRIORITY,
        Task,
        TaskContext,
        TaskError,
        TaskResult,
        TaskResultStatus,
        task,
    )
    from django_tasks.exceptions import InvalidTaskBackendError as InvalidTaskBackend
    from django_tasks.exceptions import InvalidTaskError as InvalidTask
    from django_tasks.exceptions import TaskResultDoesNotExist, TaskResultMismatch
    from django_tasks.signals import task_enqueued, task_finished, task_started
    from django_tasks.utils import normalize_json

    FRAMEWORK = "django_tasks"
    APPS = ("django_tasks",)

# The framework's own backends, by the dotted path a TASKS setting names them with.
DUMMY_BACKEND = f"{FRAMEWORK}.backends.dummy.DummyBackend"
IMMEDIATE_BACKEND = f"{FRAMEWORK}.backends.immediate.ImmediateBackend"
