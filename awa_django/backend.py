"""The ``TASKS`` ``BACKEND`` path, ``awa_django.backend.AwaBackend``, as the documentation names it.

The code lives in :mod:`awa_django.client.backend`; this module only re-exports it.
"""

from .client.backend import (
    AwaBackend,
)

__all__ = ["AwaBackend"]
