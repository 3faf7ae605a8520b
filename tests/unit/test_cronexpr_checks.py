"""Check W080: declared schedules whose fire times changed with classic day matching."""

from __future__ import annotations

from django.core.checks import WARNING, run_checks
from django.test import override_settings

from awa_django.declarations.declaration import periodic

RECORD = "tests.testapp.tasks.record"


def w080() -> list:
    return [m for m in run_checks() if m.id == "awa_django.W080"]


def test_check_changed_day_rules__default_test_settings_are_quiet() -> None:
    assert w080() == []


@override_settings(
    AWA_SCHEDULES={
        "odd-mondays": {"cron": "0 0 */2 * 1", "task": RECORD},
        "nightly": {"cron": "0 2 * * *", "task": RECORD},
    }
)
def test_check_changed_day_rules__names_a_settings_schedule() -> None:
    [message] = w080()
    assert message.level == WARNING
    assert message.obj == "AWA_SCHEDULES['odd-mondays']"
    assert message.msg == (
        "schedule 'odd-mondays': cron '0 0 */2 * 1' now fires at other times: day field '*/2' "
        "starts with '*': it now narrows the other day field (AND), as in classic cron"
    )
    assert message.hint == "See docs/explanation/semantics.md#cron-expressions; rewrite or silence."
    assert len(message.msg) <= 200


def test_check_changed_day_rules__names_a_cron_py_schedule() -> None:
    periodic("month-ends", "0 0 31W * *", RECORD)
    periodic("first-or-monday", "0 0 1 * 1#1", RECORD)
    periodic("plain", "0 0 L * *", RECORD)

    messages = w080()

    assert [m.msg.split(":")[0] for m in messages] == ["schedule 'first-or-monday'", "schedule 'month-ends'"]
    assert all("test_cronexpr_checks.py" in str(m.obj) for m in messages)
    assert "'31W' no longer fires in months that have no day 31" in messages[1].msg


@override_settings(AWA_SCHEDULES={"broken": {"cron": "0 0 30W 2 *", "task": RECORD}})
def test_check_changed_day_rules__never_matching_w_is_an_e003_error() -> None:
    [message] = [m for m in run_checks() if (m.id or "").startswith("awa_django.")]
    assert message.id == "awa_django.E003"
    assert "never matches any date (day-of-month '30W' never occurs in month '2')" in message.msg
