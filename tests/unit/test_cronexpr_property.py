"""cronexpr against a brute-force reference written here, over generated expressions.

The reference shares no code with ``awa_django.cronexpr``. Expressions are generated as
structured data; the test renders them to text for ``parse_cron`` and builds the
reference's value sets straight from the structure. The reference then walks local wall
time minute by minute, tests plain set membership, applies the classic day rule (a day
field whose text starts with ``*`` or ``?`` means AND, otherwise OR) and the Vixie DST
rule explicitly, and collects UTC instants.

Profiles: ``ci`` (default, bounded to stay well under a minute) and ``long``
(``AWA_HYPOTHESIS_PROFILE=long pytest tests/unit/test_cronexpr_property.py``).
Counterexamples found by shrinking are kept as regular tests in test_cronexpr_days.py.
"""

from __future__ import annotations

import bisect
import calendar
import os
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from awa_django.cron.search import CronError, fires_between, latest_fire, next_fire, parse_cron

settings.register_profile(
    "ci",
    max_examples=60,
    deadline=None,
    database=None,
    derandomize=False,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "long",
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
PROFILE = os.environ.get("AWA_HYPOTHESIS_PROFILE", "ci")

# 30-minute shift (Lord Howe), 45-minute offsets (Chatham, Kathmandu), a 2-hour shift
# (Troll), DST at midnight (Havana, Santiago), plus ordinary zones.
ZONES = [
    "Australia/Lord_Howe",
    "Pacific/Chatham",
    "Antarctica/Troll",
    "America/Havana",
    "America/Santiago",
    "Europe/Berlin",
    "America/New_York",
    "Asia/Kathmandu",
    "UTC",
]
YEARS = [2024, 2026, 2027, 2028, 2100]
DAY_NAMES = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
MONTH_NAMES = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]


# --- generated expressions -----------------------------------------------------------------


@dataclass(frozen=True)
class Item:
    """One list item: text for parse_cron, and what it means for the reference."""

    text: str
    values: frozenset[int] = frozenset()  # plain values (weekdays 0-6, Sunday 0)
    last_day: bool = False  # dom L
    nearest: tuple[int, ...] = ()  # dom nW; 0 is LW
    nth: tuple[tuple[int, int], ...] = ()  # dow d#k
    last_weekday: tuple[int, ...] = ()  # dow dL


def plain_items(
    low: int, high: int, names: list[str] | None = None, *, dow: bool = False
) -> st.SearchStrategy[Item]:
    def fold(values: range | list[int]) -> frozenset[int]:
        return frozenset(v % 7 for v in values) if dow else frozenset(values)

    def name(v: int) -> st.SearchStrategy[str]:
        if names and 0 <= v - low < len(names) and not (dow and v == 7):
            return st.sampled_from([str(v), names[v - low], names[v - low].upper()])
        return st.just(str(v))

    value = st.integers(low, high)
    single = value.flatmap(lambda v: name(v).map(lambda t: Item(t, fold([v]))))
    pair = st.tuples(value, value).map(sorted)
    span = pair.flatmap(
        lambda p: st.tuples(name(p[0]), name(p[1])).map(
            lambda t: Item(f"{t[0]}-{t[1]}", fold(range(p[0], p[1] + 1)))
        )
    )
    stepped = st.tuples(pair, st.integers(1, high - low + 1)).map(
        lambda a: Item(f"{a[0][0]}-{a[0][1]}/{a[1]}", fold(range(a[0][0], a[0][1] + 1, a[1])))
    )
    # "a/n" runs from a to the end of the field; in day-of-week the end is Saturday (6).
    end = 6 if dow else high
    open_step = st.tuples(value, st.integers(1, high - low + 1)).map(
        lambda a: Item(f"{a[0]}/{a[1]}", fold(range(a[0] % 7 if dow else a[0], end + 1, a[1])))
    )
    return st.one_of(single, span, stepped, open_step)


def field_text(items: list[Item]) -> str:
    return ",".join(item.text for item in items)


@st.composite
def star_field(draw: st.DrawFn, low: int, high: int, *, min_step: int = 1) -> tuple[str, frozenset[int]]:
    step = draw(st.one_of(st.none(), st.integers(min_step, high - low + 1)))
    if step is None:
        return "*", frozenset(range(low, high + 1))
    return f"*/{step}", frozenset(range(low, high + 1, step))


@st.composite
def time_field(draw: st.DrawFn, low: int, high: int, dense: bool) -> tuple[str, frozenset[int]]:
    if dense and draw(st.booleans()):
        return draw(star_field(low, high, min_step=1 if high < 24 else 10))
    items = draw(st.lists(plain_items(low, high), min_size=1, max_size=3))
    values = frozenset().union(*(i.values for i in items))
    assume(len(values) <= (24 if high < 24 else 6))
    return field_text(items), values


@st.composite
def dom_field(draw: st.DrawFn) -> tuple[str, bool, list[Item]]:
    kind = draw(st.sampled_from(["star", "question", "stepped-star", "plain"]))
    if kind == "star":
        return "*", True, [Item("*", frozenset(range(1, 32)))]
    if kind == "question":
        return "?", True, [Item("?", frozenset(range(1, 32)))]
    if kind == "stepped-star":
        text, values = draw(star_field(1, 31, min_step=2))
        return text, True, [Item(text, values)]
    special = st.one_of(
        st.just(Item("L", last_day=True)),
        st.just(Item("LW", nearest=(0,))),
        st.integers(1, 31).map(lambda n: Item(f"{n}W", nearest=(n,))),
    )
    items = draw(st.lists(st.one_of(plain_items(1, 31), special), min_size=1, max_size=3))
    return field_text(items), False, items


@st.composite
def dow_field(draw: st.DrawFn) -> tuple[str, bool, list[Item]]:
    kind = draw(st.sampled_from(["star", "question", "stepped-star", "plain", "plain"]))
    if kind == "star":
        return "*", True, [Item("*", frozenset(range(7)))]
    if kind == "question":
        return "?", True, [Item("?", frozenset(range(7)))]
    if kind == "stepped-star":
        step = draw(st.integers(1, 8))
        return f"*/{step}", True, [Item(f"*/{step}", frozenset(v % 7 for v in range(0, 8, step)))]
    day = st.integers(0, 7)
    special = st.one_of(
        st.tuples(day, st.integers(1, 5)).map(lambda a: Item(f"{a[0]}#{a[1]}", nth=((a[0] % 7, a[1]),))),
        day.map(lambda d: Item(f"{d}L", last_weekday=(d % 7,))),
        st.integers(0, 6).map(lambda d: Item(f"{DAY_NAMES[d]}L", last_weekday=(d,))),
    )
    items = draw(st.lists(st.one_of(plain_items(0, 7, DAY_NAMES, dow=True), special), min_size=1, max_size=3))
    return field_text(items), False, items


@dataclass(frozen=True)
class Spec:
    text: str
    seconds: frozenset[int]
    minutes: frozenset[int]
    hours: frozenset[int]
    months: frozenset[int]
    dom_star: bool
    dom: tuple[Item, ...]
    dow_star: bool
    dow: tuple[Item, ...]


@st.composite
def specs(draw: st.DrawFn, dense: bool) -> Spec:
    six = draw(st.booleans())
    if six:
        sec_text, seconds = draw(
            st.sampled_from([("0", frozenset({0})), ("30", frozenset({30})), ("0,30", frozenset({0, 30}))])
        )
    else:
        sec_text, seconds = "", frozenset({0})
    minute_text, minutes = draw(time_field(0, 59, dense))
    hour_text, hours = draw(time_field(0, 23, dense))
    dom_text, dom_star, dom = draw(dom_field())
    if draw(st.booleans()):
        month_text, months = draw(star_field(1, 12))
    else:
        month_items = draw(st.lists(plain_items(1, 12, MONTH_NAMES), min_size=1, max_size=3))
        month_text = field_text(month_items)
        months = frozenset().union(*(i.values for i in month_items))
    dow_text, dow_star, dow = draw(dow_field())
    fields = [minute_text, hour_text, dom_text, month_text, dow_text]
    text = " ".join([sec_text, *fields] if six else fields)
    return Spec(text, seconds, minutes, hours, months, dom_star, tuple(dom), dow_star, tuple(dow))


# --- the reference -------------------------------------------------------------------------


def ref_nearest_weekday(year: int, month: int, n: int) -> int | None:
    days_in_month = calendar.monthrange(year, month)[1]
    if n > days_in_month:
        return None
    weekday = calendar.weekday(year, month, n)  # Monday 0 ... Sunday 6
    if weekday == 5:
        return n - 1 if n > 1 else n + 2
    if weekday == 6:
        return n + 1 if n < days_in_month else n - 2
    return n


def ref_day_matches(spec: Spec, day: date) -> bool:
    if day.month not in spec.months:
        return False
    days_in_month = calendar.monthrange(day.year, day.month)[1]
    cron_weekday = (day.weekday() + 1) % 7  # Sunday 0
    in_dom = any(
        day.day in item.values
        or (item.last_day and day.day == days_in_month)
        or any(ref_nearest_weekday(day.year, day.month, n or days_in_month) == day.day for n in item.nearest)
        for item in spec.dom
    )
    in_dow = any(
        cron_weekday in item.values
        or any(cron_weekday == d and (day.day - 1) // 7 + 1 == k for d, k in item.nth)
        or any(cron_weekday == d and day.day > days_in_month - 7 for d in item.last_weekday)
        for item in spec.dow
    )
    if spec.dom_star or spec.dow_star:
        return in_dom and in_dow
    return in_dom or in_dow


def ref_offset_change(tz: ZoneInfo, lo: datetime, hi: datetime) -> datetime:
    """The first UTC minute in (lo, hi] whose offset differs from lo's: a linear scan."""
    before = lo.astimezone(tz).utcoffset()
    t = lo.replace(second=0, microsecond=0)
    while True:
        t += timedelta(minutes=1)
        if t.astimezone(tz).utcoffset() != before:
            return t


def ref_instants(tz: ZoneInfo, wall: datetime, fixed: bool) -> list[datetime]:
    """The Vixie DST rule, applied to one matching local wall time."""
    first = wall.replace(tzinfo=tz, fold=0)
    second = wall.replace(tzinfo=tz, fold=1)
    exists = first.astimezone(UTC).astimezone(tz).replace(tzinfo=None) == wall
    if not exists:  # in a gap: fixed-time fires at the gap's end, wildcard never
        if not fixed:
            return []
        lo, hi = sorted([first.astimezone(UTC), second.astimezone(UTC)])
        return [ref_offset_change(tz, lo, hi)]
    if first.utcoffset() != second.utcoffset():  # in a fold: it happens twice
        both = sorted([first.astimezone(UTC), second.astimezone(UTC)])
        return both if not fixed else both[:1]
    return [first.astimezone(UTC)]


def reference_fires(spec: Spec, tz: ZoneInfo, start: date, end: date) -> list[datetime]:
    """Every fire instant of the local dates start..end, minute by minute."""
    fixed = not (spec.text.split()[-5].startswith("*") or spec.text.split()[-4].startswith("*"))
    out: set[datetime] = set()
    day = start
    while day <= end:
        if ref_day_matches(spec, day):
            midnight = datetime(day.year, day.month, day.day)
            for minute_of_day in range(24 * 60):
                wall = midnight + timedelta(minutes=minute_of_day)
                if wall.hour in spec.hours and wall.minute in spec.minutes:
                    for second in sorted(spec.seconds):
                        out.update(ref_instants(tz, wall.replace(second=second), fixed))
        day += timedelta(days=1)
    return sorted(out)


def ref_ever_matches(spec: Spec) -> bool:
    day, end = date(2001, 1, 1), date(2401, 1, 1)  # the Gregorian calendar repeats every 400 years
    while day < end:
        if ref_day_matches(spec, day):
            return True
        day += timedelta(days=1)
    return False


def parse_or_check_rejection(spec: Spec):
    try:
        return parse_cron(spec.text)
    except CronError as exc:
        assert "never matches" in str(exc), str(exc)
        assert not ref_ever_matches(spec), spec.text
        assume(False)
        raise


def compare(spec: Spec, zone: str, start: date, end: date) -> None:
    expression = parse_or_check_rejection(spec)
    tz = ZoneInfo(zone)
    expected = reference_fires(spec, tz, start - timedelta(days=2), end + timedelta(days=2))
    lo = datetime(start.year, start.month, start.day, tzinfo=UTC)
    hi = datetime(end.year, end.month, end.day, tzinfo=UTC)
    expected_in_window = [f for f in expected if lo < f <= hi]
    assert fires_between(expression, tz, lo, hi) == expected_in_window, spec.text
    # next_fire / latest_fire at points spread over the window, and right at fires.
    probes = [lo + (hi - lo) * k / 13 for k in range(1, 13)] + expected_in_window[::97][:20]
    # The reference covers the local dates start-2d..end+2d: beyond them it knows nothing.
    covered_lo, covered_hi = lo - timedelta(days=1), hi + timedelta(days=2)
    for t in probes:
        i = bisect.bisect_right(expected, t)
        upcoming, latest = next_fire(expression, tz, t), latest_fire(expression, tz, None, t)
        if i < len(expected):
            assert upcoming == expected[i], (spec.text, t)
        else:
            assert upcoming is None or upcoming > covered_hi, (spec.text, t)
        if i:
            assert latest == expected[i - 1], (spec.text, t)
        else:
            assert latest is None or latest < covered_lo, (spec.text, t)


# --- the properties ------------------------------------------------------------------------


@settings(settings.get_profile(PROFILE))
@given(spec=specs(dense=False), zone=st.sampled_from(ZONES), year=st.sampled_from(YEARS))
def test_cronexpr__matches_reference_over_a_whole_year(spec, zone, year):
    compare(spec, zone, date(year, 1, 1), date(year, 12, 31))


def dst_days(zone: str, year: int) -> list[date]:
    """Local dates (UTC date of the change) on which the zone changes its offset in ``year``."""
    tz, out = ZoneInfo(zone), []
    t = datetime(year, 1, 1, tzinfo=UTC)
    before = t.astimezone(tz).utcoffset()
    while t.year == year:
        now = t.astimezone(tz).utcoffset()
        if now != before:
            out.append(t.date())
            before = now
        t += timedelta(hours=1)
    return out or [date(year, 6, 1)]


@settings(settings.get_profile(PROFILE))
@given(
    spec=specs(dense=True),
    zone=st.sampled_from(ZONES[:5]),
    year=st.sampled_from(YEARS[:4]),
    which=st.integers(0, 1),
)
def test_cronexpr__matches_reference_around_dst_changes(spec, zone, year, which):
    days = dst_days(zone, year)
    change = days[which % len(days)]
    compare(spec, zone, change - timedelta(days=2), change + timedelta(days=2))


# Shrunk counterexamples found by these properties are kept as regular tests with
# hand-checked expectations in tests/unit/test_cronexpr_days.py ("counterexample" in their names).
