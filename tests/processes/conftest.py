"""Tests with real subprocesses: none may leave a file open behind it."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


def open_files() -> dict[int, str]:
    """This process's descriptors on regular files (not sockets, pipes or devices)."""
    found: dict[int, str] = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:  # closed between listdir and readlink (the listdir fd itself)
            continue
        if target.startswith("/") and not target.startswith(("/dev/", "/proc/")):
            found[int(name)] = target
    return found


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
