"""``manage.py awa ...``: operate schedules from the shell.

A thin parser over :mod:`awa_django.operations` (the same functions the admin
uses). ``--json`` prints machine-readable output; errors go to stderr with a
non-zero exit status.
"""

from __future__ import annotations

import argparse
import getpass
import json
import math
import unicodedata
from datetime import datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError

from awa_django import db, health, operations, ownership, queues, reconciliation
from awa_django.connection_guards import privilege_error
from awa_django.exceptions import OperationRefused, ScheduleNotFound
from awa_django.humanize import describe_cron
from awa_django.manifest import DEFINITION_KEYS
from awa_django.models import CronJob, Job, JobState

# The definition (as in a manifest), then the state columns.
ROW_FIELDS = (
    *DEFINITION_KEYS,
    "last_enqueued_at",
    "next_fire_at",
    "created_at",
    "updated_at",
    "paused_at",
    "paused_by",
    "retired_at",
    "retired_by",
    "retired_revision",
    "owner_id",
    "parked_at",
    "parked_reason",
)


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, tuple):
        return list(value)
    return value


def schedule_dict(row: CronJob, upcoming: int = 0) -> dict[str, Any]:
    """A schedule row as JSON-ready data (the ``--json`` shape)."""
    data = {f: _plain(getattr(row, f)) for f in ROW_FIELDS}
    for f in ROW_FIELDS:
        # A timestamp no datetime can hold ('infinity'): show the database's text.
        if data[f] is None and getattr(row, f"{f}_text", None) is not None:
            data[f] = getattr(row, f"{f}_text")
    data["state"] = ("retired" if row.retired_at else "paused" if row.paused_at
                     else "parked" if row.parked_at else "active")
    data["description"] = describe_cron(row.cron_expr)
    if upcoming:
        data["upcoming_fires"] = [f.isoformat() for f in operations.upcoming_fires(row, upcoming)]
    return data


def printable(value: Any) -> str:
    """``value`` as text with control and format characters escaped.

    Names come from declarations and raw SQL; ESC, newlines or RTL overrides
    printed as-is would let one row forge others in a terminal. JSON output
    is escaped by ``json.dumps`` itself.
    """
    text = str(value)
    if all(" " <= c <= "~" for c in text):
        return text
    return "".join(
        c if unicodedata.category(c) not in _UNPRINTABLE else c.encode("unicode_escape").decode("ascii")
        for c in text
    )


_UNPRINTABLE = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp", "Co", "Cn"})


def positive_seconds(value: str) -> float:
    """argparse type: a finite number of seconds > 0 (``-1`` would prune everything)."""
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds") from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds > 0, got {value!r}")
    return seconds


def default_actor() -> str:
    try:
        return f"cli:{getpass.getuser()}"
    except Exception:  # no passwd entry in some containers
        return "cli"


def job_duration(job: Job, now: datetime | None) -> float | None:
    """Seconds the latest attempt ran (so far, if it is running); None if never started."""
    if job.attempted_at is None:
        return None
    end = job.finished_at if job.finished_at is not None else now if job.state == JobState.RUNNING else None
    if end is None:
        return None
    return max(0.0, (end - job.attempted_at).total_seconds())


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def last_error(job: Job, width: int = 60) -> str | None:
    """``Class: last traceback line`` of the job's latest error, shortened."""
    errors = job.errors if isinstance(job.errors, list) else []
    if not errors or not isinstance(errors[-1], dict):
        return None
    entry = errors[-1]
    name = str(entry.get("exception_class_path", "?")).rpartition(".")[2]
    lines = [line for line in str(entry.get("traceback", "")).strip().splitlines() if line.strip()]
    detail = lines[-1].strip() if lines else ""
    if detail.startswith(name + ":") or detail == name:
        text = detail
    else:
        text = f"{name}: {detail}" if detail else name
    return text if len(text) <= width else text[: width - 3] + "..."


class Command(BaseCommand):
    help = "Operate awa_django: schedules (cron ...), queues (queue ...) and jobs (jobs ...)."

    def add_arguments(self, parser: Any) -> None:
        groups = parser.add_subparsers(dest="group", required=True, metavar="{cron,queue,jobs,health}")
        cron = groups.add_parser("cron", help="Inspect and operate cron schedules.")
        verbs = cron.add_subparsers(dest="verb", required=True, metavar="VERB")

        def verb(name: str, help_text: str, *, needs_name: bool = True, mutates: bool = False) -> Any:
            sub = verbs.add_parser(name, help=help_text)
            if needs_name:
                sub.add_argument("name", help="schedule name")
            if mutates:
                sub.add_argument("--actor", default=default_actor(), help="operator recorded for audit (default: cli:<user>)")
            sub.add_argument("--json", action="store_true", help="machine-readable output")
            return sub

        verb("list", "List schedules.", needs_name=False)
        show = verb("show", "Show one schedule with its next fires.")
        show.add_argument("--next", type=int, default=5, help="how many upcoming fires to show")
        verb("pause", "Pause automatic fires (manual triggers still work).", mutates=True)
        verb("resume", "Resume automatic fires.", mutates=True)
        verb("trigger", "Enqueue one job now, even while paused.", mutates=True)
        verb("remove", "Delete a schedule row that is neither owned nor retired.", mutates=True)

        # Owner-scoped reconciliation: lifecycle verbs are dry runs unless --apply.
        def lifecycle(name: str, help_text: str, *positionals: str) -> Any:
            sub = verbs.add_parser(name, help=help_text + " Dry run unless --apply.")
            for positional in positionals:
                sub.add_argument(positional)
            sub.add_argument("--apply", action="store_true", help="perform the action (default: dry run)")
            sub.add_argument("--actor", default=default_actor(), help="operator recorded for audit")
            sub.add_argument("--json", action="store_true", help="machine-readable output")
            return sub

        adopt = lifecycle("adopt", "Give a schedule to an owner.", "name", "owner")
        adopt.add_argument("--expected-owner", default=None,
                           help="the current owner you expect (default: unowned)")
        lifecycle("retire", "Retire a schedule (durable tombstone; never fires).", "name")
        lifecycle("restore", "Restore a retired schedule from now on (no replay).", "name")
        lifecycle("retire-owner", "Retire every schedule of an owner.", "owner")
        lifecycle("restore-owner", "Restore every retired schedule of an owner.", "owner")
        plan = verbs.add_parser("plan", help="Explain what reconciliation of an owner would do (read-only).")
        plan.add_argument("owner")
        plan.add_argument("--manifest", metavar="FILE",
                          help="preview this JSON list of schedule definitions instead of the published one")
        plan.add_argument("--json", action="store_true", help="machine-readable output")
        owners = verbs.add_parser("owners", help="List owners with their live plan summary.")
        owners.add_argument("--json", action="store_true", help="machine-readable output")

        queue = groups.add_parser("queue", help="Inspect, pause and resume queues.")
        qverbs = queue.add_subparsers(dest="verb", required=True, metavar="VERB")
        for name, help_text in (("list", "List queues with job counts."),
                                ("pause", "Stop workers claiming from a queue (enqueue continues)."),
                                ("resume", "Let workers claim from a queue again.")):
            sub = qverbs.add_parser(name, help=help_text)
            if name != "list":
                sub.add_argument("name", help="queue name")
                sub.add_argument("--actor", default=default_actor(), help="operator recorded for audit")
            sub.add_argument("--json", action="store_true", help="machine-readable output")

        jobs = groups.add_parser("jobs", help="Inspect, cancel, retry and prune jobs.")
        jverbs = jobs.add_subparsers(dest="verb", required=True, metavar="VERB")
        jlist = jverbs.add_parser("list", help="List recent jobs.")
        jlist.add_argument("--state", choices=JobState.values)
        jlist.add_argument("--queue")
        jlist.add_argument("--cron", metavar="NAME", help="only jobs of this schedule")
        jlist.add_argument("--limit", type=int, default=50)
        jcancel = jverbs.add_parser("cancel", help="Cancel one job by id, or the not-yet-running jobs of a schedule.")
        jcancel.add_argument("id", type=int, nargs="?", help="job id")
        jcancel.add_argument("--cron", metavar="NAME", help="cancel every not-yet-running job of this schedule")
        jretry = jverbs.add_parser("retry", help="Make a failed or cancelled job available again.")
        jretry.add_argument("id", type=int, help="job id")
        jprune = jverbs.add_parser("prune", help="Delete finished jobs older than AWA_JOB_RETENTION.")
        jprune.add_argument("--older-than", type=positive_seconds, metavar="SECONDS",
                            help="override AWA_JOB_RETENTION for this run (a finite number > 0)")
        jprune.add_argument("--dry-run", action="store_true",
                            help="count the jobs that would be deleted; delete nothing")
        for sub in (jlist, jcancel, jretry, jprune):
            sub.add_argument("--json", action="store_true", help="machine-readable output")
        for sub in (jcancel, jretry):
            sub.add_argument("--actor", default=default_actor(), help="operator recorded for audit")

        probe = groups.add_parser("health", help="Health probe: exit 0 if healthy, 1 if not.")
        probe.set_defaults(verb="probe")
        probe.add_argument("--role", choices=sorted(health.ROLES),
                           help="also check the runcron (cron) or runtasks (tasks) process on this host")
        probe.add_argument("--local", action="store_true",
                           help="only check this host's process (a liveness probe); needs --role")
        probe.add_argument("--pid", type=int, help="only the process with this pid (with --role)")
        probe.add_argument("--json", action="store_true", help="machine-readable output")

    def handle(self, *args: Any, **options: Any) -> None:
        handler = getattr(self, f"{options['group']}_{options['verb'].replace('-', '_')}")
        try:
            handler(options)
        except ScheduleNotFound as exc:
            raise CommandError(str(exc)) from exc
        except (OperationRefused, ValueError, DatabaseError) as exc:
            raise CommandError(privilege_error(exc) or str(exc)) from exc

    def health_probe(self, options: dict[str, Any]) -> None:
        if (options["local"] or options["pid"] is not None) and not options["role"]:
            raise CommandError("--local and --pid need --role cron or --role tasks")
        report = health.probe(options["role"], local_only=options["local"], pid=options["pid"])
        self.emit(options, report.as_json(), health.render(report))
        if not report.healthy:
            failed = ", ".join(c.name for c in report.checks if not c.ok)
            raise CommandError(f"unhealthy: {failed}")

    def emit(self, options: dict[str, Any], data: Any, text: str) -> None:
        if options["json"]:
            self.stdout.write(json.dumps(data, indent=2, sort_keys=True))
        else:
            self.stdout.write(text)

    # -- verbs ---------------------------------------------------------------
    def cron_list(self, options: dict[str, Any]) -> None:
        rows = operations.list_schedules()
        data = [schedule_dict(r) for r in rows]
        if not rows:
            self.emit(options, data, "No cron schedules found.")
            return
        header = ("NAME", "CRON", "DESCRIPTION", "TIMEZONE", "POLICY", "QUEUE", "OWNER", "STATE", "LAST FIRE", "NEXT FIRE")
        table: list[tuple[str, ...]] = [header]
        for row, item in zip(rows, data, strict=True):
            upcoming = operations.upcoming_fires(row, 1)
            table.append(
                tuple(
                    printable(cell)
                    for cell in (
                        row.name,
                        row.cron_expr,
                        item["description"],
                        row.timezone,
                        row.missed_fire_policy,
                        row.queue,
                        row.owner_id or "-",
                        item["state"],
                        item["last_enqueued_at"] or "never",
                        upcoming[0].isoformat() if upcoming else "-",
                    )
                )
            )
        widths = [max(len(str(r[i])) for r in table) for i in range(len(header))]
        lines = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in table]
        lines.append(f"{len(rows)} schedule(s).")
        self.emit(options, data, "\n".join(lines))

    def cron_show(self, options: dict[str, Any]) -> None:
        row = operations.get_schedule(options["name"])
        data = schedule_dict(row, upcoming=max(0, options["next"]))
        lines = [f"{k}: {json.dumps(v) if isinstance(v, (dict, list)) else printable(v)}" for k, v in data.items()]
        self.emit(options, data, "\n".join(lines))

    def _action(self, options: dict[str, Any], func: Any) -> None:
        result = func(options["name"], options["actor"])
        data = {"action": result.action, "schedule": result.name, "changed": result.changed, "detail": result.detail}
        text = printable(f"{result.action}: {result.name}: ") + (
            "done" if result.changed else printable(f"no change ({result.detail})"))
        self.emit(options, data, text)

    def cron_pause(self, options: dict[str, Any]) -> None:
        self._action(options, operations.pause)

    def cron_resume(self, options: dict[str, Any]) -> None:
        self._action(options, operations.resume)

    def cron_remove(self, options: dict[str, Any]) -> None:
        self._action(options, operations.remove)

    def cron_trigger(self, options: dict[str, Any]) -> None:
        job = operations.trigger(options["name"], options["actor"])
        data = {k: _plain(v) for k, v in job.items()}
        self.emit(options, data, printable(f"trigger: {options['name']}: enqueued job {job['id']} on queue {job['queue']}"))

    # -- ownership -----------------------------------------------------------
    def _lifecycle(self, options: dict[str, Any], result: Any) -> None:
        verb = "applied" if result.applied else "dry run (use --apply)"
        names = ", ".join(result.schedules) or "nothing"
        self.emit(options, result.as_json(), printable(f"{result.action}: {verb}: {names}"))

    def cron_adopt(self, options: dict[str, Any]) -> None:
        self._lifecycle(options, ownership.adopt(
            options["name"], options["owner"], actor=options["actor"], apply=options["apply"],
            expected_owner=options["expected_owner"]))

    def cron_retire(self, options: dict[str, Any]) -> None:
        self._lifecycle(options, ownership.retire(options["name"], actor=options["actor"], apply=options["apply"]))

    def cron_restore(self, options: dict[str, Any]) -> None:
        self._lifecycle(options, ownership.restore(options["name"], actor=options["actor"], apply=options["apply"]))

    def cron_retire_owner(self, options: dict[str, Any]) -> None:
        self._lifecycle(options, ownership.retire_owner(
            options["owner"], actor=options["actor"], apply=options["apply"]))

    def cron_restore_owner(self, options: dict[str, Any]) -> None:
        self._lifecycle(options, ownership.restore_owner(
            options["owner"], actor=options["actor"], apply=options["apply"]))

    def cron_plan(self, options: dict[str, Any]) -> None:
        if options["manifest"]:
            try:
                with open(options["manifest"], encoding="utf-8") as handle:
                    definitions = json.load(handle)
            except (OSError, ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError
                raise CommandError(f"cannot read manifest {options['manifest']}: {exc}") from exc
            if not isinstance(definitions, list):
                raise CommandError("a manifest file holds a JSON list of schedule definitions")
            for index, entry in enumerate(definitions):
                if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                    raise CommandError(
                        f"manifest entry #{index + 1} is not an object with a string 'name': "
                        f"{printable(json.dumps(entry)[:80])}"
                    )
            try:
                result = reconciliation.preview(options["owner"], definitions)
            except (TypeError, KeyError, AttributeError, RecursionError) as exc:
                raise CommandError(f"malformed manifest {options['manifest']}: {type(exc).__name__}: {exc}") from exc
        else:
            result = reconciliation.plan(options["owner"])
        data = result.as_json()
        status = ", ".join(result.blockers) or (
            "converged; the leader retires the listed schedules at its next pass"
            if result.retirements else "converged"
        )
        lines = [f"owner {result.owner_id}: {status}"]
        for key in ("additions", "updates", "retirements", "conflicts", "blocking_instances"):
            if data[key]:
                lines.append(f"  {key}: " + ", ".join(data[key]))
        for decl in data["declarations"]:
            lines.append(f"  declaration {decl['instance_id']} revision {decl['revision']} "
                         f"hash {decl['desired_hash'][:12]} expires {decl['expires_at']}")
        if result.grace_remaining_ms:
            lines.append(f"  grace remaining: {result.grace_remaining_ms / 1000:.1f}s")
        self.emit(options, data, "\n".join(printable(line) for line in lines))

    def cron_owners(self, options: dict[str, Any]) -> None:
        plans = [reconciliation.plan(owner) for owner in reconciliation.owners()]
        data = [p.as_json() for p in plans]
        lines = [f"{p.owner_id}: " + (", ".join(p.blockers) or "converged")
                 + (f"; would retire {', '.join(p.retirements)}" if p.retirements else "") for p in plans]
        self.emit(options, data, "\n".join(printable(line) for line in lines) or "No owners.")

    # -- queues --------------------------------------------------------------
    def queue_list(self, options: dict[str, Any]) -> None:
        statuses = queues.list_queues()
        data = [
            {"queue": q.queue, "paused_at": _plain(q.paused_at), "paused_by": q.paused_by, "counts": q.counts}
            for q in statuses
        ]
        if not statuses:
            self.emit(options, data, "No queues found.")
            return
        lines = []
        for q in statuses:
            state = f"paused by {q.paused_by}" if q.paused_at else "active"
            counts = ", ".join(f"{k}={v}" for k, v in sorted(q.counts.items())) or "no jobs"
            lines.append(printable(f"{q.queue}: {state}; {counts}"))
        self.emit(options, data, "\n".join(lines))

    def _queue_action(self, options: dict[str, Any], action: str, func: Any) -> None:
        changed = func(options["name"], options["actor"])
        data = {"action": action, "queue": options["name"], "changed": changed}
        self.emit(options, data, printable(f"{action}: queue {options['name']}: ") + ("done" if changed else "no change"))

    def queue_pause(self, options: dict[str, Any]) -> None:
        self._queue_action(options, "pause", queues.pause_queue)

    def queue_resume(self, options: dict[str, Any]) -> None:
        self._queue_action(options, "resume", queues.resume_queue)

    # -- jobs ----------------------------------------------------------------
    def jobs_list(self, options: dict[str, Any]) -> None:
        flt = queues.job_filter(options["state"], options["queue"], options["cron"])
        rows = list(Job.objects.filter(flt).order_by("-id")[: max(0, options["limit"])])
        now = db.database_now() if rows else None
        data = [
            {"id": j.id, "kind": j.kind, "queue": j.queue, "state": j.state, "attempt": j.attempt,
             "max_attempts": j.max_attempts, "run_at": _plain(j.run_at), "cron_name": j.cron_name,
             "cron_fire_at": j.metadata.get("cron_fire_at"),
             "triggered_manually": bool(j.cron_name and j.metadata.get("triggered_manually")),
             "duration_seconds": job_duration(j, now), "last_error": last_error(j)}
            for j in rows
        ]
        if not data:
            self.emit(options, data, "No jobs found.")
            return
        header = ("ID", "STATE", "QUEUE", "ATTEMPT", "TASK", "SCHEDULE", "DURATION", "LAST ERROR")
        table = [header]
        for d in data:
            schedule = "-"
            if d["cron_name"]:
                schedule = f"{d['cron_name']} manual" if d["triggered_manually"] or not d["cron_fire_at"] \
                    else f"{d['cron_name']} @ {d['cron_fire_at']}"
            table.append((str(d["id"]), d["state"], d["queue"], f"{d['attempt']}/{d['max_attempts']}", d["kind"],
                          schedule, format_duration(d["duration_seconds"]), d["last_error"] or "-"))
        widths = [max(len(r[i]) for r in table) for i in range(len(header))]
        lines = [printable("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()) for r in table]
        self.emit(options, data, "\n".join(lines))

    def jobs_cancel(self, options: dict[str, Any]) -> None:
        if (options["id"] is None) == (options["cron"] is None):
            raise CommandError("give a job id or --cron NAME (one of them)")
        if options["id"] is not None:
            queues.cancel_job(options["id"], options["actor"])
            self.emit(options, {"action": "cancel", "job": options["id"], "changed": True},
                      f"cancel: job {options['id']} cancelled")
            return
        ids = queues.cancel_cron_jobs(options["cron"], options["actor"])
        self.emit(options, {"action": "cancel", "schedule": options["cron"], "jobs": ids},
                  printable(f"cancel: {len(ids)} job(s) of {options['cron']} cancelled"))

    def jobs_retry(self, options: dict[str, Any]) -> None:
        if not queues.retry_job(options["id"], options["actor"]):
            raise CommandError(f"job {options['id']} does not exist or is not failed/cancelled")
        self.emit(options, {"action": "retry", "job": options["id"], "changed": True},
                  f"retry: job {options['id']} is available again")

    def jobs_prune(self, options: dict[str, Any]) -> None:
        if options["dry_run"]:
            count = queues.prune_jobs(options["older_than"], dry_run=True)
            self.emit(options, {"action": "prune", "dry_run": True, "deleted": 0, "would_delete": count},
                      f"prune: dry run: {count} finished job(s) would be deleted")
            return
        count = queues.prune_jobs(options["older_than"])
        self.emit(options, {"action": "prune", "deleted": count}, f"prune: {count} finished job(s) deleted")
