"""actions.py: the actor every operator action records, and its result."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from awa_django.operations.common import ActionResult, require_actor


def test_require_actor__returns_the_actor_stripped() -> None:
    assert require_actor("  alice@ops \n") == "alice@ops"


@pytest.mark.parametrize("actor", ["", "   ", "\t\n", None, 42, b"alice", ["alice"]])
def test_require_actor__refuses_blank_or_non_text(actor: Any) -> None:
    with pytest.raises(ValueError, match="non-blank actor"):
        require_actor(actor)


@pytest.mark.parametrize(
    ("result", "changed"),
    [
        (ActionResult("pause", ["nightly"]), True),
        (ActionResult("pause", []), False),  # applied, but nothing to change
        (ActionResult("pause", ["nightly"], applied=False), False),  # a dry run
        (ActionResult("pause", [], applied=False), False),
    ],
)
def test_action_result__is_true_only_when_applied_and_something_changed(
    result: ActionResult, changed: bool
) -> None:
    assert result.changed is changed
    assert bool(result) is changed


def test_action_result__equality_ignores_name_and_detail() -> None:
    a = ActionResult("retire", ["a", "b"], name="billing", detail="")
    b = ActionResult("retire", ["a", "b"], name="other", detail="already retired")
    assert a == b
    assert a != ActionResult("retire", ["a"], name="billing")
    assert a != ActionResult("retire", ["a", "b"], applied=False)


def test_action_result__as_json_is_the_cli_shape_without_name_or_detail() -> None:
    result = ActionResult("adopt", ["x"], applied=False, name="billing", detail="dry run")
    assert result.as_json() == {"action": "adopt", "schedules": ["x"], "applied": False}


def test_action_result__is_frozen() -> None:
    result = ActionResult("pause", ["nightly"])
    column = "applied"
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(result, column, False)
    assert result.applied is True
