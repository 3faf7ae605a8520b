"""``manage.py awa``: hostile names print escaped; malformed input is a clear error."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from tests.factories import CronJobFactory, JobFactory

pytestmark = pytest.mark.django_db

HOSTILE = {
    "esc": "evil\x1b[2J\x1b[31mred",
    "newline": "forged\nnightly  0 2 * * *  UTC",
    "rtl": "abc\u202edef",
    "bell": "ding\x07",
    "zero_width": "a\u200bb",
}


def run(*args: str) -> str:
    out = StringIO()
    call_command("awa", *args, stdout=out)
    return out.getvalue()


def insert_raw(name: str) -> None:
    # Raw SQL, as a hand edit can: declarations refuse such names.
    CronJobFactory(name="template")
    with connection.cursor() as cursor:
        cursor.execute("UPDATE awa_cron_jobs SET name = %s WHERE name = 'template'", [name])


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_cli_cron_list__control_characters_in_names_are_escaped(case: str) -> None:
    name = HOSTILE[case]
    insert_raw(name)
    table = run("cron", "list")
    assert name not in table
    assert name.encode("unicode_escape").decode("ascii") in table
    lines = table.splitlines()
    # Header, the one row, its "no longer declared" note, the count: no forged row.
    assert len(lines) == 4
    assert all(c == "\n" or c >= " " and c not in "\x7f\u202e\u200b" for c in table)
    data = json.loads(run("cron", "list", "--json"))
    assert data[0]["name"] == name
    raw_json = run("cron", "list", "--json")
    assert all(ord(c) < 127 for c in raw_json)  # \u escapes only


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_cli_cron_show_and_jobs_list__escape_control_characters(case: str) -> None:
    name = HOSTILE[case]
    insert_raw(name)
    shown = run("cron", "show", name)
    assert name not in shown and "\x1b" not in shown
    JobFactory(metadata={"cron_name": name, "cron_fire_at": "2026-01-01T00:00:00+00:00"}, queue="q\x1b")
    listing = run("jobs", "list")
    assert name not in listing and "\x1b" not in listing
    # The header and one row: no control character forged an extra line.
    assert len(listing.splitlines()) == 2


@pytest.mark.parametrize(
    "content",
    [b"[1]", b"[[]]", b'[{"name": 5}]', b"null", b"{", b"\xff\xfe", b"[" * 100_000, b'{"a": 1}'],
    ids=["number", "list", "name_not_str", "null", "truncated", "not_utf8", "deep", "object"],
)
def test_cli_cron_plan__malformed_manifest_is_a_clear_error(content: bytes, tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    path.write_bytes(content)
    with pytest.raises(CommandError, match="manifest"):
        call_command("awa", "cron", "plan", "billing", f"--manifest={path}")


def test_cli_cron_plan__manifest_that_is_a_directory_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="cannot read manifest"):
        call_command("awa", "cron", "plan", "billing", f"--manifest={tmp_path}")
