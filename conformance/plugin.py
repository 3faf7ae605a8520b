"""pytest plugin for the conformance run (loaded with ``-p conformance.plugin``).

* Django's tests use ``SimpleTestCase`` for the in-memory backends; AwaBackend
  keeps jobs in PostgreSQL, so those test classes may use the default database.
* Every test listed in ``expected_deviations.txt`` is marked ``xfail(strict=True)``
  with its reason: a deviation that starts passing fails the run, so the list
  cannot go stale.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

# scripts/conformance.py names the list of the framework under test.
DEVIATIONS = Path(__file__).with_name(os.environ.get("AWA_CONFORMANCE_DEVIATIONS", "expected_deviations.txt"))


def expected_deviations() -> dict[str, str]:
    """``{"test_file.py::Class::test": reason}`` from the deviations file."""
    found: dict[str, str] = {}
    for line in DEVIATIONS.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        test_id, _, reason = line.partition(" ")
        if not reason.strip():
            raise pytest.UsageError(f"{DEVIATIONS.name}: {test_id} has no reason")
        found[test_id] = reason.strip()
    return found


@pytest.fixture(autouse=True, scope="session")
def _awa_test_database(django_db_setup: Any) -> None:
    """Create the test database (with awa_django's migrations) for every test."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    from django.test import SimpleTestCase, TransactionTestCase

    deviations = expected_deviations()
    seen: set[str] = set()
    for item in items:
        cls = getattr(item, "cls", None)
        if cls is not None and issubclass(cls, SimpleTestCase) and not issubclass(cls, TransactionTestCase):
            cls.databases = {"default"}
            # pytest-django sets up the test database for a SimpleTestCase
            # only when a test is marked.
            item.add_marker(pytest.mark.django_db(databases=["default"]))
        test_id = item.nodeid.split("::", 1)[0].rsplit("/", 1)[-1] + "::" + item.nodeid.split("::", 1)[1]
        if test_id in deviations:
            seen.add(test_id)
            item.add_marker(pytest.mark.xfail(reason=deviations[test_id], strict=True))
    unknown = sorted(set(deviations) - seen)
    if unknown and not config.getoption("keyword") and not config.getoption("markexpr"):
        raise pytest.UsageError(f"{DEVIATIONS.name} lists tests that do not exist: {', '.join(unknown)}")
