"""conf.SETTINGS: one row per setting (default, kind, check id) and one typed property each."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest
from django.test import override_settings

from awa_django.checks import settings as checks
from awa_django.conf import DEFAULTS, SETTINGS, AwaSettings, Kind, conf

# Kinds the table check validates; the others have dedicated checks (E001, E022, E040/E041, E100).
CHECKED_KINDS = (
    Kind.SECONDS,
    Kind.INTERVAL,
    Kind.COUNT,
    Kind.ATTEMPTS,
    Kind.SECONDS_OR_NONE,
    Kind.TIMEOUT,
    Kind.RETENTION,
    Kind.KEEPALIVE_SECONDS,
    Kind.KEEPALIVE_COUNT,
    Kind.MODULE_PATHS,
    Kind.BOOL,
)


def test_conf__every_setting_has_one_typed_property() -> None:
    properties = {name: member for name, member in vars(AwaSettings).items() if isinstance(member, property)}
    assert sorted(f"AWA_{name}" for name in properties) == sorted(s.name for s in SETTINGS)
    for name, member in properties.items():
        annotation = inspect.signature(member.fget).return_annotation  # type: ignore[arg-type]
        assert annotation not in (inspect.Signature.empty, "Any", Any), name


def test_conf__defaults_come_from_the_table_and_are_in_range() -> None:
    assert {s.name: s.default for s in SETTINGS} == DEFAULTS
    assert len(DEFAULTS) == len(SETTINGS)  # no name twice
    for setting in SETTINGS:
        with override_settings(**{setting.name: setting.default}):
            assert setting.problem() is None, setting.name
        assert getattr(conf, setting.name.removeprefix("AWA_")) == setting.default


def test_conf__properties_read_on_access() -> None:
    assert conf.SNAPSHOT_INTERVAL == 10.0
    with override_settings(AWA_SNAPSHOT_INTERVAL=2.5, AWA_LISTEN_DATABASE="default"):
        assert conf.SNAPSHOT_INTERVAL == 2.5
        assert conf.LISTEN_DATABASE == "default"
    assert conf.SNAPSHOT_INTERVAL == 10.0


def test_conf__unknown_names_are_not_settings() -> None:
    with pytest.raises(AttributeError):
        conf.NO_SUCH_SETTING  # type: ignore[attr-defined]  # noqa: B018


def test_conf__every_check_id_of_the_table_is_documented() -> None:
    documented = (Path(__file__).resolve().parents[2] / "docs/reference/checks.md").read_text()
    assert all(f"### {s.check_id}\n" in documented for s in SETTINGS)


def test_check_setting_limits__every_checked_row_has_a_hint() -> None:
    assert all(checks.SETTING_HINTS[s.check_id] for s in SETTINGS if s.kind in CHECKED_KINDS)


@pytest.mark.parametrize("setting", [s for s in SETTINGS if s.kind in CHECKED_KINDS], ids=lambda s: s.name)
def test_check_setting_limits__reports_each_row_out_of_range_with_its_id(setting: Any) -> None:
    assert checks.check_setting_limits() == []
    with override_settings(**{setting.name: "bad"}):
        messages = checks.check_setting_limits()
    assert [(m.id, m.msg) for m in messages] == [
        (setting.check_id, f"{setting.name} must be {setting.kind.value}, got 'bad'")
    ]
    assert messages[0].hint == checks.SETTING_HINTS[setting.check_id]


@pytest.mark.parametrize(
    ("kind", "good", "bad"),
    [
        (Kind.SECONDS, [0, 0.25, 7], [-1, True, None, float("nan"), float("inf"), "5"]),
        (Kind.INTERVAL, [0.25, 7], [0, -1, True, None, float("inf"), "5"]),
        (Kind.COUNT, [1, 50], [0, 1.5, True, None, "3"]),
        (Kind.ATTEMPTS, [1, 1000], [0, 1001, True, "3"]),
        (Kind.SECONDS_OR_NONE, [None, 0.5], [0, -1, True, float("nan"), "5"]),
        (Kind.TIMEOUT, [0, 0.5, 2147483.647], [2147483.648, 1e30, 10**400, -1, float("inf"), "5"]),
        (Kind.RETENTION, [0, 0.5, 31536000000], [31536000000.5, 1e15, 10**400, -1, float("nan"), "5"]),
        (Kind.KEEPALIVE_SECONDS, [1, 32767], [0, 32768, 30.0, True, "30"]),
        (Kind.KEEPALIVE_COUNT, [1, 127], [0, 128, 3.0, True, "3"]),
        (Kind.MODULE_PATHS, [[], ["a.b"], ("a",)], ["a.b", [".rel"], [""], [3]]),
        (Kind.BOOL, [True, False], [1, "yes", None]),
    ],
)
def test_kind__accepts_its_range_only(kind: Kind, good: list[Any], bad: list[Any]) -> None:
    assert all(kind.accepts(v) for v in good)
    assert not any(kind.accepts(v) for v in bad)


@pytest.mark.parametrize(
    ("setting", "value", "message"),
    [
        ("AWA_LOCK_TIMEOUT", 2147483.648, "AWA_LOCK_TIMEOUT must be a number of seconds 0-2147483.647"),
        ("AWA_STATEMENT_TIMEOUT", 10**12, "AWA_STATEMENT_TIMEOUT must be a number of seconds 0-2147483.647"),
        ("AWA_TCP_KEEPALIVES_IDLE", 32768, "AWA_TCP_KEEPALIVES_IDLE must be a whole number 1-32767"),
        ("AWA_TCP_KEEPALIVES_INTERVAL", 10**6, "AWA_TCP_KEEPALIVES_INTERVAL must be a whole number 1-32767"),
        ("AWA_TCP_KEEPALIVES_COUNT", 128, "AWA_TCP_KEEPALIVES_COUNT must be a whole number 1-127"),
        ("AWA_JOB_RETENTION", 1e15, "AWA_JOB_RETENTION must be a number of seconds 0-31536000000"),
    ],
)
def test_check_setting_limits__values_past_postgresqls_limits_name_the_setting_and_bound(
    setting: str, value: Any, message: str
) -> None:
    """PostgreSQL (int32 ms timeouts), the kernel (keepalives) and a timedelta
    refuse these only when used; the checks refuse them at startup."""
    with override_settings(**{setting: value}):
        messages = checks.check_setting_limits()
    assert [m.msg for m in messages] == [f"{message}, got {value!r}"]
    assert messages[0].hint == checks.SETTING_HINTS[messages[0].id]
