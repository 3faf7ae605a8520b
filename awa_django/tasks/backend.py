"""Deprecated path of the TASKS BACKEND path; import ``AwaBackend`` from :mod:`awa_django.backend`.

Kept for one release: the name still resolves, to the very object of its new path,
and warns (``DeprecationWarning``) where it is used. Removed in the next release.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import lazy

if TYPE_CHECKING:
    # The code's home, for type checkers; at run time the name loads on first use.
    from awa_django.client.backend import AwaBackend

__all__ = ["AwaBackend"]
_MOVED_TO = {"AwaBackend": "awa_django.backend"}


__getattr__ = lazy.deprecated(__name__, _MOVED_TO)
