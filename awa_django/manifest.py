"""Public path of an owner's manifest, as the documentation names it.

The code lives in :mod:`awa_django.reconciliation.manifest`; this module only re-exports it.
"""

from .reconciliation.manifest import (
    Manifest,
    build_manifest,
    manifest_for,
)

__all__ = ["Manifest", "build_manifest", "manifest_for"]
