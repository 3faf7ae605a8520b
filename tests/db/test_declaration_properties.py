"""Property test: any declaration is either refused with ``InvalidSchedule`` or,
once synced, fires correctly in a real evaluation pass. Never anything else."""

from __future__ import annotations

import json
from datetime import UTC, timedelta
from typing import Any

import pytest
from django.db import connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from awa_django import InvalidSchedule
from awa_django.cron import search
from awa_django.declarations.declaration import build_schedule
from awa_django.declarations.sync import sync_schedules
from awa_django.leader.evaluator import evaluate
from awa_django.models import CronJob, Job

pytestmark = pytest.mark.django_db

RECORD = "tests.testapp.tasks.record"

# Text with what attackers and unlucky operators type: controls, RTL overrides,
# non-ASCII whitespace, lone surrogates, NUL.
hostile_text = st.text(
    alphabet=st.one_of(
        st.characters(codec="utf-8"),
        st.sampled_from(["\x00", "\x1b", "\n", "\u202e", "\u200b", "\u00a0", "\u2003", "\ud800", "\udfff"]),
    ),
    max_size=30,
)
field_token = st.one_of(
    st.sampled_from(
        [
            "*",
            "0",
            "5",
            "59",
            "1-5",
            "30-10",
            "*/2",
            "*/15",
            "*/59",
            "*/60",
            "*/61",
            "*/1e20",
            "mon-fri",
            "fri-mon",
            "jan",
            "L",
            "5#2",
            "H",
            "?",
            "-1",
            "99",
            "1,2,3",
            "0-30/5",
        ]
    ),
    st.from_regex(r"[0-9*/,\-]{1,6}", fullmatch=True),
)
expressions = st.one_of(
    st.lists(field_token, min_size=5, max_size=6).map(" ".join),
    st.lists(field_token, min_size=4, max_size=7).flatmap(
        lambda parts: st.sampled_from([" ", "\t", "\u00a0", "\u3000", "  "]).map(lambda sep: sep.join(parts))
    ),
    st.sampled_from(["@daily", "@hourly", "@reboot", "@yearly", "* * * * * *", "*/5 * * * * *", ""]),
    hostile_text,
)
zones = st.one_of(
    st.sampled_from(
        [
            "UTC",
            "Europe/Berlin",
            "America/New_York",
            "Australia/Lord_Howe",
            "Asia/Kathmandu",
            "localtime",
            "posixrules",
            "Factory",
            "Mars/Base",
            "../etc/passwd",
            "",
            " UTC",
        ]
    ),
    hostile_text,
)
json_leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), hostile_text)
json_values = st.recursive(
    json_leaf,
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(hostile_text, children, max_size=3)
    ),
    max_leaves=20,
)
names = st.one_of(hostile_text, st.from_regex(r"[a-z][a-z0-9\-]{0,20}", fullmatch=True))


def as_jsonb(value: Any) -> Any:
    """``value`` after a round trip through PostgreSQL's jsonb, which stores numbers
    as exact decimals: a float beyond 2**53 comes back as the integer its shortest
    repr spells (documented in declaring-schedules.md)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT %s::jsonb::text", [json.dumps(value)])
        return json.loads(cursor.fetchone()[0])


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    name=names,
    cron=expressions,
    timezone=zones,
    args=st.lists(json_values, max_size=3),
    kwargs=st.dictionaries(hostile_text, json_values, max_size=3),
    metadata=st.dictionaries(hostile_text, json_values, max_size=2),
    tags=st.lists(hostile_text, max_size=3),
)
def test_declarations__are_refused_or_fire_correctly(
    name: str,
    cron: str,
    timezone: str,
    args: list[Any],
    kwargs: dict[str, Any],
    metadata: dict[str, Any],
    tags: list[str],
) -> None:
    try:
        schedule = build_schedule(
            name, cron, RECORD, timezone=timezone, args=args, kwargs=kwargs, metadata=metadata, tags=tags
        )
    except InvalidSchedule as exc:
        assert exc.field and str(exc)  # refused, naming the field
        return
    Job.objects.all().delete()
    CronJob.objects.all().delete()
    assert sync_schedules([schedule]) == [schedule.name]
    result = evaluate()
    row = CronJob.objects.get(name=schedule.name)
    assert row.parked_reason is None, row.parked_reason
    expression = search.parse_cron(row.cron_expr)
    zone = search.parse_timezone(row.timezone)
    jobs = [j for j in result.jobs if j["metadata"]["cron_name"] == schedule.name]
    assert len(jobs) <= 1  # a first registration fires at most once (coalesced)
    lower = row.created_at - timedelta(seconds=60, microseconds=1)
    if jobs:
        fire_at = row.last_enqueued_at
        assert fire_at is not None
        assert jobs[0]["metadata"]["cron_fire_at"] == fire_at.astimezone(UTC).strftime(
            "%Y-%m-%dT%H:%M:%S+00:00"
        )
        assert search.next_fire(expression, zone, fire_at - timedelta(microseconds=1)) == fire_at
        assert jobs[0]["args"] == as_jsonb({"args": schedule.args, "kwargs": schedule.kwargs})
        lower = fire_at
    expected_next = search.next_fire(expression, zone, lower)
    if expected_next is not None and row.next_fire_at is not None and row.next_fire_at.year < 9999:
        assert row.next_fire_at == expected_next
