"""The worker process, ``manage.py runtasks``: claims jobs and runs their attempts.

``loop`` is the worker: it claims up to its free slots and hands attempts to its
``runner`` threads (which call back through ``runner.Pool``); ``outcomes``
records how each attempt ended, completing the successful ones in batches.
What a running task learns about its job is :mod:`awa_django.jobcontext`.

``awa_django.worker.Worker`` is a deprecated path kept for one release: it
resolves to :class:`awa_django.testing.Worker` and warns (``DeprecationWarning``).
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

__all__ = ["loop", "outcomes", "runner"]
_MOVED_TO = {"Worker": "awa_django.testing"}


def __getattr__(name: str) -> Any:
    public = _MOVED_TO.get(name)
    if public is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # stacklevel=2: the warning names the line that imports the name, not this one.
    warnings.warn(f"{__name__} is deprecated; import {name} from {public}", DeprecationWarning, stacklevel=2)
    return getattr(importlib.import_module(public), name)
