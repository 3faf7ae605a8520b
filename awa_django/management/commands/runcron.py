"""``manage.py runcron``: run for cron leadership and fire due schedules."""

from __future__ import annotations

import logging
from typing import Any

import psycopg
from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError

from awa_django import metrics
from awa_django.exceptions import InvalidSchedule, LeadershipUnavailable, NotMigrated
from awa_django.terminal import printable

from ... import contract
from ...db.guards import guard_process_connections, privilege_error
from ...db.migration_state import require_migrated
from ...jsonlog import announce
from ...leader.loop import Leader
from ...reconciliation.persistence import RegistrationConflict

logger = logging.getLogger("awa_django.runcron")


class Command(BaseCommand):
    help = (
        "Run the awa_django cron leader loop. Run one or more replicas: one is "
        "elected leader and fires due schedules; the others stand by."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--once",
            action="store_true",
            help="Take leadership, sync and run one evaluation pass, then exit. "
            "Exits non-zero if another process is leader.",
        )
        metrics.add_arguments(parser)

    def handle(self, *args: Any, once: bool = False, **options: Any) -> None:
        if options["verbosity"] > 1:
            logging.getLogger("awa_django").setLevel(logging.DEBUG)
        guard_process_connections()  # TCP keepalives, before any connection
        try:
            # Validates every declared schedule before anything is written.
            leader = Leader()
        except InvalidSchedule as exc:
            raise CommandError(f"invalid schedule, not starting: {exc}") from exc
        try:
            require_migrated("default")
        except NotMigrated as exc:
            raise CommandError(f"not starting: {exc}") from exc
        except DatabaseError as exc:
            raise CommandError(f"not starting: {privilege_error(exc) or f'database error: {exc}'}") from exc
        if once:
            try:
                result = leader.run_once()
            except (LeadershipUnavailable, RegistrationConflict) as exc:
                raise CommandError(str(exc)) from exc
            except (DatabaseError, psycopg.Error) as exc:
                raise CommandError(privilege_error(exc) or f"evaluation pass failed: {exc}") from exc
            self.stdout.write(f"evaluated {result.evaluated} schedule(s), enqueued {len(result.jobs)} job(s)")
            for job in result.jobs:
                meta = job["metadata"]
                # The name comes from the row, which raw SQL may have written.
                self.stdout.write(
                    printable(
                        f"  {meta[contract.CRON_NAME_KEY]} @ {meta[contract.CRON_FIRE_AT_KEY]} -> job {job['id']}"
                    )
                )
            return
        metrics.serve_from_options(options)
        leader.install_signal_handlers()
        announce(
            self.stdout.write,
            logger,
            f"runcron: {len(leader.schedules)} declared schedule(s); waiting for leadership",
            "runcron.started",
        )
        try:
            leader.run()
        except RegistrationConflict as exc:
            raise CommandError(f"not starting: {exc}") from exc
        except (DatabaseError, psycopg.Error) as exc:
            # Only the startup snapshot can raise here; the loop survives errors.
            raise CommandError(f"not starting: {privilege_error(exc) or f'database error: {exc}'}") from exc
        announce(self.stdout.write, logger, "runcron: stopped", "runcron.stopped")
