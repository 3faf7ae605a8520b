"""Deprecated path of the task decorator of the installed framework; import ``task`` from :mod:`awa_django`.

Kept for one release: the name still resolves, to the very object of its new path,
and warns (``DeprecationWarning``) where it is used. Removed in the next release.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import lazy

if TYPE_CHECKING:
    # The code's home, for type checkers; at run time the name loads on first use.
    from awa_django.client.compat import task

__all__ = ["task"]
_MOVED_TO = {"task": "awa_django"}


__getattr__ = lazy.deprecated(__name__, _MOVED_TO)
