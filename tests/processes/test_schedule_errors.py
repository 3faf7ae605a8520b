"""A bad schedule is one line naming the schedule, the field and the reason, from every command.

Proves, through real ``manage.py`` processes: a ``cron.py`` declaring the quick
start's typo (``"0 25 * * 1-5"``), and an ``AWA_SCHEDULES`` entry with a bad
expression, zone or option, make ``check``, ``migrate``, ``runserver``,
``runcron`` and ``runtasks`` print one line ``schedule '<name>': field
'<field>': <reason>`` and exit non-zero, with no traceback unless
``--traceback`` asks for one; ``manage.py awa cron create`` with a bad expression is one
error line too.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.helpers.database import database_url
from tests.helpers.processes import manage

pytestmark = pytest.mark.django_db(transaction=True)

TASK = "tests.testapp.tasks.record"
HOUR = "field 'cron': invalid cron expression '0 25 * * 1-5': bad hour field '25': 25 is not in 0-23"
# Commands that start by checking the project, as a user types them.
COMMANDS = [
    ["check"],
    ["migrate"],
    ["runserver", "--noreload", "127.0.0.1:0"],
    ["runcron", "--once"],
    ["runtasks", "--burst"],
]


def run(*args: str, **env: str) -> tuple[int, str]:
    done = manage(*args, **{"DATABASE_URL": database_url(), "AWA_TEST_SCHEDULES": None, **env})
    return done.returncode, done.stdout + done.stderr


def the_line(output: str, expected: str) -> str:
    lines = [line for line in output.splitlines() if expected in line]
    assert len(lines) == 1, output
    assert "Traceback" not in output, output
    return lines[0]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_cron_py__a_bad_expression_is_one_line_from_every_command(command: list[str]) -> None:
    code, output = run(*command, DJANGO_SETTINGS_MODULE="tests.badapp.settings")
    assert code != 0
    line = the_line(output, f"schedule 'broken': {HOUR}")
    assert line.startswith("tests/badapp/cron.py:5: (awa_django.E003) ")


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_awa_schedules__a_bad_expression_is_one_line_from_every_command(command: list[str]) -> None:
    schedules = {"nightly": {"cron": "0 25 * * 1-5", "task": TASK}}
    code, output = run(*command, AWA_TEST_SCHEDULES=json.dumps(schedules))
    assert code != 0
    line = the_line(output, f"schedule 'nightly': {HOUR}")
    assert line.startswith("AWA_SCHEDULES['nightly']: (awa_django.E003) ")


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"cron": "0 2 * * *", "timezone": "Europe/Berln"}, "schedule 'nightly': field 'timezone': "),
        ({"every": 3000000000}, "schedule 'nightly': field 'every': must be a whole number of seconds"),
        ({"cron": "0 2 * * *", "jitter": "5"}, "schedule 'nightly': field 'jitter': "),
    ],
)
def test_awa_schedules__a_bad_zone_or_option_is_one_line(options: dict[str, Any], expected: str) -> None:
    code, output = run("check", AWA_TEST_SCHEDULES=json.dumps({"nightly": {"task": TASK, **options}}))
    assert code != 0
    the_line(output, expected)


def test_check__traceback_is_shown_on_request() -> None:
    code, output = run("check", "--traceback", DJANGO_SETTINGS_MODULE="tests.badapp.settings")
    assert code != 0 and f"schedule 'broken': {HOUR}" in output and "Traceback" in output


def test_cli_cron_create__a_bad_expression_is_one_line() -> None:
    code, output = run(
        "awa", "cron", "create", "nightly", "--cron", "0 25 * * 1-5", "--task", TASK, "--actor", "eve"
    )
    assert code == 1
    assert the_line(output, HOUR) == f"CommandError: schedule 'nightly': {HOUR}"
