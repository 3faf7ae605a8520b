"""``manage.py awa cron create|edit|delete``: runtime schedules from the shell.

Proves: the verbs write through the service layer (owner awa:runtime), text and
``--json`` output; validation errors name the field; code-declared names are
refused with where they are declared; any declaration option passes with
``--option``.
"""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from awa_django.declarations.runtime import RUNTIME_OWNER
from awa_django.models import CronJob
from tests.factories import CronJobFactory

pytestmark = pytest.mark.django_db

TASK = "tests.testapp.tasks.record"


def awa(*args: str) -> str:
    out = StringIO()
    call_command("awa", *args, stdout=out)
    return out.getvalue()


def test_create_edit_delete__text_and_json() -> None:
    text = awa(
        "cron", "create", "poll", "--cron", "*/5 * * * *", "--task", TASK, "--kwargs", '{"label": "a"}',
        "--timezone", "Europe/Berlin", "--queue", "mail", "--priority", "4", "--actor", "ops",
    )  # fmt: skip
    assert text.strip() == "create: poll: done (runtime schedule, owner awa:runtime)"
    row = CronJob.objects.get(name="poll")
    assert (row.owner_id, row.queue, row.priority, row.timezone) == (
        RUNTIME_OWNER,
        "mail",
        4,
        "Europe/Berlin",
    )
    assert row.args == {"args": [], "kwargs": {"label": "a"}}

    data = json.loads(
        awa("cron", "edit", "poll", "--cron", "0 * * * *", "--missed-fire-policy", "catch_up", "--json")
    )
    assert data == {
        "action": "edit",
        "schedule": "poll",
        "changed": True,
        "detail": "changed cron_expr, missed_fire_policy",
    }
    assert awa("cron", "edit", "poll", "--cron", "0 * * * *").strip() == "edit: poll: no change"
    assert awa("cron", "edit", "poll", "--option", "max_attempts=7").startswith("edit: poll: done")
    assert CronJob.objects.get(name="poll").max_attempts == 7

    data = json.loads(awa("cron", "delete", "poll", "--json"))
    assert data["action"] == "delete" and data["changed"] is True
    assert not CronJob.objects.filter(name="poll").exists()


def test_create__validation_error_names_the_field() -> None:
    with pytest.raises(CommandError, match="field 'cron'"):
        awa("cron", "create", "poll", "--cron", "61 * * * *", "--task", TASK)
    with pytest.raises(CommandError, match="field 'queue'"):
        awa("cron", "create", "poll", "--cron", "* * * * *", "--task", TASK, "--queue", "nowhere")
    with pytest.raises(CommandError, match="not a schedule option"):
        awa("cron", "create", "poll", "--cron", "* * * * *", "--task", TASK, "--option", "colour=red")
    assert not CronJob.objects.exists()


def test_code_declared_names_are_refused_saying_where() -> None:
    CronJobFactory(name="nightly", owner_id="billing")
    CronJobFactory(name="legacy")
    with pytest.raises(CommandError, match="declared in code by the deployment of owner 'billing'"):
        awa("cron", "create", "nightly", "--cron", "* * * * *", "--task", TASK)
    with pytest.raises(CommandError, match="declared in code"):
        awa("cron", "edit", "legacy", "--priority", "3")
    with pytest.raises(CommandError, match="declared in code"):
        awa("cron", "delete", "legacy")
    assert CronJob.objects.get(name="legacy").priority == 0


def test_plan_and_owners__know_the_runtime_owner() -> None:
    awa("cron", "create", "poll", "--cron", "* * * * *", "--task", TASK)
    assert awa("cron", "plan", RUNTIME_OWNER).strip() == (
        "owner awa:runtime: runtime schedules (created by operators), never reconciled: poll"
    )
    data = json.loads(awa("cron", "owners", "--json"))
    assert data[-1]["owner_id"] == RUNTIME_OWNER and data[-1]["schedules"] == ["poll"]
    assert data[-1]["retirements"] == []
    assert "never reconciled" in awa("cron", "owners")


@pytest.mark.parametrize("key", ["actor", "name", "using", "apply"])
def test_option__a_key_that_is_not_a_schedule_option_is_a_usage_error(key: str) -> None:
    with pytest.raises(CommandError, match=f"'{key}' is not a schedule option"):
        awa("cron", "create", "poll", "--cron", "* * * * *", "--task", TASK, "--option", f"{key}=x")
    assert not CronJob.objects.exists()


@pytest.mark.parametrize("flag", ["--args", "--kwargs", "--option"])
def test_deeply_nested_json_is_a_usage_error_not_a_traceback(flag: str) -> None:
    deep = "[" * 30_000 + "]" * 30_000
    value = f"tags={deep}" if flag == "--option" else deep
    with pytest.raises(CommandError, match="nested too deeply"):
        awa("cron", "create", "poll", "--cron", "* * * * *", "--task", TASK, flag, value)
    assert not CronJob.objects.exists()
