"""The timing of django-celery-beat's schedules as cron expressions, without a database.

Proves: an interval becomes a cron expression exactly when clock-aligned
slots fire at the same period (seconds dividing a minute, minutes dividing an
hour, hours dividing a day, one day), and otherwise has no expression (it
becomes an interval schedule, its period in whole seconds); a crontab becomes the same five fields (weekday names
shortened, spaces dropped), except when both day fields are restricted
(celery ANDs them, cron ORs them) or the text is not a valid expression;
``--task-map`` pairs parse or name the malformed one; the report counts rows;
a batch whose write was slow halves the next one, a quick one doubles it up to
the maximum; a timestamp ``datetime`` cannot hold is read as past or future.
"""

from __future__ import annotations

import pytest

from awa_django.operations.celery_beat import (
    INTERVAL_UNSUPPORTED,
    ImportReport,
    ImportRow,
    crontab_expression,
    interval_expression,
    interval_seconds,
    parse_task_map,
)
from awa_django.operations.celery_beat import _Batches as Batches
from awa_django.operations.celery_beat_rows import FarInstant, _instant


@pytest.mark.parametrize(
    ("every", "period", "expected"),
    [
        (1, "seconds", "* * * * * *"),
        (10, "seconds", "*/10 * * * * *"),
        (30, "seconds", "*/30 * * * * *"),
        (60, "seconds", "* * * * *"),
        (1, "minutes", "* * * * *"),
        (5, "minutes", "*/5 * * * *"),
        (15, "minutes", "*/15 * * * *"),
        (30, "minutes", "*/30 * * * *"),
        (120, "seconds", "*/2 * * * *"),
        (60, "minutes", "0 * * * *"),
        (1, "hours", "0 * * * *"),
        (6, "hours", "0 */6 * * *"),
        (12, "hours", "0 */12 * * *"),
        (24, "hours", "0 0 * * *"),
        (1, "days", "0 0 * * *"),
    ],
)
def test_interval_expression__exact_periods_map(every: int, period: str, expected: str) -> None:
    assert interval_expression(every, period) == (expected, None)


@pytest.mark.parametrize(
    ("every", "period"),
    [
        (90, "seconds"),
        (7, "seconds"),
        (45, "minutes"),
        (7, "minutes"),
        (5, "hours"),
        (2, "days"),
        (500, "microseconds"),
        (0, "minutes"),
        (-5, "minutes"),
        (1, "fortnights"),
    ],
)
def test_interval_expression__other_periods_are_no_cron_expression(every: int, period: str) -> None:
    expression, reason = interval_expression(every, period)
    assert expression is None
    assert reason is not None and reason.startswith(INTERVAL_UNSUPPORTED)
    assert f"every {every} {period}" in reason


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        (("*", "*", "*", "*", "*"), "* * * * *"),
        (("30", "7", "*", "*", "mon-fri"), "30 7 * * mon-fri"),
        (("0", "8,20", "*", "*", "Monday,Friday"), "0 8,20 * * mon,fri"),
        (("*/15", "9-17", "*", "1-6", "1-5"), "*/15 9-17 * 1-6 1-5"),
        (("0", "0", "1,15", "*", "*"), "0 0 1,15 * *"),
        (("0, 30", "*", "*/2", "*", "1"), "0,30 * */2 * 1"),
        (("0", "0", "*", "*", "0"), "0 0 * * 0"),
        (("0", "0", "*", "*", "7"), "0 0 * * 7"),
    ],
)
def test_crontab_expression__same_fields(fields: tuple[str, ...], expected: str) -> None:
    assert crontab_expression(*fields) == (expected, None)


def test_crontab_expression__both_day_fields_restricted_is_refused() -> None:
    expression, reason = crontab_expression("0", "0", "1", "*", "1")
    assert expression is None
    assert reason is not None and "both restricted" in reason and "either" in reason


@pytest.mark.parametrize(
    "fields", [("61", "*", "*", "*", "*"), ("*", "25", "*", "*", "*"), ("x", "*", "*", "*", "*")]
)
def test_crontab_expression__invalid_text_is_refused_naming_it(fields: tuple[str, ...]) -> None:
    expression, reason = crontab_expression(*fields)
    assert expression is None
    assert reason is not None and "is not a cron expression awa accepts" in reason


def test_parse_task_map__pairs_and_a_malformed_one() -> None:
    assert parse_task_map(["a.b=c.d.e", " x = y.z "]) == {"a.b": "c.d.e", "x": "y.z"}
    with pytest.raises(ValueError, match="'nope' is not CELERY_NAME=DOTTED.PATH"):
        parse_task_map(["nope"])
    with pytest.raises(ValueError, match="CELERY_NAME=DOTTED.PATH"):
        parse_task_map(["=a.b"])


def test_import_report__counts_rows_and_renders_each() -> None:
    rows = [
        ImportRow(
            "a",
            "t",
            status="imported",
            celery_schedule="crontab",
            cron="* * * * *",
            timezone="UTC",
            task="m.t",
            state="paused",
            notes=["headers not imported"],
        ),
        ImportRow(
            "b",
            "t",
            celery_schedule="solar",
            reasons=["solar schedule (sunrise): cron cannot say solar events"],
        ),
    ]
    report = ImportReport(dry_run=True, rows=rows)
    data = report.as_json()
    assert (data["imported"], data["skipped"], data["dry_run"]) == (1, 1, True)
    assert "options" not in data["rows"][0]
    assert report.render() == [
        "dry run: nothing written: 1 imported, 1 skipped",
        "imported: a [crontab] * * * * * (UTC) -> m.t, paused",
        "  note: headers not imported",
        "skipped: b [solar]",
        "  not imported: solar schedule (sunrise): cron cannot say solar events",
    ]


@pytest.mark.parametrize(
    ("every", "period", "seconds"),
    [
        (90, "seconds", 90),
        (7, "minutes", 420),
        (5, "hours", 18000),
        (2, "days", 172800),
        (500, "microseconds", None),
        (0, "minutes", None),
        (-5, "minutes", None),
        (1, "fortnights", None),
    ],
)
def test_interval_seconds__whole_seconds_of_a_valid_interval(
    every: int, period: str, seconds: int | None
) -> None:
    assert interval_seconds(every, period) == seconds


def test_batches__a_slow_write_halves_the_next_batch_a_quick_one_doubles_it_up_to_the_maximum() -> None:
    batches = Batches(500)
    sizes = []
    for seconds in (1.0, 1.0, 0.3, 0.01, 0.01, 0.01, 0.01, 0.1):
        batches.written(seconds)
        sizes.append(batches.size)
    assert sizes == [250, 125, 62, 124, 248, 496, 500, 500]
    tiny = Batches(1)
    tiny.written(5.0)
    assert tiny.size == 1


@pytest.mark.parametrize(
    ("text", "epoch", "expected"),
    [
        ("-infinity", "-Infinity", FarInstant("-infinity", future=False)),
        ("infinity", "Infinity", FarInstant("infinity", future=True)),
        ("20000-01-01 00:00:00+00", "568971820800", FarInstant("20000-01-01 00:00:00+00", future=True)),
        (None, None, None),
    ],
)
def test_instant__a_timestamp_datetime_cannot_hold_is_far_past_or_future(
    text: str | None, epoch: str | None, expected: FarInstant | None
) -> None:
    assert _instant(text, epoch) == expected
