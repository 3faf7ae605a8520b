"""Deprecated path of one evaluation pass; import ``evaluate`` from :mod:`awa_django.testing`.

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
    from awa_django.leader.evaluator import evaluate

__all__ = ["evaluate"]
_MOVED_TO = {"evaluate": "awa_django.testing"}


def __getattr__(name: str) -> Any:
    public = _MOVED_TO.get(name)
    if public is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # stacklevel=2: the warning names the line that imports the name, not this one.
    warnings.warn(f"{__name__} is deprecated; import {name} from {public}", DeprecationWarning, stacklevel=2)
    return getattr(importlib.import_module(public), name)
