"""System checks E100, W100-W104 (connection poolers) and the health/metrics settings."""

from __future__ import annotations

import copy
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.conf import settings
from django.test import override_settings

from awa_django.checks.poolers import check_poolers
from awa_django.db.aliases import listen_alias, pooler_warning


@contextmanager
def databases(**changes: dict[str, Any]) -> Iterator[None]:
    """DATABASES with entries added or updated (no connection is opened)."""
    value = copy.deepcopy(settings.DATABASES)
    for alias, entry in changes.items():
        value[alias] = {**value.get(alias, value["default"]), **entry}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Django warns about overriding DATABASES
        with override_settings(DATABASES=value):
            yield


def ids(**settings_overrides: Any) -> list[str]:
    with override_settings(**settings_overrides):
        return [m.id or "" for m in check_poolers()]


def test_pooler_warning__declared_mode_wins_over_the_port() -> None:
    with databases(
        default={"PORT": "6432"},
        direct={"PORT": "6432", "AWA_POOL_MODE": "session"},
        pooled={"PORT": "5432", "AWA_POOL_MODE": "transaction"},
    ):
        assert pooler_warning("default") == "uses port 6432, PgBouncer's default port"
        assert pooler_warning("direct") is None
        assert pooler_warning("pooled") == "declares AWA_POOL_MODE='transaction'"


def test_listen_alias__defaults_to_the_served_database() -> None:
    assert listen_alias("default") == "default"
    with override_settings(AWA_LISTEN_DATABASE="direct"):
        assert listen_alias("default") == "direct"


def test_check_poolers__nothing_on_a_direct_setup() -> None:
    assert ids() == []


def test_check_poolers__w100_to_w103_for_a_pooled_default_used_for_everything() -> None:
    with databases(default={"AWA_POOL_MODE": "transaction", "OPTIONS": {"prepare_threshold": 5}}):
        assert ids() == ["awa_django.W100", "awa_django.W101", "awa_django.W102", "awa_django.W103"]


def test_check_poolers__direct_aliases_for_lock_and_listen_leave_only_pool_hygiene() -> None:
    with databases(default={"PORT": "6432", "DISABLE_SERVER_SIDE_CURSORS": True}, direct={"PORT": "5432"}):
        assert ids(AWA_LEADER_DATABASE="direct", AWA_LISTEN_DATABASE="direct") == []
        assert ids(AWA_LEADER_DATABASE="direct") == ["awa_django.W101"]
        assert ids(AWA_LISTEN_DATABASE="direct") == ["awa_django.W100"]


def test_check_poolers__e100_for_an_unknown_listen_alias() -> None:
    messages = [m for m in check_poolers() if m.id == "awa_django.E100"]
    assert messages == []
    with override_settings(AWA_LISTEN_DATABASE="nope"):
        (message,) = check_poolers()
    assert message.id == "awa_django.E100" and "'nope' is not in DATABASES" in message.msg


def test_check_poolers__e100_for_a_listen_alias_that_is_not_postgresql() -> None:
    with databases(other={"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}):
        assert ids(AWA_LISTEN_DATABASE="other") == ["awa_django.E100"]


def test_check_setting_limits__e020_for_non_positive_observability_durations() -> None:
    from awa_django.checks.settings import check_setting_limits

    assert check_setting_limits() == []
    with override_settings(AWA_HEALTH_MAX_PASS_AGE=0, AWA_METRICS_QUERY_TIMEOUT="5"):
        messages = check_setting_limits()
    assert [m.id for m in messages] == ["awa_django.E020", "awa_django.E020"]
    assert "AWA_HEALTH_MAX_PASS_AGE must be a number of seconds > 0, got 0" in messages[0].msg


def test_check_pgbouncer_sessions__postgresql_itself_is_not_a_pgbouncer(db: Any) -> None:
    from awa_django.checks.poolers import check_pgbouncer_sessions
    from awa_django.db.aliases import probe_pgbouncer

    assert probe_pgbouncer("default") is None
    assert check_pgbouncer_sessions(databases=["default"]) == []
    assert check_pgbouncer_sessions(databases=None) == []
