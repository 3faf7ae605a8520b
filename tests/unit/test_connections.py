"""connections.py: which alias each of awa_django's own connections uses, and pooler evidence
(settings only; no connection is opened)."""

from __future__ import annotations

import copy
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.conf import settings
from django.test import override_settings

from awa_django.db.aliases import leader_alias, listen_alias, pooler_warning


@contextmanager
def default_entry(**entry: Any) -> Iterator[None]:
    databases = copy.deepcopy(settings.DATABASES)
    databases["default"].pop("AWA_POOL_MODE", None)
    databases["default"].update(entry)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Django warns about overriding DATABASES
        with override_settings(DATABASES=databases):
            yield


def test_leader_alias__default_and_setting() -> None:
    assert leader_alias() == getattr(settings, "AWA_LEADER_DATABASE", "default")
    with override_settings(AWA_LEADER_DATABASE="direct"):
        assert leader_alias() == "direct"


def test_listen_alias__the_served_database_unless_set() -> None:
    with override_settings(AWA_LISTEN_DATABASE=None):
        assert listen_alias("replica") == "replica"
    with override_settings(AWA_LISTEN_DATABASE="direct"):
        assert listen_alias("replica") == "direct"


def test_pooler_warning__declared_pool_mode() -> None:
    with default_entry(AWA_POOL_MODE="Transaction"):
        assert pooler_warning("default") == "declares AWA_POOL_MODE='Transaction'"
    with default_entry(AWA_POOL_MODE="statement"):
        assert pooler_warning("default") == "declares AWA_POOL_MODE='statement'"


def test_pooler_warning__port_6432_unless_declared_session() -> None:
    with default_entry(PORT="6432"):
        assert pooler_warning("default") == "uses port 6432, PgBouncer's default port"
    with default_entry(PORT=6432, AWA_POOL_MODE="session"):
        assert pooler_warning("default") is None
    with default_entry(PORT="5432"):
        assert pooler_warning("default") is None


def test_pooler_warning__unknown_alias_is_no_evidence() -> None:
    assert pooler_warning("no-such-alias") is None
