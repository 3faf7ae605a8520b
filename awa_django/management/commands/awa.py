"""``manage.py awa ...``: operate schedules from the shell.

A thin command over :mod:`awa_django.cli`, where each verb family's parser
and handler live side by side; the handlers call the operator verbs of
:mod:`awa_django.operations` (the same functions the admin uses). ``--json``
prints machine-readable output; errors go to stderr with a non-zero exit status.
"""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError

from ... import __version__
from ...cli import add_arguments, handler_for
from ...cli.health import Unhealthy
from ...cli.output import database_error
from ...exceptions import OperationRefused, ScheduleNotFound
from ...terminal import printable

__all__ = ["Command"]


class Command(BaseCommand):
    help = (
        "Operate awa_django: schedules (cron ...), queues (queue ...) and jobs (jobs ...); "
        "import django-celery-beat's rows (import-celery-beat)."
    )

    def get_version(self) -> str:
        """``manage.py awa --version``: awa_django's version, not Django's."""
        return __version__

    def execute(self, *args: Any, **options: Any) -> Any:
        try:
            return super().execute(*args, **options)
        except Unhealthy as exc:
            # From a shell, ``--json`` writes the report and nothing else: a
            # monitor parses stdout and reads the exit status, so no
            # "CommandError: ..." line on stderr. call_command still raises.
            if options.get("json") and getattr(self, "_called_from_command_line", False):
                sys.exit(exc.returncode)
            raise

    def add_arguments(self, parser: Any) -> None:
        add_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        handler = handler_for(options)
        try:
            handler(self, options)
        except (ScheduleNotFound, OperationRefused, ValueError) as exc:
            # Messages quote owners and names from the database: escaped.
            raise CommandError(printable(exc)) from exc
        except DatabaseError as exc:
            raise CommandError(printable(database_error(exc))) from exc
