"""Runtime schedules: create, change and delete schedules without a deploy.

:func:`create_schedule`, :func:`update_schedule` and :func:`delete_schedule`
are the one service layer behind the admin form, ``manage.py awa cron
create|edit|delete`` and user code. A runtime schedule's row belongs to the
reserved owner :data:`~awa_django.declarations.runtime.RUNTIME_OWNER`; a name
declared in code (here, or by another deployment: any row of another owner or
none) is refused.

Each call is one transaction: validation first (exactly a declaration's,
:func:`~awa_django.declarations.runtime.build_runtime_schedule`), then the
protocol lock, then the schedule row ``FOR UPDATE`` (the lock order of every
writer), then one write. Nothing is half-written.

Exactly once across edits: the fire statement skips rows another session
locks and compares the expression, zone, policy and ``last_enqueued_at`` it
read, so a fire planned from the old definition cannot land after the edit.
An edit of the timing (expression, zone, policy) moves the fire clock to
``greatest(last_enqueued_at, database now)``: a slot that fired never fires
again, and slots the new expression would have had before the edit are never
replayed. Delete removes the row; the slot history in ``awa_jobs`` (the
unique index on the name and fire time of automatic fires) keeps a
re-created schedule from firing a slot twice. Every change wakes the leader
(``NOTIFY awa_cron``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Collection, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, NoReturn

from django.db import connections, transaction

from ..db import jsonb, sessions
from ..db.guards import bound_transaction_waits
from ..declarations.declaration import name_identity
from ..declarations.runtime import RUNTIME_OWNER, build_runtime_schedule, declared_in_code, row_options
from ..declarations.shape import COMPARED_KEYS, DEFINITION_KEYS, FIELDS, Schedule
from ..exceptions import InvalidSchedule, OperationRefused, ScheduleNotFound
from ..store import schedules as store
from .common import ActionResult, require_actor, require_schedule_name

__all__ = [
    "NOTIFY_CHANNEL",
    "RUNTIME_OWNER",
    "TIMING_KEYS",
    "code_declaration",
    "create_imported_schedules",
    "create_schedule",
    "delete_schedule",
    "runtime_definition",
    "schedule_exists",
    "update_schedule",
]

logger = logging.getLogger("awa_django.operations")

# The channel the leader LISTENs on (scheduler.leader.NOTIFY_CHANNEL, which
# this module cannot import: the scheduler imports the actions). Every change
# notifies it, also one the row triggers would not (queue, args, priority).
NOTIFY_CHANNEL = "awa_cron"
# Definition columns whose change moves the fire clock to the edit.
TIMING_KEYS = ("cron_expr", "every_seconds", "anchor", "timezone", "missed_fire_policy")


def where_declared(name: str, owner_id: str | None) -> str:
    """Why ``name`` (a stored row of ``owner_id``) is not a runtime schedule's, for a refusal."""
    local = declared_in_code(name)
    if local is not None:
        return f"declared in code ({local})"
    if owner_id is None:
        return (
            "declared in code by a deployment (an unowned schedule synced from its cron.py or AWA_SCHEDULES)"
        )
    return f"declared in code by the deployment of owner {owner_id!r}"


def code_declaration(name: str, using: str = "default") -> str | None:
    """Why a runtime schedule cannot be called ``name`` (code declares it), or None.

    For a form's early answer; :func:`create_schedule` checks again under its locks.
    """
    if declared_in_code(name) is not None:
        return f"schedule {name!r} is {where_declared(name, None)}"
    with connections[using].cursor() as cursor:
        found, owner_id = store.schedule_owner(cursor, name)
    if found and owner_id != RUNTIME_OWNER:
        return f"schedule {name!r} is {where_declared(name, owner_id)}"
    return None


def _refuse_code_name(name: str, owner_id: str | None) -> NoReturn:
    raise OperationRefused(
        f"schedule {name!r} is {where_declared(name, owner_id)}; "
        "a runtime schedule cannot take its name: change it there, or choose another name"
    )


def _locked_row(cursor: Any, name: str) -> tuple[dict[str, Any], str | None, bool] | None:
    """Lock and read ``name``: (definition, owner_id, retired) or None."""
    found = store.lock_definition(cursor, name)
    if found is None:
        return None
    values, owner_id, retired = found
    return _definition(values), owner_id, retired


def _definition(row: list[Any]) -> dict[str, Any]:
    """The definition columns of a row read by ``lock_runtime_schedule``, jsonb decoded.

    A stored value that cannot be decoded (raw SQL nested it too deep, see
    :mod:`awa_django.db.jsonb`) refuses the operation, naming the schedule and
    the column: nothing is rewritten from a value that was never read.
    """
    definition = dict(zip(DEFINITION_KEYS, row[: len(DEFINITION_KEYS)], strict=True))
    for item in FIELDS:
        if item.sql_type == "jsonb" and isinstance(definition[item.key], str):
            value = jsonb.decode(definition[item.key], item.key)  # Django reads jsonb as text
            if isinstance(value, jsonb.Undecodable):
                raise OperationRefused(
                    f"schedule {definition['name']!r}: stored {item.key} {value.reason}; "
                    "delete the schedule and create it again"
                )
            definition[item.key] = value
    return definition


def _begin(cursor: Any) -> None:
    # Lock order of every writer: protocol lock, owner rows, schedule rows.
    # The protocol lock orders this write with adoption and reconciliation.
    bound_transaction_waits(cursor)  # a frozen peer may hold the lock
    store.protocol_lock(cursor)


def _lookalike_row(cursor: Any, name: str) -> str | None:
    """Another stored name an operator could not tell from ``name`` (case, Unicode form)."""
    identity = name_identity(name)
    for other in store.schedule_names(cursor):
        if other != name and name_identity(other) == identity:
            return str(other)
    return None


def lookalike_name(name: str, using: str = "default") -> str | None:
    """The stored name ``create_schedule`` would refuse ``name`` for as a look-alike
    (a form checks it before saving; the create checks it again under the lock)."""
    with connections[using].cursor() as cursor:
        return _lookalike_row(cursor, name)


def schedule_exists(name: str, using: str = "default") -> bool:
    """Whether a row called ``name`` is stored (a form's early answer; the create
    decides under its locks)."""
    with connections[using].cursor() as cursor:
        return store.schedule_exists(cursor, name)


def _log(action: str, name: str, actor: str) -> None:
    logger.info(
        "runtime schedule %s: %s by %s",
        name,
        action,
        actor,
        extra={"event": f"cron.runtime_{action}", "schedule": name, "actor": actor},
    )


def create_schedule(
    name: str,
    cron: str | None = None,
    task: Any = None,
    *,
    every: Any = None,
    anchor: Any = None,
    args: Any = (),
    kwargs: Mapping[str, Any] | None = None,
    timezone: str = "UTC",
    actor: str,
    using: str = "default",
    **options: Any,
) -> Schedule:
    """Create the runtime schedule ``name`` running ``task`` on ``cron``, or
    ``every`` so long (a timedelta or whole seconds, from ``anchor``: default
    the creation, to the second); return it.

    ``task`` is a ``django.tasks`` task or its dotted path; ``options`` are the
    keys a declaration accepts (``queue``, ``priority``, ``max_attempts``,
    ``tags``, ``metadata``, ``missed_fire_policy``, ...). Raises
    :class:`~awa_django.exceptions.InvalidSchedule` (naming the field) for an
    invalid definition and :class:`~awa_django.exceptions.OperationRefused`
    for a name code declares or a runtime schedule already has. The leader
    sees it at once; like any new schedule, its first fire is the latest slot
    of the last minute at most.
    """
    actor = require_actor(actor)
    schedule = build_runtime_schedule(
        name,
        {
            "cron": cron,
            "every": every,
            "anchor": anchor,
            "task": task,
            "args": args,
            "kwargs": kwargs,
            "timezone": timezone,
            **options,
        },
    )
    local = declared_in_code(schedule.name)
    if local is not None:
        _refuse_code_name(schedule.name, None)
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        _begin(cursor)
        found = _locked_row(cursor, schedule.name)
        if found is not None:
            if found[1] != RUNTIME_OWNER:
                _refuse_code_name(schedule.name, found[1])
            raise OperationRefused(
                f"schedule {schedule.name!r} already exists "
                + ("(retired: restore it)" if found[2] else "as a runtime schedule: edit it instead")
            )
        twin = _lookalike_row(cursor, schedule.name)
        if twin is not None:
            raise InvalidSchedule(
                schedule.name,
                "name",
                f"differs from {twin!r} only in case or Unicode form; choose distinct names",
            )
        if not store.insert_runtime(cursor, RUNTIME_OWNER, [schedule.columns()]):
            # a concurrent sync inserted the name first
            _refuse_code_name(schedule.name, None)
        store.notify_changed(cursor, NOTIFY_CHANNEL)
    _log("created", schedule.name, actor)
    return schedule


def create_imported_schedules(
    schedules: Sequence[Schedule], *, paused: Collection[str], actor: str, using: str = "default"
) -> set[str]:
    """Create many validated runtime schedules in one short transaction; return the names created.

    For an import (:mod:`.celery_beat`), which has validated each definition
    and checked each name against the stored ones (look-alikes included)
    before: here a name a concurrent writer took meanwhile is left out (the
    unique index decides), never overwritten. ``paused`` names are created
    paused by ``actor``. One protocol lock, one insert, one notification: the
    lock is held for one batch, so snapshots and other writers wait at most
    that long.
    """
    actor = require_actor(actor)
    if not schedules:
        return set()
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        _begin(cursor)
        created = store.insert_runtime(cursor, RUNTIME_OWNER, [s.columns() for s in schedules])
        held = [name for name in paused if name in created]
        if held:
            store.pause_runtime(cursor, held, actor, RUNTIME_OWNER)
        store.notify_changed(cursor, NOTIFY_CHANNEL)
    logger.info(
        "runtime schedules imported by %s: %d created (%d paused)",
        actor,
        len(created),
        len(held),
        extra={"event": "cron.runtime_imported", "schedules": sorted(created), "actor": actor},
    )
    return created


def runtime_definition(name: str, using: str = "default") -> dict[str, Any]:
    """The options of the runtime schedule ``name`` (as ``create_schedule`` takes them).

    Raises :class:`~awa_django.exceptions.ScheduleNotFound` or, for a name
    declared in code, :class:`~awa_django.exceptions.OperationRefused`.
    """
    name = require_schedule_name(name, "runtime_definition")
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        found = store.lock_definition(cursor, name, lock=False)
    if found is None:
        raise ScheduleNotFound(name)
    values, owner_id, _retired = found
    if owner_id != RUNTIME_OWNER:
        _refuse_code_name(name, owner_id)
    return row_options(_definition(values))


def update_schedule(name: str, *, actor: str, using: str = "default", **changes: Any) -> ActionResult:
    """Change the runtime schedule ``name``: ``changes`` are ``create_schedule``'s keywords.

    The whole new definition is validated as a declaration. A change of the
    expression, zone or missed-fire policy takes effect from the edit on: no
    slot fires twice and no slot before the edit is replayed. An unchanged
    definition writes nothing (``result.detail`` says so).
    """
    actor = require_actor(actor)
    name = require_schedule_name(name, "update_schedule")
    if "name" in changes:
        raise InvalidSchedule(name, "name", "cannot be changed; create a schedule under the new name")
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        _begin(cursor)
        found = _locked_row(cursor, name)
        if found is None:
            raise ScheduleNotFound(name)
        definition, owner_id, retired = found
        if owner_id != RUNTIME_OWNER:
            _refuse_code_name(name, owner_id)
        if retired:
            raise OperationRefused(f"schedule {name!r} is retired; restore it first")
        schedule = build_runtime_schedule(name, _changed_options(row_options(definition), changes))
        new = schedule.columns()
        changed = [k for k in COMPARED_KEYS if _stored(new[k]) != _stored(definition[k])]
        if not changed:
            return ActionResult("update", [], name=name, detail="unchanged")
        timing = any(k in TIMING_KEYS for k in changed)
        # A new timing starts at the edit: a forward move of the fire clock
        # that enqueues nothing, never an unaware fire.
        with sessions.owner_context(cursor, RUNTIME_OWNER), sessions.policies_context(cursor):
            written = store.update_runtime(cursor, new, RUNTIME_OWNER, timing)
        if not written:
            raise OperationRefused(f"schedule {name!r} could not be changed (fenced by the database)")
        store.notify_changed(cursor, NOTIFY_CHANNEL)
    _log("updated", name, actor)
    return ActionResult("update", [name], name=name, detail=", ".join(changed))


def _changed_options(stored: dict[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """The options after ``changes``: a new ``cron`` replaces an interval and a
    new ``every`` an expression (a schedule has one timing)."""
    options = {**stored, **changes}
    if changes.get("cron") is not None and "every" not in changes:
        options["every"] = options["anchor"] = None
    if changes.get("every") is not None and "cron" not in changes:
        options["cron"] = None
    return options


def _json_default(value: Any) -> Any:
    return value.astimezone(UTC).isoformat() if isinstance(value, datetime) else list(value)


def _stored(value: Any) -> Any:
    """A value as its column compares: tuples are lists, datetimes UTC ISO text, JSON round-tripped."""
    return json.loads(json.dumps(value, sort_keys=True, default=_json_default))


def delete_schedule(name: str, *, actor: str, using: str = "default") -> ActionResult:
    """Delete the runtime schedule ``name``; jobs it enqueued are not touched.

    The slot history stays in ``awa_jobs``: a schedule re-created under the
    same name never fires a slot this one fired.
    """
    actor = require_actor(actor)
    name = require_schedule_name(name, "delete_schedule")
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        _begin(cursor)
        found = _locked_row(cursor, name)
        if found is None:
            raise ScheduleNotFound(name)
        if found[1] != RUNTIME_OWNER:
            _refuse_code_name(name, found[1])
        if found[2]:
            # A retired row is a tombstone, as for the fence: restore, then delete.
            raise OperationRefused(f"schedule {name!r} is retired; restore it first")
        # The fence refuses to delete an owned row: release it first (an
        # operator's lifecycle change), then delete it, in one transaction.
        with sessions.operator_context(cursor):
            store.release(cursor, name)
            store.remove(cursor, name)
        store.notify_changed(cursor, NOTIFY_CHANNEL)
    _log("deleted", name, actor)
    return ActionResult("delete", [name], name=name)
