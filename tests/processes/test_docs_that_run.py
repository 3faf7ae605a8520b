"""The quick start and the how-to guides do what they show.

The runnable blocks of ``docs/quickstart.md`` and of each ``docs/howto/*.md``
(marked as ``tests/helpers/docs.py`` describes) run, in page order, in one
fresh project: ``django-admin startproject mysite`` in a temporary directory,
on a fresh database of the test server, with this checkout's awa_django
installed. What each command prints must be what the page shows, times and
ids masked; ``runcron`` and ``runtasks`` run until they have printed what the
page shows, then get Ctrl-C.

The settings block of the quick start is appended to startproject's
``settings.py`` with its ``# ... Django's own apps ...`` placeholder standing
for startproject's own list, and ``DATABASES`` pointed at the fresh database.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import django
import pytest
from django.db import connection

from tests.helpers.database import raw_connection
from tests.helpers.docs import Project, run_block, runnable_blocks
from tests.helpers.processes import ROOT

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        django.VERSION < (6, 0), reason="the pages are written for django.tasks (Django 6.0+)"
    ),
]

DOCS = ROOT / "docs"
PAGES = [DOCS / "quickstart.md", *sorted((DOCS / "howto").glob("*.md"))]


@pytest.fixture
def fresh_database() -> Iterator[dict[str, object]]:
    """A new, empty database on the test server, dropped afterwards; its DATABASES entry."""
    name = f"{connection.settings_dict['NAME']}_docs"
    with raw_connection() as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    settings = connection.settings_dict
    entry = {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": name,
        "USER": settings.get("USER") or "",
        "PASSWORD": settings.get("PASSWORD") or "",
        "HOST": settings.get("HOST") or "",
        "PORT": str(settings.get("PORT") or ""),
        "OPTIONS": dict(settings.get("OPTIONS") or {}),
    }
    try:
        yield entry
    finally:
        with raw_connection() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_docs__runnable_blocks_print_what_the_pages_show(
    tmp_path: Path, fresh_database: dict[str, object]
) -> None:
    blocks = [block for page in PAGES for block in runnable_blocks(page)]
    assert any(b.page.name == "quickstart.md" for b in blocks)
    project = Project(
        tmp_path / "mysite",
        settings_tail=f"\nDATABASES = {{'default': {fresh_database!r}}}\n",
        replacements={"    # ... Django's own apps ...\n": "    *INSTALLED_APPS,\n"},
    )
    status, output = Project(tmp_path).run("django-admin startproject mysite")
    assert status == 0, output
    differences = [message for block in blocks for message in run_block(project, block)]
    assert differences == [], "\n\n".join(differences)
