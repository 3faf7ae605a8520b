"""Setup mistakes get a message that says what to do (E070-E073, missing migrate)."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.checks import run_checks
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import override_settings

from awa_django.client import compat

pytestmark = pytest.mark.django_db(transaction=True)

AWA = {"BACKEND": "awa_django.client.backend.AwaBackend", "QUEUES": ["default", "mail", "reports"]}
IMMEDIATE = {
    "BACKEND": compat.IMMEDIATE_BACKEND,
    "QUEUES": ["default", "mail", "reports"],
}
SCHEDULES = {"nightly": {"cron": "0 2 * * *", "task": "tests.testapp.tasks.record"}}


def ids(**kwargs: Any) -> list[str]:
    return [m.id for m in run_checks(**kwargs) if (m.id or "").startswith("awa_django.")]


@pytest.fixture
def unmigrated() -> Iterator[None]:
    """The test database with awa_django migrated back to 0007 (restored afterwards)."""
    call_command("migrate", "awa_django", "0007", verbosity=0)
    try:
        yield
    finally:
        call_command("migrate", "awa_django", verbosity=0)


def test_check_database__unapplied_migrations_are_e071(unmigrated: None) -> None:
    messages = [m for m in run_checks(databases=["default"]) if m.id == "awa_django.W071"]
    assert len(messages) == 1
    assert "0009_task_outcomes" in messages[0].msg and messages[0].hint == "Run manage.py migrate."


def test_check_database__migrate_itself_does_not_warn_of_the_migrations_it_applies(unmigrated: None) -> None:
    out, err = io.StringIO(), io.StringIO()
    call_command("migrate", "awa_django", skip_checks=False, stdout=out, stderr=err)
    assert "W071" not in out.getvalue() + err.getvalue()
    assert "Applying awa_django.0008" in out.getvalue()  # the checks ran, then the migrations


def test_check_database__migrated_database_is_clean() -> None:
    assert "awa_django.W071" not in ids(databases=["default"])


@pytest.mark.parametrize("command", [["runtasks", "--burst"], ["runcron", "--once"]])
def test_commands__missing_migrate_says_run_migrate(unmigrated: None, command: list[str]) -> None:
    with pytest.raises(CommandError, match=r"0009_task_outcomes.*run `manage.py migrate`"):
        call_command(*command)


@override_settings(TASKS={"default": IMMEDIATE}, AWA_SCHEDULES=SCHEDULES)
def test_checks__schedules_without_an_awa_backend_are_e072() -> None:
    found = ids()
    assert "awa_django.E072" in found
    (message,) = [m for m in run_checks() if m.id == "awa_django.E072"]
    assert message.hint == "Add a TASKS entry with BACKEND 'awa_django.backend.AwaBackend'."
    assert len(message.msg) < 80


@override_settings(TASKS={"default": IMMEDIATE, "awa": AWA}, AWA_SCHEDULES=SCHEDULES)
def test_checks__schedule_whose_task_uses_another_backend_is_e073() -> None:
    (message,) = [m for m in run_checks() if m.id == "awa_django.E073" and "'nightly'" in m.msg]
    assert "'nightly'" in message.msg and "'default'" in message.msg


@override_settings(TASKS={"default": IMMEDIATE}, AWA_SCHEDULES={})
def test_checks__no_schedules_no_awa_backend_is_fine() -> None:
    from awa_django.declarations.declaration import registry

    registry.clear()  # restored by the autouse fixture
    assert not {"awa_django.E072", "awa_django.E073"} & set(ids())


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("AWA_TASK_MODULES", "myproject"),
        ("AWA_TASK_MODULES", [".relative"]),
        ("AWA_UNKNOWN_TASK_TIMEOUT", -1),
        ("AWA_REPORT_RETRY_TIMEOUT", "60"),
        ("AWA_TASK_TIMEOUT", 0),
        ("AWA_TASK_TIMEOUT", float("inf")),
    ],
)
def test_checks__invalid_worker_settings_are_e074(setting: str, value: Any) -> None:
    with override_settings(**{setting: value}):
        messages = [m for m in run_checks() if m.id == "awa_django.E074"]
    assert len(messages) == 1 and setting in messages[0].msg


def test_checks__worker_settings_defaults_are_valid() -> None:
    with override_settings(AWA_TASK_MODULES=["myproject.jobs"], AWA_TASK_TIMEOUT=30):
        assert "awa_django.E074" not in ids()


def test_migrate__is_not_blocked_by_the_unapplied_migrations_warning(unmigrated: None) -> None:
    # migrate runs the database checks first (skip_checks=False as on the command line).
    call_command("migrate", "awa_django", verbosity=0, skip_checks=False)
    assert "awa_django.W071" not in ids(databases=["default"])


@override_settings(AWA_SCHEDULES={"outside": {"cron": "0 2 * * *", "task": "tests.outside_tasks.outside"}})
def test_checks__schedule_of_a_task_runtasks_would_not_import_is_e075() -> None:
    (message,) = [m for m in run_checks() if m.id == "awa_django.E075"]
    assert "'outside'" in message.msg and "AWA_TASK_MODULES" in message.msg and len(message.msg) < 100
    with override_settings(AWA_TASK_MODULES=["tests.outside_tasks"]):
        assert "awa_django.E075" not in ids()


def test_checks__the_task_framework_app_missing_from_installed_apps_is_e077(monkeypatch: Any) -> None:
    # The apps compat.APPS names are those Django 5.2's backport needs; set here,
    # the check fires on any Django.
    from django.conf import settings

    monkeypatch.setattr(compat, "APPS", ("django_tasks",))
    without = [app for app in settings.INSTALLED_APPS if app != "django_tasks"]
    with override_settings(INSTALLED_APPS=without):
        (message,) = [m for m in run_checks() if m.id == "awa_django.E077"]
    assert message.msg.startswith("'django_tasks' is not in INSTALLED_APPS: Django ")
    assert message.hint == 'Add "django_tasks" to INSTALLED_APPS.'


def test_checks__e077_fires_on_the_running_django_exactly_when_its_framework_has_an_app() -> None:
    from django.conf import settings

    assert "awa_django.E077" not in ids()  # tests.settings installs compat.APPS
    without = [app for app in settings.INSTALLED_APPS if app not in compat.APPS]
    with override_settings(INSTALLED_APPS=without):
        assert ("awa_django.E077" in ids()) == bool(compat.APPS)  # on Django 5.2: fires
