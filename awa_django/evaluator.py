"""Public path of one evaluation pass, for tests of your schedules, as the documentation names it.

The code lives in :mod:`awa_django.scheduler.evaluator`; this module only re-exports it.
"""

from .scheduler.evaluator import (
    evaluate,
)

__all__ = ["evaluate"]
