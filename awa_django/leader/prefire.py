"""Fires planned before their slot, sent the moment it arrives.

Between passes the leader knows the earliest stored ``next_fire_at`` (the
next *slot*). Shortly before it, :func:`prepare` reads the rows due at that
slot (at most ``PREPARED_ROWS``, so memory stays bounded) and plans their
fires as of the slot, serialized; :func:`fire_prepared` then waits until just
before the slot and sends the batches, side by side over several connections,
each in a statement that has the *database* sleep the last moment
(``pg_sleep_until``: the database clock decides, as for every fire, never the
leader's) and then fire it. At the slot only the fire statements run, with no
round trip to the leader, instead of a read and the Python planning of every
row.

Nothing here weakens a guarantee: each entry is the usual compare-and-swap of
``awa_cron_fire_v8``, re-checked when it runs, so a row paused, retired,
changed or fired by someone else since it was read is simply not fired (and is
evaluated again by the next ordinary pass); no fire function runs before the
slot; and a plan that reaches the database more than ``STALE_AFTER`` seconds
after its slot is dropped unfired, so a slow leader falls back to an ordinary
pass (which coalesces what a long delay missed) rather than fire a stale plan.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import connections

from ..conf import conf
from ..db import jsonb
from ..store import schedules as store
from ..store.schedule_rows import PlannedFire
from . import evaluator
from .firing import AtSlot, SerializedPlan, decode_args, log_fired
from .pipeline import FirePipeline, finish_all

# How long before a slot its rows are read and planned: enough for a few
# thousand rows on a loaded machine, short enough that a stop request or a
# schedule change waits at most this long (the change is then evaluated by
# the ordinary pass that follows the fire, under the same CAS).
PREPARE_AHEAD = 0.5
# Rows planned ahead for one slot; the rest of a larger burst is fired by the
# ordinary pass that follows, in its usual batches.
PREPARED_ROWS = 2000
# Connections a slot's fires are spread over (the leader's own and
# FIRE_LANES - 1 kept for the purpose while it leads): the fire statements of
# a large slot are mostly database CPU, so on a busy server the slot's rows
# are created sooner when several backends share them out than when one or
# two take turns with every worker's backend. A slot gets a lane per
# LANE_ROWS rows, at most FIRE_LANES, and batches of at most FIRE_BATCH_SIZE.
FIRE_LANES = 4
LANE_ROWS = 100
# A plan whose slot is further in the past than this when the database is
# ready to send it is dropped.
STALE_AFTER = 1.0
# The last part of the wait for a slot, spent in pg_sleep_until (the part
# before it is spent on the leader's thread, where a stop request ends it):
# a statement_timeout shorter than this would cancel it.
DATABASE_WAIT = 0.05


@dataclass
class Prepared:
    """The fires of one slot, planned ahead."""

    slot: datetime
    # time.monotonic() at the slot, as measured when the rows were read (the
    # database's clock, through the distance to the slot it reported).
    slot_at: float = 0.0
    batches: list[SerializedPlan] = field(default_factory=list)
    evaluated: int = 0


def prepare(
    using: str = "default", ahead: float = PREPARE_AHEAD, rows_limit: int | None = None
) -> Prepared | None:
    """Read and plan the rows due at the next slot, if it is within ``ahead``
    seconds (and not already due); None when there is nothing to prepare."""
    limit = int(conf.CATCH_UP_LIMIT)
    with connections[using].cursor() as cursor:
        found = store.next_slot(cursor, ahead, rows_limit or PREPARED_ROWS, jsonb.max_depth())
    if found is None:
        return None
    rows = found.rows  # each planned as of the slot it fires at
    prepared = Prepared(slot=found.slot, slot_at=time.monotonic() + found.slot_in, evaluated=len(rows))
    size = batch_size(len(rows))
    for start in range(0, len(rows), size):
        at_slot = AtSlot(prepared.slot, STALE_AFTER)
        prepared.batches.append(
            SerializedPlan(evaluator.plan_batch(rows[start : start + size], limit), at_slot)
        )
    return prepared


def batch_size(rows: int) -> int:
    """Rows per batch for a slot of ``rows``: one batch per lane it gets, or more
    batches of FIRE_BATCH_SIZE when that is not enough."""
    lanes = max(1, min(FIRE_LANES, -(-rows // LANE_ROWS)))
    batches = max(lanes, -(-rows // evaluator.FIRE_BATCH_SIZE))
    return max(1, -(-rows // batches))


def fire_prepared(
    prepared: Prepared,
    using: str = "default",
    on_fired: Callable[[list[dict[str, Any]]], None] | None = None,
    stop: threading.Event | None = None,
) -> evaluator.PassResult | None:
    """Wait for the slot, then send the prepared batches.

    The leader's thread waits until ``DATABASE_WAIT`` before the slot (a
    ``stop`` ends that wait: nothing is sent), then sends each batch by the
    query ``fire_plan_at_slot``: the database sleeps the rest, checks the
    plan is fresh and fires it, in one statement. Returns None, having fired
    nothing, when stopped or the plan is stale. With several batches (in
    autocommit), they are dealt out over up to ``FIRE_LANES`` connections:
    this one and pipelines on the leader's kept connections, so the
    statements wait and fire side by side (the batches hold different rows).
    The jobs are logged and handed to ``on_fired`` (one call per
    batch) only when every batch has committed, so announcing never delays a
    fire.
    """
    result = evaluator.PassResult(evaluated=prepared.evaluated)
    fired: list[list[dict[str, Any]]] = []
    pipelines: list[FirePipeline] = []
    if not connections[using].in_atomic_block:
        lanes = min(FIRE_LANES, len(prepared.batches))
        pipelines = [FirePipeline(using, _fire_batch, fired.append, lane) for lane in range(lanes - 1)]
    try:
        local_wait = prepared.slot_at - DATABASE_WAIT - time.monotonic()
        if stop is not None and stop.wait(max(0.0, local_wait)):
            return None
        for plan in prepared.batches:
            if isinstance(plan, SerializedPlan) and plan.at_slot is not None:
                plan.at_slot.stale = STALE_AFTER  # as configured when sent
        lanes = len(pipelines) + 1
        for index, plan in enumerate(prepared.batches):
            if index % lanes:
                pipelines[index % lanes - 1].submit(plan)
        with connections[using].cursor() as cursor:
            for plan in prepared.batches[0::lanes]:
                fired.append(evaluator.fire_plan(cursor, plan))
    finally:
        finish_all(pipelines)
    if all(_stale(plan) for plan in prepared.batches):
        return None
    for jobs in fired:
        result.fired += len(jobs)
        log_fired(jobs)
        if on_fired is None:
            result.jobs.extend(decode_args(jobs))
        else:
            on_fired(jobs)
    return result


def _stale(plan: list[PlannedFire]) -> bool:
    return isinstance(plan, SerializedPlan) and plan.at_slot is not None and plan.at_slot.stale_seen


def _fire_batch(cursor: Any, plan: list[PlannedFire]) -> list[dict[str, Any]]:
    return evaluator.fire_plan(cursor, plan)
