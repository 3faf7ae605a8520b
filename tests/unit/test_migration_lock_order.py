"""Every awa_django migration that alters more than one ``awa_*`` table, in
either direction, takes the lock order first (``in_lock_order``); the rule
(tests/helpers/migration_locks.py) sees the tables Django's operations and the
SQL a migration runs alter, and tells a developer what to add (no database)."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import migrations, models
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.state import ProjectState

from awa_django.db.lock_order import in_lock_order
from tests.helpers.migration_locks import APP, lock_order_problems, migration_tables, sql_tables


def loader() -> MigrationLoader:
    return MigrationLoader(None, ignore_no_migrations=True)


def latest_state() -> ProjectState:
    graph = loader()
    leaves = graph.graph.leaf_nodes(APP)
    return graph.project_state(leaves, at_end=True)


def migration(operations: list[Any], *, atomic: bool = True) -> migrations.Migration:
    made = migrations.Migration("0099_new", APP)
    made.operations = operations
    made.atomic = atomic
    return made


def alter_two_tables() -> list[Any]:
    return [
        migrations.AddField(model_name="cronjob", name="colour", field=models.TextField(null=True)),
        migrations.RunSQL(
            "ALTER TABLE awa_jobs ADD COLUMN colour text", "ALTER TABLE awa_jobs DROP COLUMN colour"
        ),
    ]


def test_migrations__each_that_alters_several_tables_takes_the_lock_order_first() -> None:
    graph = loader()
    problems = []
    for key in sorted(k for k in graph.graph.nodes if k[0] == APP):
        state = graph.project_state(key, at_end=False)
        problems += lock_order_problems(graph.graph.nodes[key], state)
    assert not problems, "\n".join(problems)


def test_migration_tables__0018_alters_the_schedules_the_runtimes_and_the_jobs() -> None:
    graph = loader()
    key = (APP, "0018_execution_policies")
    forwards, backwards = migration_tables(
        graph.graph.nodes[key].operations, graph.project_state(key, at_end=False)
    )
    assert forwards.existing == {"awa_cron_jobs", "awa_runtime_instances", "awa_jobs"}
    assert backwards.existing == forwards.existing | {"awa_cron_slot_outcomes", "awa_cron_slot_counts"}


def test_lock_order_problems__two_tables_without_the_preamble_say_what_to_write() -> None:
    problems = lock_order_problems(migration(alter_two_tables()), latest_state())
    assert len(problems) == 2  # forwards and backwards
    assert "alters awa_cron_jobs, awa_jobs when applied forwards" in problems[0]
    assert "in_lock_order(['awa_cron_jobs', 'awa_jobs'], [...])" in problems[0]


def test_lock_order_problems__the_preamble_satisfies_the_rule() -> None:
    operations = in_lock_order(["awa_jobs", "awa_cron_jobs"], alter_two_tables())
    assert lock_order_problems(migration(operations), latest_state()) == []


def test_lock_order_problems__a_preamble_leaving_a_table_out_is_named() -> None:
    operations = in_lock_order(["awa_cron_jobs"], alter_two_tables())
    problems = lock_order_problems(migration(operations), latest_state())
    assert problems and all("awa_jobs" in p and "leaves them out" in p for p in problems)


def test_lock_order_problems__a_non_atomic_migration_cannot_hold_the_order() -> None:
    operations = in_lock_order(["awa_jobs", "awa_cron_jobs"], alter_two_tables())
    problems = lock_order_problems(migration(operations, atomic=False), latest_state())
    assert problems and all("not atomic" in p for p in problems)


def test_lock_order_problems__a_non_atomic_migration_may_alter_one_table_per_operation() -> None:
    assert lock_order_problems(migration(alter_two_tables(), atomic=False), latest_state()) == []
    both = [migrations.RunSQL("ALTER TABLE awa_jobs ADD c int; ALTER TABLE awa_cron_jobs ADD c int")]
    problems = lock_order_problems(migration(both, atomic=False), latest_state())
    assert problems and "operation 1" in problems[0] and "awa_cron_jobs, awa_jobs" in problems[0]


def test_lock_order_problems__one_table_needs_no_preamble() -> None:
    operations = [migrations.AddField(model_name="job", name="colour", field=models.TextField(null=True))]
    assert lock_order_problems(migration(operations), latest_state()) == []


def test_lock_order_problems__run_python_may_write_anything() -> None:
    operations = [migrations.RunPython(migrations.RunPython.noop, migrations.RunPython.noop)]
    problems = lock_order_problems(migration(operations), latest_state())
    assert any("without taking the lock order" in p and "RunPython" in p for p in problems)
    assert lock_order_problems(migration(in_lock_order(["awa_jobs"], operations)), latest_state()) == []


@pytest.mark.parametrize(
    ("sql", "altered"),
    [
        (
            "CREATE INDEX awa_jobs_x ON awa_jobs (queue); CREATE TRIGGER t BEFORE UPDATE ON awa_cron_jobs "
            "FOR EACH ROW EXECUTE FUNCTION f()",
            {"awa_jobs", "awa_cron_jobs"},
        ),
        (
            "LOCK TABLE awa_runtime_instances, awa_cron_declarations IN ACCESS EXCLUSIVE MODE",
            {"awa_runtime_instances", "awa_cron_declarations"},
        ),
        (
            "DROP INDEX awa_cron_slot_outcomes_name_slot; DROP TABLE IF EXISTS awa_cron_slot_counts",
            {"awa_cron_slot_outcomes", "awa_cron_slot_counts"},
        ),
        (
            "ALTER TABLE awa_cron_declarations ADD FOREIGN KEY (instance_id) REFERENCES awa_runtime_instances",
            {"awa_cron_declarations", "awa_runtime_instances"},
        ),
        (
            "UPDATE awa_jobs SET x = 1; DELETE FROM awa_queue_meta; INSERT INTO awa_cron_owners VALUES ('a')",
            {"awa_jobs", "awa_queue_meta", "awa_cron_owners"},
        ),
        (
            "DO $$ BEGIN EXECUTE format('ALTER TABLE awa_cron_declarations DROP CONSTRAINT %I', 'c'); END $$",
            {"awa_cron_declarations"},
        ),
        # Quoted (as sqlmigrate prints them) and schema-qualified names.
        (
            'ALTER TABLE "awa_jobs" ADD COLUMN "c" text NULL; ALTER TABLE public.awa_cron_jobs ADD COLUMN c text',
            {"awa_jobs", "awa_cron_jobs"},
        ),
        (
            "ALTER INDEX awa_jobs_running RENAME TO awa_jobs_running2; "
            "MERGE INTO awa_cron_jobs AS c USING x ON true WHEN MATCHED THEN DO NOTHING; "
            "COPY awa_queue_meta (queue) FROM STDIN",
            {"awa_jobs", "awa_cron_jobs", "awa_queue_meta"},
        ),
        # Function bodies run later, not in the migration; CONCURRENTLY runs alone;
        # comments and views lock nothing a writer waits for.
        (
            "CREATE FUNCTION f() RETURNS void LANGUAGE sql AS $$ UPDATE awa_cron_jobs SET x = 1; "
            "INSERT INTO awa_jobs DEFAULT VALUES $$",
            set(),
        ),
        ("CREATE INDEX CONCURRENTLY awa_jobs_y ON awa_jobs (id); DROP INDEX CONCURRENTLY awa_jobs_y", set()),
        (
            "-- ALTER TABLE awa_jobs\nCREATE VIEW awa_v AS SELECT * FROM awa_jobs JOIN awa_queue_meta USING (queue)",
            set(),
        ),
    ],
)
def test_sql_tables__counts_the_statements_that_alter_a_table(sql: str, altered: set[str]) -> None:
    assert sql_tables(sql).altered == altered


def test_sql_tables__a_dropped_index_not_named_after_its_table_cannot_be_placed() -> None:
    assert sql_tables("DROP INDEX awa_mystery").unknown


def test_sql_tables__a_table_created_here_is_free_to_alter() -> None:
    found = sql_tables(
        "CREATE TABLE awa_cron_new (id int); CREATE INDEX awa_cron_new_id ON awa_cron_new (id)"
    )
    assert found.existing == set()
