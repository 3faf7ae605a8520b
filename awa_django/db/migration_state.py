"""Is the database migrated for this version of awa_django?

Without ``manage.py migrate`` the first SQL call fails deep inside PostgreSQL
("function awa_cron_protocol_lock() does not exist ... add explicit type
casts"). ``runcron``/``runtasks`` ask here first, and check W071 reports the
same with ``manage.py check --database default``.
"""

from __future__ import annotations

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
