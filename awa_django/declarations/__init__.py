"""Declaring schedules: the one shape of a schedule, and getting it into the table.

``shape`` is the one definition of a schedule's fields; ``builder`` validates one
declaration into a :class:`~awa_django.declarations.shape.Schedule`;
(the hostile-input checks it shares with jobs and operator input are
:mod:`awa_django.validation`); ``flow`` validates a schedule's unique and concurrency keys;
``declaration`` is :func:`periodic`, ``AWA_SCHEDULES`` and
``cron.py`` discovery; ``sync`` is the additive sync (its statement is the
store's, shared with reconciliation); ``ranges`` the options' value ranges;
``checks`` the system checks of declarations.

``periodic``, ``build_schedule``, ``declared_schedules`` and ``Schedule`` are
loaded on first use: they import ``django.tasks``, which needs settings.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "Schedule",
    "build_schedule",
    "declaration",
    "declared_schedules",
    "periodic",
    "shape",
    "sync",
]

_DECLARATION_API = {"Schedule", "build_schedule", "declared_schedules", "periodic"}


def __getattr__(name: str) -> Any:
    if name in _DECLARATION_API:
        from . import declaration

        return getattr(declaration, name)
    raise AttributeError(name)
