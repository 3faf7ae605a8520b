"""Fire times and fired jobs of one schedule, as the admin shows them."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django.urls import reverse

from .. import contract
from ..cron import search
from ..db.timestamps import with_safe_timestamps
from ..models import CronJob
from ..operations import schedules
from ..store import schedule_views
from .common import TIME_FORMAT, seconds, utc
from .jobs import error_line, fire_time, with_last_error


def zone_of(row: CronJob) -> ZoneInfo | None:
    try:
        return search.parse_timezone(row.timezone)
    except search.CronError:
        return None


def dst_marked_fires(row: CronJob, now: datetime, count: int = 10) -> list[dict[str, Any]]:
    """The next ``count`` fires in local time and UTC; a fire after a UTC offset change is marked."""
    zone = zone_of(row)
    fires = schedules.upcoming_fires(row, count, after=now)
    out: list[dict[str, Any]] = []
    previous = now.astimezone(zone).utcoffset() if zone else None
    for fire in fires:
        local = fire.astimezone(zone) if zone else fire
        offset = local.utcoffset()
        note = ""
        if offset != previous:
            note = f"DST transition before this fire: UTC{_offset(previous)} → UTC{_offset(offset)}"
        # Formatted here: the date filter would convert to the site's time zone.
        out.append(
            {
                "local": local,
                "utc": fire,
                "dst": note,
                "local_text": local.strftime(TIME_FORMAT),
                "utc_text": utc(fire),
            }
        )
        previous = offset
    return out


def _offset(value: timedelta | None) -> str:
    if value is None:
        return ""
    minutes = int(value.total_seconds() // 60)
    sign = "+" if minutes >= 0 else "-"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def last_fires(row: CronJob, count: int = 20) -> list[dict[str, Any]]:
    """The newest ``count`` jobs of ``row`` with their state and duration (one query)."""
    jobs = schedule_views.schedule_jobs(row._state.db or "default", row.name)
    zone = zone_of(row)
    out = []
    for job in with_last_error(with_safe_timestamps(jobs))[:count]:
        duration = getattr(job, "awa_duration", None)
        fire_at = job.metadata.get(contract.CRON_FIRE_AT_KEY)
        out.append(
            {
                "job": job,
                "url": reverse("admin:awa_django_job_change", args=[job.id]),
                "fire_at": fire_time(fire_at, zone)
                if fire_at
                else "manual trigger by " + str(job.metadata.get(contract.TRIGGERED_BY_KEY, "?")),
                "duration": seconds(duration.total_seconds()) if duration is not None else "-",
                "error": error_line(job),
            }
        )
    return out
