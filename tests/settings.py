"""Settings for the test-suite (and for runcron subprocesses started by tests).

The database comes from DATABASE_URL (``make test`` provides one: the local
server in CI, an embedded PostgreSQL elsewhere). Interval settings can be
shortened through environment variables so subprocess tests run fast.
"""

from __future__ import annotations

import environ

from awa_django.client import compat

env = environ.Env()

SECRET_KEY = "awa-django-tests"
DEBUG = env.bool("AWA_TEST_DEBUG", default=False)
USE_TZ = True
TIME_ZONE = "UTC"
ALLOWED_HOSTS = ["*"]

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "awa_django",
    "tests.testapp",
    # The django-tasks backport's app on Django 5.2 (nothing on 6.x).
    *compat.APPS,
    # The operators' console (admin tests and browser tests).
    "django.contrib.admin",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
ROOT_URLCONF = "tests.urls"
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

DATABASES = {
    "default": env.db("DATABASE_URL", default="postgres://postgres@127.0.0.1:5432/awa"),
}

TASKS = {
    "default": {
        "BACKEND": "awa_django.client.backend.AwaBackend",
        "QUEUES": ["default", "mail", "reports"],
        # Process tests of queue limits set these through the environment.
        "OPTIONS": {"QUEUE_LIMITS": env.json("AWA_TEST_QUEUE_LIMITS", default={})},
    }
}

AWA_SCHEDULES = env.json("AWA_TEST_SCHEDULES", default={})
AWA_EVALUATE_INTERVAL = env.float("AWA_EVALUATE_INTERVAL", default=1.0)
AWA_SYNC_INTERVAL = env.float("AWA_SYNC_INTERVAL", default=60.0)
# Only when set (the soak benchmark scales it to its run): otherwise the default.
if "AWA_JOB_RETENTION" in env.ENVIRON:
    AWA_JOB_RETENTION = env.float("AWA_JOB_RETENTION")
AWA_ELECTION_INTERVAL = env.float("AWA_ELECTION_INTERVAL", default=10.0)
AWA_LEADER_CHECK_INTERVAL = env.float("AWA_LEADER_CHECK_INTERVAL", default=30.0)
AWA_CATCH_UP_LIMIT = env.int("AWA_CATCH_UP_LIMIT", default=1000)
AWA_SNAPSHOT_INTERVAL = env.float("AWA_SNAPSHOT_INTERVAL", default=10.0)
AWA_AUTHORITATIVE = env.bool("AWA_AUTHORITATIVE", default=False)
AWA_OWNER = env.str("AWA_OWNER", default=None)
AWA_REVISION = env.str("AWA_REVISION", default=None)
AWA_RECONCILE_GRACE = env.float("AWA_RECONCILE_GRACE", default=60.0)
AWA_HEARTBEAT_INTERVAL = env.float("AWA_HEARTBEAT_INTERVAL", default=5.0)
AWA_RESCUE_AFTER = env.float("AWA_RESCUE_AFTER", default=60.0)
AWA_POLL_INTERVAL = env.float("AWA_POLL_INTERVAL", default=1.0)
AWA_RETRY_BACKOFF = env.float("AWA_RETRY_BACKOFF", default=1.0)
AWA_SHUTDOWN_TIMEOUT = env.float("AWA_SHUTDOWN_TIMEOUT", default=30.0)
AWA_TASK_TIMEOUT = env.float("AWA_TASK_TIMEOUT", default=None)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(process)d %(name)s %(levelname)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "loggers": {
        "awa_django": {"handlers": ["console"], "level": env.str("AWA_LOG_LEVEL", default="WARNING")}
    },
}
AWA_LOCK_TIMEOUT = env.float("AWA_LOCK_TIMEOUT", default=5.0)
AWA_STATEMENT_TIMEOUT = env.float("AWA_STATEMENT_TIMEOUT", default=60.0)

# Production operation: faster health limits for subprocess tests,
# JSON logs on request, and a direct alias for the leader/LISTEN connections
# when DATABASE_URL goes through a (test-started) PgBouncer.
AWA_HEALTH_MAX_PASS_AGE = env.float("AWA_HEALTH_MAX_PASS_AGE", default=60.0)
if env.bool("AWA_JSON_LOGS", default=False):
    from awa_django.jsonlog import json_logging

    LOGGING = json_logging(level=env.str("AWA_LOG_LEVEL", default="INFO"), root=True)
if env.str("AWA_TEST_POOL_MODE", default=""):
    DATABASES["default"]["AWA_POOL_MODE"] = env.str("AWA_TEST_POOL_MODE")
if env.str("AWA_DIRECT_DATABASE_URL", default=""):
    DATABASES["default"]["AWA_POOL_MODE"] = "transaction"
    DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = True
    DATABASES["direct"] = env.db("AWA_DIRECT_DATABASE_URL")
    DATABASES["direct"]["TEST"] = {"MIRROR": "default"}
    AWA_LEADER_DATABASE = "direct"
    AWA_LISTEN_DATABASE = "direct"
# A libpq multi-host server list ("host:port,host:port") for failover tests:
# connections go to whichever server accepts writes.
if env.str("AWA_TEST_MULTIHOST", default=""):
    _servers = [item.rsplit(":", 1) for item in env.str("AWA_TEST_MULTIHOST").split(",")]
    DATABASES["default"]["HOST"] = ",".join(host for host, _port in _servers)
    DATABASES["default"]["PORT"] = ",".join(port for _host, port in _servers)
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"target_session_attrs": "read-write", "connect_timeout": 5}
    )
# OpenTelemetry in a subprocess: an SDK tracer provider writing each span as
# a JSON line to this file (the tracing process tests read it).
# Imported by name: mypy reads these settings and must not need OpenTelemetry.
if env.str("AWA_TEST_TRACE_FILE", default=""):
    import importlib

    importlib.import_module("tests.helpers.tracing").export_to_file(env.str("AWA_TEST_TRACE_FILE"))
