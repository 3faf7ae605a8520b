"""store.job_rows: an awa_jobs row decoded in one place, and the static
select lists of the jobs queries against the columns the Python expects."""

from __future__ import annotations

import json
import re
from dataclasses import fields
from datetime import UTC, datetime

import pytest

from awa_django.db import jsonb
from awa_django.db.timestamps import JOB_TIMESTAMPS, TIMESTAMP_HIGH, TIMESTAMP_LOW
from awa_django.store import jobs
from awa_django.store.job_rows import INVALID, JobRow, job_row
from awa_django.store.queries import query

AT = datetime(2026, 3, 1, 12, tzinfo=UTC)
COLUMNS = [f.name for f in fields(JobRow) if f.name != INVALID]


def raw(**values: object) -> tuple[list[str], list[object]]:
    """A row as a raw cursor hands it over: JSON columns as text."""
    row: dict[str, object] = {
        "id": 7, "attempt": 1, "state": "running", "kind": "tests.testapp.tasks.record", "queue": "mail",
        "args": '{"args": [1], "kwargs": {"a": "b"}}', "priority": 5, "max_attempts": 3,
        "run_at": AT, "created_at": AT, "attempted_at": AT, "started_at": AT, "heartbeat_at": AT,
        "finished_at": None, "errors": "[]", "result": None, "tags": ["t"], "metadata": '{"cron_name": "n"}',
        "worker_ids": ["w-1"], "unique_key": "u", "concurrency_key": "c", "concurrency_limit": 2,
    }  # fmt: skip
    row.update(values)
    return list(row), list(row.values())


def test_job_row__from_row_decodes_every_column_in_one_place() -> None:
    row = JobRow.from_row(*raw())
    assert row.args == {"args": [1], "kwargs": {"a": "b"}}
    assert (row.metadata, row.errors, row.tags, row.worker_ids) == ({"cron_name": "n"}, [], ["t"], ["w-1"])
    assert (row.id, row.attempt, row.queue, row.priority, row.run_at, row.key) == (
        7,
        1,
        "mail",
        5,
        AT,
        (7, 1),
    )
    assert row.invalid_timestamps is None
    columns, values = raw()
    assert JobRow.from_dict(job_row(columns, values)) == row
    with pytest.raises(AttributeError):
        row.state = "completed"  # type: ignore[misc]


def test_job_row__hostile_json_reads_as_undecodable_args_never_raises() -> None:
    bad = JobRow.from_row(*raw(args="{not json")).args
    assert isinstance(bad, jsonb.Undecodable) and bad.reason.startswith("is not valid JSON")
    deep = "[" * 5000 + "]" * 5000
    assert isinstance(JobRow.from_row(*raw(args=deep)).args, jsonb.Undecodable)
    # A metadata that is not an object reads as empty, and its reason goes to args.
    row = JobRow.from_row(*raw(metadata="[1, 2]"))
    assert row.metadata == {} and row.args == jsonb.Undecodable("metadata", "is an array, not an object")
    # Errors that cannot be read read as empty and do not stop the job.
    row = JobRow.from_row(*raw(errors='{"not": "an array"}'))
    assert row.errors == [] and row.args == {"args": [1], "kwargs": {"a": "b"}}


def test_job_row__out_of_range_timestamps_arrive_as_none_with_the_reason() -> None:
    row = JobRow.from_row(*raw(run_at=None, **{INVALID: "run_at -infinity"}))
    assert row.run_at is None and row.invalid_timestamps == "run_at -infinity"


def test_job_row__a_completed_row_of_the_combined_statement_holds_what_changed() -> None:
    row = JobRow(id=1, attempt=2, state="completed", finished_at=AT)
    assert (row.kind, row.args, row.errors, row.metadata, row.started_at) == ("", None, [], {}, None)


def test_job_row__unknown_columns_are_ignored_and_null_arrays_read_empty() -> None:
    columns, values = raw(tags=None, worker_ids=None)
    row = JobRow.from_row([*columns, "added_later"], [*values, "x"])
    assert (row.tags, row.worker_ids) == ([], [])


def test_job_row__dropped_errors_reads_the_note_of_the_latest_attempt_only() -> None:
    note = {"exception_class_path": "awa_django.exceptions.ErrorsDropped", "attempt": 1, "traceback": "why"}
    assert JobRow.from_row(*raw(errors=json.dumps([note]))).dropped_errors() == "why"
    assert JobRow.from_row(*raw(attempt=2, errors=json.dumps([note]))).dropped_errors() is None
    assert JobRow.from_row(*raw()).dropped_errors() is None


# -- the static select lists ----------------------------------------------------
def select_list(name: str) -> list[str]:
    """The output column names of query ``name``'s select list, in order."""
    text = "\n".join(line for line in query(name).splitlines() if not line.lstrip().startswith("--"))
    body = text.split("SELECT", 1)[1].rsplit("\n  FROM", 1)[0]
    items, depth, current = [], 0, ""
    for char in body:
        depth += char == "("
        depth -= char == ")"
        if char == "," and depth == 0:
            items.append(current)
            current = ""
        else:
            current += char
    items.append(current)
    return [re.split(r"\s+AS\s+", item.strip())[-1] for item in items]


def safe(column: str, only_if: str = "") -> str:
    return f"CASE WHEN {only_if}{column} BETWEEN '{TIMESTAMP_LOW}' AND '{TIMESTAMP_HIGH}' THEN {column} END"


@pytest.mark.parametrize("name", ["claim_jobs", "job_result_by_id"])
def test_claim_select_list__every_column_once_its_timestamps_read_safely(name: str) -> None:
    columns = select_list(name)
    expected = COLUMNS + ([INVALID] if name == "claim_jobs" else [])
    assert sorted(columns) == sorted(expected)
    for column in JOB_TIMESTAMPS:
        assert f"{safe(column)} AS {column}" in query(name)


@pytest.mark.parametrize("name", ["claim_jobs", "complete_and_claim_jobs", "job_invalid_timestamps"])
def test_invalid_timestamps__names_every_timestamp_column_outside_the_range(name: str) -> None:
    text = query(name)
    found = re.findall(
        r"CASE WHEN NOT (\w+) BETWEEN '([^']+)' AND '([^']+)' THEN '(\w+) ' \|\| (\w+)::text END", text
    )
    assert found == [(c, TIMESTAMP_LOW, TIMESTAMP_HIGH, c, c) for c in JOB_TIMESTAMPS]


def test_complete_and_claim_select_list__matches_the_columns_read_by_position() -> None:
    assert select_list("complete_and_claim_jobs") == list(jobs.COMPLETE_AND_CLAIM_COLUMNS)
    assert sorted(jobs.COMPLETE_AND_CLAIM_COLUMNS) == sorted([*COLUMNS, INVALID])
    text = query("complete_and_claim_jobs")
    assert f"{safe('finished_at')} AS finished_at" in text
    for column in JOB_TIMESTAMPS:
        if column != "finished_at":
            assert f"{safe(column, "state = 'running' AND ")} AS {column}" in text


def test_admin_duration__uses_the_same_range() -> None:
    text = query("job_duration_expression")
    assert text.count(f"BETWEEN '{TIMESTAMP_LOW}' AND '{TIMESTAMP_HIGH}'") == 2
