"""migrationstate.py: is the database migrated for this version of awa_django?"""

from __future__ import annotations

import pytest
from django.db.migrations.loader import MigrationLoader

from awa_django.db import migration_state
from awa_django.exceptions import NotMigrated

pytestmark = pytest.mark.django_db


def test_migrated_test_database_lacks_nothing() -> None:
    assert migration_state.unapplied_migrations() == []
    migration_state.require_migrated()  # does not raise


def forget_applied(monkeypatch: pytest.MonkeyPatch, count: int) -> list[str]:
    """Make the loader believe the last ``count`` awa_django migrations are not applied."""
    names = sorted(
        n
        for app, n in MigrationLoader(None, ignore_no_migrations=True).graph.nodes
        if app == migration_state.APP_LABEL
    )
    forgotten = names[-count:]

    class Loader(MigrationLoader):
        def build_graph(self) -> None:
            super().build_graph()
            for name in forgotten:
                self.applied_migrations.pop((migration_state.APP_LABEL, name), None)

    monkeypatch.setattr(migration_state, "MigrationLoader", Loader)
    return forgotten


def test_unapplied_migrations_are_named_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    forgotten = forget_applied(monkeypatch, 2)
    assert migration_state.unapplied_migrations() == forgotten
    with pytest.raises(
        NotMigrated,
        match=rf"lacks awa_django migration\(s\) {forgotten[0]}, {forgotten[1]}: "
        r"run `manage.py migrate`",
    ):
        migration_state.require_migrated()


def test_require_migrated__a_long_list_is_shortened(monkeypatch: pytest.MonkeyPatch) -> None:
    forgotten = forget_applied(monkeypatch, 5)
    with pytest.raises(NotMigrated, match=r"and 2 more: run"):
        migration_state.require_migrated()
    assert len(forgotten) == 5
