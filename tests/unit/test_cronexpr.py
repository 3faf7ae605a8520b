"""Tests for awa_django.cronexpr (pure module: no Django, no database).

Timestamps are UTC and default to the year 2026 (see ``u``). Expected DST instants
were worked out by hand from the 2026 zone rules. The transition instants (UTC) were
read off zoneinfo in a scratch script:

  Europe/Berlin        03-29 01:00  +1 -> +2, gap 02:00-03:00
                       10-25 01:00  +2 -> +1, fold 02:00-03:00
  America/New_York     03-08 07:00  -5 -> -4, gap 02:00-03:00
                       11-01 06:00  -4 -> -5, fold 01:00-02:00
  Australia/Lord_Howe  10-03 15:30  +10:30 -> +11, gap 02:00-02:30 (on 10-04 local)
                       04-04 15:00  +11 -> +10:30, fold 01:30-02:00 (on 04-05 local)
  Australia/Sydney     10-03 16:00  +10 -> +11, gap 02:00-03:00 (on 10-04 local)
                       04-04 16:00  +11 -> +10, fold 02:00-03:00 (on 04-05 local)
  America/Santiago     09-06 04:00  -4 -> -3, gap 00:00-01:00 (on 09-06 local)
                       04-05 03:00  -3 -> -4, fold 23:00-24:00 (on 04-04 local)
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from awa_django.cron import search
from awa_django.cron.search import (
    CronError,
    CronExpression,
    due_fires,
    fires_between,
    latest_fire,
    next_fire,
    parse_cron,
    parse_timezone,
)


def u(text: str) -> datetime:
    """A UTC instant from ISO text; the year defaults to 2026: u("05-07T12:00:05")."""
    if text[4] != "-":
        text = f"2026-{text}"
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def us(*texts: str) -> list[datetime]:
    return [u(t) for t in texts]


@pytest.fixture
def search_steps(monkeypatch):
    """Count every search step (one next/previous matching local time) through cronexpr._step."""
    calls: list[int] = []
    real = search._step

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(search, "_step", counting)
    return calls


# --- parse_cron ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "text", "fields"),
    [
        ("*/5 * * * *", "*/5 * * * *", ("0", "*/5", "*", "*", "*", "*")),
        ("30 0 9 * * *", "30 0 9 * * *", ("30", "0", "9", "*", "*", "*")),
        ("*/15 * * * * *", "*/15 * * * * *", ("*/15", "*", "*", "*", "*", "*")),
        ("  0 9 * * 1-5 \n", "0 9 * * 1-5", ("0", "0", "9", "*", "*", "1-5")),
        ("0  9\t*  * *", "0  9\t*  * *", ("0", "0", "9", "*", "*", "*")),
        ("@yearly", "@yearly", ("0", "0", "0", "1", "1", "*")),
        ("@annually", "@annually", ("0", "0", "0", "1", "1", "*")),
        ("@monthly", "@monthly", ("0", "0", "0", "1", "*", "*")),
        ("@weekly", "@weekly", ("0", "0", "0", "*", "*", "0")),
        ("@daily", "@daily", ("0", "0", "0", "*", "*", "*")),
        ("@midnight", "@midnight", ("0", "0", "0", "*", "*", "*")),
        ("@hourly", "@hourly", ("0", "0", "*", "*", "*", "*")),
        ("@Daily", "@Daily", ("0", "0", "0", "*", "*", "*")),
        ("0 0 29 2 *", "0 0 29 2 *", ("0", "0", "0", "29", "2", "*")),
        ("0 9 * * mon-fri", "0 9 * * mon-fri", ("0", "0", "9", "*", "*", "mon-fri")),
        ("0 0 L * *", "0 0 L * *", ("0", "0", "0", "L", "*", "*")),
        ("0 0 * * 5#3", "0 0 * * 5#3", ("0", "0", "0", "*", "*", "5#3")),
    ],
)
def test_parse_cron__normalises_to_six_fields(expr, text, fields):
    assert parse_cron(expr) == CronExpression(text=text, fields=fields)


HASH = "hash/random tokens (H, R) are not supported"


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("", "cron expression is empty"),
        ("   ", "cron expression is empty"),
        ("* * * *", "invalid cron expression '* * * *': expected 5 or 6 fields, got 4"),
        ("0 0 0 * * * 2026", "invalid cron expression '0 0 0 * * * 2026': expected 5 or 6 fields, got 7"),
        ("H * * * *", f"invalid cron expression 'H * * * *': {HASH}"),
        ("0 H/2 * * *", f"invalid cron expression '0 H/2 * * *': {HASH}"),
        ("H(0-29) * * * *", f"invalid cron expression 'H(0-29) * * * *': {HASH}"),
        ("0 0 * * R", f"invalid cron expression '0 0 * * R': {HASH}"),
        ("61 * * * *", "invalid cron expression '61 * * * *': bad minute field '61': 61 is not in 0-59"),
        ("0 24 * * *", "invalid cron expression '0 24 * * *': bad hour field '24': 24 is not in 0-23"),
        ("* * * * 8", "invalid cron expression '* * * * 8': bad day-of-week field '8': 8 is not in 0-7"),
        (
            "0 0 0 32 * *",
            "invalid cron expression '0 0 0 32 * *': bad day-of-month field '32': 32 is not in 1-31",
        ),
        (
            "*/0 * * * *",
            "invalid cron expression '*/0 * * * *': bad minute field '*/0': step '0' is not a whole number >= 1",
        ),
        ("60 * * * * *", "invalid cron expression '60 * * * * *': bad second field '60': 60 is not in 0-59"),
        ("a b c d e", "invalid cron expression 'a b c d e': bad minute field 'a': 'a' is not a number"),
        (
            "0 0 30 2 *",
            "invalid cron expression '0 0 30 2 *': it never matches any date "
            "(day-of-month '30' never occurs in month '2')",
        ),
        (
            "0 0 31 4,6 *",
            "invalid cron expression '0 0 31 4,6 *': it never matches any date "
            "(day-of-month '31' never occurs in month '4,6')",
        ),
        (
            "@reboot",
            (
                "invalid cron expression '@reboot': unsupported macro; use one of "
                "@yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly"
            ),
        ),
    ],
)
def test_parse_cron__rejects_invalid_expressions(expr, message):
    with pytest.raises(CronError) as excinfo:
        parse_cron(expr)
    assert str(excinfo.value) == message


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (None, "cron expression must be a string, not NoneType"),
        (5, "cron expression must be a string, not int"),
        (b"* * * * *", "cron expression must be a string, not bytes"),
    ],
)
def test_parse_cron__rejects_non_strings(value, message):
    with pytest.raises(CronError) as excinfo:
        parse_cron(value)
    assert str(excinfo.value) == message


def test_parse_cron__error_is_a_value_error():
    assert issubclass(CronError, ValueError)


@pytest.mark.parametrize(
    ("expr", "fixed"),
    [
        ("30 2 * * *", True),
        ("0 9 * * 1-5", True),
        ("0,30 2 * * *", True),
        ("@daily", True),
        ("@weekly", True),
        ("30 0 9 * * *", True),
        ("* 30 2 * * *", True),  # the seconds field does not matter
        ("*/5 * * * *", False),
        ("0 * * * *", False),
        ("* * * * * *", False),
        ("@hourly", False),
        ("30 * * * *", False),
        ("* 2 * * *", False),
        ("0 */2 * * *", False),
        ("0 */5 * * * *", False),
    ],
)
def test_cron_expression__fixed_time(expr, fixed):
    assert parse_cron(expr).fixed_time is fixed


@pytest.mark.parametrize(
    ("expr", "text"),
    [
        ("* * * * *", "Every minute"),
        ("*/5 * * * *", "Every 5 minutes"),
        ("30 * * * *", "Every hour at :30"),
        ("@hourly", "Every hour at :00"),
        ("0 9 * * *", "Daily at 09:00"),
        ("30 0 9 * * *", "Daily at 09:00:30"),
        ("*/15 * * * * *", "Every 15 seconds"),
        ("* * * * * *", "Every second"),
        ("0 9 * * 1-5", "Mon-Fri at 09:00"),
        ("0 9 * * mon-fri", "Mon-Fri at 09:00"),
        ("@weekly", "Sun at 00:00"),
        ("0 0 1 * *", "Monthly on day 1 at 00:00"),
        ("@yearly", "Yearly on Jan 1 at 00:00"),
        ("0 9-17 * * *", "0 9-17 * * *"),
        ("0 0 * * 5#3", "0 0 * * 5#3"),
        ("0 0 L * *", "0 0 L * *"),
    ],
)
def test_cron_expression__describe(expr, text):
    assert parse_cron(expr).describe() == text


# --- parse_timezone ------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["UTC", "Europe/Berlin", "Australia/Lord_Howe"])
def test_parse_timezone__accepts_iana_names(name):
    assert parse_timezone(name) == ZoneInfo(name)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("Not/A/Zone", "unknown timezone 'Not/A/Zone'"),
        ("", "unknown timezone ''"),
        ("America", "unknown timezone 'America'"),
        ("../etc/passwd", "unknown timezone '../etc/passwd'"),
        ("/etc/localtime", "unknown timezone '/etc/localtime'"),
        (None, "unknown timezone None"),
    ],
)
def test_parse_timezone__rejects_unknown_names(name, message):
    with pytest.raises(CronError) as excinfo:
        parse_timezone(name)
    assert str(excinfo.value) == message


# --- next_fire / latest_fire / fires_between -----------------------------------------------


@pytest.mark.parametrize(
    ("zone", "expr", "after", "expected"),
    [
        ("Pacific/Auckland", "0 9 * * *", u("2025-06-15T20:00:00"), u("2025-06-15T21:00:00")),
        ("UTC", "30 0 9 * * *", u("05-07T08:00:00"), u("05-07T09:00:30")),
        ("UTC", "*/15 * * * * *", u("05-07T14:35:07"), u("05-07T14:35:15")),
        ("UTC", "*/15 * * * * *", u("05-07T14:35:15"), u("05-07T14:35:30")),
        ("UTC", "0 0 1 1 *", u("05-07T12:00:00"), u("2027-01-01T00:00:00")),
        ("UTC", "0 0 29 2 *", u("05-07T12:00:00"), u("2028-02-29T00:00:00")),
        # Outputs are whole seconds even when the input has microseconds.
        ("UTC", "* * * * * *", u("05-07T12:00:00.123456"), u("05-07T12:00:01")),
        # NY 2026-11-01, `after` in the fold's first pass (01:30 EDT): the next hourly fire
        # is the SECOND 01:00 (EST), although its wall time is earlier.
        ("America/New_York", "0 * * * *", u("11-01T05:30:00"), u("11-01T06:00:00")),
        ("America/New_York", "30 1 * * *", u("11-01T05:30:00"), u("11-02T06:30:00")),
        # NY 2026-03-08 gap: 02:30 fires at the end of the gap, 03:00 EDT.
        ("America/New_York", "30 2 * * *", u("03-08T06:59:59"), u("03-08T07:00:00")),
    ],
)
def test_next_fire__first_fire_strictly_after(zone, expr, after, expected):
    fire = next_fire(parse_cron(expr), ZoneInfo(zone), after)
    assert fire == expected
    assert fire.tzinfo is UTC


@pytest.mark.parametrize(
    ("zone", "expr", "after", "until", "expected"),
    [
        ("UTC", "0 */5 * * * *", None, u("05-07T12:07:00"), u("05-07T12:05:00")),
        ("UTC", "0 */5 * * * *", None, u("05-07T12:05:00"), u("05-07T12:05:00")),
        ("UTC", "0 */5 * * * *", u("05-07T12:05:00"), u("05-07T12:07:00"), None),
        ("UTC", "* * * * * *", None, u("05-07T12:00:00.999999"), u("05-07T12:00:00")),
        ("UTC", "0 0 1 1 *", None, u("05-07T12:00:00"), u("01-01T00:00:00")),
        ("Pacific/Auckland", "0 9 * * *", None, u("2025-06-15T20:00:00"), u("2025-06-14T21:00:00")),
        # NY fold, `until` in the second pass (01:10 EST): 01:50 EDT (05:50Z) has a later
        # wall time than `until` but has already happened.
        ("America/New_York", "50 1 * * *", None, u("11-01T06:10:00"), u("11-01T05:50:00")),
        ("America/New_York", "50 * * * *", None, u("11-01T06:10:00"), u("11-01T05:50:00")),
        ("America/New_York", "50 * * * *", None, u("11-01T06:55:00"), u("11-01T06:50:00")),
        # Fixed-time never fires in the second pass.
        ("America/New_York", "30 1 * * *", None, u("11-01T06:45:00"), u("11-01T05:30:00")),
        # `until` in the first pass: the second occurrence of 01:10 is still in the future.
        ("America/New_York", "10 * * * *", None, u("11-01T05:20:00"), u("11-01T05:10:00")),
        # NY gap: wildcard skips it, fixed-time fires at its end.
        ("America/New_York", "30 * * * *", None, u("03-08T07:10:00"), u("03-08T06:30:00")),
        ("America/New_York", "30 2 * * *", None, u("03-08T07:10:00"), u("03-08T07:00:00")),
        ("America/New_York", "* * 2 * * *", None, u("03-08T08:00:00"), u("03-07T07:59:59")),
    ],
)
def test_latest_fire__latest_fire_in_window(zone, expr, after, until, expected):
    assert latest_fire(parse_cron(expr), ZoneInfo(zone), after, until) == expected


def test_latest_fire__cost_does_not_grow_with_window(search_steps):
    expr, now = parse_cron("* * * * * *"), u("05-07T12:00:20")
    search_steps.clear()  # parse_cron's own validity probe is not part of the query
    fire = latest_fire(expr, ZoneInfo("UTC"), now - timedelta(days=30), now)
    assert fire == u("05-07T12:00:20")
    assert len(search_steps) == 1


def test_latest_fire__yearly_schedule_takes_one_step(search_steps):
    expr = parse_cron("0 0 1 1 *")
    search_steps.clear()
    fire = latest_fire(expr, ZoneInfo("Europe/Berlin"), None, u("05-07T12:00:00"))
    assert fire == u("2025-12-31T23:00:00")
    assert len(search_steps) == 1


@pytest.mark.parametrize(
    ("expr", "after", "until", "limit", "expected"),
    [
        (
            "*/5 * * * * *",
            u("05-07T12:00:00"),
            u("05-07T12:00:20"),
            None,
            us("05-07T12:00:05", "05-07T12:00:10", "05-07T12:00:15", "05-07T12:00:20"),
        ),
        (
            "*/5 * * * * *",
            u("05-07T12:00:00"),
            u("05-07T12:00:20"),
            2,
            us("05-07T12:00:05", "05-07T12:00:10"),
        ),
        ("*/5 * * * * *", u("05-07T12:00:00"), u("05-07T12:00:20"), 0, []),
        ("*/5 * * * * *", u("05-07T12:00:20"), u("05-07T12:00:00"), None, []),
        ("*/5 * * * * *", u("05-07T12:00:20"), u("05-07T12:00:20"), None, []),
        (
            "*/5 * * * * *",
            u("05-07T12:00:04.5"),
            u("05-07T12:00:10.5"),
            None,
            us("05-07T12:00:05", "05-07T12:00:10"),
        ),
        ("0 * * * *", u("05-07T13:00:00"), u("05-07T14:35:00"), None, us("05-07T14:00:00")),
        ("0 0 1 1 *", u("05-07T12:00:00"), u("12-31T23:59:59"), None, []),
    ],
)
def test_fires_between__strict_lower_inclusive_upper_and_limit(expr, after, until, limit, expected):
    assert fires_between(parse_cron(expr), ZoneInfo("UTC"), after, until, limit) == expected


def test_fires_between__converts_aware_inputs_to_utc():
    tz2 = timezone(timedelta(hours=2))
    after, until = datetime(2026, 5, 7, 14, 30, tzinfo=tz2), datetime(2026, 5, 7, 15, tzinfo=tz2)
    fires = fires_between(parse_cron("0 * * * *"), ZoneInfo("UTC"), after, until)
    assert fires == us("05-07T13:00:00")
    assert fires[0].tzinfo is UTC


def test_fires_between__stops_at_limit(search_steps):
    expr = parse_cron("* * * * * *")
    search_steps.clear()
    fires = fires_between(expr, ZoneInfo("UTC"), u("2025-05-07T12:00:00"), u("05-07T12:00:00"), limit=2)
    assert fires == us("2025-05-07T12:00:01", "2025-05-07T12:00:02")
    assert len(search_steps) == 2


@pytest.mark.parametrize(
    ("call", "args"),
    [
        (fires_between, (datetime(2026, 5, 7), u("05-08T00:00:00"))),
        (fires_between, (u("05-07T00:00:00"), datetime(2026, 5, 8))),
        (latest_fire, (None, datetime(2026, 5, 8))),
        (next_fire, (datetime(2026, 5, 7),)),
    ],
)
def test_queries__reject_naive_datetimes(call, args):
    with pytest.raises(ValueError, match="timezone-aware"):
        call(parse_cron("* * * * *"), ZoneInfo("UTC"), *args)


# --- DST: the main table -------------------------------------------------------------------

DST_CASES = [
    # Europe/Berlin spring forward 2026-03-29 01:00Z, local gap 02:00-03:00.
    ("Europe/Berlin", "30 2 * * *", "03-28T22:00", "03-29T22:00", ["03-29T01:00"]),
    ("Europe/Berlin", "0 3 * * *", "03-28T22:00", "03-29T22:00", ["03-29T01:00"]),
    ("Europe/Berlin", "30 1 * * *", "03-28T22:00", "03-29T22:00", ["03-29T00:30"]),
    ("Europe/Berlin", "30 4 * * *", "03-28T22:00", "03-29T22:00", ["03-29T02:30"]),
    (
        "Europe/Berlin",
        "*/30 * * * *",
        "03-29T00:00",
        "03-29T02:00",
        ["03-29T00:30", "03-29T01:00", "03-29T01:30", "03-29T02:00"],
    ),
    # Europe/Berlin fall back 2026-10-25 01:00Z, local fold 02:00-03:00.
    ("Europe/Berlin", "30 2 * * *", "10-24T22:00", "10-25T23:00", ["10-25T00:30"]),
    ("Europe/Berlin", "30 4 * * *", "10-24T22:00", "10-25T23:00", ["10-25T03:30"]),
    (
        "Europe/Berlin",
        "*/30 * * * *",
        "10-24T23:30",
        "10-25T02:00",
        ["10-25T00:00", "10-25T00:30", "10-25T01:00", "10-25T01:30", "10-25T02:00"],
    ),
    # America/New_York spring forward 2026-03-08 07:00Z, local gap 02:00-03:00.
    ("America/New_York", "30 2 * * *", "03-08T05:00", "03-09T05:00", ["03-08T07:00"]),
    ("America/New_York", "0 9 * * *", "03-08T05:00", "03-09T05:00", ["03-08T13:00"]),
    (
        "America/New_York",
        "*/15 * * * *",
        "03-08T06:30",
        "03-08T07:30",
        ["03-08T06:45", "03-08T07:00", "03-08T07:15", "03-08T07:30"],
    ),
    # America/New_York fall back 2026-11-01 06:00Z, local fold 01:00-02:00.
    ("America/New_York", "30 1 * * *", "11-01T04:00", "11-02T05:00", ["11-01T05:30"]),
    ("America/New_York", "30 2 * * *", "11-01T04:00", "11-02T05:00", ["11-01T07:30"]),
    (
        "America/New_York",
        "0 * * * *",
        "11-01T04:00",
        "11-01T08:00",
        ["11-01T05:00", "11-01T06:00", "11-01T07:00", "11-01T08:00"],
    ),
    (
        "America/New_York",
        "*/30 * * * *",
        "11-01T04:30",
        "11-01T07:00",
        ["11-01T05:00", "11-01T05:30", "11-01T06:00", "11-01T06:30", "11-01T07:00"],
    ),
    # Australia/Lord_Howe fall back 2026-04-04 15:00Z (+11 -> +10:30), local fold 01:30-02:00.
    ("Australia/Lord_Howe", "45 1 * * *", "04-04T12:00", "04-05T12:00", ["04-04T14:45"]),
    ("Australia/Lord_Howe", "30 2 * * *", "04-04T12:00", "04-05T12:00", ["04-04T16:00"]),
    (
        "Australia/Lord_Howe",
        "15,45 * * * *",
        "04-04T14:00",
        "04-04T16:00",
        ["04-04T14:15", "04-04T14:45", "04-04T15:15", "04-04T15:45"],
    ),
    # Australia/Lord_Howe spring forward 2026-10-03 15:30Z (+10:30 -> +11), local gap 02:00-02:30.
    ("Australia/Lord_Howe", "15 2 * * *", "10-03T12:00", "10-04T12:00", ["10-03T15:30"]),
    ("Australia/Lord_Howe", "45 2 * * *", "10-03T12:00", "10-04T12:00", ["10-03T15:45"]),
    # 02:00 and 02:15 are skipped and collapse into the end of the gap, 02:30's own instant.
    (
        "Australia/Lord_Howe",
        "0,15,30,45 2 * * *",
        "10-03T12:00",
        "10-04T12:00",
        ["10-03T15:30", "10-03T15:45"],
    ),
    (
        "Australia/Lord_Howe",
        "15,45 * * * *",
        "10-03T14:30",
        "10-03T16:30",
        ["10-03T14:45", "10-03T15:15", "10-03T15:45", "10-03T16:15"],
    ),
    # Australia/Sydney fall back 2026-04-04 16:00Z (+11 -> +10), local fold 02:00-03:00.
    ("Australia/Sydney", "30 2 * * *", "04-04T12:00", "04-05T12:00", ["04-04T15:30"]),
    ("Australia/Sydney", "0 9 * * *", "04-04T12:00", "04-05T12:00", ["04-04T23:00"]),
    (
        "Australia/Sydney",
        "*/30 * * * *",
        "04-04T14:30",
        "04-04T17:00",
        ["04-04T15:00", "04-04T15:30", "04-04T16:00", "04-04T16:30", "04-04T17:00"],
    ),
    # Australia/Sydney spring forward 2026-10-03 16:00Z (+10 -> +11), local gap 02:00-03:00.
    ("Australia/Sydney", "30 2 * * *", "10-03T12:00", "10-04T12:00", ["10-03T16:00"]),
    ("Australia/Sydney", "0 9 * * *", "10-03T12:00", "10-04T12:00", ["10-03T22:00"]),
    (
        "Australia/Sydney",
        "*/30 * * * *",
        "10-03T15:00",
        "10-03T17:00",
        ["10-03T15:30", "10-03T16:00", "10-03T16:30", "10-03T17:00"],
    ),
    # America/Santiago spring forward 2026-09-06 04:00Z (-4 -> -3): midnight does not exist.
    ("America/Santiago", "0 0 * * *", "09-05T12:00", "09-06T12:00", ["09-06T04:00"]),
    ("America/Santiago", "0 2 * * *", "09-05T12:00", "09-06T12:00", ["09-06T05:00"]),
    (
        "America/Santiago",
        "*/30 * * * *",
        "09-06T03:00",
        "09-06T05:00",
        ["09-06T03:30", "09-06T04:00", "09-06T04:30", "09-06T05:00"],
    ),
    # America/Santiago fall back 2026-04-05 03:00Z (-3 -> -4), local fold 23:00-24:00 on 04-04.
    ("America/Santiago", "30 23 * * *", "04-04T12:00", "04-05T12:00", ["04-05T02:30"]),
    ("America/Santiago", "0 12 * * *", "04-04T12:00", "04-05T12:00", ["04-04T15:00"]),
    (
        "America/Santiago",
        "*/30 * * * *",
        "04-05T01:30",
        "04-05T04:00",
        ["04-05T02:00", "04-05T02:30", "04-05T03:00", "04-05T03:30", "04-05T04:00"],
    ),
]


@pytest.mark.parametrize(("zone", "expr", "after", "until", "expected"), DST_CASES)
def test_fires_between__dst_transitions(zone, expr, after, until, expected):
    assert fires_between(parse_cron(expr), ZoneInfo(zone), u(after), u(until)) == us(*expected)


@pytest.mark.parametrize(("zone", "expr", "after", "until", "expected"), DST_CASES)
def test_latest_fire__dst_transitions_agree_with_table(zone, expr, after, until, expected):
    assert latest_fire(parse_cron(expr), ZoneInfo(zone), u(after), u(until)) == u(expected[-1])


@pytest.mark.parametrize(("zone", "expr", "after", "until", "expected"), DST_CASES)
def test_next_fire__dst_transitions_agree_with_table(zone, expr, after, until, expected):
    assert next_fire(parse_cron(expr), ZoneInfo(zone), u(after)) == u(expected[0])


@pytest.mark.parametrize(
    ("zone", "day_start", "day_end", "expected"),
    [
        # Whole local days (local midnight to midnight, as UTC).
        ("Europe/Berlin", "03-28T23:00", "03-29T22:00", "03-29T01:00"),  # gap end
        ("Europe/Berlin", "10-24T22:00", "10-25T23:00", "10-25T00:30"),  # first 02:30
        ("Australia/Sydney", "10-03T14:00", "10-04T13:00", "10-03T16:00"),
        ("Australia/Sydney", "04-04T13:00", "04-05T14:00", "04-04T15:30"),
    ],
)
def test_fires_between__fixed_time_fires_exactly_once_per_dst_day(zone, day_start, day_end, expected):
    fires = fires_between(parse_cron("30 2 * * *"), ZoneInfo(zone), u(day_start), u(day_end))
    assert fires == [u(expected)]


# --- due_fires -----------------------------------------------------------------------------

CREATED = u("05-01T00:00:00")


@pytest.mark.parametrize(
    ("expr", "last", "created", "now", "catch_up", "limit", "expected"),
    [
        ("*/5 * * * * *", u("05-07T12:00:00"), CREATED, u("05-07T12:00:20"), False, 10, us("05-07T12:00:20")),
        ("*/1 * * * * *", u("05-06T12:00:20"), CREATED, u("05-07T12:00:20"), False, 2, us("05-07T12:00:20")),
        (
            "*/5 * * * * *",
            u("05-07T12:00:00"),
            CREATED,
            u("05-07T12:00:20"),
            True,
            10,
            us("05-07T12:00:05", "05-07T12:00:10", "05-07T12:00:15", "05-07T12:00:20"),
        ),
        (
            "*/5 * * * * *",
            u("05-07T12:00:00"),
            CREATED,
            u("05-07T12:00:30"),
            True,
            2,
            us("05-07T12:00:05", "05-07T12:00:10"),
        ),
        # Never fired: latest fire in [created - 60s, now], even with catch_up.
        ("*/5 * * * * *", None, u("05-07T12:00:30"), u("05-07T12:00:55"), True, 10, us("05-07T12:00:55")),
        ("* * * * *", None, u("05-07T14:35:30"), u("05-07T14:35:31"), False, 10, us("05-07T14:35:00")),
        ("0 * * * *", None, u("05-07T14:35:00"), u("05-07T14:40:00"), False, 10, []),
        # The lower bound created - 60s is inclusive ...
        ("0 * * * *", None, u("05-07T14:01:00"), u("05-07T14:40:00"), True, 10, us("05-07T14:00:00")),
        # ... down to the microsecond.
        ("0 * * * *", None, u("05-07T14:01:00.000001"), u("05-07T14:40:00"), True, 10, []),
        ("0 * * * *", u("05-07T13:00:00"), CREATED, u("05-07T14:35:00"), False, 10, us("05-07T14:00:00")),
        ("0 * * * *", u("05-07T14:00:00"), CREATED, u("05-07T14:35:00"), False, 10, []),
        ("* * * * *", u("05-07T14:00:00"), CREATED, u("05-07T15:00:00"), False, 10, us("05-07T15:00:00")),
        # last_enqueued_at straight from the database, with microseconds.
        (
            "*/5 * * * * *",
            u("05-07T12:00:00.123456"),
            CREATED,
            u("05-07T12:00:12"),
            True,
            10,
            us("05-07T12:00:05", "05-07T12:00:10"),
        ),
    ],
)
def test_due_fires__awa_compute_fire_times(expr, last, created, now, catch_up, limit, expected):
    assert (
        due_fires(
            parse_cron(expr),
            ZoneInfo("UTC"),
            last_enqueued_at=last,
            created_at=created,
            now=now,
            catch_up=catch_up,
            limit=limit,
        )
        == expected
    )


@pytest.mark.parametrize(
    ("zone", "expr", "last", "now", "catch_up", "expected"),
    [
        # NY spring forward: yesterday's 02:30 EST to after the gap: one fire at the gap's end.
        ("America/New_York", "30 2 * * *", "03-07T07:30", "03-08T12:00", False, ["03-08T07:00"]),
        ("America/New_York", "30 2 * * *", "03-07T07:30", "03-08T12:00", True, ["03-08T07:00"]),
        # NY fall back: a fixed-time entry does not fire again in the second pass.
        ("America/New_York", "30 1 * * *", "11-01T05:00", "11-01T06:45", False, ["11-01T05:30"]),
        ("America/New_York", "30 1 * * *", "11-01T05:30", "11-01T06:45", False, []),
        # ... while a wildcard does: 01:00 EST (06:00Z) is due after 01:00 EDT (05:00Z).
        ("America/New_York", "0 * * * *", "11-01T05:00", "11-01T06:30", False, ["11-01T06:00"]),
        ("Europe/Berlin", "*/30 * * * *", "10-25T00:15", "10-25T01:45", False, ["10-25T01:30"]),
        (
            "Europe/Berlin",
            "*/30 * * * *",
            "10-25T00:15",
            "10-25T01:45",
            True,
            ["10-25T00:30", "10-25T01:00", "10-25T01:30"],
        ),
        # A whole Berlin fall-back day coalesces to its last fire.
        ("Europe/Berlin", "30 2 * * *", "10-24T00:30", "10-25T22:00", False, ["10-25T00:30"]),
    ],
)
def test_due_fires__across_dst_days(zone, expr, last, now, catch_up, expected):
    fires = due_fires(
        parse_cron(expr),
        ZoneInfo(zone),
        last_enqueued_at=u(last),
        created_at=CREATED,
        now=u(now),
        catch_up=catch_up,
        limit=10,
    )
    assert fires == us(*expected)
