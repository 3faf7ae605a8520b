"""The ``TASKS`` ``BACKEND`` path, ``awa_django.backend.AwaBackend``, as the documentation names it.

The code lives in :mod:`awa_django.tasks.backend`; this module only re-exports it.
"""

from .tasks.backend import (
    AwaBackend,
)

__all__ = ["AwaBackend"]
