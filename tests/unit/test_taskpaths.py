"""taskpaths.py: a row's ``kind`` becomes a Task only inside this deployment (no database)."""

from __future__ import annotations

import os

import pytest
from django.test import override_settings

from awa_django.client.paths import (
    TaskNotHere,
    TaskNotRunnable,
    call_arguments,
    is_allowed_module,
    load_task,
)
from tests.testapp import tasks


def test_load_task__a_task_of_an_installed_app() -> None:
    assert load_task("tests.testapp.tasks.record") is tasks.record


@pytest.mark.parametrize("kind", [".x", "x", "a..b", 42, None, "a.b c"])
def test_load_task__not_a_dotted_path_is_not_runnable(kind: object) -> None:
    with pytest.raises(TaskNotRunnable, match="not an absolute dotted path"):
        load_task(kind)


def test_load_task__outside_the_installed_apps_is_never_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWA_IMPORT_SENTINEL", raising=False)
    with pytest.raises(TaskNotHere, match="was not imported"):
        load_task("tests.import_sentinel.task")  # "tests" is not an app; "tests.testapp" is
    assert "AWA_IMPORT_SENTINEL" not in os.environ


@override_settings(AWA_TASK_MODULES=["tests.outside_tasks"])
def test_load_task__awa_task_modules_allows_a_prefix() -> None:
    assert is_allowed_module("tests.outside_tasks") and not is_allowed_module("tests.outside_tasksX")
    assert load_task("tests.outside_tasks.outside").name == "outside"


def test_load_task__missing_module_of_an_app_is_not_here() -> None:
    with pytest.raises(TaskNotHere, match="does not exist here"):
        load_task("tests.testapp.no_such_module.task")


def test_load_task__missing_attribute_or_not_a_task_is_not_runnable() -> None:
    with pytest.raises(TaskNotRunnable, match="has no attribute 'ghost'"):
        load_task("tests.testapp.tasks.ghost")
    with pytest.raises(TaskNotRunnable, match="not a @task"):
        load_task("tests.testapp.tasks.GATE")


def test_call_arguments__args_and_kwargs() -> None:
    assert call_arguments({"args": [1], "kwargs": {"a": 2}}) == ([1], {"a": 2})
    assert call_arguments({}) == ([], {})


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([1, 2], "must be an object"),
        ({"args": [], "extra": 1}, "must be an object"),
        ({"args": "x"}, r"args\['args'\] must be a list"),
        ({"kwargs": []}, r"args\['kwargs'\] must be an object"),
    ],
)
def test_call_arguments__malformed_rows_are_not_runnable(args: object, message: str) -> None:
    with pytest.raises(TaskNotRunnable, match=message):
        call_arguments(args)


def test_is_allowed_module__remembered_answers_follow_a_change_of_the_settings() -> None:
    assert not is_allowed_module("tests.outside_tasks")
    assert not is_allowed_module("tests.outside_tasks")  # remembered
    with override_settings(AWA_TASK_MODULES=["tests.outside_tasks"]):
        assert is_allowed_module("tests.outside_tasks")
    assert not is_allowed_module("tests.outside_tasks")
    assert is_allowed_module("tests.testapp.tasks")
    with override_settings(INSTALLED_APPS=["django.contrib.contenttypes"]):
        assert not is_allowed_module("tests.testapp.tasks")
    assert is_allowed_module("tests.testapp.tasks")
