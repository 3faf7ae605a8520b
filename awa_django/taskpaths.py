"""Public path of the error of a job whose task cannot run here, as the documentation names it.

The code lives in :mod:`awa_django.tasks.paths`; this module only re-exports it.
"""

from .tasks.paths import (
    TaskNotRunnable,
)

__all__ = ["TaskNotRunnable"]
