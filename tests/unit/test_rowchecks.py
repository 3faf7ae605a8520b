"""rowchecks.py: which stored schedule rows the evaluator parks, and why.

Rows here are the dicts the evaluator's due query returns (see
the query ``due_schedules_batch``, as ``ScheduleRow``); test_poisoned_rows.py covers the same values end to
end through the database.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test.utils import override_settings

from awa_django.conf import DEFAULTS
from awa_django.leader.row_checks import max_args_bytes, row_problem
from tests.helpers.rows import healthy


def test_row_problem__none_for_a_row_a_declaration_could_write() -> None:
    assert row_problem(healthy()) is None
    assert row_problem(healthy(last_enqueued_at=None, prev_text=None)) is None  # never fired


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"last_enqueued_at": None, "prev_text": "infinity"}, "last_enqueued_at 'infinity' is outside"),
        ({"created_at": None, "created_text": "9999-12-31 23:59:00+00"}, "created_at '9999-12-31"),
        ({"args_type": "array"}, 'args is not {"args": [...], "kwargs": {...}}'),
        ({"args_args_type": "number"}, "args is not"),
        ({"args_kwargs_type": "null"}, "args is not"),
        ({"args_keys": ["args", "kwargs", "x"]}, "args is not"),
        ({"args_keys": ["x"], "args_args_type": None, "args_kwargs_type": None}, "args is not"),
        ({"metadata_type": "array"}, "metadata is a JSON array, not an object"),
        ({"kind": ".relative"}, "kind '.relative' is not an absolute dotted path"),
        ({"cron_expr": "*/61 * * * *"}, "cron_expr step '61'"),
        ({"timezone": "localtime"}, "timezone 'localtime' depends on the host"),
        ({"missed_fire_policy": "skip"}, "missed_fire_policy 'skip' is not coalesce or catch_up"),
    ],
)
def test_row_problem__names_the_first_bad_column(changes: dict[str, Any], expected: str) -> None:
    problem = row_problem(healthy(**changes))
    assert problem is not None and problem.startswith(expected), problem


@pytest.mark.parametrize(
    ("keys", "args_type", "kwargs_type"),
    [(None, None, None), (["args"], "array", None), (["kwargs"], None, "object")],
)
def test_row_problem__args_may_miss_either_key(
    keys: list[str] | None, args_type: str | None, kwargs_type: str | None
) -> None:
    # {} (the model's default), {"args": [...]} or {"kwargs": {...}}: the worker
    # reads a missing key as empty (taskpaths.call_arguments).
    row = healthy(args_keys=keys, args_args_type=args_type, args_kwargs_type=kwargs_type)
    assert row_problem(row) is None


def test_row_problem__args_names_the_key_or_type_at_fault() -> None:
    shape = 'args is not {"args": [...], "kwargs": {...}}'
    assert row_problem(healthy(args_type="array")) == f"{shape}: it is a JSON array"
    assert row_problem(healthy(args_keys=["args", "kwargs", "x"])) == f"{shape}: it has the key 'x'"
    assert row_problem(healthy(args_args_type="object")) == (
        f"{shape}: its 'args' is a JSON object, not an array"
    )


def test_row_problem__reports_columns_in_order() -> None:
    problem = row_problem(healthy(args_type="string", kind="..", missed_fire_policy="never"))
    assert problem is not None and problem.startswith("args is not")


def test_row_problem__size_limit_is_the_given_one_for_args_and_metadata() -> None:
    assert row_problem(healthy(args_bytes=100), max_bytes=100) is None
    assert row_problem(healthy(args_bytes=101), max_bytes=100) == (
        "args is 101 bytes as JSON; the limit is AWA_MAX_ARGS_BYTES=100"
    )
    problem = row_problem(healthy(metadata_bytes=101), max_bytes=100)
    assert problem is not None and problem.startswith("metadata is 101 bytes")


def test_row_problem__reads_the_setting_when_no_limit_is_given() -> None:
    with override_settings(AWA_MAX_ARGS_BYTES=50):
        problem = row_problem(healthy(args_bytes=51))
    assert problem is not None and "AWA_MAX_ARGS_BYTES=50" in problem


@pytest.mark.parametrize("value", [0, -1, True, "1024", 1.5])
def test_max_args_bytes__invalid_setting_falls_back_to_the_default(value: Any) -> None:
    with override_settings(AWA_MAX_ARGS_BYTES=value):
        assert max_args_bytes() == DEFAULTS["AWA_MAX_ARGS_BYTES"]
    with override_settings(AWA_MAX_ARGS_BYTES=4096):
        assert max_args_bytes() == 4096
