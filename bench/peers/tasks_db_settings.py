"""Settings of the django-tasks-db peer (run in the benchmark's own virtualenv)."""

from __future__ import annotations

import os

SECRET_KEY = "awa-django-bench-peer"
DEBUG = False
USE_TZ = True
TIME_ZONE = "UTC"
INSTALLED_APPS = ["django.contrib.contenttypes", "django_tasks_db", "bench.benchapp"]
_url = os.environ["BENCH_PEER_DATABASE"]  # a database name on the same server
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": _url,
        "USER": "postgres",
        "HOST": os.environ.get("BENCH_PGHOST", "127.0.0.1"),
        "PORT": os.environ.get("BENCH_PGPORT", "5432"),
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "loggers": {"django_tasks": {"level": "WARNING"}, "django_tasks_db": {"level": "WARNING"}},
}
