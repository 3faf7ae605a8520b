"""Checks E074 (AWA_ERROR_MAX_CHARS out of range) and W112 (an error cut to
AWA_ERROR_MAX_CHARS could outgrow AWA_MAX_ARGS_BYTES: the smaller cut applies)."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.checks import run_checks
from django.test import override_settings

from awa_django import bounded_text

pytestmark = pytest.mark.django_db

W112_HINT = (
    "A job's errors must stay within AWA_MAX_ARGS_BYTES for its next attempt to run; "
    "lower AWA_ERROR_MAX_CHARS or raise AWA_MAX_ARGS_BYTES."
)


def messages() -> list[Any]:
    return [m for m in run_checks() if (m.id or "").startswith("awa_django.")]  # type: ignore[misc]


@pytest.mark.parametrize("value", [0, -1, 1.5, "20000", True, None])
def test_check_error_max_chars__e074_out_of_range(value: Any) -> None:
    with override_settings(AWA_ERROR_MAX_CHARS=value):
        assert [m.id for m in messages()] == ["awa_django.E074"]


def test_check_error_max_chars__w112_over_an_eighth_of_the_args_limit() -> None:
    with override_settings(AWA_ERROR_MAX_CHARS=500_000, AWA_MAX_ARGS_BYTES=1024 * 1024):
        (message,) = messages()
        assert bounded_text.max_chars() == 131_072
    assert message.id == "awa_django.W112"
    assert message.msg == (
        "AWA_ERROR_MAX_CHARS (500000) is more than an eighth of AWA_MAX_ARGS_BYTES (1048576): "
        "errors are cut to 131072 characters instead"
    )
    assert message.hint == W112_HINT


@pytest.mark.parametrize(("chars", "limit"), [(20_000, 1024 * 1024), (131_072, 1024 * 1024), (1, 8)])
def test_check_error_max_chars__within_an_eighth_passes(chars: int, limit: int) -> None:
    with override_settings(AWA_ERROR_MAX_CHARS=chars, AWA_MAX_ARGS_BYTES=limit):
        assert messages() == []
