"""The store: every statement awa_django runs on its ``awa_*`` tables.

Statements are named queries in ``.sql`` files under ``store/sql/<family>/``
(``jobs``; ``schedules``: schedules, fires and the slot history; ``fleet``:
owners, runtime snapshots and the protocol lock; ``maintenance``; ``schema``),
each headed by ``-- name: <query_name>``, and loaded by name with
:func:`queries.query`. The modules beside them run those queries and hand rows
to the rest of the package as typed, frozen dataclasses. Nothing outside the
store (and the migrations) executes SQL: the structure tests check it.

The store sits above ``db/`` (connections, guards, JSON decoding), the settings,
the cron engine and the exceptions, and below everything else.
"""

__all__ = ["job_rows", "jobs", "jobs_admin", "queries", "queues"]
