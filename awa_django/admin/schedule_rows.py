"""Schedule list rows in the admin: what each row shows beyond its columns
(next fire, overdue, last job, queue paused), computed once per page with a
fixed number of queries."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.contrib.admin.views.main import ChangeList
from django.db import connections
from django.http import HttpRequest

from ..conf import conf
from ..cron import search
from ..db import sessions
from ..models import CronJob
from ..operations import declarations, schedules
from ..operations.declarations import Mismatch
from ..store import schedule_views
from ..store import schedules as store
from .common import live_leader
from .fires import zone_of

# The stored next_fire_at of a row that can never fire (see evaluator.NEVER).
NEVER_YEAR = 9999


@dataclass
class RowInfo:
    """What one list row shows beyond its columns, computed once per page."""

    now: datetime
    leader: bool
    queue_paused: bool = False
    last_job: tuple[int, str, bool] | None = None
    next_fire: datetime | None = None
    overdue_since: datetime | None = None
    # How the row differs from this code's declarations (no longer declared, owned elsewhere).
    mismatch: Mismatch | None = None


def _due(row: CronJob) -> datetime | None:
    """The automatic fire the leader is waiting for: stored, or (not computed yet) the
    first slot after the leader's search start (the last fire, or for a row that never
    fired 60 s before its creation: the leader fires a slot that close)."""
    if row.next_fire_at is not None:
        return None if row.next_fire_at.year >= NEVER_YEAR else row.next_fire_at
    zone = zone_of(row)
    if row.created_at is None or zone is None:
        return None
    since = search.search_start(row.last_enqueued_at, row.created_at)
    try:
        timing = search.timing_of(row.cron_expr, row.every_seconds, row.anchor, row.created_at)
        return search.next_fire(timing, zone, since)
    except search.CronError:
        return None


def row_info(row: CronJob, now: datetime, leader: bool, paused_queues: set[str]) -> RowInfo:
    info = RowInfo(now=now, leader=leader, queue_paused=row.queue in paused_queues)
    upcoming = schedules.upcoming_fires(row, 1, after=now)
    info.next_fire = upcoming[0] if upcoming else None
    if leader and not row.is_paused and not row.is_retired:
        due = _due(row)
        if due is not None and due < now - timedelta(seconds=conf.OVERDUE_AFTER):
            info.overdue_since = due
    return info


def annotate_page(rows: list[CronJob], using: str = "default") -> None:
    """Attach a :class:`RowInfo` to every row: a fixed number of queries per page."""
    now = sessions.database_now(using)
    leader = live_leader(using) is not None
    queues = sorted({r.queue for r in rows})
    paused = schedule_views.paused_queues(using, queues)
    last: dict[str, tuple[int, str, bool]] = {}
    if rows:
        with connections[using].cursor() as cursor:
            last = store.last_jobs(cursor, [r.name for r in rows])
    names = declarations.declared_names()
    for row in rows:
        info = row_info(row, now, leader, paused)
        info.last_job = last.get(row.name)
        info.mismatch = declarations.mismatch(row, names)
        vars(row)["_awa"] = info


class ScheduleChangeList(ChangeList):
    def get_results(self, request: HttpRequest) -> None:
        super().get_results(request)
        self.result_list = list(self.result_list)
        annotate_page(self.result_list, self.queryset.db)
