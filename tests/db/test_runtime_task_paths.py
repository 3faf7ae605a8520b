"""A runtime schedule's task path is data: nothing is imported because it names a module.

Proves: ``create_schedule``, ``update_schedule`` (also of a stored row whose
``kind`` was rewritten by raw SQL), the admin's change form and ``manage.py
awa cron create --task`` refuse a task path whose module is outside the
installed apps and ``AWA_TASK_MODULES``, naming the path, and never import
that module (a sentinel module records being imported; ``this.x`` would
print the Zen of Python into the ``--json`` output); a module listed in
``AWA_TASK_MODULES`` is imported and accepted; a task object from outside the
list is refused too (runtasks would not run it); schedules declared in code
keep importing the task their code names, as before.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator

import pytest
from django.db import connection
from django.test.utils import override_settings

from awa_django.declarations.builder import build_schedule
from awa_django.exceptions import InvalidSchedule
from awa_django.models import CronJob
from awa_django.operations.runtime_schedules import create_schedule, update_schedule
from tests.helpers.admin import VIEW_ALL, staff
from tests.helpers.database import database_url
from tests.helpers.processes import manage_with

pytestmark = pytest.mark.django_db

TASK = "tests.testapp.tasks.record"
SENTINEL = "tests.import_sentinel.task"
ZEN = "Beautiful is better than ugly"


@pytest.fixture(autouse=True)
def fresh_sentinel() -> Iterator[None]:
    """The sentinel and ``this`` start unimported; the test asserts they stay so."""
    os.environ.pop("AWA_IMPORT_SENTINEL", None)
    sys.modules.pop("tests.import_sentinel", None)
    sys.modules.pop("this", None)
    yield
    os.environ.pop("AWA_IMPORT_SENTINEL", None)
    sys.modules.pop("tests.import_sentinel", None)


def assert_not_imported() -> None:
    assert "AWA_IMPORT_SENTINEL" not in os.environ
    assert "tests.import_sentinel" not in sys.modules and "this" not in sys.modules


@pytest.mark.parametrize("path", [SENTINEL, "this.x"])
def test_create_schedule__a_task_outside_the_allow_list_is_refused_unimported(
    path: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(InvalidSchedule) as caught:
        create_schedule("outside", "* * * * *", path, actor="ops")
    assert caught.value.field == "task" and repr(path) in str(caught.value)
    assert "AWA_TASK_MODULES" in str(caught.value)
    assert_not_imported()
    assert ZEN not in capsys.readouterr().out
    assert not CronJob.objects.filter(name="outside").exists()


def test_update_schedule__a_new_task_outside_the_allow_list_is_refused_unimported() -> None:
    create_schedule("poll", "* * * * *", TASK, actor="ops")
    with pytest.raises(InvalidSchedule, match="tests.import_sentinel.task"):
        update_schedule("poll", actor="ops", task=SENTINEL)
    assert_not_imported()
    assert CronJob.objects.get(name="poll").kind == TASK


def rewrite_kind(name: str, kind: str) -> None:
    """What someone with UPDATE on awa_cron_jobs writes (as the runtime owner, past the fence)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config('awa.cron_owner', 'awa:runtime', false)")
        cursor.execute("UPDATE awa_cron_jobs SET kind = %s WHERE name = %s RETURNING kind", [kind, name])
        assert cursor.fetchall() == [(kind,)]
        cursor.execute("SELECT set_config('awa.cron_owner', '', false)")


def test_update_schedule__a_stored_kind_outside_the_allow_list_is_never_imported() -> None:
    create_schedule("poll", "* * * * *", TASK, actor="ops")
    rewrite_kind("poll", SENTINEL)
    with pytest.raises(InvalidSchedule, match="tests.import_sentinel.task"):
        update_schedule("poll", actor="ops", priority=3)
    assert_not_imported()


def test_admin_change__a_stored_kind_outside_the_allow_list_is_a_form_error() -> None:
    create_schedule("poll", "*/5 * * * *", TASK, actor="ops")
    rewrite_kind("poll", SENTINEL)
    client = staff("alice", *VIEW_ALL, "change_cronjob")
    response = client.post(
        "/admin/awa_django/cronjob/poll/change/",
        {
            "cron_expr": "*/5 * * * *",
            "timezone": "UTC",
            "missed_fire_policy": "coalesce",
            "task_path": SENTINEL,
            "call_args": "[]",
            "call_kwargs": "{}",
        },
    )
    assert response.status_code == 200  # the form again, with the error
    assert "is not in an installed app or AWA_TASK_MODULES" in response.content.decode()
    assert_not_imported()


@override_settings(AWA_TASK_MODULES=["tests.outside_tasks"])
def test_create_schedule__a_module_listed_in_awa_task_modules_is_accepted() -> None:
    schedule = create_schedule("outside", "* * * * *", "tests.outside_tasks.outside", actor="ops")
    assert schedule.kind == "tests.outside_tasks.outside"


def test_create_schedule__a_task_object_outside_the_allow_list_is_refused() -> None:
    from tests.outside_tasks import outside

    with pytest.raises(InvalidSchedule, match="tests.outside_tasks.outside"):
        create_schedule("outside", "* * * * *", outside, actor="ops")


def test_build_schedule__a_declaration_in_code_still_imports_what_it_names() -> None:
    schedule = build_schedule("outside", "* * * * *", "tests.outside_tasks.outside")
    assert schedule.kind == "tests.outside_tasks.outside"  # system check E075 reports it instead


@pytest.mark.django_db(transaction=True)
def test_cli_cron_create__task_this_x_prints_no_zen_into_the_json_output() -> None:
    result = manage_with(
        {"DATABASE_URL": database_url()},
        "awa", "cron", "create", "zen", "--cron", "* * * * *", "--task", "this.x", "--json", "--actor", "ops",
    )  # fmt: skip
    assert result.returncode != 0
    assert ZEN not in result.stdout and ZEN not in result.stderr
    assert "'this.x'" in result.stderr and "AWA_TASK_MODULES" in result.stderr
    assert not CronJob.objects.filter(name="zen").exists()
    if result.stdout.strip():
        json.loads(result.stdout)  # whatever stdout holds is JSON, never the poem
