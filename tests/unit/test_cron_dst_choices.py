"""The DST choices of a schedule (``DstPolicy``) against a brute-force oracle.

The oracle does not use the engine's search: it walks every UTC minute across each
DST change of 2026 in four zones (one with a 30-minute shift, one in the southern
hemisphere changing at midnight), records which instants show each local wall time,
matches wall times against the expression with its own field reader, and applies the
policy's definition to the wall times seen twice or never. ``fires_between``,
chained ``next_fire``, ``next_fire`` and ``latest_fire`` from probes around each
change must give exactly its answer, for every combination of choices.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime, timedelta
from functools import cache
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from awa_django.cron.search import (
    VIXIE,
    CronError,
    DstPolicy,
    due_fires,
    fires_between,
    latest_fire,
    next_fire,
    parse_cron,
)

ZONES = ["America/New_York", "Europe/London", "Australia/Lord_Howe", "America/Santiago"]
EXPRESSIONS = [
    "30 2 * * *",  # in New York's gap; in London's and Lord Howe's fold ends
    "0 1 * * *",  # in London's gap and New York's fold
    "30 1 * * *",  # in every fold of the northern zones
    "45 1 * * *",  # in Lord Howe's fold (01:30-02:00)
    "15 2 * * *",  # in Lord Howe's gap (02:00-02:30)
    "0,20,45 2 * * *",  # Lord Howe: shifted 02:20 lands after the real 02:45
    "0 0 * * *",  # Santiago changes at midnight
    "30 23 * * *",  # Santiago's fold (23:00-24:00)
    "*/15 * * * *",
    "0 * * * *",
    "15 * * * *",
]
POLICIES = [
    DstPolicy(repeated, skipped)
    for repeated in (None, "first", "last", "both")
    for skipped in (None, "shift", "skip")
]
MINUTE = timedelta(minutes=1)


# --- the oracle ----------------------------------------------------------------------------


def field_values(text: str, low: int, high: int) -> set[int]:
    """The values of a simple cron field: ``*``, ``*/n``, ``a`` and lists of them."""
    out: set[int] = set()
    for item in text.split(","):
        if item == "*":
            out |= set(range(low, high + 1))
        elif item.startswith("*/"):
            out |= set(range(low, high + 1, int(item[2:])))
        else:
            out.add(int(item))
    return out


@cache
def transitions(zone: str) -> list[datetime]:
    """The UTC hours of 2026 at which the zone's offset has changed."""
    tz, out = ZoneInfo(zone), []
    t = datetime(2026, 1, 1, tzinfo=UTC)
    before = t.astimezone(tz).utcoffset()
    while t.year == 2026:
        now = t.astimezone(tz).utcoffset()
        if now != before:
            out.append(t)
            before = now
        t += timedelta(hours=1)
    assert len(out) == 2, (zone, out)
    return out


@cache
def wall_clock(zone: str, change: datetime) -> tuple[dict[datetime, list[datetime]], list[datetime]]:
    """Every UTC minute of two days around ``change``: the instants showing each wall
    time, and the instants in order."""
    tz = ZoneInfo(zone)
    shows: dict[datetime, list[datetime]] = defaultdict(list)
    instants = []
    u = change - timedelta(hours=30)
    while u <= change + timedelta(hours=30):
        shows[u.astimezone(tz).replace(tzinfo=None)].append(u)
        instants.append(u)
        u += MINUTE
    return shows, instants


def expected_fires(text: str, zone: str, change: datetime, dst: DstPolicy) -> list[datetime]:
    """The fires of ``text`` in the two days around ``change``, from the definitions."""
    minute_field, hour_field = text.split()[:2]
    minutes, hours = field_values(minute_field, 0, 59), field_values(hour_field, 0, 23)
    fixed = not (minute_field.startswith("*") or hour_field.startswith("*"))
    repeated = dst.repeated or ("first" if fixed else "both")
    skipped = dst.skipped or ("transition" if fixed else "skip")
    shows, instants = wall_clock(zone, change)
    tz = ZoneInfo(zone)
    wall = instants[0].astimezone(tz).replace(tzinfo=None) + timedelta(hours=3)
    end = instants[-1].astimezone(tz).replace(tzinfo=None) - timedelta(hours=3)
    fires: set[datetime] = set()
    while wall <= end:
        if wall.minute in minutes and wall.hour in hours:
            seen = shows.get(wall, [])
            if len(seen) == 1:
                fires.add(seen[0])
            elif len(seen) == 2:
                fires.update({"first": seen[:1], "last": seen[1:], "both": seen}[repeated])
            elif skipped != "skip":
                # The clock jumped over `wall`: the first instant after the jump shows
                # a later wall time; the gap starts just after the wall time before it.
                jump = next(u for u in instants if u.astimezone(tz).replace(tzinfo=None) > wall)
                gap_start = (jump - MINUTE).astimezone(tz).replace(tzinfo=None) + MINUTE
                fires.add(jump if skipped == "transition" else jump + (wall - gap_start))
        wall += MINUTE
    return sorted(fires)


def window(change: datetime) -> tuple[datetime, datetime]:
    """The instants compared: every fire in it comes from a wall time the oracle read."""
    return change - timedelta(hours=22), change + timedelta(hours=22)


def probes(change: datetime, fires: list[datetime]) -> list[datetime]:
    """Instants to search from: around each fire near the change, and every 10 minutes."""
    near = [f for f in fires if abs(f - change) <= timedelta(hours=4)]
    out = {f + d for f in near for d in (timedelta(seconds=-1), timedelta(0), timedelta(microseconds=500))}
    out |= {change + timedelta(minutes=m, microseconds=500) for m in range(-180, 181, 10)}
    lo, hi = window(change)
    return sorted(p for p in out if lo <= p < hi)


# --- the engine against the oracle --------------------------------------------------------


@pytest.mark.parametrize("zone", ZONES)
@pytest.mark.parametrize("text", EXPRESSIONS)
def test_dst_choices__every_query_matches_the_oracle(zone: str, text: str) -> None:
    expr, tz = parse_cron(text), ZoneInfo(zone)
    for change in transitions(zone):
        lo, hi = window(change)
        for dst in POLICIES:
            where = (text, zone, change.isoformat(), dst)
            expected = [f for f in expected_fires(text, zone, change, dst) if lo < f <= hi]
            assert fires_between(expr, tz, lo, hi, dst=dst) == expected, where
            chained: list[datetime] = []
            at: datetime | None = lo
            while at is not None and (at := next_fire(expr, tz, at, dst=dst)) is not None and at <= hi:
                chained.append(at)
            assert chained == expected, where
            for probe in probes(change, expected):
                later = [f for f in expected if f > probe]
                earlier = [f for f in expected if f <= probe]
                if later:
                    assert next_fire(expr, tz, probe, dst=dst) == later[0], (*where, probe)
                got = latest_fire(expr, tz, lo, probe, dst=dst)
                assert got == (earlier[-1] if earlier else None), (*where, probe)


def test_dst_choices__default_is_the_vixie_rule_bit_for_bit() -> None:
    expr, tz = parse_cron("30 2 * * *"), ZoneInfo("America/New_York")
    lo, hi = datetime(2026, 3, 1, tzinfo=UTC), datetime(2026, 12, 1, tzinfo=UTC)
    assert DstPolicy() == VIXIE and VIXIE.is_vixie
    assert fires_between(expr, tz, lo, hi) == fires_between(expr, tz, lo, hi, dst=DstPolicy(None, None))


# --- the documented examples --------------------------------------------------------------

NEW_YORK = ZoneInfo("America/New_York")
LORD_HOWE = ZoneInfo("Australia/Lord_Howe")


def day_fires(text: str, tz: ZoneInfo, day: datetime, dst: DstPolicy) -> list[str]:
    fires = fires_between(parse_cron(text), tz, day - timedelta(hours=1), day + timedelta(days=1), dst=dst)
    return [f.astimezone(tz).isoformat() for f in fires if f.astimezone(tz).date() == day.date()]


def test_dst_choices__new_york_spring_forward_0230() -> None:
    day = datetime(2026, 3, 8, tzinfo=NEW_YORK)
    assert day_fires("30 2 * * *", NEW_YORK, day, VIXIE) == ["2026-03-08T03:00:00-04:00"]
    assert day_fires("30 2 * * *", NEW_YORK, day, DstPolicy(skipped="shift")) == ["2026-03-08T03:30:00-04:00"]
    assert day_fires("30 2 * * *", NEW_YORK, day, DstPolicy(skipped="skip")) == []


def test_dst_choices__new_york_fall_back_0130() -> None:
    day = datetime(2026, 11, 1, tzinfo=NEW_YORK)
    first, second = "2026-11-01T01:30:00-04:00", "2026-11-01T01:30:00-05:00"
    assert day_fires("30 1 * * *", NEW_YORK, day, VIXIE) == [first]
    assert day_fires("30 1 * * *", NEW_YORK, day, DstPolicy(repeated="first")) == [first]
    assert day_fires("30 1 * * *", NEW_YORK, day, DstPolicy(repeated="last")) == [second]
    assert day_fires("30 1 * * *", NEW_YORK, day, DstPolicy(repeated="both")) == [first, second]
    # A wildcard expression follows its explicit choice too.
    hourly = day_fires("0 * * * *", NEW_YORK, day, DstPolicy(repeated="first"))
    assert len(hourly) == 24 and "2026-11-01T01:00:00-05:00" not in hourly


def test_dst_choices__lord_howe_shift_keeps_the_order_of_instants() -> None:
    day = datetime(2026, 10, 4, tzinfo=LORD_HOWE)  # 02:00 jumps to 02:30 (+11:00)
    assert day_fires("0,20,45 2 * * *", LORD_HOWE, day, DstPolicy(skipped="shift")) == [
        "2026-10-04T02:30:00+11:00",  # 02:00, moved by the 30-minute gap
        "2026-10-04T02:45:00+11:00",  # the real 02:45
        "2026-10-04T02:50:00+11:00",  # 02:20, moved
    ]
    assert day_fires("0,20,45 2 * * *", LORD_HOWE, day, DstPolicy(skipped="skip")) == [
        "2026-10-04T02:45:00+11:00"
    ]


def test_dst_choices__due_fires_passes_the_policy() -> None:
    expr = parse_cron("30 1 * * *")
    created = datetime(2026, 10, 1, tzinfo=UTC)
    now = datetime(2026, 11, 1, 6, 40, tzinfo=UTC)  # after the second 01:30 (06:30 UTC)
    last = datetime(2026, 10, 31, 5, 30, tzinfo=UTC)
    kwargs = {"last_enqueued_at": last, "created_at": created, "now": now, "limit": 5}
    assert due_fires(expr, NEW_YORK, catch_up=False, **kwargs) == [datetime(2026, 11, 1, 5, 30, tzinfo=UTC)]
    both = DstPolicy(repeated="both")
    assert due_fires(expr, NEW_YORK, catch_up=True, dst=both, **kwargs) == [
        datetime(2026, 11, 1, 5, 30, tzinfo=UTC),
        datetime(2026, 11, 1, 6, 30, tzinfo=UTC),
    ]
    last_only = DstPolicy(repeated="last")
    assert due_fires(expr, NEW_YORK, catch_up=False, dst=last_only, **kwargs) == [
        datetime(2026, 11, 1, 6, 30, tzinfo=UTC)
    ]


# --- validation ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "option", "accepted"),
    [
        ({"repeated": "none"}, "dst_repeated", "'first', 'last', 'both'"),
        ({"repeated": "First"}, "dst_repeated", "'first', 'last', 'both'"),
        ({"skipped": "later"}, "dst_skipped", "'shift', 'skip'"),
        ({"skipped": 1}, "dst_skipped", "'shift', 'skip'"),
    ],
)
def test_dst_policy__refuses_unknown_choices_naming_the_option(kwargs, option, accepted) -> None:
    with pytest.raises(CronError) as caught:
        DstPolicy(**kwargs)
    assert option in str(caught.value) and accepted in str(caught.value)
    assert isinstance(caught.value, ValueError)


# --- a property over random simple expressions --------------------------------------------

minute_fields = st.sampled_from(["0", "15", "30", "45", "0,30", "10,40", "*/20", "*/30", "*"])
hour_fields = st.sampled_from(["0", "1", "2", "3", "23", "1,2", "1-3", "*", "*/2"])


@settings(max_examples=40, deadline=None, database=None)
@given(
    minute=minute_fields,
    hour=hour_fields,
    zone=st.sampled_from(ZONES),
    which=st.integers(0, 1),
    dst=st.sampled_from(POLICIES),
)
def test_dst_choices__random_expressions_match_the_oracle(minute, hour, zone, which, dst) -> None:
    if "-" in hour:  # the oracle's field reader takes lists; spell the range out
        low, high = map(int, hour.split("-"))
        hour = ",".join(str(h) for h in range(low, high + 1))
    text = f"{minute} {hour} * * *"
    change = transitions(zone)[which]
    lo, hi = window(change)
    expected = [f for f in expected_fires(text, zone, change, dst) if lo < f <= hi]
    assert fires_between(parse_cron(text), ZoneInfo(zone), lo, hi, dst=dst) == expected
