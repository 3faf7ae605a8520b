"""Deprecated path of one evaluation pass; import ``evaluate`` from :mod:`awa_django.testing`.

Kept for one release: each name still resolves, to the very object of its new
path, and warns (``DeprecationWarning``) where it is imported. Removed in the
next release.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import lazy

if TYPE_CHECKING:
    # The code's home, for type checkers; at run time each name loads on first use.
    from awa_django.leader.evaluator import evaluate

__all__ = ["evaluate"]
_MOVED_TO = {"evaluate": "awa_django.testing"}


__getattr__ = lazy.deprecated(__name__, _MOVED_TO)
