"""Deprecated path of the TASKS BACKEND path; import ``AwaBackend`` from :mod:`awa_django.backend`.

Kept for one release: the name still resolves, to the very object of its new path,
and warns (``DeprecationWarning``) where it is used. Removed in the next release.
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # The code's home, for type checkers; at run time the name loads on first use.
    from awa_django.client.backend import AwaBackend

__all__ = ["AwaBackend"]
_MOVED_TO = {"AwaBackend": "awa_django.backend"}


def __getattr__(name: str) -> Any:
    public = _MOVED_TO.get(name)
    if public is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # stacklevel=2: the warning names the line that uses the name, not this one.
    warnings.warn(f"{__name__} is deprecated; import {name} from {public}", DeprecationWarning, stacklevel=2)
    return getattr(importlib.import_module(public), name)
