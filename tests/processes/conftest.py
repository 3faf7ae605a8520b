"""Tests with real subprocesses: none may leave a file open behind it."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.helpers.processes import open_files


@pytest.fixture(autouse=True)
def _no_leaked_files() -> Iterator[None]:
    """Fail a test whose subprocess fixtures left a file (a process log) open.

    Autouse, so it is set up before and torn down after the test's own
    fixtures (``runcron``, ``runtasks``, servers): what is still open then leaked.
    """
    if not os.path.isdir("/proc/self/fd"):
        yield
        return
    before = open_files()
    yield
    leaked = {fd: path for fd, path in open_files().items() if before.get(fd) != path}
    assert not leaked, f"files left open by the test's fixtures: {sorted(leaked.values())}"
