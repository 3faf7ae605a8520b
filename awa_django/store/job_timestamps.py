"""Reading the timestamps of ``awa_jobs`` that no Python datetime holds.

:mod:`awa_django.db.timestamps` says what range a datetime holds and loads
such values safely through the ORM; the one statement that counts them (for
the system check on ``awa_jobs_timestamps_check``) is here.
"""

from __future__ import annotations

from typing import Any

from ..db.timestamps import COUNT_CAP
from .queries import query

__all__ = ["unfinished_out_of_range"]


def unfinished_out_of_range(cursor: Any) -> int:
    """How many unfinished jobs hold a timestamp out of the range (up to
    ``COUNT_CAP``). ``cursor``: Django's cursor wrapper or psycopg's (``Any``:
    they share no declared type)."""
    cursor.execute(query("count_unfinished_jobs_out_of_timestamp_range"), {"cap": COUNT_CAP})
    return int(cursor.fetchone()[0])
