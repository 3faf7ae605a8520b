"""Check E051/W051: the server's PostgreSQL major version against the supported range.

The test server is of one version: the range is moved around it to see each
message name that real version.
"""

from __future__ import annotations

import pytest
from django.db import connection

from awa_django.checks import database as checks

pytestmark = pytest.mark.django_db


def server_version() -> tuple[int, int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('server_version_num')::integer")
        number = cursor.fetchone()[0]
    return number // 10000, number % 10000


def messages() -> list[tuple[str, str]]:
    return [(m.id or "", m.msg) for m in checks.check_server_version(databases=["default"])]


def test_check_server_version__a_supported_version_passes() -> None:
    major, _minor = server_version()
    assert checks.OLDEST_POSTGRESQL <= major <= checks.NEWEST_TESTED_POSTGRESQL
    assert messages() == []


def test_check_server_version__an_older_version_is_an_error_naming_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    major, minor = server_version()
    monkeypatch.setattr(checks, "OLDEST_POSTGRESQL", major + 1)
    assert messages() == [
        ("awa_django.E051", f"database 'default': PostgreSQL {major}.{minor} is not supported by awa_django")
    ]


def test_check_server_version__a_newer_version_is_a_warning_naming_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    major, minor = server_version()
    monkeypatch.setattr(checks, "NEWEST_TESTED_POSTGRESQL", major - 1)
    assert messages() == [
        (
            "awa_django.W051",
            f"database 'default': PostgreSQL {major}.{minor} is newer than awa_django is tested on",
        )
    ]


def test_check_server_version__runs_with_the_database_checks() -> None:
    from django.core.checks import run_checks

    assert [
        m for m in run_checks(databases=["default"]) if m.id in ("awa_django.E051", "awa_django.W051")
    ] == []
