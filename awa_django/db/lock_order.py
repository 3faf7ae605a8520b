"""The lock order migrations take, so that they never deadlock live processes.

Running processes lock in one order (docs/explanation/guarantees.md, "No lock
cycle"): the protocol lock first (``awa_cron_protocol_lock()``, an advisory
transaction lock), then the tables in :data:`TABLE_LOCK_ORDER`. Snapshot
writers, publication and reconciliation take the protocol lock before any
table, and then the runtime tables before ``awa_cron_jobs``; plans and
previews, which take no lock, read the owner row, the runtime rows, the
declarations, the manifest and then the schedules; a fire locks
``awa_cron_jobs`` rows, probes and inserts into ``awa_jobs`` and then records
slot outcomes; a claim reads ``awa_jobs`` and then ``awa_queue_meta``.

A migration that alters a table takes an ``ACCESS EXCLUSIVE`` lock on it, held
until it commits. Altering two tables in an order of its own, it can hold one
that a live transaction needs while it waits for one that transaction holds:
``deadlock detected``, and PostgreSQL aborts one of them. So every migration
that alters more than one ``awa_*`` table writes its operations as
``operations = in_lock_order([tables...], [operations...])``: before anything
else, in both directions, it takes the protocol lock and then locks the tables
it alters, in :data:`TABLE_LOCK_ORDER` (tables that do not exist yet, or any
more, are skipped). Its waits then only ever follow a live writer's order.

The preamble's waits are bounded by ``AWA_LOCK_TIMEOUT`` per lock: writers
queue behind a pending ``ACCESS EXCLUSIVE`` request, so an unbounded wait for a
long transaction would stall every writer. On a timeout the preamble gives the
locks back (a savepoint) so the queued writers go on, and tries again, up to
:data:`ATTEMPTS` times. It does the same when PostgreSQL picks it as the victim
of a deadlock: a writer that locks ``awa_runtime_instances`` or
``awa_cron_declarations`` before the protocol lock (a statement that gets the
protocol lock only from those tables' statement trigger: a runtime of a release
before the protocol, a hand-written write) can still close a cycle with it
while it waits. After the last attempt the migration fails with
:class:`MigrationLockTimeout`, its transaction rolled back: nothing is half
applied, and ``migrate`` can simply be run again.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

from django.db import OperationalError, transaction
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.operations.base import Operation
from django.db.migrations.state import ProjectState

from ..conf import conf
from .guards import _milliseconds, lock_wait_timed_out
from .sqlfiles import SqlFile

logger = logging.getLogger("awa_django.db")

# awa_cron_protocol_lock() is pg_advisory_xact_lock() on this key (the bytes
# "AWADJPRT"); taken directly, so the preamble also works on a schema in which
# that function does not exist (below 0004_reconciliation).
PROTOCOL_LOCK_KEY = 4708303696999502420

# Every awa_* table, in the order in which live transactions first touch them
# (after the protocol lock). A new table goes where the writers that touch it
# along with other tables would take it.
TABLE_LOCK_ORDER: tuple[str, ...] = (
    "awa_cron_owners",
    "awa_runtime_instances",
    "awa_cron_declarations",
    "awa_cron_manifests",
    "awa_cron_jobs",
    "awa_jobs",
    "awa_cron_slot_outcomes",
    "awa_cron_slot_counts",
    "awa_queue_meta",
)

# How many times the preamble tries to take its locks, each wait bounded by
# AWA_LOCK_TIMEOUT, before the migration fails.
ATTEMPTS = 5


class MigrationLockTimeout(OperationalError):
    """A migration could not take its lock order within its attempts."""


def ordered(tables: Iterable[str]) -> tuple[str, ...]:
    """``tables`` in :data:`TABLE_LOCK_ORDER`; a table not in it is refused."""
    names = set(tables)
    unknown = sorted(names - set(TABLE_LOCK_ORDER))
    if unknown:
        raise ValueError(
            f"table(s) {', '.join(unknown)} not in awa_django.db.lock_order.TABLE_LOCK_ORDER: "
            "add each where the live writers that touch it take it"
        )
    return tuple(t for t in TABLE_LOCK_ORDER if t in names)


def lock_sql(tables: Sequence[str]) -> str:
    """One statement: the protocol lock, then each existing table of ``tables``
    (already in order) ``IN ACCESS EXCLUSIVE MODE``."""
    names = ", ".join(f"'{t}'" for t in ordered(tables))  # names from TABLE_LOCK_ORDER only
    return (
        "DO $awa_lock_order$\n"
        "DECLARE\n"
        "    t text;\n"
        "BEGIN\n"
        f"    PERFORM pg_advisory_xact_lock({PROTOCOL_LOCK_KEY});\n"
        f"    FOREACH t IN ARRAY ARRAY[{names}]::text[] LOOP\n"
        "        IF to_regclass(t) IS NOT NULL THEN\n"
        "            EXECUTE format('LOCK TABLE %I IN ACCESS EXCLUSIVE MODE', t);\n"
        "        END IF;\n"
        "    END LOOP;\n"
        "END\n"
        "$awa_lock_order$"
    )


class LockOrder(Operation):
    """Take the protocol lock and then ``tables`` in the documented order, when
    the migration runs in ``direction`` ("forwards" or "backwards"); a no-op in
    the other. Use :func:`in_lock_order`, which puts one of each where it runs first."""

    reduces_to_sql = True
    reversible = True
    elidable = False

    def __init__(self, tables: Sequence[str], direction: str = "forwards") -> None:
        if direction not in ("forwards", "backwards"):
            raise ValueError(f"direction must be 'forwards' or 'backwards', not {direction!r}")
        self.tables = ordered(tables)
        self.direction = direction

    def deconstruct(self) -> tuple[str, list[Any], dict[str, Any]]:
        return (self.__class__.__qualname__, [list(self.tables)], {"direction": self.direction})

    def state_forwards(self, app_label: str, state: ProjectState) -> None:
        pass  # locks only: the models do not change

    def database_forwards(
        self, app_label: str, schema_editor: BaseDatabaseSchemaEditor, from_state: Any, to_state: Any
    ) -> None:
        if self.direction == "forwards":
            self.lock(schema_editor)

    def database_backwards(
        self, app_label: str, schema_editor: BaseDatabaseSchemaEditor, from_state: Any, to_state: Any
    ) -> None:
        if self.direction == "backwards":
            self.lock(schema_editor)

    def describe(self) -> str:
        return f"Take the protocol lock, then lock {', '.join(self.tables)} (when applied {self.direction})"

    def lock(self, schema_editor: BaseDatabaseSchemaEditor) -> None:
        """Take the locks in ``schema_editor``'s transaction, bounded and retried."""
        connection = schema_editor.connection
        if not connection.in_atomic_block:
            raise RuntimeError(
                "LockOrder needs an atomic migration: its locks last until the migration's "
                "transaction ends (remove atomic = False, or split the migration)"
            )
        statement = lock_sql(self.tables)
        if schema_editor.collect_sql:  # sqlmigrate: show the statement
            schema_editor.execute(statement, params=None)
            return
        timeout_ms = _milliseconds(conf.LOCK_TIMEOUT)
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_setting('lock_timeout')")
            (previous,) = cursor.fetchone()
        last: OperationalError | None = None
        for attempt in range(1, ATTEMPTS + 1):
            # A savepoint of its own (in SQL: Django's savepoint API changes
            # between the versions awa_django supports), so a timed-out
            # attempt gives back what it took and leaves the transaction usable.
            with connection.cursor() as cursor:
                cursor.execute("SAVEPOINT awa_lock_order")
                try:
                    cursor.execute("SELECT set_config('lock_timeout', %s, true)", [str(timeout_ms)])
                    cursor.execute(statement)
                except OperationalError as exc:
                    cursor.execute("ROLLBACK TO SAVEPOINT awa_lock_order")
                    if not (lock_wait_timed_out(exc) or _deadlock_victim(exc)):
                        raise
                    last = exc
                    logger.warning(
                        "migration lock order: attempt %d of %d gave way waiting for %s: %s",
                        attempt,
                        ATTEMPTS,
                        self._what(),
                        exc,
                        extra={"event": "migration.lock_retry"},
                    )
                    continue
                # The bound is the preamble's: the migration's own statements
                # wait as they would without it.
                cursor.execute("SELECT set_config('lock_timeout', %s, true)", [previous])
                cursor.execute("RELEASE SAVEPOINT awa_lock_order")
                return
        raise MigrationLockTimeout(
            f"could not take {self._what()} in {ATTEMPTS} attempts of AWA_LOCK_TIMEOUT "
            f"({conf.LOCK_TIMEOUT} s) each: a long transaction holds one of them (see "
            "pg_stat_activity and pg_locks). This migration was rolled back (any applied "
            "before it in this run stay applied); run migrate again."
        ) from last

    def _what(self) -> str:
        return f"the protocol lock and then {', '.join(self.tables)}"


def _deadlock_victim(exc: BaseException) -> bool:
    """True when ``exc`` is PostgreSQL's ``deadlock detected`` (40P01)."""
    return getattr(exc.__cause__ or exc, "sqlstate", None) == "40P01"


class LockedSqlFile(SqlFile):
    """A SQL file run, in a non-atomic migration, in a transaction of its own
    that first takes the lock order of ``tables`` (as :func:`in_lock_order`
    does for a whole atomic migration): its waits are bounded and retried
    instead of queueing every writer behind a long reader."""

    def __init__(self, file_name: str, tables: Sequence[str]) -> None:
        super().__init__(file_name)
        self.tables = ordered(tables)

    def deconstruct(self) -> tuple[str, list[Any], dict[str, Any]]:
        return (self.__class__.__qualname__, [self.file_name, list(self.tables)], {})

    def database_forwards(
        self, app_label: str, schema_editor: BaseDatabaseSchemaEditor, from_state: Any, to_state: Any
    ) -> None:
        with transaction.atomic(using=schema_editor.connection.alias):
            LockOrder(self.tables).lock(schema_editor)
            super().database_forwards(app_label, schema_editor, from_state, to_state)

    def database_backwards(
        self, app_label: str, schema_editor: BaseDatabaseSchemaEditor, from_state: Any, to_state: Any
    ) -> None:
        with transaction.atomic(using=schema_editor.connection.alias):
            LockOrder(self.tables, "backwards").lock(schema_editor)
            super().database_backwards(app_label, schema_editor, from_state, to_state)


def in_lock_order(tables: Sequence[str], operations: Sequence[Operation]) -> list[Operation]:
    """``operations`` preceded, in whichever direction the migration runs, by
    the protocol lock and ``tables`` (every ``awa_*`` table they alter) in the
    documented lock order."""
    return [LockOrder(tables, "forwards"), *operations, LockOrder(tables, "backwards")]
