"""Deprecated paths of the task side, kept for one release.

``awa_django.tasks.backend.AwaBackend`` (a ``TASKS`` ``BACKEND`` path) is now
``awa_django.backend.AwaBackend``, and ``awa_django.tasks.compat.task`` is
``awa_django.task``. Each name still resolves, to the very object of its new path,
and warns (``DeprecationWarning``) where it is used. Removed in the next release.
"""

__all__: list[str] = []
