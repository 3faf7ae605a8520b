"""Migrations: reversible, complete, and installing the SQL objects we expect.

The expected objects are read from the shipped ``awa_django/sql/*.sql`` files
themselves, so a new file is covered without touching this test.
"""

from __future__ import annotations

import re
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection

from awa_django.db.sqlfiles import SQL_DIR, dropped_functions, migration_sql_files, run_sql_file

pytestmark = pytest.mark.django_db(transaction=True)

TABLES = {
    "awa_cron_jobs",
    "awa_jobs",
    "awa_queue_meta",
    "awa_runtime_instances",
    "awa_cron_owners",
    "awa_cron_manifests",
    "awa_cron_declarations",
}
FORWARD_FILES = sorted(p for p in SQL_DIR.glob("*.sql") if not p.name.endswith(".reverse.sql"))


def declared(path: Path) -> tuple[set[str], set[str], set[str]]:
    """Functions, triggers and indexes a SQL file creates."""
    text = path.read_text()
    functions = set(re.findall(r"CREATE FUNCTION (\w+)\(", text))
    triggers = set(re.findall(r"CREATE TRIGGER (\w+)", text))
    indexes = set(re.findall(r"CREATE (?:UNIQUE )?INDEX (\w+)", text))
    return functions, triggers, indexes


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
        cursor.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename LIKE 'awa\\_%%'"
        )
        tables = {r[0] for r in cursor.fetchall()}
        cursor.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND indexname LIKE 'awa\\_%%'"
        )
        indexes = {r[0] for r in cursor.fetchall()}
    return functions, triggers, tables, indexes


def test_migrations__no_model_changes_without_a_migration() -> None:
    out = StringIO()
    call_command("makemigrations", "awa_django", "--check", "--dry-run", stdout=out)
    assert "No changes detected" in out.getvalue()


def test_migrations__every_sql_file_has_a_reverse_and_a_migration() -> None:
    named = [name for files in migration_sql_files().values() for name in files]
    assert sorted(named) == sorted(path.stem for path in FORWARD_FILES)  # each file exactly once
    for path in FORWARD_FILES:
        assert (SQL_DIR / f"{path.stem}.reverse.sql").exists(), path.name


def test_migration_sql_files__read_from_the_operations_of_each_migration() -> None:
    mapping = migration_sql_files()

    assert mapping["0001_initial"] == ()
    assert mapping["0004_reconciliation"] == ("0004_reconciliation",)
    assert mapping["0007_release_and_prune_index"] == ("0007_release",)
    # Inside SeparateDatabaseAndState(database_operations=[...]) too.
    assert mapping["0009_task_outcomes"] == ("0009_task_outcomes",)
    assert list(mapping) == sorted(mapping)


def test_run_sql_file__deconstructs_by_file_name() -> None:
    operation = run_sql_file("0007_release")

    assert operation.file_name == "0007_release"
    assert operation.sql == (SQL_DIR / "0007_release.sql").read_text()
    assert operation.reverse_sql == (SQL_DIR / "0007_release.reverse.sql").read_text()
    assert operation.deconstruct() == ("SqlFile", ["0007_release"], {})


def dropped_after(path: Path) -> set[str]:
    """Indexes a later shipped file drops."""
    later = [p for p in FORWARD_FILES if p.name > path.name]
    pattern = r"DROP INDEX (?:CONCURRENTLY )?(?:IF EXISTS )?(\w+)"
    return set().union(*(re.findall(pattern, p.read_text()) for p in later))


def functions_dropped_after(path: Path) -> set[str]:
    """Functions a later shipped file drops."""
    later = [p for p in FORWARD_FILES if p.name > path.name]
    return set().union(*(dropped_functions(p) for p in later))


@pytest.mark.parametrize("path", FORWARD_FILES, ids=lambda p: p.stem)
def test_migrations__install_every_sql_object_with_its_version_comment(path: Path) -> None:
    functions, triggers, indexes = declared(path)
    indexes -= dropped_after(path)
    functions -= functions_dropped_after(path)
    have_functions, have_triggers, tables, have_indexes = installed()
    assert tables >= TABLES
    for name in functions:
        assert have_functions.get(name) == f"awa_django {path.stem}", name
    assert triggers <= have_triggers
    assert indexes <= have_indexes


def test_migration_0021__the_redundant_cron_name_index_is_gone_and_its_lookups_use_the_other() -> None:
    _, _, _, indexes = installed()
    assert "awa_jobs_cron_name" not in indexes and "awa_jobs_cron_name_id" in indexes
    with connection.cursor() as cursor:
        cursor.execute("SET enable_seqscan = off")
        cursor.execute(
            "EXPLAIN SELECT id FROM awa_jobs WHERE metadata ? 'cron_name' AND metadata ->> 'cron_name' = 'x'"
        )
        plan = "\n".join(r[0] for r in cursor.fetchall())
        cursor.execute("RESET enable_seqscan")
    assert "awa_jobs_cron_name_id" in plan


def test_migration_0022__the_pattern_indexes_of_cron_jobs_are_gone_and_lookups_use_the_others() -> None:
    _, _, _, indexes = installed()
    assert not {"awa_cron_jobs_name_495793d4_like", "awa_cron_jobs_owner_id_7a428d6d_like"} & indexes
    assert {"awa_cron_jobs_pkey", "awa_cron_jobs_owner_id_7a428d6d", "awa_cron_jobs_due"} <= indexes
    with connection.cursor() as cursor:
        cursor.execute("SET enable_seqscan = off")
        plans = []
        for where in ("name = 'x'", "owner_id = 'x'"):
            cursor.execute(f"EXPLAIN SELECT 1 FROM awa_cron_jobs WHERE {where}")
            plans.append("\n".join(r[0] for r in cursor.fetchall()))
        cursor.execute("RESET enable_seqscan")
    assert "awa_cron_jobs_pkey" in plans[0] and "awa_cron_jobs_owner_id_7a428d6d" in plans[1]


def test_migrations__to_zero_and_back() -> None:
    every = [declared(p) for p in FORWARD_FILES]
    functions = set().union(*(f for f, _, _ in every))
    dropped = set().union(*(dropped_functions(p) for p in FORWARD_FILES))
    triggers = set().union(*(t for _, t, _ in every))
    call_command("migrate", "awa_django", "zero", verbosity=0)
    have_functions, have_triggers, tables, indexes = installed()
    assert not (functions & set(have_functions)) and not (triggers & have_triggers)
    assert not (TABLES & tables) and not indexes
    call_command("migrate", "awa_django", verbosity=0)
    have_functions, have_triggers, tables, _ = installed()
    assert functions - dropped <= set(have_functions) and not dropped & set(have_functions)
    assert triggers <= have_triggers and tables >= TABLES


@pytest.mark.parametrize(
    ("column", "value", "check"),
    [
        ("queue", "q" * 4000, "awa_jobs_queue_length_check"),
        ("queue", "", "awa_jobs_queue_length_check"),
        ("unique_key", "k" * 4000, "awa_jobs_unique_key_length_check"),
        ("concurrency_key", "k" * 501, "awa_jobs_concurrency_key_length_check"),
        ("concurrency_limit", 0, "awa_jobs_concurrency_limit_check"),
    ],
)
def test_migration_0023__a_job_row_written_by_hand_cannot_break_what_enqueue_validates(
    column: str, value: Any, check: str
) -> None:
    from django.db import IntegrityError, transaction

    from awa_django.models import Job
    from tests.testapp.tasks import record

    result = record.enqueue()
    with pytest.raises(IntegrityError, match=check), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"UPDATE awa_jobs SET {column} = %s WHERE id = %s", [value, int(result.id)])
    assert Job.objects.filter(id=int(result.id)).exists()


def test_migration_0026__measures_the_rows_stored_before_it_and_reverses() -> None:
    """Rows stored before 0026 (owned and retired ones too, which the fence
    guards) get their payload measures from the migration itself; the reverse
    drops the columns, the trigger and the unique-key history."""
    call_command("migrate", "awa_django", "0023", verbosity=0)
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO awa_cron_jobs (name, cron_expr, kind, args, metadata, owner_id, retired_at) VALUES"
                " ('plain', '* * * * *', 'x.y', '{\"args\": [[1]], \"kwargs\": {}}', '{\"é\": 1}', NULL, NULL),"
                " ('owned', '* * * * *', 'x.y', '{}', '{}', 'app', NULL),"
                " ('retired', '* * * * *', 'x.y', '{}', '{}', NULL, now())"
            )
    finally:
        call_command("migrate", "awa_django", verbosity=0)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT name, args_bytes = octet_length(args::text), args_depth,"
            " metadata_bytes = octet_length(metadata::text), metadata_depth, last_enqueued_at, next_fire_at"
            " FROM awa_cron_jobs ORDER BY name"
        )
        assert cursor.fetchall() == [
            ("owned", True, 1, True, 1, None, None),
            ("plain", True, 3, True, 1, None, None),
            ("retired", True, 1, True, 1, None, None),
        ]
        cursor.execute("TRUNCATE awa_cron_jobs")  # tombstones and owned rows refuse DELETE
        cursor.execute("INSERT INTO awa_cron_slot_counts (name, reason, count) VALUES ('gone', 'unique', 2)")
    call_command("migrate", "awa_django", "0023", verbosity=0)
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM information_schema.columns"
                " WHERE table_name = 'awa_cron_jobs' AND column_name LIKE '%%\\_bytes'"
            )
            assert cursor.fetchone() == (0,)
            cursor.execute("SELECT count(*) FROM awa_cron_slot_counts")
            assert cursor.fetchone() == (0,)
    finally:
        call_command("migrate", "awa_django", verbosity=0)
