"""``manage.py runtasks``: run jobs from ``awa_jobs`` (tasks and cron fires)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError

from awa_django.cli.arguments import bounded_int, text_of
from awa_django.exceptions import InvalidSchedule, NotMigrated

from ... import metrics, validation
from ...client.compat import InvalidTaskBackend
from ...db.guards import guard_process_connections, privilege_error
from ...db.migration_state import require_migrated
from ...declarations.declaration import declared_schedules
from ...jsonlog import announce
from ...reconciliation.persistence import RegistrationConflict
from ...worker.loop import Worker

logger = logging.getLogger("awa_django.runtasks")

# Each task thread holds a database connection, and awa_claim_v3 takes the
# number of free slots as an integer: a larger value fails every claim.
MAX_CONCURRENCY = 1000


def positive_int(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return number


def worker_id(value: str) -> str:
    # Recorded in awa_jobs.worker_ids and shown to operators: no control characters.
    if not value.strip() or len(value) > 200 or validation.name_problem(value):
        raise argparse.ArgumentTypeError(
            "a worker id is 1-200 characters, not blank, no NUL, control or format characters"
        )
    return value


class Command(BaseCommand):
    help = "Run the awa_django task worker. Run any number of replicas."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--queue",
            action="append",
            # A usage error: a name awa_jobs cannot hold (a NUL) would
            # otherwise fail every claim statement of the running worker.
            type=text_of("queue name", validation.queue_problem),
            dest="queues",
            metavar="QUEUE",
            help="only claim from this queue (repeatable; default: all queues)",
        )
        parser.add_argument(
            "--concurrency",
            type=bounded_int(1, MAX_CONCURRENCY),
            default=1,
            help=f"tasks run at once, each in its own thread (1-{MAX_CONCURRENCY}, default 1)",
        )
        parser.add_argument(
            "--burst",
            action="store_true",
            help="exit 0 once no job is ready and none is running (failed tasks "
            "do not change the exit status: their outcome is in awa_jobs)",
        )
        parser.add_argument(
            "--max-tasks",
            type=positive_int,
            default=None,
            metavar="N",
            help="claim at most N jobs, then exit 0 once they finished",
        )
        parser.add_argument(
            "--worker-id",
            type=worker_id,
            default=None,
            help="id recorded in awa_jobs.worker_ids (default host:pid:random)",
        )
        parser.add_argument(
            "--backend",
            default="default",
            help="alias in settings.TASKS of the AwaBackend to serve (default 'default')",
        )
        metrics.add_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        if options["verbosity"] > 1:
            logging.getLogger("awa_django").setLevel(logging.DEBUG)
        guard_process_connections()  # TCP keepalives, before any connection
        try:
            worker = Worker(
                queues=options["queues"],
                concurrency=options["concurrency"],
                burst=options["burst"],
                backend=options["backend"],
                schedules=declared_schedules(),
                max_tasks=options["max_tasks"],
                worker_id=options["worker_id"],
            )
        except InvalidSchedule as exc:
            raise CommandError(f"invalid schedule, not starting: {exc}") from exc
        except InvalidTaskBackend as exc:  # its own message speaks of a "connection"
            raise CommandError(
                f"task backend {options['backend']!r} is not defined in settings.TASKS"
            ) from exc
        except (ValueError, KeyError, ImproperlyConfigured) as exc:
            raise CommandError(str(exc)) from exc
        try:
            require_migrated(worker.using)
        except NotMigrated as exc:
            raise CommandError(f"not starting: {exc}") from exc
        except DatabaseError as exc:
            raise CommandError(f"not starting: {privilege_error(exc) or f'database error: {exc}'}") from exc
        metrics.serve_from_options(options)
        worker.install_signal_handlers()
        announce(
            self.stdout.write, logger, f"runtasks: worker {worker.worker_id} started", "runtasks.started"
        )
        try:
            worker.run()
        except RegistrationConflict as exc:
            raise CommandError(f"not starting: {exc}") from exc
        except DatabaseError as exc:
            raise CommandError(f"not starting: {privilege_error(exc) or f'database error: {exc}'}") from exc
        if worker.abandoned:
            # Tasks outlived AWA_SHUTDOWN_TIMEOUT: end the process now rather
            # than wait for them; their attempts are rescued and retried.
            announce(
                self.stdout.write,
                logger,
                f"runtasks: stopped, abandoning {worker.abandoned} running task(s)",
                "runtasks.stopped",
            )
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)
        announce(
            self.stdout.write,
            logger,
            f"runtasks: stopped after {worker.completed} completed job(s), {worker.failed} failed attempt(s)",
            "runtasks.stopped",
        )
