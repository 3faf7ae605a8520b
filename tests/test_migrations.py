"""Migrations: reversible, complete, and installing the SQL objects we expect."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection

pytestmark = pytest.mark.django_db(transaction=True)

FUNCTIONS = {
    "awa_format_fire_at",
    "awa_cron_jobs_invalidate_v1",
    "awa_cron_jobs_notify_v1",
    "awa_cron_upsert_v1",
    "awa_cron_fire_v1",
    "awa_cron_trigger_v1",
}
TRIGGERS = {"awa_cron_jobs_invalidate", "awa_cron_jobs_notify"}
TABLES = {"awa_cron_jobs", "awa_jobs", "awa_queue_meta"}


def installed() -> tuple[dict[str, str | None], set[str], set[str], set[str]]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT p.proname, obj_description(p.oid, 'pg_proc') FROM pg_proc p "
            "JOIN pg_namespace n ON n.oid = p.pronamespace "
            "WHERE n.nspname = current_schema() AND p.proname LIKE 'awa\\_%%'"
        )
        functions = dict(cursor.fetchall())
        cursor.execute("SELECT tgname FROM pg_trigger WHERE NOT tgisinternal AND tgname LIKE 'awa\\_%%'")
        triggers = {r[0] for r in cursor.fetchall()}
        cursor.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename LIKE 'awa\\_%%'")
        tables = {r[0] for r in cursor.fetchall()}
        cursor.execute("SELECT indexname FROM pg_indexes WHERE indexname IN ('awa_jobs_cron_slot', 'awa_cron_jobs_due')")
        indexes = {r[0] for r in cursor.fetchall()}
    return functions, triggers, tables, indexes


def test_migrations__no_model_changes_without_a_migration() -> None:
    out = StringIO()
    call_command("makemigrations", "awa_django", "--check", "--dry-run", stdout=out)
    assert "No changes detected" in out.getvalue()


def test_migrations__install_every_sql_object_with_its_version_comment() -> None:
    functions, triggers, tables, indexes = installed()
    assert set(functions) >= FUNCTIONS
    assert {functions[f] for f in FUNCTIONS} == {"awa_django 0002_cron_core"}
    assert functions["awa_cron_fire_v2"] == "awa_django 0006_fire_in_name_order"
    assert triggers >= TRIGGERS
    assert tables >= TABLES
    assert indexes == {"awa_jobs_cron_slot", "awa_cron_jobs_due"}


def test_migrations__to_zero_and_back() -> None:
    call_command("migrate", "awa_django", "zero", verbosity=0)
    functions, triggers, tables, indexes = installed()
    assert not (FUNCTIONS & set(functions)) and not (TRIGGERS & triggers)
    assert not (TABLES & tables) and not indexes
    call_command("migrate", "awa_django", verbosity=0)
    functions, triggers, tables, indexes = installed()
    assert set(functions) >= FUNCTIONS and triggers >= TRIGGERS and tables >= TABLES
