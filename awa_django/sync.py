"""Additive definition sync: code-declared schedules -> ``awa_cron_jobs``.

UPSERT only. It never deletes (several deployments may share one database and
each declares only its own schedules), never touches ``last_enqueued_at``,
pause or lifecycle columns, and skips rows whose definition is unchanged.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable

from django.db import connections

from .schedules import Schedule

logger = logging.getLogger(__name__)


def sync_schedules(schedules: Iterable[Schedule], using: str = "default") -> list[str]:
    """Upsert ``schedules``; return the names that were inserted or changed."""
    definitions = [s.definition() for s in sorted(schedules, key=lambda s: s.name)]
    if not definitions:
        return []
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT name, outcome FROM awa_cron_upsert_v2(%s::jsonb)", [json.dumps(definitions)])
        outcomes = cursor.fetchall()
    changed = sorted(name for name, outcome in outcomes if outcome == "written")
    for name in changed:
        logger.info("schedule %s synced", name, extra={"event": "cron.synced", "schedule": name})
    for name in sorted(name for name, outcome in outcomes if outcome == "owned"):
        # Owned rows change only through their owner's manifest or an operator.
        logger.error(
            "schedule %s is owned by an authoritative deployment; this additive "
            "declaration is ignored (adopt it, or remove it from this deployment)",
            name,
            extra={"event": "cron.sync_conflict", "schedule": name},
        )
    return changed
