"""Settings for the example project (``make demo``).

Reads DATABASE_URL (``make demo`` provides an embedded PostgreSQL when it is
unset). Everything awa_django-specific is in the AWA_* block at the end.
"""

from __future__ import annotations

from pathlib import Path

import django
import environ

BASE_DIR = Path(__file__).resolve().parent.parent
env = environ.Env()

SECRET_KEY = env.str("SECRET_KEY", default="example-project-not-secret")
DEBUG = env.bool("DEBUG", default=True)
ALLOWED_HOSTS = ["*"]
USE_TZ = True
TIME_ZONE = "UTC"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    # The django-tasks backport on Django 5.2; Django 6 has django.tasks built in.
    *(["django_tasks"] if django.VERSION < (6, 0) else []),
    "awa_django",
    "example_project.demo",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]

ROOT_URLCONF = "example_project.urls"
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
    }
]
STATIC_URL = "static/"

DATABASES = {"default": env.db("DATABASE_URL", default="postgres://postgres@127.0.0.1:5432/awa")}

TASKS = {
    "default": {
        # Jobs (cron fires and Task.enqueue()) live in awa_jobs; run them
        # with `manage.py runtasks`.
        "BACKEND": "awa_django.backend.AwaBackend",
        "QUEUES": ["default", "reports"],
    }
}

# --- awa_django -----------------------------------------------------------
# Schedules can live here as well as in an app's cron.py (see demo/cron.py).
AWA_SCHEDULES = {
    "nightly-report": {
        "cron": "0 2 * * *",
        "task": "example_project.demo.tasks.nightly_report",
        "timezone": "Europe/Berlin",
        "queue": "reports",
        "kwargs": {"fmt": "pdf"},
    },
}
AWA_ELECTION_INTERVAL = 2

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "loggers": {"awa_django": {"handlers": ["console"], "level": "INFO"}},
}
