"""Names a module hands on without importing them: loaded on first use.

:func:`forwarding` is the module ``__getattr__`` of the public faces (``awa_django``,
``awa_django.operations``), which load each name from the module where it lives;
:func:`deprecated` that of the older paths kept for one release, which also warn
(``DeprecationWarning``) naming the new path.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["deprecated", "forwarding"]


def forwarding(module: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """A ``__getattr__`` for ``module`` loading each name of ``homes`` from its home."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        return getattr(importlib.import_module(home), name)

    return __getattr__


def deprecated(module: str, moved_to: Mapping[str, str]) -> Callable[[str], Any]:
    """A ``__getattr__`` for the older path ``module``: each name of ``moved_to``
    resolves to the object of its public path, with a warning naming that path."""

    def __getattr__(name: str) -> Any:
        public = moved_to.get(name)
        if public is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        # stacklevel=2: the warning names the line that uses the name, not this one.
        warnings.warn(
            f"{module} is deprecated; import {name} from {public}", DeprecationWarning, stacklevel=2
        )
        return getattr(importlib.import_module(public), name)

    return __getattr__
