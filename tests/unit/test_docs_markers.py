"""Every shell block of the quick start and the how-to guides is either run by
the docs test or says why not.

``tests/processes/test_docs_that_run.py`` runs the marked blocks; this check
keeps a new, unmarked block from silently escaping it: each ``console``,
``shell``, ``bash`` or ``sh`` block carries a run marker or a
``<!-- not run: REASON -->`` marker (see ``tests/helpers/docs.py``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.docs import runnable_blocks, unmarked_blocks

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGES = [DOCS / "quickstart.md", *sorted((DOCS / "howto").glob("*.md"))]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_docs__every_shell_block_is_run_or_says_why_not(page: Path) -> None:
    assert unmarked_blocks(page) == []


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_docs__run_markers_parse(page: Path) -> None:
    runnable_blocks(page)


def test_docs__an_unmarked_block_is_found(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- not run: needs systemd -->\n```console\n$ systemctl start x\n```\n\n"
        "<!-- run -->\n```console\n$ true\n```\n\n"
        "```bash\n$ make demo\n```\n\n"
        "<!-- not run: -->\n```console\n$ false\n```\n\n"
        "<!-- not run: orphan -->\n\n```python\nx = 1\n```\n"
    )
    assert unmarked_blocks(page) == [
        "page.md:11: a bash block is neither run nor 'not run: REASON'",
        "page.md:16: a console block is neither run nor 'not run: REASON'",
        "page.md:20: a 'not run' marker precedes no fence",
    ]


def test_docs__a_setup_comment_is_a_hidden_runnable_block(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("<!-- run: setup\n  $ python manage.py awa cron trigger ping\n-->\n")
    [block] = runnable_blocks(page)
    assert block.option == "setup"
    assert [c.line for c in block.commands()] == ["python manage.py awa cron trigger ping"]
