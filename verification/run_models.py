#!/usr/bin/env python3
"""Check every SPIN model of verification/ and its broken variants (``make verify``).

Each check generates a verifier with ``spin -a``, compiles it with gcc and runs
``pan``. A correct model must verify with zero errors; a deliberately broken
variant must be refuted (at least one error, with a counterexample trail).
Exits non-zero if any correct model fails or any broken variant passes.

Needs only the Debian packages ``spin`` and ``gcc`` and a Python 3 (stdlib).
``--keep DIR`` keeps the generated verifiers and the counterexample trails
(replay one with ``spin -t -p -D<VARIANT> MODEL.pml`` inside DIR/<check>).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Check:
    model: str
    defines: tuple[str, ...]
    ltl: str | None  # None: safety (assertions, invalid end states)
    expect_ok: bool
    claim: str

    @property
    def slug(self) -> str:
        parts = [self.model.removesuffix(".pml"), *(d.lower() for d in self.defines)]
        if self.ltl:
            parts.append(self.ltl)
        return "-".join(parts)


CHECKS = [
    # (a) the fire protocol
    Check(
        "overlap.pml",
        (),
        None,
        True,
        "overlap skip: no automatic job while one is unfinished; no slot enqueued twice or both "
        "enqueued and skipped (2 leaders, worker, manual trigger)",
    ),
    Check(
        "overlap.pml",
        ("CHECK_OUTSIDE",),
        None,
        False,
        "BROKEN overlap check outside the locked statement (a trigger in between is missed)",
    ),
    Check(
        "fire_protocol.pml",
        (),
        None,
        True,
        "no slot enqueued twice; CAS alone within a row's life; token moves forward; "
        "no enqueue while paused (2 leaders, lost lock, crash between read and fire, "
        "pause/resume, remove/re-create)",
    ),
    Check(
        "fire_protocol.pml",
        ("STABLE",),
        "latest_slot_enqueued",
        True,
        "weak fairness, no crash/pause: the latest due slot is eventually enqueued",
    ),
    Check(
        "fire_protocol.pml",
        ("STABLE",),
        "catch_up_complete",
        True,
        "weak fairness, no crash/pause: catch_up enqueues every slot after the first",
    ),
    Check("fire_protocol.pml", ("NO_CAS",), None, False, "BROKEN fire without the compare-and-swap"),
    Check("fire_protocol.pml", ("NO_PAUSE_GUARD",), None, False, "BROKEN fire without paused_at IS NULL"),
    Check(
        "fire_protocol.pml", ("NO_SLOT_INDEX",), None, False, "BROKEN awa_jobs without the unique slot index"
    ),
    Check(
        "fire_protocol.pml",
        ("STABLE", "PAUSE_STORM"),
        "latest_slot_enqueued",
        False,
        "NOT CLAIMED liveness under a pause/resume storm",
    ),
    # (b) ownership and retirement with an outdated writer
    Check(
        "ownership.pml",
        (),
        None,
        True,
        "retirement durable; a retired name never fires; definitions never flip "
        "between mixed manifests (outdated writer present); only the operator changes "
        "a runtime schedule and nothing retires it",
    ),
    Check(
        "ownership.pml",
        ("CONVERGE",),
        "reminder_retired",
        True,
        "weak fairness, one manifest: the dropped name is eventually retired",
    ),
    Check(
        "ownership.pml",
        ("CONVERGE",),
        "invoice_redefined",
        True,
        "weak fairness, one manifest: the new definition is eventually synced",
    ),
    Check("ownership.pml", ("NO_FENCE",), None, False, "BROKEN awa_cron_jobs without the schedule fence"),
    Check(
        "ownership.pml",
        ("NO_FENCE", "OLD_ONLY_FIRES"),
        None,
        False,
        "BROKEN no fence, outdated writer only fires: a retired name fires",
    ),
    Check(
        "ownership.pml",
        ("NO_FENCE", "OLD_ONLY_DELETES"),
        None,
        False,
        "BROKEN no fence, outdated writer only deletes: a tombstone disappears",
    ),
    Check(
        "ownership.pml", ("NO_GATE",), None, False, "BROKEN publication syncing definitions without agreement"
    ),
    Check(
        "ownership.pml",
        ("SYNC_OVERWRITES_RUNTIME",),
        None,
        False,
        "BROKEN additive sync without its owner guard: code overwrites a runtime schedule",
    ),
    Check(
        "ownership.pml",
        ("RECONCILE_RUNTIME",),
        None,
        False,
        "BROKEN the runtime owner reconciled as an empty manifest: a runtime schedule is retired",
    ),
    # (c) lock order
    Check(
        "lock_order.pml",
        (),
        None,
        True,
        "no deadlock: fires, migrations, publication, operator, pause, trigger",
    ),
    Check(
        "lock_order.pml",
        ("MIGRATION_WRONG_ORDER",),
        None,
        False,
        "BROKEN migration locking awa_jobs before awa_cron_jobs",
    ),
    Check(
        "lock_order.pml",
        ("MIGRATION_NO_PROTOCOL",),
        None,
        False,
        "BROKEN migration altering awa_cron_jobs, then awa_runtime_instances, without the protocol lock",
    ),
    Check(
        "lock_order.pml",
        ("FIRE_UNORDERED",),
        None,
        False,
        "BROKEN fire locking rows in unspecified order (awa_cron_fire_v1)",
    ),
    Check(
        "lock_order.pml",
        ("OPERATOR_ROWS_FIRST",),
        None,
        False,
        "BROKEN operator action locking rows before the protocol lock",
    ),
]


def run(cmd: list[str], cwd: Path) -> str:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0 and cmd[0] in ("spin", "gcc"):
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stdout}{done.stderr}")
    return done.stdout + done.stderr


def verify(check: Check, workdir: Path) -> tuple[int, str, float]:
    """Return (errors, first violation line, seconds)."""
    work = workdir / check.slug
    work.mkdir(parents=True, exist_ok=True)
    shutil.copy(HERE / check.model, work / check.model)
    started = time.monotonic()
    defines = [f"-D{d}" for d in check.defines]
    run(["spin", *defines, "-a", check.model], work)
    cflags = ["-O2", "-w", "-o", "pan", "pan.c"]
    if check.ltl is None:
        cflags = ["-DSAFETY", "-DNOCLAIM", *cflags]
    run(["gcc", *cflags], work)
    pan = ["./pan", "-m1000000"]
    if check.ltl is not None:
        pan += ["-a", "-f", "-N", check.ltl]
    out = run(pan, work)
    match = re.search(r"errors: (\d+)", out)
    if not match:
        raise RuntimeError(f"{check.slug}: cannot read pan's output:\n{out}")
    if "max search depth too small" in out:
        raise RuntimeError(f"{check.slug}: search depth too small, result incomplete")
    violation = next((line.strip() for line in out.splitlines() if line.startswith("pan:1:")), "")
    return int(match.group(1)), violation, time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--keep", type=Path, help="keep verifiers and trails in this directory")
    args = parser.parse_args()
    for tool in ("spin", "gcc"):
        if shutil.which(tool) is None:
            print(f"verify: {tool} is not installed (Debian: apt-get install {tool})", file=sys.stderr)
            return 2
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="awa-verify-"))
    failures = 0
    try:
        # Most of the time is gcc; two at a time keeps a shared machine usable.
        with ThreadPoolExecutor(max_workers=2) as pool:
            results = list(pool.map(lambda c: verify(c, workdir), CHECKS))
        for check, (errors, violation, seconds) in zip(CHECKS, results, strict=True):
            ok = (errors == 0) == check.expect_ok
            failures += not ok
            verdict = ("verified" if errors == 0 else "refuted") + ("" if ok else "  <-- UNEXPECTED")
            what = f"{check.model} {' '.join('-D' + d for d in check.defines)}".strip()
            if check.ltl:
                what += f" [ltl {check.ltl}]"
            print(f"{verdict:<10} {seconds:5.2f}s  {what}\n{'':18}{check.claim}")
            if errors and violation:
                print(f"{'':18}counterexample: {violation[:150]}")
    finally:
        if args.keep is None:
            shutil.rmtree(workdir, ignore_errors=True)
    print(f"\n{len(CHECKS) - failures}/{len(CHECKS)} checks as expected")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
