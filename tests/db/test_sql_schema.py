"""``awa_django/store/current_sql/`` holds exactly what a database migrated from zero
installs: every ``awa_`` function with its body, every trigger on the ``awa_``
tables and every view; ``contract.FUNCTION_VERSIONS`` names the newest version
of each family installed; migration 0029 drops the superseded versions older
than N-1 and gives them back, as shipped, when reversed."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import connection, transaction

from awa_django import contract
from awa_django.db.sqlfiles import body_hash, expected_function_hashes, migration_sql_files
from tests.helpers.sql_schema import (
    installed_functions,
    installed_triggers,
    installed_views,
    normal,
    schema_functions,
    schema_triggers,
    schema_views,
)

pytestmark = pytest.mark.django_db

DROPPED = {
    "awa_claim_v1",
    "awa_complete_claim_v1",
    *(f"awa_cron_fire_v{n}" for n in range(1, 7)),
    "awa_cron_schedule_fence_v1",
    "awa_cron_schedule_fence_v2",
    "awa_release_v1",
}


def test_schema__defines_exactly_the_installed_functions() -> None:
    with connection.cursor() as cursor:
        installed = installed_functions(cursor)
    defined = schema_functions()
    assert sorted(set(installed) - set(defined)) == [], "installed, not in store/current_sql/functions"
    assert sorted(set(defined) - set(installed)) == [], "in store/current_sql/functions, not installed"


def test_schema__each_function_body_is_the_installed_one() -> None:
    with connection.cursor() as cursor:
        installed = installed_functions(cursor)
    differ = [
        name
        for name, body in schema_functions().items()
        if name in installed and body_hash(body.strip()) != body_hash(installed[name].strip())
    ]
    assert differ == []


def test_schema__defines_exactly_the_installed_triggers() -> None:
    with connection.cursor() as cursor:
        installed = installed_triggers(cursor)
    assert schema_triggers() == installed


def test_schema__defines_exactly_the_installed_views_with_their_queries() -> None:
    views = schema_views()
    with connection.cursor() as cursor:
        assert set(views) == installed_views(cursor)
        for name, query in views.items():
            # The file's query as PostgreSQL prints it, beside the installed view's.
            with transaction.atomic():
                cursor.execute(f"CREATE TEMPORARY VIEW awa_schema_probe AS {query}")
                cursor.execute(
                    "SELECT pg_get_viewdef('awa_schema_probe'), pg_get_viewdef(%s::regclass)", [name]
                )
                probe, installed = cursor.fetchone()
                transaction.set_rollback(True)
            assert normal(probe) == normal(installed), name


def test_function_versions__each_current_version_is_installed_and_none_newer() -> None:
    with connection.cursor() as cursor:
        installed = set(installed_functions(cursor))
    for family, version in contract.FUNCTION_VERSIONS.items():
        assert contract.current_function(family) in installed, family
        assert f"{family}_v{version + 1}" not in installed, family
    assert contract.kept_functions() == installed


def test_migration_0029__drops_the_versions_older_than_the_previous_one() -> None:
    with connection.cursor() as cursor:
        installed = set(installed_functions(cursor))
    assert not DROPPED & installed
    for family in contract.FUNCTION_VERSIONS:
        previous = contract.previous_function(family)
        assert previous is None or previous in installed, family


@pytest.mark.django_db(transaction=True)
def test_migration_0029__reversed_installs_the_dropped_versions_as_shipped() -> None:
    before_0029 = [name for name in migration_sql_files() if name < "0029"]
    shipped = expected_function_hashes(before_0029)
    call_command("migrate", "awa_django", "0028", verbosity=0)
    try:
        with connection.cursor() as cursor:
            back = installed_functions(cursor)
            cursor.execute(
                "SELECT proname, obj_description(oid, 'pg_proc') FROM pg_proc WHERE proname = ANY(%s)",
                [sorted(DROPPED)],
            )
            comments = dict(cursor.fetchall())
        assert set(back) >= DROPPED
        assert {name: body_hash(back[name]) for name in DROPPED} == {
            name: shipped[name][1] for name in DROPPED
        }
        assert comments == {name: f"awa_django {shipped[name][0]}" for name in DROPPED}
        call_command("migrate", "awa_django", "0029", verbosity=0)
        with connection.cursor() as cursor:
            assert not DROPPED & set(installed_functions(cursor))
        call_command("migrate", "awa_django", "0028", verbosity=0)
        with connection.cursor() as cursor:
            assert set(installed_functions(cursor)) >= DROPPED
    finally:
        call_command("migrate", "awa_django", verbosity=0)
    with connection.cursor() as cursor:
        assert set(installed_functions(cursor)) == contract.kept_functions()
