"""``QUEUE_LIMITS`` is validated where it is used, and a limit no queue can use is a warning.

A worker never claims with an invalid ``QUEUE_LIMITS`` (which the claim would
read as "no limits": every queue unlimited): ``runtasks`` refuses to start,
naming the queue and the value, even with ``--skip-checks``. A limit on a queue
the backend's ``QUEUES`` does not list never applies: check W105 says so.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.core.checks import run_checks
from django.core.management import CommandError, call_command
from django.test import override_settings

from awa_django.worker.loop import Worker

pytestmark = pytest.mark.django_db


def backend_with(limits: Any, queues: list[str] | None = None) -> dict[str, Any]:
    return {
        "default": {
            "BACKEND": "awa_django.client.backend.AwaBackend",
            "QUEUES": queues or [],
            "OPTIONS": {"QUEUE_LIMITS": limits},
        }
    }


def warnings_w105() -> list[str]:
    found = [m for m in run_checks() if m.id == "awa_django.W105"]
    assert all(m.hint and m.hint.startswith("No task can use that queue") for m in found)
    return [m.msg for m in found]


def test_queue_limits_check__w105_names_a_queue_not_in_queues() -> None:
    limits = {"mial": {"concurrency": 2}, "default": {"rate": "10/m"}}
    with override_settings(TASKS=backend_with(limits, ["default", "mail"])):
        found = warnings_w105()
    assert found == ["task backend 'default': QUEUE_LIMITS queue 'mial' is not in its QUEUES"]
    assert len(found[0]) < 80


def test_queue_limits_check__no_w105_for_listed_queues_or_without_queues() -> None:
    limits = {"mail": {"concurrency": 2}}
    with override_settings(TASKS=backend_with(limits, ["default", "mail"])):
        assert warnings_w105() == []
    with override_settings(TASKS=backend_with(limits)):  # no QUEUES: any queue may be used
        assert warnings_w105() == []


@pytest.mark.parametrize(
    ("limits", "named"),
    [
        ({"mail": {"rate": "100"}}, "QUEUE_LIMITS['mail']['rate'] must be a string '<count>/<period>'"),
        ({"mail": {"concurrency": 0}}, "QUEUE_LIMITS['mail']['concurrency'] must be a whole number"),
        ({"mail": {"burst": 5}}, "QUEUE_LIMITS['mail'] has unknown key 'burst'"),
    ],
)
def test_worker__an_invalid_limit_refuses_to_start_naming_queue_and_value(limits: Any, named: str) -> None:
    with override_settings(TASKS=backend_with(limits)):
        with pytest.raises(ValueError, match=r"task backend 'default': OPTIONS .*not starting") as refused:
            Worker(burst=True)
        assert named in str(refused.value)
        # call_command skips the system checks, as --skip-checks does.
        with pytest.raises(CommandError, match=r"QUEUE_LIMITS\['mail'\].*not starting"):
            call_command("runtasks", "--burst", "--skip-checks")
