"""Static query text that spells out what a Python constant also holds: the two agree."""

from __future__ import annotations

import re

from awa_django.db.timestamps import JOB_TIMESTAMPS, TIMESTAMP_HIGH, TIMESTAMP_LOW
from awa_django.declarations.shape import POLICY_DEFAULTS, REQUIRED_KEYS
from awa_django.store.queries import query


def test_stored_schedule_definitions__names_every_definition_key_in_order() -> None:
    text = query("stored_schedule_definitions")
    keys = re.findall(r"'([a-z_]+)', ", text)
    assert keys == [*REQUIRED_KEYS, *POLICY_DEFAULTS]
    for key, default in POLICY_DEFAULTS.items():
        if default is not None:
            assert f"NULLIF({key}, {default!r})" in text


def test_count_unfinished_jobs_out_of_range__checks_every_timestamp_column_against_the_range() -> None:
    text = query("count_unfinished_jobs_out_of_timestamp_range")
    found = re.findall(r"coalesce\((\w+) BETWEEN '([^']+)' AND '([^']+)', TRUE\)", text)
    assert found == [(column, TIMESTAMP_LOW, TIMESTAMP_HIGH) for column in JOB_TIMESTAMPS]
