"""Out-of-range ``manage.py awa`` options in a real shell: a usage error, no traceback.

The values are refused by the argument parser, before any database access;
tests/db/test_out_of_range_values.py covers the same options through call_command.
"""

from __future__ import annotations

import subprocess

import pytest

from tests.helpers.processes import manage


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return manage(*args, AWA_TEST_SCHEDULES=None)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("jobs", "prune", "--older-than", "1e15"),
            "argument --older-than: must be a number of seconds from 0.000001 to 31536000000, got '1e15'",
        ),
        (("jobs", "prune", "--older-than", "1e-300"), "argument --older-than: must be a number of seconds"),
        (
            ("cron", "show", "daily", "--next", "10000000000"),
            "argument --next: must be a whole number from 0 to 1000, got '10000000000'",
        ),
        (("cron", "show", "daily", "--next=-1"), "argument --next: must be a whole number from 0 to 1000"),
    ],
)
def test_awa_command__out_of_range_options_are_usage_errors(args: tuple[str, ...], message: str) -> None:
    proc = run("awa", *args)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr
