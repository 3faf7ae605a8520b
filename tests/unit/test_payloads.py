"""payloads.py: task arguments and results as PostgreSQL jsonb can store them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from awa_django.client.payloads import (
    checked_payload,
    contains_nul,
    exception_text,
    storable_text,
    unstorable_reason,
)


def test_checked_payload__normalises_arguments_and_returns_their_json_text() -> None:
    payload, text = checked_payload((1, ("a", "b")), {"when": (2, 3), "label": "é"})
    assert payload == {"args": [1, ["a", "b"]], "kwargs": {"when": [2, 3], "label": "é"}}
    assert json.loads(text) == payload


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (["a\x00b"], {}),
        ([], {"deep": {"list": ["ok", "bad\x00"]}}),
        ([], {"key\x00": 1}),
    ],
)
def test_checked_payload__refuses_nul_anywhere(args: Any, kwargs: Any) -> None:
    with pytest.raises(ValueError, match="NUL characters"):
        checked_payload(args, kwargs)


@pytest.mark.parametrize(("args", "kwargs"), [(["\ud800"], {}), ([], {"x": ["ok", {"y": "a\udfffb"}]})])
def test_checked_payload__refuses_lone_surrogates(args: Any, kwargs: Any) -> None:
    with pytest.raises(ValueError, match="cannot be stored"):
        checked_payload(args, kwargs)


def test_checked_payload__escape_text_that_is_not_a_nul_is_accepted() -> None:
    """A literal backslash-u0000 (six characters) is ordinary text for jsonb."""
    payload, text = checked_payload(["\\u0000", "\\ud800"], {})
    assert payload["args"] == ["\\u0000", "\\ud800"]
    assert json.loads(text)["args"] == ["\\u0000", "\\ud800"]


def test_checked_payload__refuses_nan() -> None:
    with pytest.raises(ValueError):
        checked_payload([float("nan")], {})


def test_contains_nul__looks_in_keys_values_and_lists_only() -> None:
    assert contains_nul({"a": [1, {"b\x00": 2}]})
    assert contains_nul(["x", ["y\x00"]])
    assert not contains_nul({"a": [1, 2.5, None, True, "text"]})
    assert not contains_nul(("a\x00",))  # not a JSON container: tuples are normalised first


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("a\x00", "NUL character"),
        ({"k": ["fine", "\ud800"]}, "lone surrogate"),
        ({"\x00": 1}, "NUL character"),
        ([1, [2, ["\udc00"]]], "lone surrogate"),
    ],
)
def test_unstorable_reason__names_what_jsonb_rejects(value: Any, reason: str) -> None:
    found = unstorable_reason(value)
    assert found is not None and reason in found


@pytest.mark.parametrize("value", [None, 0, 1.5, True, "text é 😀", [], {}, {"a": [1, {"b": "c"}]}])
def test_unstorable_reason__none_for_storable_values(value: Any) -> None:
    assert unstorable_reason(value) is None


@pytest.mark.parametrize(
    ("text", "stored"),
    [
        ("plain é", "plain é"),
        ("a\x00b", "a\\x00b"),
        ("half \ud800 pair", "half \\ud800 pair"),
        ("\x00\udfff", "\\x00\\udfff"),
        ("\U0001f600 is a real pair", "\U0001f600 is a real pair"),
    ],
)
def test_storable_text__writes_nul_and_lone_surrogates_out_visibly(text: str, stored: str) -> None:
    assert storable_text(text) == stored
    assert unstorable_reason(storable_text(text)) is None


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise SystemExit("even this")


def test_exception_text__falls_back_to_the_class_name_when_str_raises() -> None:
    assert exception_text(ValueError("shown")) == "shown"
    assert exception_text(_Unprintable()) == "<unprintable _Unprintable>"
