"""exceptions.py: messages and attributes callers rely on (no database)."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from awa_django.exceptions import InvalidSchedule, ScheduleNotFound, UnknownScheduleOption


def test_invalid_schedule__names_schedule_and_field() -> None:
    exc = InvalidSchedule("nightly", "cron", "bad field count")
    assert str(exc) == "schedule 'nightly': field 'cron': bad field count"
    assert (exc.schedule, exc.field, exc.reason) == ("nightly", "cron", "bad field count")
    assert isinstance(exc, ImproperlyConfigured)  # Django reports it at setup


def test_invalid_schedule__without_a_name() -> None:
    assert (
        str(InvalidSchedule(None, "name", "must be a string")) == "schedule: field 'name': must be a string"
    )


def test_unknown_option_is_an_invalid_schedule() -> None:
    assert isinstance(UnknownScheduleOption("x", "crn", "unknown option"), InvalidSchedule)


def test_schedule_not_found__is_a_lookup_error_with_the_name() -> None:
    exc = ScheduleNotFound("ghost")
    assert isinstance(exc, LookupError) and exc.name == "ghost"
    assert str(exc) == "no cron schedule named 'ghost'"
