"""crontz.py: which local wall times exist once, twice or not at all, and where
the offset changes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from awa_django.cron.zones import _classify, _in_fold, _transition

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")
LORD_HOWE = ZoneInfo("Australia/Lord_Howe")  # a 30-minute DST shift


def test_classify__ordinary_time_is_single_with_one_instant() -> None:
    kind, first, second = _classify(datetime(2026, 7, 1, 12, 0), BERLIN)
    assert kind == "single"
    assert first == second == datetime(2026, 7, 1, 10, 0, tzinfo=UTC)


def test_classify__time_in_the_spring_gap_is_bracketed_by_both_readings() -> None:
    # Berlin skips 02:00-03:00 on 2026-03-29 (01:00 UTC).
    kind, first, second = _classify(datetime(2026, 3, 29, 2, 30), BERLIN)
    assert kind == "gap"
    assert (first, second) == (
        datetime(2026, 3, 29, 0, 30, tzinfo=UTC),
        datetime(2026, 3, 29, 1, 30, tzinfo=UTC),
    )
    assert first < datetime(2026, 3, 29, 1, 0, tzinfo=UTC) < second


def test_classify__time_in_the_autumn_fold_gives_both_occurrences_in_order() -> None:
    # Berlin repeats 02:00-03:00 on 2026-10-25.
    kind, first, second = _classify(datetime(2026, 10, 25, 2, 30), BERLIN)
    assert kind == "fold"
    assert first == datetime(2026, 10, 25, 0, 30, tzinfo=UTC)
    assert second == first + timedelta(hours=1)
    # New York's fold is in the other half of the day in UTC, same rule.
    kind, first, second = _classify(datetime(2026, 11, 1, 1, 30), NEW_YORK)
    assert (kind, first, second - first) == (
        "fold",
        datetime(2026, 11, 1, 5, 30, tzinfo=UTC),
        timedelta(hours=1),
    )


def test_transition__finds_the_spring_change_and_the_gap_it_leaves() -> None:
    _, lo, hi = _classify(datetime(2026, 3, 29, 2, 30), BERLIN)
    instant, old_wall, new_wall = _transition(BERLIN, lo, hi)
    assert instant == datetime(2026, 3, 29, 1, 0, tzinfo=UTC)
    assert (old_wall, new_wall) == (datetime(2026, 3, 29, 2, 0), datetime(2026, 3, 29, 3, 0))


def test_transition__finds_the_autumn_change_and_the_fold_it_leaves() -> None:
    _, lo, hi = _classify(datetime(2026, 10, 25, 2, 30), BERLIN)
    instant, old_wall, new_wall = _transition(BERLIN, lo, hi)
    assert instant == datetime(2026, 10, 25, 1, 0, tzinfo=UTC)
    # The fold runs from the new offset's wall time back up to the old one's.
    assert (new_wall, old_wall) == (datetime(2026, 10, 25, 2, 0), datetime(2026, 10, 25, 3, 0))


def test_transition__half_hour_shift_is_found_to_the_second() -> None:
    # Lord Howe goes from +10:30 to +11:00 at 02:00 local on 2026-10-04.
    kind, lo, hi = _classify(datetime(2026, 10, 4, 2, 15), LORD_HOWE)
    assert kind == "gap" and hi - lo == timedelta(minutes=30)
    instant, old_wall, new_wall = _transition(LORD_HOWE, lo, hi)
    assert instant == datetime(2026, 10, 3, 15, 30, tzinfo=UTC)
    assert (old_wall, new_wall) == (datetime(2026, 10, 4, 2, 0), datetime(2026, 10, 4, 2, 30))
    assert instant.microsecond == 0


def test_in_fold__true_for_either_reading_of_a_repeated_time_only() -> None:
    repeated = datetime(2026, 10, 25, 2, 30, tzinfo=BERLIN)
    assert _in_fold(repeated)
    assert _in_fold(repeated.replace(fold=1))
    assert not _in_fold(datetime(2026, 10, 25, 3, 30, tzinfo=BERLIN))
    assert not _in_fold(datetime(2026, 7, 1, 2, 30, tzinfo=BERLIN))
