"""Django settings of awa_django's side of the benchmark (``bench/run.py``).

The database comes from ``BENCH_DATABASE_URL``; the harness creates it.
"""

from __future__ import annotations

import os

import environ

from awa_django.client import compat

env = environ.Env()

SECRET_KEY = "awa-django-bench"
DEBUG = False  # DEBUG would keep every query in memory
USE_TZ = True
TIME_ZONE = "UTC"
# compat.APPS: the django-tasks backport's app on Django 5.2 (check E077), nothing on 6.x.
INSTALLED_APPS = ["django.contrib.contenttypes", *compat.APPS, "awa_django", "bench.benchapp"]
DATABASES = {"default": env.db("BENCH_DATABASE_URL", default="postgres://postgres@127.0.0.1:5432/awa_bench")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
TASKS = {
    "default": {
        "BACKEND": "awa_django.client.backend.AwaBackend",
        # W3's rate-limited variant sets these (bench.awa_side.w3_flow).
        "OPTIONS": {"QUEUE_LIMITS": env.json("BENCH_QUEUE_LIMITS", default={})},
    }
}
AWA_TASK_MODULES = ["bench.benchapp.tasks"]
# W5 (start-up) declares BENCH_DECLARED schedules in settings; the others none.
# Every expression differs (minute, hour and day, up to 40,320), so caches keyed
# on the expression do not flatter the start-up time.
AWA_SCHEDULES: dict[str, object] = {
    f"declared-{i:06d}": {
        "cron": f"{i % 60} {i // 60 % 24} {1 + i // 1440 % 28} * *",
        "task": "bench.benchapp.tasks.noop",
    }
    for i in range(int(os.environ.get("BENCH_DECLARED", "0")))
}
# The benchmark inserts its schedules with SQL: nothing is declared, nothing reconciled.
AWA_SYNC_INTERVAL = 3600.0
AWA_POLL_INTERVAL = float(os.environ.get("BENCH_POLL_INTERVAL", "1.0"))
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {"awa_django": {"handlers": ["console"], "level": "WARNING"}},
}
# The harness migrates the database it has just created: "not migrated yet" is expected there.
SILENCED_SYSTEM_CHECKS = ["awa_django.W071"]
