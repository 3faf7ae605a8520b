"""System checks of the databases: the leader alias is PostgreSQL (E022) of a
supported version (E051, W051), awa_django's migrations are applied (W071),
their SQL functions are installed as shipped (E050), and the job rows'
timestamp check is in place (W110, W111).

Registered with the others by :mod:`awa_django.checks`.
"""

from __future__ import annotations

from typing import Any

import psycopg
from django.conf import settings
from django.core.checks import CheckMessage, Error, Warning
from django.db import DatabaseError, connections
from django.db.migrations.recorder import MigrationRecorder

from ..conf import conf
from ..db.migration_state import migrate_in_progress, unapplied_migrations
from ..db.sqlfiles import body_hash, expected_function_hashes
from ..db.timestamps import JOB_TIMESTAMPS_CHECK
from ..store.job_timestamps import unfinished_out_of_range
from ..store.schema import installed_functions, job_constraint_validated

__all__ = [
    "NEWEST_TESTED_POSTGRESQL",
    "OLDEST_POSTGRESQL",
    "check_database",
    "check_job_timestamps",
    "check_migrations_applied",
    "check_server_version",
    "check_sql_objects",
]


def check_database(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """The leader database alias exists and is PostgreSQL."""
    hint = "awa_django needs a PostgreSQL database."
    alias = conf.LEADER_DATABASE
    if not isinstance(alias, str) or alias not in settings.DATABASES:
        return [Error(f"AWA_LEADER_DATABASE {alias!r} is not in DATABASES", hint=hint, id="awa_django.E022")]
    if connections[alias].vendor != "postgresql":
        return [Error(f"database {alias!r} is not PostgreSQL", hint=hint, id="awa_django.E022")]
    return []


def check_sql_objects(app_configs: Any = None, databases: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """Every SQL function of the applied migrations is installed, at its version, as shipped.

    Runs with ``manage.py check --database default`` (and before ``migrate``).
    Reports functions that were dropped, re-commented or replaced by hand
    (``CREATE OR REPLACE`` keeps the comment, so the body itself is compared:
    the hash of ``pg_proc.prosrc`` against the hash of the body in the SQL file),
    which the migration history cannot see.
    """
    messages: list[CheckMessage] = []
    for alias in databases or ():
        connection = connections[alias]
        if connection.vendor != "postgresql":
            continue
        recorder = MigrationRecorder(connection)
        if not recorder.has_table():
            continue
        applied = {name for app, name in recorder.applied_migrations() if app == "awa_django"}
        # Function name -> (its SQL file, hash of its shipped body); a function a
        # later file drops is not expected.
        expected = expected_function_hashes(applied)
        if not expected:
            continue
        with connection.cursor() as cursor:
            installed = installed_functions(cursor, expected)
        for name, (file_name, digest) in sorted(expected.items()):
            if name not in installed:
                state = "missing"
            elif installed[name].comment != f"awa_django {file_name}":
                state = f"outdated ({installed[name].comment!r})"
            elif body_hash(installed[name].source) != digest:
                state = f"not as shipped in {file_name}.sql (replaced by hand)"
            else:
                continue
            messages.append(
                Error(
                    f"SQL function {name} is {state} in database {alias!r}",
                    hint="Run manage.py migrate; if it is applied, re-install the SQL file (see docs).",
                    id="awa_django.E050",
                )
            )
    return messages


# The PostgreSQL major versions awa_django supports and tests (make test-matrix).
OLDEST_POSTGRESQL = 14
NEWEST_TESTED_POSTGRESQL = 18


def _server_version_num(connection: Any) -> int:
    """``server_version_num`` of the alias's server, on a connection of its own:
    Django refuses to open its connection to a server older than it supports,
    and the check names the version all the same."""
    params = dict(connection.get_connection_params())
    for key in ("cursor_factory", "context", "prepare_threshold"):
        params.pop(key, None)
    with psycopg.connect(autocommit=True, **params) as raw:
        return int(raw.info.server_version)


def check_server_version(app_configs: Any = None, databases: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """The alias's PostgreSQL is a supported major version (E051), and one awa_django
    is tested on (W051) (``manage.py check --database default``)."""
    messages: list[CheckMessage] = []
    supported = f"PostgreSQL {OLDEST_POSTGRESQL} to {NEWEST_TESTED_POSTGRESQL}"
    for alias in databases or ():
        connection = connections[alias]
        if connection.vendor != "postgresql":
            continue
        try:
            number = _server_version_num(connection)
        except psycopg.Error:
            continue  # an unreachable database is reported by Django itself
        major, minor = number // 10000, number % 10000
        if major < OLDEST_POSTGRESQL:
            messages.append(
                Error(
                    f"database {alias!r}: PostgreSQL {major}.{minor} is not supported by awa_django",
                    hint=f"awa_django supports {supported}; upgrade the server.",
                    id="awa_django.E051",
                )
            )
        elif major > NEWEST_TESTED_POSTGRESQL:
            messages.append(
                Warning(
                    f"database {alias!r}: PostgreSQL {major}.{minor} is newer than awa_django is tested on",
                    hint=f"awa_django is tested on {supported}.",
                    id="awa_django.W051",
                )
            )
    return messages


def check_migrations_applied(
    app_configs: Any = None, databases: Any = None, **kwargs: Any
) -> list[CheckMessage]:
    """awa_django's migrations are all applied (``manage.py check --database default``).

    Silent while ``migrate`` runs: it runs these checks before applying the
    very migrations the warning would name.
    """
    messages: list[CheckMessage] = []
    if migrate_in_progress():
        return messages  # migrate is the remedy, and is applying them now
    for alias in databases or ():
        if connections[alias].vendor != "postgresql":
            continue
        try:
            missing = unapplied_migrations(alias)
        except DatabaseError:
            continue  # an unreachable database is reported by Django itself
        if missing:
            shown = ", ".join(missing[:3]) + (f" (+{len(missing) - 3})" if len(missing) > 3 else "")
            # A warning, not an error: `manage.py migrate` runs the database
            # checks first, and an error would stop the very command that fixes it.
            messages.append(
                Warning(
                    f"database {alias!r}: awa_django migrations not applied: {shown}",
                    hint="Run manage.py migrate.",
                    id="awa_django.W071",
                )
            )
    return messages


def check_job_timestamps(app_configs: Any = None, databases: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """Once migration 0024 is applied, ``awa_jobs_timestamps_check`` is on ``awa_jobs``
    and validated (W110); without it, how many unfinished jobs hold a timestamp no
    datetime holds (W111: each fails when a worker claims it). Runs with
    ``manage.py check --database default`` (and ``migrate``)."""
    messages: list[CheckMessage] = []
    for alias in databases or ():
        connection = connections[alias]
        if connection.vendor != "postgresql":
            continue
        try:
            recorder = MigrationRecorder(connection)
            if ("awa_django", "0024_job_timestamps") not in recorder.applied_migrations():
                continue  # not migrated yet: W071 reports it
            with connection.cursor() as cursor:
                validated = job_constraint_validated(cursor, JOB_TIMESTAMPS_CHECK)
                if validated:
                    continue
                bad = unfinished_out_of_range(cursor)
        except DatabaseError:
            continue  # an unreachable database is reported by Django itself
        state = "missing" if validated is None else "not validated"
        messages.append(
            Warning(
                f"database {alias!r}: the check {JOB_TIMESTAMPS_CHECK} on awa_jobs is {state}",
                hint="Fail the jobs W111 counts, then add and validate the check (see docs).",
                id="awa_django.W110",
            )
        )
        if bad:
            messages.append(
                Warning(
                    f"database {alias!r}: {bad} unfinished job(s) hold a timestamp no datetime holds",
                    hint="Each fails when a worker claims it; to fail them all now, see docs.",
                    id="awa_django.W111",
                )
            )
    return messages
