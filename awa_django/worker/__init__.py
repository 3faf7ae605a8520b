"""The worker process, ``manage.py runtasks``: claims jobs and runs their attempts.

``loop`` is the worker: it claims up to its free slots and hands attempts to its
``runner`` threads (which call back through ``runner.Pool``); ``outcomes``
records how each attempt ended, completing the successful ones in batches.
What a running task learns about its job is :mod:`awa_django.jobcontext`.

``awa_django.worker.Worker`` is a deprecated path kept for one release: it
resolves to :class:`awa_django.testing.Worker` and warns (``DeprecationWarning``).
"""

from __future__ import annotations

from .. import lazy

__all__ = ["loop", "outcomes", "runner"]
_MOVED_TO = {"Worker": "awa_django.testing"}


__getattr__ = lazy.deprecated(__name__, _MOVED_TO)
