"""Interval timing: slots at anchor + k * every in absolute time, asked as the
cron search is (fires in a range, next fire, latest fire, due fires)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from awa_django.cron.describe import describe_schedule
from awa_django.cron.interval import Interval, describe_every, interval_anchor
from awa_django.cron.search import CronError, due_fires, fires_between, latest_fire, next_fire, timing_of

UTCZ = ZoneInfo("UTC")
BERLIN = ZoneInfo("Europe/Berlin")
BASE = datetime(2026, 1, 1, tzinfo=UTC)

anchors = st.integers(min_value=0, max_value=10 * 365 * 86400).map(lambda s: BASE + timedelta(seconds=s))
everies = st.integers(min_value=1, max_value=3 * 86400)
offsets = st.integers(min_value=-5 * 86400 * 10**6, max_value=5 * 86400 * 10**6)


def is_slot(interval: Interval, t: datetime) -> bool:
    return (t - interval.anchor) % timedelta(seconds=interval.every) == timedelta(0)


@settings(max_examples=200, deadline=None, database=None)
@given(anchors, everies, offsets, st.integers(min_value=0, max_value=400))
def test_fires_between__every_slot_in_the_range_once_in_order(
    anchor: datetime, every: int, offset_us: int, span_slots: int
) -> None:
    interval = Interval(every, anchor)
    after = anchor + timedelta(microseconds=offset_us)
    until = after + timedelta(seconds=every * span_slots) + timedelta(microseconds=offset_us % 997)
    fires = fires_between(interval, BERLIN, after, until)
    assert all(is_slot(interval, f) for f in fires)
    assert all(after < f <= until for f in fires)
    assert all(b - a == timedelta(seconds=every) for a, b in zip(fires, fires[1:], strict=False))
    # None skipped at either end: the slot before the first is <= after, the one after the last > until.
    first = fires[0] if fires else next_fire(interval, BERLIN, after)
    assert first is not None and first - timedelta(seconds=every) <= after
    if fires:
        assert fires[-1] + timedelta(seconds=every) > until
    else:
        assert first > until


@settings(max_examples=200, deadline=None, database=None)
@given(anchors, everies, offsets)
def test_next_and_latest__are_neighbouring_slots(anchor: datetime, every: int, offset_us: int) -> None:
    interval = Interval(every, anchor)
    t = anchor + timedelta(microseconds=offset_us)
    nxt = next_fire(interval, UTCZ, t)
    latest = latest_fire(interval, UTCZ, None, t)
    assert nxt is not None and latest is not None
    assert is_slot(interval, nxt) and is_slot(interval, latest)
    assert latest <= t < nxt and nxt - latest == timedelta(seconds=every)


def test_slots__are_absolute_across_a_dst_change_whatever_the_zone() -> None:
    # Europe/Berlin springs forward at 2026-03-29 01:00 UTC: an interval does not care.
    interval = Interval(5400, datetime(2026, 3, 28, 22, 0, tzinfo=UTC))
    fires = fires_between(interval, BERLIN, interval.anchor, interval.anchor + timedelta(hours=6))
    assert [f.strftime("%H:%M") for f in fires] == ["23:30", "01:00", "02:30", "04:00"]


def test_due_fires__first_fire_is_the_anchor_and_coalesce_takes_the_latest_slot() -> None:
    created = datetime(2026, 1, 1, 12, 0, 0, 700_000, tzinfo=UTC)
    interval = Interval(90, interval_anchor(None, created))
    assert interval.anchor == datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    now = created + timedelta(seconds=5)
    assert due_fires(
        interval, UTCZ, last_enqueued_at=None, created_at=created, now=now, catch_up=True, limit=10
    ) == [interval.anchor]
    last = interval.anchor
    later = last + timedelta(seconds=400)
    slots = [last + timedelta(seconds=90 * k) for k in (1, 2, 3, 4)]
    kwargs = {"created_at": created, "now": later, "limit": 10, "last_enqueued_at": last}
    assert due_fires(interval, UTCZ, catch_up=True, **kwargs) == slots
    assert due_fires(interval, UTCZ, catch_up=False, **kwargs) == slots[-1:]
    assert due_fires(interval, UTCZ, catch_up=True, **{**kwargs, "limit": 2}) == slots[:2]


def test_explicit_anchor__slots_count_from_it_also_before_the_creation() -> None:
    anchor = datetime(2020, 1, 1, 0, 0, 30, tzinfo=UTC)
    interval = Interval(60, interval_anchor(anchor, BASE))
    assert next_fire(interval, UTCZ, BASE) == BASE + timedelta(seconds=30)


def test_words() -> None:
    assert describe_every(90) == "every 90 seconds"
    assert describe_every(1) == "every second"
    assert describe_every(120) == "every 2 minutes"
    assert describe_every(3600) == "every hour"
    assert describe_every(86400 * 2) == "every 2 days"
    assert describe_schedule(None, 90) == "every 90 seconds"


def test_invalid_intervals_are_refused() -> None:
    with pytest.raises(ValueError, match="every"):
        Interval(0, BASE)
    with pytest.raises(ValueError, match="timezone-aware"):
        Interval(5, datetime(2026, 1, 1))
    with pytest.raises(CronError):
        timing_of(None, 0, None, BASE)
    with pytest.raises(CronError):
        timing_of(None, None, None, BASE)
    assert timing_of(None, 5, None, BASE) == Interval(5, BASE)
