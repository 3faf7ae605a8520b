"""Deprecated path of an owner's manifest; import them from :mod:`awa_django.operations`.

Kept for one release: each name still resolves, to the very object of its new
path, and warns (``DeprecationWarning``) where it is imported. Removed in the
next release.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import lazy

if TYPE_CHECKING:
    # The code's home, for type checkers; at run time each name loads on first use.
    from awa_django.reconciliation.manifest import Manifest, build_manifest, manifest_for

__all__ = [
    "Manifest",
    "build_manifest",
    "manifest_for",
]
_MOVED_TO = dict.fromkeys(__all__, "awa_django.operations")


__getattr__ = lazy.deprecated(__name__, _MOVED_TO)
