"""Settings of the django-celery-beat peer (run in the benchmark's own virtualenv)."""

from __future__ import annotations

from bench.peers.tasks_db_settings import *  # noqa: F403 (same database and basics)
from bench.peers.tasks_db_settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "django_celery_beat"]
