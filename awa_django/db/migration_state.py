"""Is the database migrated for this version of awa_django?

Without ``manage.py migrate`` the first SQL call fails deep inside PostgreSQL
("function awa_cron_protocol_lock() does not exist ... add explicit type
casts"). ``runcron``/``runtasks`` ask here first, and check W071 reports the
same with ``manage.py check --database default``.
"""

from __future__ import annotations

import sys
from types import FrameType

from django.db import connections
from django.db.migrations.loader import MigrationLoader

from ..exceptions import NotMigrated

APP_LABEL = "awa_django"


def unapplied_migrations(using: str = "default") -> list[str]:
    """Names of awa_django migrations not applied to database ``using``."""
    loader = MigrationLoader(connections[using], ignore_no_migrations=True)
    applied = loader.applied_migrations or {}
    return sorted(name for app, name in loader.graph.nodes if app == APP_LABEL and (app, name) not in applied)


def require_migrated(using: str = "default") -> None:
    """Raise :class:`NotMigrated` naming what to do if migrations are missing."""
    missing = unapplied_migrations(using)
    if missing:
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        raise NotMigrated(
            f"database {using!r} lacks awa_django migration(s) {shown}: run `manage.py migrate`"
        )


def migrate_in_progress() -> bool:
    """True while ``manage.py migrate`` (or a subclass of it) is running in this thread.

    ``migrate`` runs the database checks before it migrates: there, W071
    ("migrations not applied") would only repeat what the command is about to
    fix. Django passes checks no hint of the command, so the call stack says:
    the checks run inside ``migrate``'s ``handle`` (Django 5.2) or inside
    ``BaseCommand.execute`` called on a ``migrate`` command (Django 6.0+).
    """
    from django.core.management.base import BaseCommand
    from django.core.management.commands.migrate import Command as Migrate

    handle, execute = Migrate.handle.__code__, BaseCommand.execute.__code__
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_code is handle:
            return True
        if frame.f_code is execute and isinstance(frame.f_locals.get("self"), Migrate):
            return True
        frame = frame.f_back
    return False
