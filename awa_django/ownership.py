"""Deprecated path of the lifecycle verbs on owned schedules.

Import these names from :mod:`awa_django.operations`.

Kept for one release: each name still resolves, to the very object of its new
path, and warns (``DeprecationWarning``) where it is imported. Removed in the
next release.
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # The code's home, for type checkers; at run time each name loads on first use.
    from awa_django.operations.owners import adopt, restore, restore_owner, retire, retire_owner

__all__ = [
    "adopt",
    "restore",
    "restore_owner",
    "retire",
    "retire_owner",
]
_MOVED_TO = dict.fromkeys(__all__, "awa_django.operations")


def __getattr__(name: str) -> Any:
    public = _MOVED_TO.get(name)
    if public is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # stacklevel=2: the warning names the line that imports the name, not this one.
    warnings.warn(f"{__name__} is deprecated; import {name} from {public}", DeprecationWarning, stacklevel=2)
    return getattr(importlib.import_module(public), name)
