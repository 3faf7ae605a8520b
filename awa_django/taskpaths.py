"""Deprecated path of the error of a job whose task cannot run here.

Import ``TaskNotRunnable`` from :mod:`awa_django`.

Kept for one release: each name still resolves, to the very object of its new
path, and warns (``DeprecationWarning``) where it is imported. Removed in the
next release.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import lazy

if TYPE_CHECKING:
    # The code's home, for type checkers; at run time each name loads on first use.
    from awa_django.client.paths import TaskNotRunnable

__all__ = ["TaskNotRunnable"]
_MOVED_TO = {"TaskNotRunnable": "awa_django"}


__getattr__ = lazy.deprecated(__name__, _MOVED_TO)
