"""System checks (``manage.py check``): every awa_django check, registered in one place.

Each check lives beside what it checks (Django's ``core/checks/`` is the
model): declared schedules in :mod:`awa_django.declarations.checks`, the task
side in :mod:`awa_django.client.checks`, authoritative mode in
:mod:`awa_django.reconciliation.checks`; the settings, the databases and the
connection poolers here, in :mod:`.settings`, :mod:`.database` and
:mod:`.poolers` (their owners, ``conf`` and ``db/``, sit below the store and
the schedules these checks read, so the checks cannot live in them).

:data:`CHECKS` lists each check function with its tag; the app's ``ready()``
calls :func:`register_checks`. Each check writes the id, message and hint of
what it reports where it reports it. Ids are stable, documented in
docs/reference/checks.md and never reused. The task backend's own checks
(E030, E031, E070) are :meth:`awa_django.client.backend.AwaBackend.check`:
Django runs them with its check of ``TASKS``, also when awa_django is not
installed.
"""

from __future__ import annotations

from collections.abc import Callable

from django.core.checks import CheckMessage, Tags, register

from ..client.checks import check_task_framework_app
from ..declarations.checks import (
    check_changed_day_rules,
    check_runtime_names,
    check_schedules,
    check_task_backend,
)
from ..reconciliation.checks import check_reconciliation
from .database import (
    check_database,
    check_job_timestamps,
    check_migrations_applied,
    check_server_version,
    check_sql_objects,
)
from .poolers import check_pgbouncer_sessions, check_poolers
from .settings import check_error_max_chars, check_lock_timeout, check_setting_limits, check_settings

__all__ = ["CHECKS", "CheckFunction", "database", "poolers", "register_checks", "settings"]

CheckFunction = Callable[..., list[CheckMessage]]

# Every check, with the tag ``manage.py check --tag`` selects it by. The
# ``database`` ones query the aliases ``check --database`` names (and run
# before ``migrate``); the others read settings and code only.
CHECKS: tuple[tuple[CheckFunction, str], ...] = (
    # Declared schedules: E001-E016, E078, W080; E043 against runtime schedules.
    (check_schedules, Tags.compatibility),
    (check_changed_day_rules, Tags.compatibility),
    (check_runtime_names, Tags.database),
    # AWA_* settings: E020-E021, E042, E060-E062, E074, E090, W060, W112.
    (check_setting_limits, Tags.compatibility),
    (check_settings, Tags.compatibility),
    (check_lock_timeout, Tags.compatibility),
    (check_error_max_chars, Tags.compatibility),
    # Authoritative mode: E040, E041.
    (check_reconciliation, Tags.compatibility),
    # The task side: E072, E073, E075, E077.
    (check_task_framework_app, Tags.compatibility),
    (check_task_backend, Tags.compatibility),
    # Databases: E022, E050, E051, W051, W071, W110, W111.
    (check_database, Tags.compatibility),
    (check_sql_objects, Tags.database),
    (check_server_version, Tags.database),
    (check_migrations_applied, Tags.database),
    (check_job_timestamps, Tags.database),
    # Connection poolers: E100, W100-W104.
    (check_poolers, Tags.compatibility),
    (check_pgbouncer_sessions, Tags.database),
)


def register_checks() -> None:
    """Register every check of :data:`CHECKS` with Django (again is harmless: a set)."""
    for check, tag in CHECKS:
        register(check, tag)
