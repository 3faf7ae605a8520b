"""Public path of the ``runtasks`` loop, for tests that drive it, as the documentation names it.

The code lives in :mod:`awa_django.tasks.worker`; this module only re-exports it.
"""

from .tasks.worker import (
    Worker,
)

__all__ = ["Worker"]
