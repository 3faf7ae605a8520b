"""Settings for the django-tasks backport's own test-suite run against AwaBackend.

The suite's ``tests`` package is its Django app (tasks, views, urls); the
rest is ``conformance/settings.py``: jobs in PostgreSQL, ``awa_django``
installed, the ``TASKS`` aliases the tests override mapped to AwaBackend by
``scripts/conformance.py``.
"""

from __future__ import annotations

from .settings import *  # noqa: F403
from .settings import INSTALLED_APPS

INSTALLED_APPS = [app for app in INSTALLED_APPS if app != "tasks"] + [
    "django.contrib.admin",
    "django.contrib.messages",
    "django.contrib.sessions",
    "tests",  # the backport's test app
]
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    },
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
ROOT_URLCONF = "tests.urls"
AWA_TASK_MODULES = ["tests"]
