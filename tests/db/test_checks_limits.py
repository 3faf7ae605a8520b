"""Checks E060-E062/W060: the hostile-input and bounded-wait settings."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.checks import run_checks
from django.test import override_settings

pytestmark = pytest.mark.django_db


def ids() -> list[str]:
    return [m.id for m in run_checks() if (m.id or "").startswith("awa_django.")]  # type: ignore[misc]


@pytest.mark.parametrize("value", [0, -1, 1.5, "1", True, None])
def test_check_hardening__e060_max_args_bytes(value: Any) -> None:
    with override_settings(AWA_MAX_ARGS_BYTES=value):
        assert ids() == ["awa_django.E060"]


@pytest.mark.parametrize("value", [0, -1, 201, 1000, 1.5, "32", True, None])
def test_check_hardening__e060_max_json_depth(value: Any) -> None:
    with override_settings(AWA_MAX_JSON_DEPTH=value):
        assert ids() == ["awa_django.E060"]


@pytest.mark.parametrize("value", [1, 32, 200])
def test_check_hardening__max_json_depth_in_range_passes(value: Any) -> None:
    with override_settings(AWA_MAX_JSON_DEPTH=value):
        assert ids() == []


@pytest.mark.parametrize("key", ["AWA_LOCK_TIMEOUT", "AWA_STATEMENT_TIMEOUT"])
@pytest.mark.parametrize("value", [-1, float("nan"), float("inf"), "5", None])
def test_check_hardening__e061_timeouts(key: str, value: Any) -> None:
    with override_settings(**{key: value}):
        assert ids() == ["awa_django.E061"]


def test_check_hardening__w060_lock_timeout_disabled() -> None:
    with override_settings(AWA_LOCK_TIMEOUT=0):
        assert ids() == ["awa_django.W060"]


@pytest.mark.parametrize(
    "key", ["AWA_TCP_KEEPALIVES_IDLE", "AWA_TCP_KEEPALIVES_INTERVAL", "AWA_TCP_KEEPALIVES_COUNT"]
)
@pytest.mark.parametrize("value", [0, 2.5, "30"])
def test_check_hardening__e062_keepalives(key: str, value: Any) -> None:
    with override_settings(**{key: value}):
        assert ids() == ["awa_django.E062"]


@pytest.mark.parametrize(
    ("key", "value", "hint"),
    [
        (
            "AWA_MAX_ARGS_BYTES",
            0,
            "AWA_MAX_ARGS_BYTES: bytes >= 1 (default 1048576); AWA_MAX_JSON_DEPTH: 1-200 (32).",
        ),
        (
            "AWA_LOCK_TIMEOUT",
            -1,
            "Timeouts are seconds from 0 (off) to 2147483.647 (PostgreSQL's limit); defaults 5, 60.",
        ),
        (
            "AWA_TCP_KEEPALIVES_COUNT",
            0,
            "Keepalive idle and interval are whole seconds 1-32767; the count is 1-127.",
        ),
        ("AWA_LOCK_TIMEOUT", 0, "Set AWA_LOCK_TIMEOUT > 0 so a frozen peer cannot stall every process."),
    ],
)
def test_check_hardening__each_id_has_its_hint(key: str, value: Any, hint: str) -> None:
    with override_settings(**{key: value}):
        assert [m.hint for m in run_checks() if (m.id or "").startswith("awa_django.")] == [hint]
