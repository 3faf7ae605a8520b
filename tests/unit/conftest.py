"""tests/unit: no database at all (``make test-fast`` runs them without creating one)."""

from __future__ import annotations

import pytest

DATABASE_FIXTURES = {
    "db",
    "transactional_db",
    "django_db_reset_sequences",
    "django_db_serialized_rollback",
    "live_server",
    "admin_client",
    "admin_user",
    "second_connection",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/unit/" not in item.nodeid:
            continue
        uses = DATABASE_FIXTURES & set(getattr(item, "fixturenames", ()))
        if item.get_closest_marker("django_db") or uses:
            raise pytest.UsageError(
                f"{item.nodeid} uses the database ({sorted(uses) or 'django_db'}): move it to tests/db/"
            )
