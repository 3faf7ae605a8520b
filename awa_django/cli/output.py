"""How ``manage.py awa`` writes: JSON-ready values, the text or ``--json`` form
of a verb's result, and the operator's message for a database error.

Text that comes from the database or the operator goes through
:func:`awa_django.terminal.printable` before it reaches a terminal.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Protocol

from django.core.management.base import BaseCommand
from django.db import DatabaseError

from ..conf import conf
from ..db.guards import lock_wait_timed_out, privilege_error
from ..db.jsonb import Undecodable
from ..db.migration_state import require_migrated
from ..exceptions import NotMigrated

__all__ = ["UNDEFINED_OBJECT", "Handler", "database_error", "emit", "plain"]


class Handler(Protocol):
    """A verb's handler: the command (for its stdout and stderr) and the parsed options."""

    def __call__(self, command: BaseCommand, options: dict[str, Any], /) -> None: ...


# undefined_table, undefined_function: what a database without awa_django's
# migrations answers.
UNDEFINED_OBJECT = frozenset({"42P01", "42883"})


def plain(value: Any) -> Any:
    """``value`` as JSON-ready data (datetimes as ISO text, tuples as lists)."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, Undecodable):  # a stored value too large or deep to decode: its reason
        return str(value)
    return value


def emit(command: BaseCommand, options: dict[str, Any], data: Any, text: str) -> None:
    """Write ``data`` as JSON with ``--json``, else ``text`` (already escaped)."""
    if options["json"]:
        command.stdout.write(json.dumps(data, indent=2, sort_keys=True))
    else:
        command.stdout.write(text)


def database_error(exc: DatabaseError) -> str:
    """The operator's message for ``exc``: a missing grant, missing migrations
    (instead of "relation ... does not exist" and a SQL excerpt), or the error."""
    message = privilege_error(exc)
    if message:
        return message
    if lock_wait_timed_out(exc):
        first_line = (str(exc).strip().splitlines() or ["timeout"])[0]
        return (
            f"gave up waiting for another session ({first_line}; AWA_LOCK_TIMEOUT="
            f"{conf.LOCK_TIMEOUT:g}s, AWA_STATEMENT_TIMEOUT={conf.STATEMENT_TIMEOUT:g}s); try again"
        )
    if getattr(exc.__cause__, "sqlstate", None) in UNDEFINED_OBJECT:
        try:
            require_migrated()
        except NotMigrated as missing:
            return str(missing)
        except DatabaseError:  # the check itself failed: report the first error
            pass
    return str(exc)
