"""``manage.py awa health``: the health probe; exit status 0 if healthy, 1 if not."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from .. import health
from .arguments import bounded_int
from .output import Handler, emit

__all__ = ["HANDLERS", "MAX_PID", "Unhealthy", "add_parser"]

# The largest process id (pid_t is a 32-bit int) ``awa health --pid`` takes.
MAX_PID = 2**31 - 1


class Unhealthy(CommandError):
    """``awa health`` found a failed check (exit status 1)."""


def add_parser(groups: Any) -> None:
    """``awa health``."""
    probe = groups.add_parser("health", help="Health probe: exit 0 if healthy, 1 if not.")
    probe.set_defaults(verb="probe")
    probe.add_argument(
        "--role",
        choices=sorted(health.ROLES),
        help="also check the runcron (cron) or runtasks (tasks) process on this host",
    )
    probe.add_argument(
        "--local", action="store_true", help="only check this host's process (a liveness probe); needs --role"
    )
    probe.add_argument(
        "--pid", type=bounded_int(1, MAX_PID), help="only the process with this pid (with --role)"
    )
    probe.add_argument("--json", action="store_true", help="machine-readable output")


def health_probe(command: BaseCommand, options: dict[str, Any]) -> None:
    if (options["local"] or options["pid"] is not None) and not options["role"]:
        raise CommandError("--local and --pid need --role cron or --role tasks", returncode=2)
    report = health.probe(options["role"], local_only=options["local"], pid=options["pid"])
    emit(command, options, report.as_json(), health.render(report))
    if not report.healthy:
        failed = ", ".join(c.name for c in report.checks if not c.ok)
        raise Unhealthy(f"unhealthy: {failed}")


HANDLERS: dict[tuple[str, str], Handler] = {
    ("health", "probe"): health_probe,
}
