"""Keeping ``awa_cron_jobs`` small while it churns.

Every fire updates its schedule row, and the update changes an indexed column
(``next_fire_at``), so it is never a HOT update: each fire leaves a dead row
version and a dead index entry behind. Autovacuum looks at a table at most once
a minute, and with 1,000 every-second schedules the table then holds 60 times
more dead versions than live rows; measured, a fire's statement took twice as
long after ten seconds of that. So the leader vacuums the table itself after
every ``EVERY_FIRES`` fires, at most once every ``MIN_INTERVAL`` seconds (a
burst of 100,000 fires needs one or two, not twenty, each reading the whole
table), on the thread that announces committed fires (never the one that fires).
A plain VACUUM takes no lock an update waits for;for a role that does not own the table, PostgreSQL skips it with a warning.
"""

from __future__ import annotations

import logging
import math
import threading
import time

from django.db import connections

from ..db import sessions
from ..store import maintenance as store

logger = logging.getLogger("awa_django.vacuum")

EVERY_FIRES = 5000
MIN_INTERVAL = 5.0

_lock = threading.Lock()
_since: dict[str, int] = {}
_last: dict[str, float] = {}  # time.monotonic() of the last VACUUM, per alias


def after_fires(
    count: int, using: str = "default", every: int = EVERY_FIRES, min_interval: float = MIN_INTERVAL
) -> bool:
    """Count ``count`` committed fires; VACUUM ``awa_cron_jobs`` once ``every`` have
    accumulated and ``min_interval`` seconds have passed since the last. True when it ran."""
    with _lock:
        _since[using] = _since.get(using, 0) + count
        recent = time.monotonic() - _last.get(using, -math.inf) < min_interval
        if _since[using] < every or recent or connections[using].in_atomic_block:
            return False  # VACUUM cannot run inside a transaction: later
        _since[using] = 0
        _last[using] = time.monotonic()
    with sessions.reconnect_on_error(using, "VACUUM of awa_cron_jobs", logger, "cron.error") as guard:
        with connections[using].cursor() as cursor:
            store.vacuum_schedules(cursor)
    return guard.error is None
