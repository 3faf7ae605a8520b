"""The named-query loader of the store: headers, names, and the errors of a bad file."""

from __future__ import annotations

from pathlib import Path

import pytest

from awa_django.store import queries


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "jobs" / "q.sql"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return path


def test_a_file_splits_into_named_queries_with_their_comments(tmp_path: Path) -> None:
    path = write(
        tmp_path, "-- file comment\n-- name: one\n-- what one does\nSELECT 1;\n\n-- name: two\nSELECT 2\n"
    )
    found = queries.parse_file(path, "jobs")
    assert [(q.name, q.sql) for q in found] == [("one", "-- what one does\nSELECT 1"), ("two", "SELECT 2")]


def test_sql_before_the_first_header_is_refused(tmp_path: Path) -> None:
    with pytest.raises(queries.QueryFileError, match="before the first"):
        queries.parse_file(write(tmp_path, "SELECT 0;\n-- name: one\nSELECT 1\n"), "jobs")


def test_an_empty_query_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(queries.QueryFileError, match="'one' is empty"):
        queries.parse_file(
            write(tmp_path, "-- name: one\n-- only a comment\n-- name: two\nSELECT 2\n"), "jobs"
        )


def test_a_duplicate_name_across_files_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for family in ("jobs", "fleet"):
        (tmp_path / family).mkdir()
        (tmp_path / family / "a.sql").write_text("-- name: same\nSELECT 1\n")
    monkeypatch.setattr(queries, "SQL_DIR", tmp_path)
    queries.all_queries.cache_clear()
    try:
        with pytest.raises(queries.QueryFileError, match="'same' is defined in"):
            queries.all_queries()
    finally:
        queries.all_queries.cache_clear()


def test_an_unknown_name_is_a_key_error_naming_it() -> None:
    with pytest.raises(KeyError, match="no_such_query"):
        queries.query("no_such_query")


def test_a_fragment_is_written_once_and_included_where_marked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "a.sql").write_text(
        "-- fragment: columns\n-- what they are\nid, state\n\n"
        "-- name: one\nSELECT /*@columns*/ FROM t\n\n-- name: two\nSELECT /*@columns*/, 1 FROM u\n"
    )
    monkeypatch.setattr(queries, "SQL_DIR", tmp_path)
    queries.all_queries.cache_clear()
    try:
        assert {n: q.sql for n, q in queries.all_queries().items()} == {
            "one": "SELECT id, state FROM t",
            "two": "SELECT id, state, 1 FROM u",
        }
    finally:
        queries.all_queries.cache_clear()


def test_a_marker_naming_no_fragment_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "a.sql").write_text("-- name: one\nSELECT /*@nothing*/ FROM t\n")
    monkeypatch.setattr(queries, "SQL_DIR", tmp_path)
    queries.all_queries.cache_clear()
    try:
        with pytest.raises(queries.QueryFileError, match="no such fragment 'nothing'"):
            queries.all_queries()
    finally:
        queries.all_queries.cache_clear()
