"""Health probes: is this ``runcron``/``runtasks`` working, is cron firing?

``manage.py awa health`` answers from the database, which every process
already reports to (``awa_runtime_instances``), so the probe needs no port
and works as a Kubernetes ``exec`` probe or from a systemd timer:

* ``process`` -- this host has a live process of the role (its snapshot
  thread wrote within two snapshot intervals + 5 s, and it is not shutting
  down) and each one made progress recently (``last_pass_at``:
  a leader's last successful evaluation pass, a standby's last election
  attempt, a worker's last turn of its claim loop). A process whose snapshot
  thread still runs while its main loop is stuck fails here.
* ``leader`` -- some live ``runcron`` row leads and its last pass is recent.
* ``schedules`` -- no active schedule's next fire is later than
  ``AWA_HEALTH_OVERDUE_AFTER`` (parked rows excepted; see ``cron.invalid``).
* ``declarations`` -- a warning, never a failure: schedules of this
  deployment that its code no longer declares (they keep firing), each with
  the command that stops it.

Progress times are written with each snapshot, so they can lag by one
snapshot interval: a pass counts as recent when younger than
``max(AWA_HEALTH_MAX_PASS_AGE, 3 x the row's snapshot interval)``.
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from django.db import DatabaseError, InterfaceError, connections, transaction
from django.db.models import BooleanField, ExpressionWrapper, Q

from .conf import conf
from .db.sessions import set_local
from .store import health as store_health
from .store.health import LiveProcess
from .terminal import printable

ROLES = {"cron": "runcron", "tasks": "runtasks"}
# The fire statement version this release runs (awa_cron_fire_v8: v7's
# contract, which knows interval schedules and probes the overlap check, and
# records a slot a unique key refused; awa_django.leader.firing.FIRE calls
# it). Runtime snapshots carry theirs.
FIRE_STATEMENT_VERSION = 8
# The first version that knows the execution policies (awa_cron_fire_v5).
POLICIES_FIRE_VERSION = 5


def policy_gap(cursor: Any) -> tuple[int, list[tuple[str, int, bool]]]:
    """(active schedules with execution policies, live runcron processes of a
    release without them as (hostname, pid, leads)); the count is 0 when no such process lives."""
    count, old = store_health.policy_gap(cursor, POLICIES_FIRE_VERSION)
    return count, [(p.hostname, p.pid, p.leader) for p in old]


def policy_gap_message(count: int, old: list[tuple[str, int, bool]]) -> str | None:
    """Why schedules with execution policies may not fire, or None."""
    if not count or not old:
        return None
    who = ", ".join(f"{h} pid {p}{' (leader)' if lead else ''}" for h, p, lead in old[:5])
    return (
        f"{count} schedule(s) with execution policies (overlap, starting_deadline, jitter) never fire "
        f"while a runcron of a release without them leads: {who}; its fire statement is refused, upgrade it"
    )


def _policies_check(count: int, old: list[tuple[str, int, bool]]) -> Check:
    message = policy_gap_message(count, old)
    if message is None:
        return Check("policies", True, "every live runcron applies the execution policies")
    # Only a leader fires: an old standby is a risk, not yet a fault.
    return Check("policies", not any(lead for _, _, lead in old), message)


# Every probe query together must finish within this (an exec probe has a timeout).
PROBE_TIMEOUT_MS = 5000


class Progress:
    """When the owning loop last made progress (monotonic clock, thread-safe)."""

    def __init__(self) -> None:
        self._at: float | None = None
        self._lock = threading.Lock()

    def mark(self) -> None:
        """The loop just completed a unit of work (a pass, a claim turn)."""
        with self._lock:
            self._at = time.monotonic()

    def seconds_since(self) -> float | None:
        """Seconds since the last :meth:`mark`, or None before the first."""
        with self._lock:
            at = self._at
        return None if at is None else max(0.0, time.monotonic() - at)


def record_progress(cursor: Any, instance_id: str, progress: Progress | None) -> None:
    """Store ``progress`` in this instance's snapshot row (inside its transaction)."""
    if progress is None:
        return
    age = progress.seconds_since()
    if age is not None:
        store_health.record_progress(cursor, instance_id, age)


@dataclass
class Check:
    """One named health condition."""

    name: str
    ok: bool
    detail: str
    # Worth a look, but not a failure: the report stays healthy.
    warning: bool = False


@dataclass
class HealthReport:
    """All checks of one probe; healthy when every check passed (warnings pass)."""

    role: str | None
    hostname: str
    checks: list[Check] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)

    def as_json(self) -> dict[str, Any]:
        return {
            "healthy": self.healthy,
            "role": self.role,
            "hostname": self.hostname,
            "checks": [asdict(c) for c in self.checks],
        }


def _process_check(rows: list[LiveProcess], role: str, hostname: str, pid: int | None) -> Check:
    process = ROLES[role]
    mine = [r for r in rows if r.role == process and r.hostname == hostname and pid in (None, r.pid)]
    who = f"{process} on {hostname}" + (f" pid {pid}" if pid is not None else "")
    if not mine:
        return Check("process", False, f"no live {who} (no recent runtime snapshot)")
    stuck = [r for r in mine if not r.progressing]
    if stuck:
        details = ", ".join(
            f"pid {r.pid}: last pass {r.pass_age:.0f}s ago (limit {r.pass_limit:.0f}s)" for r in stuck
        )
        return Check("process", False, f"{who} is not making progress: {details}")
    pids = ", ".join(str(r.pid) for r in mine)
    return Check("process", True, f"{len(mine)} live {process} process(es) on {hostname} (pid {pids})")


def _leader_check(rows: list[LiveProcess]) -> Check:
    leaders = [r for r in rows if r.role == "runcron" and r.leader]
    if not leaders:
        return Check("leader", False, "no live runcron process leads")
    recent = [r for r in leaders if r.progressing]
    if not recent:
        r = leaders[0]
        return Check(
            "leader",
            False,
            f"leader {r.hostname} pid {r.pid}: last pass {r.pass_age:.0f}s ago (limit {r.pass_limit:.0f}s)",
        )
    r = recent[0]
    when = "starting" if r.starting else f"last pass {r.pass_age:.1f}s ago"
    return Check("leader", True, f"leader {r.hostname} pid {r.pid}, {when}")


def _schedules_check(overdue: list[tuple[str, float]], threshold: float) -> Check:
    if not overdue:
        return Check("schedules", True, f"no schedule overdue by more than {threshold:g}s")
    names = ", ".join(f"{name} ({late:.0f}s)" for name, late in overdue[:10])
    more = " and more" if len(overdue) > 10 else ""
    return Check("schedules", False, f"overdue by more than {threshold:g}s: {names}{more}")


def _declarations_check(undeclared: list[Any]) -> Check:
    # Imported when a probe runs: actions.declarations imports the models, and
    # this module imports no model, so it loads before the app registry is ready.
    from .operations.declarations import undeclared_remedy

    if not undeclared:
        return Check("declarations", True, "every schedule of this deployment is declared in its code")
    # Only an active row that is not parked fires: a parked or paused one says so.
    groups: dict[str, list[str]] = {"still firing": [], "parked, not firing": [], "paused, not firing": []}
    for row in undeclared[:10]:
        state = (
            "paused, not firing"
            if getattr(row, "awa_paused", False)
            else "parked, not firing"
            if getattr(row, "awa_parked", False)
            else "still firing"
        )
        groups[state].append(f"{row.name} (run `{undeclared_remedy(row)}`)")
    shown = "; ".join(f"{state}: {'; '.join(rows)}" for state, rows in groups.items() if rows)
    more = " and more" if len(undeclared) > 10 else ""
    return Check("declarations", True, f"no longer declared in this code, {shown}{more}", warning=True)


def probe(
    role: str | None = None,
    *,
    local_only: bool = False,
    hostname: str | None = None,
    pid: int | None = None,
    using: str = "default",
) -> HealthReport:
    """Evaluate the health checks for ``role`` (``"cron"``, ``"tasks"`` or None).

    ``role`` adds the ``process`` check for this host; ``local_only`` keeps
    only that one (a liveness probe that restarts only what is broken here).
    Without a role: the cluster checks ``leader`` and ``schedules``.
    Never raises for database errors: they fail the ``database`` check.
    """
    if role is not None and role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
    host = hostname or socket.gethostname()
    report = HealthReport(role=role, hostname=host)
    max_age = conf.HEALTH_MAX_PASS_AGE
    overdue_after = conf.HEALTH_OVERDUE_AFTER
    try:
        with transaction.atomic(using=using), connections[using].cursor() as cursor:
            set_local(cursor, "statement_timeout", str(PROBE_TIMEOUT_MS))
            rows = store_health.live_processes(cursor, max_age)
            overdue: list[tuple[str, float]] = []
            undeclared: list[Any] = []
            gap: tuple[int, list[tuple[str, int, bool]]] = (0, [])
            if role != "tasks" and not local_only:
                overdue = [(o.name, o.late) for o in store_health.overdue_schedules(cursor, overdue_after)]
                undeclared = _undeclared(using)
                gap = policy_gap(cursor)
    except (DatabaseError, InterfaceError) as exc:
        report.checks.append(Check("database", False, f"cannot query the database: {exc}".strip()))
        return report
    report.checks.append(Check("database", True, "reachable"))
    if role is not None:
        report.checks.append(_process_check(rows, role, host, pid))
    if not local_only and role != "tasks":
        report.checks.append(_leader_check(rows))
        report.checks.append(_schedules_check(overdue, overdue_after))
        report.checks.append(_declarations_check(undeclared))
        report.checks.append(_policies_check(*gap))
    return report


def _undeclared(using: str) -> list[Any]:
    # At call time, as in _declarations_check: it imports the models.
    from .operations.declarations import undeclared_rows

    # Booleans computed in SQL: a raw 'infinity' timestamp never reaches Python.
    flags = {
        "awa_parked": ExpressionWrapper(Q(parked_at__isnull=False), output_field=BooleanField()),
        "awa_paused": ExpressionWrapper(Q(paused_at__isnull=False), output_field=BooleanField()),
    }
    return list(undeclared_rows(using=using).annotate(**flags).only("name", "owner_id")[:11])


def render(report: HealthReport) -> str:
    """The human-readable form of a report (one line per check).

    Details carry names, hostnames and error text from the database: control
    characters are escaped, so none can rewrite the terminal or add a line.
    """
    lines = [
        f"{'FAIL' if not c.ok else 'warn' if c.warning else 'ok  '} {c.name}: {printable(c.detail)}"
        for c in report.checks
    ]
    lines.append("healthy" if report.healthy else "unhealthy")
    return "\n".join(lines)
