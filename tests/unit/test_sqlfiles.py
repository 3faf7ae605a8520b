"""sqlfiles.py: the shipped SQL files, their reverses and function-body hashes (no database)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from awa_django.db import sqlfiles


def test_read_sql__reads_the_named_file() -> None:
    assert (
        sqlfiles.read_sql("0011_runtime_progress")
        == (sqlfiles.SQL_DIR / "0011_runtime_progress.sql").read_text()
    )


def test_run_sql_file__forward_and_reverse_sql_and_its_file_name() -> None:
    operation = sqlfiles.run_sql_file("0007_release")
    assert operation.file_name == "0007_release"
    assert operation.sql == sqlfiles.read_sql("0007_release")
    assert operation.reverse_sql == sqlfiles.read_sql("0007_release.reverse")


def test_body_hash__is_sha256_of_the_body_text() -> None:
    assert sqlfiles.body_hash(" SELECT 1 ") == hashlib.sha256(b" SELECT 1 ").hexdigest()
    assert sqlfiles.body_hash("SELECT 1") != sqlfiles.body_hash("SELECT 2")


def test_shipped_function_hashes__one_per_function_the_file_creates() -> None:
    for path in sorted(sqlfiles.SQL_DIR.glob("0*.sql")):
        if path.name.endswith(".reverse.sql"):
            continue
        hashes = sqlfiles.shipped_function_hashes(path.stem)
        assert sorted(hashes) == sorted(sqlfiles.declared_functions(path)), path.name


def test_shipped_function_hashes__hash_the_text_between_the_dollar_quotes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "9999_demo.sql").write_text(
        "CREATE FUNCTION demo_v1(a int) RETURNS int LANGUAGE sql AS $fn$ SELECT a + 1 $fn$;\n"
        "CREATE FUNCTION other_v1() RETURNS void LANGUAGE plpgsql AS $$ BEGIN END $$;\n"
    )
    monkeypatch.setattr(sqlfiles, "SQL_DIR", tmp_path)
    assert sqlfiles.shipped_function_hashes("9999_demo") == {
        "demo_v1": sqlfiles.body_hash(" SELECT a + 1 "),
        "other_v1": sqlfiles.body_hash(" BEGIN END "),
    }


def test_shipped_function_hashes__a_body_without_dollar_quotes_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "9999_quoted.sql").write_text(
        "CREATE FUNCTION quoted_v1() RETURNS int LANGUAGE sql AS 'SELECT 1';\n"
    )
    monkeypatch.setattr(sqlfiles, "SQL_DIR", tmp_path)
    with pytest.raises(ValueError, match=r"no dollar-quoted body found for \['quoted_v1'\]"):
        sqlfiles.shipped_function_hashes("9999_quoted")


def test_migration_sql_files__every_shipped_file_belongs_to_exactly_one_migration() -> None:
    named = [name for files in sqlfiles.migration_sql_files().values() for name in files]
    shipped = sorted(p.stem for p in sqlfiles.SQL_DIR.glob("0*.sql") if not p.name.endswith(".reverse.sql"))
    assert sorted(named) == shipped


def test_dropped_functions__the_names_a_file_drops(tmp_path: Path) -> None:
    path = tmp_path / "x.sql"
    path.write_text(
        "DROP FUNCTION awa_a_v1(jsonb);\nDROP FUNCTION IF EXISTS awa_b_v2();\nDROP TRIGGER t ON x;\n"
    )
    assert sqlfiles.dropped_functions(path) == ["awa_a_v1", "awa_b_v2"]


def test_expected_function_hashes__a_function_a_later_file_drops_is_not_expected() -> None:
    every = sqlfiles.migration_sql_files()
    before = [name for name in every if name < "0029"]
    assert "awa_cron_fire_v1" in sqlfiles.expected_function_hashes(before)
    assert "awa_cron_fire_v1" not in sqlfiles.expected_function_hashes(every)
    assert sqlfiles.expected_function_hashes(every)["awa_cron_fire_v8"][0] == "0026_payload_measure"
