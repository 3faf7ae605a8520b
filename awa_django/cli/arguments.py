"""The argparse types and options every family of ``manage.py awa`` shares:
bounded numbers, names checked as PostgreSQL can store them, and ``--actor``."""

from __future__ import annotations

import argparse
import getpass
from collections.abc import Callable
from typing import Any

from .. import validation
from ..terminal import printable

__all__ = [
    "actor_name",
    "add_actor",
    "bounded_int",
    "default_actor",
    "owner_name",
    "schedule_name",
    "text_of",
]


def bounded_int(low: int, high: int) -> Callable[[str], int]:
    """argparse type: a whole number from ``low`` to ``high``."""

    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
        if not low <= number <= high:
            raise argparse.ArgumentTypeError(f"must be a whole number from {low} to {high}, got {value!r}")
        return number

    return parse


def text_of(
    what: str, problem: Callable[[Any], str | None] = validation.text_problem
) -> Callable[[str], str]:
    """argparse type: ``what`` (a schedule name, an owner, ...) that ``problem`` accepts.

    By default, text PostgreSQL can store: a NUL or a lone surrogate would
    otherwise fail deep in the driver, with an error naming no argument.
    """

    def parse(value: str) -> str:
        found = problem(value)
        if found:
            raise argparse.ArgumentTypeError(f"{what} {value!r}: {found}")
        return value

    return parse


# Names an operator types to reach rows: any stored text (raw SQL may have
# written control characters; the row must stay reachable).
schedule_name = text_of("schedule name")
owner_name = text_of("owner")
# Actors are recorded and shown to other operators: no control characters.
actor_name = text_of("actor", validation.name_problem)


def default_actor() -> str:
    try:
        # Escaped: a login name with control characters would be recorded raw.
        return f"cli:{printable(getpass.getuser())}"
    except Exception:  # no passwd entry in some containers
        return "cli"


def add_actor(parser: Any, help_text: str = "operator recorded for audit (default: cli:<user>)") -> None:
    """The ``--actor`` option of the verbs that change something."""
    parser.add_argument("--actor", type=actor_name, default=default_actor(), help=help_text)
