"""``manage.py awa cron adopt|retire|restore|retire-owner|restore-owner|plan|owners``:
owner-scoped reconciliation. The lifecycle verbs are dry runs unless ``--apply``;
``plan`` and ``owners`` only read."""

from __future__ import annotations

import json
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from ..db import jsonb
from ..db.jsonb import Undecodable
from ..declarations.runtime import RUNTIME_OWNER
from ..operations import owners
from ..reconciliation import persistence
from ..terminal import printable
from ..validation import validate_label
from .arguments import add_actor, owner_name, schedule_name
from .output import Handler, emit

__all__ = ["HANDLERS", "MAX_MANIFEST_FILE_BYTES", "add_verbs", "read_manifest_file"]

# The most a ``cron plan --manifest FILE`` reads: far above any real
# deployment's manifest, and a device or endless pipe ends with an error.
MAX_MANIFEST_FILE_BYTES = 16 * 1024 * 1024


def add_verbs(verbs: Any) -> None:
    """Owner-scoped reconciliation: lifecycle verbs are dry runs unless --apply."""

    def lifecycle(name: str, help_text: str, *positionals: str) -> Any:
        sub = verbs.add_parser(name, help=help_text + " Dry run unless --apply.")
        for positional in positionals:
            sub.add_argument(positional, type=schedule_name if positional == "name" else owner_name)
        sub.add_argument("--apply", action="store_true", help="perform the action (default: dry run)")
        add_actor(sub)
        sub.add_argument("--json", action="store_true", help="machine-readable output")
        return sub

    adopt = lifecycle("adopt", "Give a schedule to an owner.", "name", "owner")
    adopt.add_argument(
        "--expected-owner",
        type=owner_name,
        default=None,
        help="the current owner you expect (default: unowned)",
    )
    lifecycle("retire", "Retire a schedule (durable tombstone; never fires).", "name")
    lifecycle("restore", "Restore a retired schedule from now on (no replay).", "name")
    lifecycle("retire-owner", "Retire every schedule of an owner.", "owner")
    lifecycle("restore-owner", "Restore every retired schedule of an owner.", "owner")
    plan = verbs.add_parser("plan", help="Explain what reconciliation of an owner would do (read-only).")
    plan.add_argument("owner", type=owner_name)
    plan.add_argument(
        "--manifest",
        metavar="FILE",
        help="preview this JSON list of schedule definitions instead of the published one "
        f"(at most {MAX_MANIFEST_FILE_BYTES // (1024 * 1024)} MiB)",
    )
    plan.add_argument("--json", action="store_true", help="machine-readable output")
    listing = verbs.add_parser("owners", help="List owners with their live plan summary.")
    listing.add_argument("--json", action="store_true", help="machine-readable output")


def read_manifest_file(path: str) -> Any:
    """The JSON in the manifest file ``path``, read up to :data:`MAX_MANIFEST_FILE_BYTES`.

    Raises ValueError naming the file: unreadable, too large (a device such as
    ``/dev/urandom`` included: it is never read to its end), not UTF-8, or
    nested deeper than a manifest may be (checked before decoding).
    """
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_MANIFEST_FILE_BYTES + 1)
    except OSError as exc:
        raise ValueError(f"cannot read manifest {path}: {exc}") from exc
    if len(data) > MAX_MANIFEST_FILE_BYTES:
        raise ValueError(
            f"cannot read manifest {path}: larger than {MAX_MANIFEST_FILE_BYTES} bytes, "
            "the most `cron plan --manifest` reads"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"cannot read manifest {path}: not UTF-8 text: {exc}") from None
    value = jsonb.decode(text, "file", wraps=jsonb.MANIFEST_WRAPS, size_limit=sys.maxsize)
    if isinstance(value, Undecodable):
        raise ValueError(f"cannot read manifest {path}: the file {value.reason}")
    return value


def lifecycle_result(command: BaseCommand, options: dict[str, Any], result: Any) -> None:
    """Report a lifecycle verb's result: applied or a dry run, and its schedules."""
    verb = "applied" if result.applied else "dry run (use --apply)"
    names = ", ".join(result.schedules) or "nothing"
    emit(command, options, result.as_json(), printable(f"{result.action}: {verb}: {names}"))


def cron_adopt(command: BaseCommand, options: dict[str, Any]) -> None:
    lifecycle_result(
        command,
        options,
        owners.adopt(
            options["name"],
            options["owner"],
            actor=options["actor"],
            apply=options["apply"],
            expected_owner=options["expected_owner"],
        ),
    )


def cron_retire(command: BaseCommand, options: dict[str, Any]) -> None:
    lifecycle_result(
        command, options, owners.retire(options["name"], actor=options["actor"], apply=options["apply"])
    )


def cron_restore(command: BaseCommand, options: dict[str, Any]) -> None:
    lifecycle_result(
        command, options, owners.restore(options["name"], actor=options["actor"], apply=options["apply"])
    )


def cron_retire_owner(command: BaseCommand, options: dict[str, Any]) -> None:
    lifecycle_result(
        command,
        options,
        owners.retire_owner(options["owner"], actor=options["actor"], apply=options["apply"]),
    )


def cron_restore_owner(command: BaseCommand, options: dict[str, Any]) -> None:
    lifecycle_result(
        command,
        options,
        owners.restore_owner(options["owner"], actor=options["actor"], apply=options["apply"]),
    )


def runtime_owner(names: list[str]) -> tuple[dict[str, Any], str]:
    """The runtime owner's entry in ``plan`` and ``owners``: never reconciled."""
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


def cron_plan(command: BaseCommand, options: dict[str, Any]) -> None:
    if options["owner"] == RUNTIME_OWNER and not options["manifest"]:
        emit(command, options, *runtime_owner(persistence.runtime_schedule_names()))
        return
    if options["manifest"]:
        try:
            definitions = read_manifest_file(options["manifest"])
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
    emit(command, options, data, "\n".join(printable(line) for line in lines))


def cron_owners(command: BaseCommand, options: dict[str, Any]) -> None:
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
        entry, line = runtime_owner(runtime)
        data.append(entry)
        lines.append(line)
    emit(command, options, data, "\n".join(lines) or "No owners.")


HANDLERS: dict[tuple[str, str], Handler] = {
    ("cron", "adopt"): cron_adopt,
    ("cron", "retire"): cron_retire,
    ("cron", "restore"): cron_restore,
    ("cron", "retire-owner"): cron_retire_owner,
    ("cron", "restore-owner"): cron_restore_owner,
    ("cron", "plan"): cron_plan,
    ("cron", "owners"): cron_owners,
}
