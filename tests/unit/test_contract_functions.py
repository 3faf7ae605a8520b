"""contract.FUNCTION_VERSIONS: every call of a versioned SQL function in the
package's Python and named queries names its family's current version; the
migrations leave installed, and store/current_sql defines, exactly the current and
previous version of each family (no database)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from awa_django import contract
from awa_django.db.sqlfiles import expected_function_hashes, migration_sql_files
from tests.helpers.sql_schema import schema_functions

PACKAGE = Path(contract.__file__).resolve().parent
CALL = re.compile(r"\b(awa_\w+?)_v(\d+)\(")


def sources() -> list[Path]:
    python = [p for p in PACKAGE.rglob("*.py") if "migrations" not in p.parts]
    return sorted(python + list((PACKAGE / "store" / "sql").rglob("*.sql")))


def stale_calls(text: str) -> list[str]:
    """The calls in ``text`` that do not name their family's current version."""
    stale = []
    for match in CALL.finditer(text):
        family, version = match[1], int(match[2])
        if contract.FUNCTION_VERSIONS.get(family) != version:
            stale.append(f"{family}_v{version}")
    return stale


def test_calls__each_names_the_current_version_of_its_family() -> None:
    found = {}
    for path in sources():
        stale = stale_calls(path.read_text(encoding="utf-8"))
        if stale:
            found[str(path.relative_to(PACKAGE))] = stale
    assert found == {}


@pytest.mark.parametrize(
    ("text", "stale"),
    [
        ("SELECT * FROM awa_cron_fire_v7(%s::jsonb)", ["awa_cron_fire_v7"]),
        ("SELECT * FROM awa_claim_v3(%s, %s, %s, %s)", []),
        ("SELECT awa_unknown_v1()", ["awa_unknown_v1"]),
        ("-- see awa_cron_fire_v1 for the compare-and-swap", []),
    ],
)
def test_stale_calls__a_previous_or_unknown_version_is_named(text: str, stale: list[str]) -> None:
    assert stale_calls(text) == stale


def test_current_function__and_previous_function() -> None:
    assert (
        contract.current_function("awa_cron_fire")
        == f"awa_cron_fire_v{contract.FUNCTION_VERSIONS['awa_cron_fire']}"
    )
    assert (
        contract.previous_function("awa_cron_fire")
        == f"awa_cron_fire_v{contract.FUNCTION_VERSIONS['awa_cron_fire'] - 1}"
    )
    assert contract.previous_function("awa_heartbeat") is None


def test_migrations__leave_installed_the_current_and_previous_versions() -> None:
    assert set(expected_function_hashes(migration_sql_files())) == contract.kept_functions()


def test_schema_dir__defines_the_functions_the_migrations_leave() -> None:
    assert set(schema_functions()) == contract.kept_functions()
