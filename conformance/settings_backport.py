"""Settings for the django-tasks backport's own test-suite run against AwaBackend.

The suite's ``tests`` package is its Django app (tasks, views, and urls that
include the admin's); the rest is ``conformance/settings.py``: jobs in
PostgreSQL, ``awa_django`` installed, the ``TASKS`` aliases the tests override
mapped to AwaBackend by ``scripts/conformance.py``.
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
TEMPLATES = [{"BACKEND": "django.template.backends.django.DjangoTemplates", "APP_DIRS": True}]
ROOT_URLCONF = "tests.urls"
AWA_TASK_MODULES = ["tests"]
