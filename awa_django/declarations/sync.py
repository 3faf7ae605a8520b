"""Additive definition sync: code-declared schedules -> ``awa_cron_jobs``.

UPSERT only (the one upsert of :mod:`awa_django.store.schedule_upsert`). It never deletes (several
deployments may share one database and each declares only its own schedules),
never touches ``last_enqueued_at``, pause or lifecycle columns, and skips rows
whose definition is unchanged.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from django.db import DataError, IntegrityError, InternalError, connections, transaction

from ..db import sessions
from ..db.guards import bound_transaction_waits
from ..store import schedule_upsert as upsert
from .declaration import Schedule

logger = logging.getLogger("awa_django.sync")


# Errors a value in one definition can cause; anything else (connection,
# privilege, timeout) is not a row's fault and fails the sync as a whole.
ROW_FAULTS = (IntegrityError, DataError, InternalError, UnicodeEncodeError)


def sync_schedules(
    schedules: Iterable[Schedule], using: str = "default", reported: set[str] | None = None
) -> list[str]:
    """Upsert ``schedules``; return the names that were inserted or changed.

    A schedule whose row an owner owns is left alone and logged as
    ``cron.sync_conflict``: every time, or only once when ``reported`` (the
    names already logged, updated here) is given.
    """
    definitions = [s.definition() for s in sorted(schedules, key=lambda s: s.name)]
    if not definitions:
        return []
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        bound_transaction_waits(cursor)  # rows may be locked by a frozen peer
        try:
            with sessions.savepoint_if_nested(using):
                outcomes = upsert.sync_additive(cursor, definitions)
        except ROW_FAULTS as exc:
            # One row's value failed the set-based upsert: sync the rest one
            # by one, so every other schedule is still written.
            logger.warning(
                "sync statement failed (%s); syncing row by row", exc, extra={"event": "cron.sync_isolated"}
            )
            outcomes = []
            for definition in definitions:
                try:
                    with sessions.savepoint_if_nested(using):
                        outcomes.extend(upsert.sync_additive(cursor, [definition]))
                except ROW_FAULTS as row_exc:
                    logger.error(
                        "schedule %s cannot be synced: %s",
                        definition["name"],
                        row_exc,
                        extra={"event": "cron.sync_failed", "schedule": definition["name"]},
                    )
    changed = sorted(name for name, outcome in outcomes if outcome == "written")
    for name in changed:
        logger.info("schedule %s synced", name, extra={"event": "cron.synced", "schedule": name})
    for name in sorted(name for name, outcome in outcomes if outcome == "owned"):
        # Owned rows change only through their owner's manifest or an operator.
        # Said once per caller (a leader: once per process), not at every
        # sync: the admin and `awa cron list` show the conflict while it lasts.
        if reported is not None:
            if name in reported:
                continue
            reported.add(name)
        logger.warning(
            "schedule %s is owned by an authoritative deployment or is a runtime schedule "
            "(awa:runtime); this additive declaration is ignored (delete the runtime "
            "schedule, or remove it from this deployment's code)",
            name,
            extra={"event": "cron.sync_conflict", "schedule": name},
        )
    return changed
