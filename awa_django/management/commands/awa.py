"""``manage.py awa ...``: operate schedules from the shell.

A thin parser (:mod:`awa_django.cli`) over :mod:`awa_django.actions.schedules`,
:mod:`~awa_django.actions.owners` and :mod:`~awa_django.actions.queues` (the same functions
the admin uses). ``--json`` prints machine-readable output; errors go to stderr with a
non-zero exit status.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError

from awa_django.cli import (
    default_actor,
    format_duration,
    job_duration,
    last_error,
    plain,
    positive_seconds,
    schedule_dict,
)
from awa_django.exceptions import InvalidSchedule, OperationRefused, ScheduleNotFound
from awa_django.models import Job
from awa_django.terminal import printable

from ... import __version__, cli, health
from ...actions import celery_beat, declarations, history, owners, queues, runtime_schedules, schedules
from ...db import sessions, timestamps
from ...reconciliation import persistence
from ...schedules.runtime import RUNTIME_OWNER
from ...schedules.validation import validate_label
from ...tasks.limits import limit_label

# The command's helpers live in awa_django.cli; this module names them too.
__all__ = [
    "Command",
    "default_actor",
    "format_duration",
    "job_duration",
    "last_error",
    "positive_seconds",
    "printable",
    "schedule_dict",
]

# import-celery-beat's progress on stderr: a line every so many rows or seconds.
PROGRESS_ROWS = 10_000
PROGRESS_SECONDS = 5.0


def mismatch_notes(rows: list[Any], found: list[declarations.Mismatch]) -> list[str]:
    """Lines under ``cron list`` for rows that differ from this code's declarations."""
    notes = []
    for row, mismatch in zip(rows, found, strict=True):
        if mismatch.undeclared:
            notes.append(
                printable(
                    f"{row.name}: no longer declared in this code; it keeps firing until you run "
                    f"`{declarations.undeclared_remedy(row)}`"
                )
            )
        if mismatch.owned_elsewhere is not None:
            notes.append(
                printable(f"{row.name}: {declarations.owned_elsewhere_remedy(mismatch.owned_elsewhere)}")
            )
    return notes


class Unhealthy(CommandError):
    """``awa health`` found a failed check (exit status 1)."""


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
        cli.add_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        handler = getattr(self, f"{options['group']}_{options['verb']}".replace("-", "_"))
        try:
            handler(options)
        except (ScheduleNotFound, OperationRefused, ValueError) as exc:
            # Messages quote owners and names from the database: escaped.
            raise CommandError(printable(exc)) from exc
        except DatabaseError as exc:
            raise CommandError(printable(cli.database_error(exc))) from exc

    def health_probe(self, options: dict[str, Any]) -> None:
        if (options["local"] or options["pid"] is not None) and not options["role"]:
            raise CommandError("--local and --pid need --role cron or --role tasks", returncode=2)
        report = health.probe(options["role"], local_only=options["local"], pid=options["pid"])
        self.emit(options, report.as_json(), health.render(report))
        if not report.healthy:
            failed = ", ".join(c.name for c in report.checks if not c.ok)
            raise Unhealthy(f"unhealthy: {failed}")

    def emit(self, options: dict[str, Any], data: Any, text: str) -> None:
        if options["json"]:
            self.stdout.write(json.dumps(data, indent=2, sort_keys=True))
        else:
            self.stdout.write(text)

    # -- verbs ---------------------------------------------------------------
    def cron_list(self, options: dict[str, Any]) -> None:
        rows = schedules.list_schedules()
        names = declarations.declared_names()
        data = [schedule_dict(r) for r in rows]
        mismatches = [declarations.mismatch(r, names) for r in rows]
        for item, found in zip(data, mismatches, strict=True):
            item["no_longer_declared"] = found.undeclared
            item["declared_here_owned_by"] = found.owned_elsewhere
        if not rows:
            self.emit(options, data, "No cron schedules found.")
            return
        header = (
            "NAME",
            "CRON",
            "DESCRIPTION",
            "TIMEZONE",
            "POLICY",
            "QUEUE",
            "OWNER",
            "STATE",
            "LAST FIRE",
            "NEXT FIRE",
        )
        table: list[tuple[str, ...]] = [header]
        for row, item in zip(rows, data, strict=True):
            upcoming = schedules.upcoming_fires(row, 1)
            table.append(
                tuple(
                    printable(cell)
                    for cell in (
                        row.name,
                        row.timing_text,
                        item["description"],
                        row.timezone,
                        row.missed_fire_policy,
                        row.queue,
                        row.owner_id or "-",
                        item["state"] + (" (no longer declared)" if item["no_longer_declared"] else ""),
                        item["last_enqueued_at"] or "never",
                        upcoming[0].isoformat() if upcoming else "-",
                    )
                )
            )
        widths = [max(len(str(r[i])) for r in table) for i in range(len(header))]
        lines = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in table]
        lines.extend(mismatch_notes(rows, mismatches))
        lines.append(f"{len(rows)} schedule(s).")
        self.emit(options, data, "\n".join(lines))

    def cron_show(self, options: dict[str, Any]) -> None:
        row = schedules.get_schedule(options["name"])
        data = schedule_dict(row, upcoming=options["next"])
        data["slots_skipped"] = history.skip_counts(row.name)
        lines = [
            f"{k}: {json.dumps(v) if isinstance(v, (dict, list)) else printable(v)}" for k, v in data.items()
        ]
        self.emit(options, data, "\n".join(lines))

    def cron_history(self, options: dict[str, Any]) -> None:
        row = schedules.get_schedule(options["name"])
        outcomes = history.slot_history(row.name, options["limit"])
        data = [o.as_json() for o in outcomes]
        lines = [
            "  ".join(
                (
                    o.slot.isoformat(),
                    o.outcome.ljust(15),
                    f"job {o.job_id}" if o.job_id is not None else "",
                    f"(job {o.blocked_by} unfinished)" if o.blocked_by is not None else "",
                )
            ).rstrip()
            for o in outcomes
        ]
        counts = history.skip_counts(row.name)
        lines.append(
            printable(f"{row.name}: {len(outcomes)} slot(s) shown; never enqueued: ")
            + f"{counts.get('overlap', 0)} for overlap, {counts.get('unique', 0)} for a held unique key, "
            + f"{counts.get('deadline', 0)} past the deadline."
        )
        self.emit(options, data, "\n".join(lines))

    def _action(self, options: dict[str, Any], func: Any) -> None:
        result = func(options["name"], options["actor"])
        data = {
            "action": result.action,
            "schedule": result.name,
            "changed": result.changed,
            "detail": result.detail,
        }
        text = printable(f"{result.action}: {result.name}: ") + (
            "done" if result.changed else printable(f"no change ({result.detail})")
        )
        self.emit(options, data, text)

    def cron_pause(self, options: dict[str, Any]) -> None:
        self._action(options, schedules.pause)

    def cron_resume(self, options: dict[str, Any]) -> None:
        self._action(options, schedules.resume)

    def cron_remove(self, options: dict[str, Any]) -> None:
        self._action(options, schedules.remove)

    def cron_trigger(self, options: dict[str, Any]) -> None:
        job = schedules.trigger(options["name"], options["actor"])
        data = {k: plain(v) for k, v in job.items()}
        self.emit(
            options,
            data,
            printable(f"trigger: {options['name']}: enqueued job {job['id']} on queue {job['queue']}"),
        )

    # -- runtime schedules ---------------------------------------------------
    def _runtime(self, options: dict[str, Any], action: str, call: Any) -> None:
        try:
            detail = call()
        except InvalidSchedule as exc:
            raise CommandError(printable(exc)) from exc
        data = {
            "action": action,
            "schedule": options["name"],
            "changed": bool(detail),
            "detail": detail or "",
        }
        text = printable(f"{action}: {options['name']}: ") + (
            printable(f"done ({detail})") if detail else "no change"
        )
        self.emit(options, data, text)

    def cron_create(self, options: dict[str, Any]) -> None:
        given = cli.runtime_options(options)
        cron, task = given.pop("cron", None), given.pop("task")

        def create() -> str:
            runtime_schedules.create_schedule(options["name"], cron, task, actor=options["actor"], **given)
            return f"runtime schedule, owner {RUNTIME_OWNER}"

        self._runtime(options, "create", create)

    def cron_edit(self, options: dict[str, Any]) -> None:
        given = cli.runtime_options(options)

        def edit() -> str:
            result = runtime_schedules.update_schedule(options["name"], actor=options["actor"], **given)
            return f"changed {result.detail}" if result.changed else ""

        self._runtime(options, "edit", edit)

    def cron_delete(self, options: dict[str, Any]) -> None:
        def delete() -> str:
            runtime_schedules.delete_schedule(options["name"], actor=options["actor"])
            return "deleted"

        self._runtime(options, "delete", delete)

    # -- from django-celery-beat ---------------------------------------------
    def import_celery_beat_run(self, options: dict[str, Any]) -> None:
        report = celery_beat.import_celery_beat(
            actor=options["actor"],
            task_map=celery_beat.parse_task_map(options["task_map"]),
            dry_run=options["dry_run"],
            batch_size=options["batch_size"],
            progress=self._import_progress() if options["verbosity"] >= 1 else None,
        )
        self.emit(options, report.as_json(), "\n".join(printable(line) for line in report.render()))
        if report.stopped:
            raise CommandError(printable(f"import stopped: {report.stopped}"))

    def _import_progress(self) -> Any:
        """A progress line on stderr (never stdout, which holds the report or its JSON):
        every PROGRESS_ROWS rows or PROGRESS_SECONDS, and at the end."""
        last = {"read": 0, "at": time.monotonic()}

        def show(progress: celery_beat.ImportProgress) -> None:
            done = progress.read >= progress.total
            rows_due = progress.read - last["read"] >= PROGRESS_ROWS
            if done or rows_due or time.monotonic() - last["at"] >= PROGRESS_SECONDS:
                self.stderr.write(printable(progress.line()))
                last.update(read=progress.read, at=time.monotonic())

        return show

    # -- ownership -----------------------------------------------------------
    def _lifecycle(self, options: dict[str, Any], result: Any) -> None:
        verb = "applied" if result.applied else "dry run (use --apply)"
        names = ", ".join(result.schedules) or "nothing"
        self.emit(options, result.as_json(), printable(f"{result.action}: {verb}: {names}"))

    def cron_adopt(self, options: dict[str, Any]) -> None:
        self._lifecycle(
            options,
            owners.adopt(
                options["name"],
                options["owner"],
                actor=options["actor"],
                apply=options["apply"],
                expected_owner=options["expected_owner"],
            ),
        )

    def cron_retire(self, options: dict[str, Any]) -> None:
        self._lifecycle(
            options, owners.retire(options["name"], actor=options["actor"], apply=options["apply"])
        )

    def cron_restore(self, options: dict[str, Any]) -> None:
        self._lifecycle(
            options, owners.restore(options["name"], actor=options["actor"], apply=options["apply"])
        )

    def cron_retire_owner(self, options: dict[str, Any]) -> None:
        self._lifecycle(
            options, owners.retire_owner(options["owner"], actor=options["actor"], apply=options["apply"])
        )

    def cron_restore_owner(self, options: dict[str, Any]) -> None:
        self._lifecycle(
            options, owners.restore_owner(options["owner"], actor=options["actor"], apply=options["apply"])
        )

    def _runtime_owner(self, names: list[str]) -> tuple[dict[str, Any], str]:
        data = {
            "owner_id": RUNTIME_OWNER,
            "runtime": True,
            "schedules": names,
            "blockers": [],
            "retirements": [],
        }
        text = f"owner {RUNTIME_OWNER}: runtime schedules (created by operators), never reconciled: " + (
            ", ".join(names) or "none"
        )
        return data, printable(text)

    def cron_plan(self, options: dict[str, Any]) -> None:
        if options["owner"] == RUNTIME_OWNER and not options["manifest"]:
            self.emit(options, *self._runtime_owner(persistence.runtime_schedule_names()))
            return
        if options["manifest"]:
            try:
                definitions = cli.read_manifest_file(options["manifest"])
            except ValueError as exc:
                raise CommandError(printable(exc)) from exc
            if not isinstance(definitions, list):
                raise CommandError("a manifest file holds a JSON list of schedule definitions")
            for index, entry in enumerate(definitions):
                if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                    raise CommandError(
                        f"manifest entry #{index + 1} is not an object with a string 'name': "
                        f"{printable(json.dumps(entry)[:80])}"
                    )
            try:
                result = persistence.preview(options["owner"], definitions)
            except (TypeError, KeyError, AttributeError, RecursionError) as exc:
                raise CommandError(
                    f"malformed manifest {options['manifest']}: {type(exc).__name__}: {exc}"
                ) from exc
        else:
            result = persistence.plan(validate_label(options["owner"], "owner"))
        data = result.as_json()
        status = ", ".join(result.blockers) or (
            "converged; the leader retires the listed schedules at its next pass"
            if result.retirements
            else "converged"
        )
        lines = [f"owner {result.owner_id}: {status}"]
        for key in ("additions", "updates", "retirements", "conflicts", "blocking_instances"):
            if data[key]:
                lines.append(f"  {key}: " + ", ".join(data[key]))
        for decl in data["declarations"]:
            lines.append(
                f"  declaration {decl['instance_id']} revision {decl['revision']} "
                f"hash {decl['desired_hash'][:12]} expires {decl['expires_at']}"
            )
        if result.grace_remaining_ms:
            lines.append(f"  grace remaining: {result.grace_remaining_ms / 1000:.1f}s")
        self.emit(options, data, "\n".join(printable(line) for line in lines))

    def cron_owners(self, options: dict[str, Any]) -> None:
        data: list[dict[str, Any]] = []
        lines = []
        for owner in persistence.owners():
            if owner == RUNTIME_OWNER:
                continue
            try:
                p = persistence.plan(owner)
            except persistence.UnreadableManifest as exc:
                # One owner's unreadable manifest: named in its line, the others listed.
                data.append({"owner_id": owner, "error": str(exc)})
                lines.append(printable(f"{owner}: error: {exc}"))
                continue
            data.append(p.as_json())
            lines.append(
                printable(
                    f"{p.owner_id}: "
                    + (", ".join(p.blockers) or "converged")
                    + (f"; would retire {', '.join(p.retirements)}" if p.retirements else "")
                )
            )
        runtime = persistence.runtime_schedule_names()
        if runtime or RUNTIME_OWNER in persistence.owners():
            entry, line = self._runtime_owner(runtime)
            data.append(entry)
            lines.append(line)
        self.emit(options, data, "\n".join(lines) or "No owners.")

    # -- queues --------------------------------------------------------------
    def queue_list(self, options: dict[str, Any]) -> None:
        statuses = queues.list_queues()
        data = [
            {
                "queue": q.queue,
                "paused_at": plain(q.paused_at),
                "paused_by": q.paused_by,
                "counts": q.counts,
                "limits": q.limits,
            }
            for q in statuses
        ]
        if not statuses:
            self.emit(options, data, "No queues found.")
            return
        lines = []
        for q in statuses:
            state = f"paused by {q.paused_by}" if q.paused_at else "active"
            counts = ", ".join(f"{k}={v}" for k, v in sorted(q.counts.items())) or "no jobs"
            limits = f"; limits {limit_label(q.limits)}" if q.limits else ""
            lines.append(printable(f"{q.queue}: {state}; {counts}{limits}"))
        self.emit(options, data, "\n".join(lines))

    def _queue_action(self, options: dict[str, Any], action: str, func: Any) -> None:
        changed = func(options["name"], options["actor"]).changed
        data = {"action": action, "queue": options["name"], "changed": changed}
        self.emit(
            options,
            data,
            printable(f"{action}: queue {options['name']}: ") + ("done" if changed else "no change"),
        )

    def queue_pause(self, options: dict[str, Any]) -> None:
        self._queue_action(options, "pause", queues.pause_queue)

    def queue_resume(self, options: dict[str, Any]) -> None:
        self._queue_action(options, "resume", queues.resume_queue)

    # -- jobs ----------------------------------------------------------------
    def jobs_list(self, options: dict[str, Any]) -> None:
        flt = queues.job_filter(options["state"], options["queue"], options["cron"])
        # A row holding 'infinity' (raw SQL, or stored before the check of
        # migration 0024) is listed, flagged, instead of failing the listing.
        safe = timestamps.with_safe_timestamps(Job.objects.filter(flt))
        rows = list(safe.order_by("-id")[: max(0, options["limit"])])
        now = sessions.database_now() if rows else None
        data = [
            {
                "id": j.id,
                "kind": j.kind,
                "queue": j.queue,
                "state": j.state,
                "attempt": j.attempt,
                "max_attempts": j.max_attempts,
                "run_at": plain(j.run_at) if j.run_at is not None else getattr(j, "run_at_text", None),
                "invalid_timestamps": timestamps.invalid(j),
                "cron_name": j.cron_name,
                # metadata may be any JSON value, or undecodable (db.jsonb), in a raw row.
                "cron_fire_at": (j.metadata if isinstance(j.metadata, dict) else {}).get("cron_fire_at"),
                "triggered_manually": bool(j.cron_name and j.metadata.get("triggered_manually")),
                "duration_seconds": job_duration(j, now),
                "last_error": last_error(j),
            }
            for j in rows
        ]
        if not data:
            self.emit(options, data, "No jobs found.")
            return
        header = ("ID", "STATE", "QUEUE", "ATTEMPT", "TASK", "SCHEDULE", "DURATION", "LAST ERROR")
        table: list[tuple[str, ...]] = [header]
        for d in data:
            schedule = "-"
            if d["cron_name"]:
                schedule = (
                    f"{d['cron_name']} manual"
                    if d["triggered_manually"] or not d["cron_fire_at"]
                    else f"{d['cron_name']} @ {d['cron_fire_at']}"
                )
            # Escaped cell by cell, before the widths are measured, so a
            # value shown as \x1b keeps its column aligned.
            cells = (
                str(d["id"]),
                d["state"]
                + (f" (invalid timestamp: {d['invalid_timestamps']})" if d["invalid_timestamps"] else ""),
                d["queue"],
                f"{d['attempt']}/{d['max_attempts']}",
                d["kind"],
                schedule,
                format_duration(d["duration_seconds"]),
                d["last_error"] or "-",
            )
            table.append(tuple(printable(cell) for cell in cells))
        widths = [max(len(r[i]) for r in table) for i in range(len(header))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in table]
        self.emit(options, data, "\n".join(lines))

    def jobs_cancel(self, options: dict[str, Any]) -> None:
        if (options["id"] is None) == (options["cron"] is None):
            raise CommandError("give a job id or --cron NAME (one of them)", returncode=2)
        if options["id"] is not None:
            queues.cancel_job(options["id"], options["actor"])
            self.emit(
                options,
                {"action": "cancel", "job": options["id"], "changed": True},
                f"cancel: job {options['id']} cancelled",
            )
            return
        ids = queues.cancel_cron_jobs(options["cron"], options["actor"])
        self.emit(
            options,
            {"action": "cancel", "schedule": options["cron"], "jobs": ids},
            printable(f"cancel: {len(ids)} job(s) of {options['cron']} cancelled"),
        )

    def jobs_retry(self, options: dict[str, Any]) -> None:
        if not queues.retry_job(options["id"], options["actor"]):
            raise CommandError(f"job {options['id']} does not exist or is not failed/cancelled")
        self.emit(
            options,
            {"action": "retry", "job": options["id"], "changed": True},
            f"retry: job {options['id']} is available again",
        )

    def jobs_prune(self, options: dict[str, Any]) -> None:
        if options["dry_run"]:
            count = queues.prune_jobs(options["older_than"], dry_run=True)
            self.emit(
                options,
                {"action": "prune", "dry_run": True, "deleted": 0, "would_delete": count},
                f"prune: dry run: {count} finished job(s) would be deleted",
            )
            return
        count = queues.prune_jobs(options["older_than"])
        self.emit(options, {"action": "prune", "deleted": count}, f"prune: {count} finished job(s) deleted")
