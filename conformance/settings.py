"""Settings for Django's ``tests/tasks`` run against AwaBackend on PostgreSQL.

Only the backend configuration differs from what Django's tests expect: the
``TASKS`` aliases the tests override point at AwaBackend (see
``scripts/conformance.py``), jobs live in PostgreSQL, and ``awa_django`` is
installed so its tables exist.
"""

from __future__ import annotations

import environ

from awa_django.client import compat

env = environ.Env()

SECRET_KEY = "awa-django-conformance"
USE_TZ = True  # awa_django requires it (check E021)
TIME_ZONE = "UTC"
INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "django.contrib.auth",
    "awa_django",
    *compat.APPS,  # the django-tasks backport's app on Django 5.2
    "tasks",  # Django's tests/tasks package
]
DATABASES = {"default": env.db("DATABASE_URL", default="postgres://postgres@127.0.0.1:5432/awa")}
TASKS = {"default": {"BACKEND": "awa_django.client.backend.AwaBackend"}}
# Report lost connections quickly: no fault injection happens here.
AWA_REPORT_RETRY_TIMEOUT = 5.0
AWA_RETRY_BACKOFF = 0.0
# Some of Django's tests narrow the app registry (TransactionTestCase.available_apps = []),
# which hides "tasks" from the installed apps: allow its tasks explicitly.
AWA_TASK_MODULES = ["tasks"]
