"""``make demo``: migrate the example project, run ``runcron`` and ``runtasks``,
and print each fire and what its task did.

Runs until Ctrl-C, or for ``--seconds N`` (CI uses a bounded run). Needs
DATABASE_URL; ``make demo`` starts an embedded PostgreSQL when it is unset.
``--admin PORT`` (``make demo DEMO_ADMIN=8000``) also serves the operators'
console at http://127.0.0.1:PORT/admin/ with a demo superuser admin/admin.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


# A stop request: SIGINT (Ctrl-C reaches the terminal's whole foreground group),
# SIGTERM (a supervisor), SIGHUP (the terminal closed).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# The longest wait for runcron, runtasks and the admin server to finish their graceful stop.
STOP_TIMEOUT = 40.0


class Stop:
    """The demo's stop requests. The children run in process groups of their own,
    so a Ctrl-C reaches only this script, which asks each child to stop exactly
    once (their graceful stop); a second Ctrl-C is passed on as their second
    signal (exit now). No signal raises here: no traceback on Ctrl-C."""

    def __init__(self) -> None:
        self.requested = 0
        self.processes: dict[str, subprocess.Popen[bytes]] = {}  # by command name
        self.killed: list[str] = []  # children that outlived STOP_TIMEOUT

    def __call__(self, signum: int, _frame: object) -> None:
        self.requested += 1
        if self.requested > 1:
            self.signal_children(signal.SIGTERM)

    def signal_children(self, signum: int) -> None:
        for proc in self.processes.values():
            if proc.poll() is None:
                proc.send_signal(signum)

    def stop_children(self) -> None:
        """Ask every running child to stop, once, and wait for it (bounded)."""
        self.signal_children(signal.SIGTERM)
        for name, proc in self.processes.items():
            try:
                proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                print(f"demo: {name} did not stop within {STOP_TIMEOUT:.0f} s; killed", file=sys.stderr)
                proc.kill()
                proc.wait()
                self.killed.append(name)


def give_terminal(fd: int, pgrp: int) -> None:
    """Make ``pgrp`` the foreground process group of the terminal ``fd``. SIGTTOU
    is ignored meanwhile: a process outside the foreground group gets it otherwise."""
    previous = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    try:
        os.tcsetpgrp(fd, pgrp)
    finally:
        signal.signal(signal.SIGTTOU, previous)


def suspend_refused(_signum: int, _frame: object) -> None:
    os.write(2, b"demo: Ctrl-Z does not suspend the demo; Ctrl-C stops it\n")


@contextlib.contextmanager
def terminal_foreground() -> Iterator[None]:
    """Run the demo as the terminal's foreground job, alone, as a job-control shell
    runs a job. The terminal sends Ctrl-C to its whole foreground group: without
    this it would reach make and with_db.py as well, and make, interrupted, exits
    130 with "Interrupt" whatever the demo does. In a group of its own in the
    foreground, the demo alone gets it; the previous foreground group gets the
    terminal back when the demo ends, on every path. Nothing changes when stdin is
    not the terminal, or the demo is not in its foreground group (``make demo &``)."""
    fd = 0
    try:
        previous = os.getpgrp()
        if not os.isatty(fd) or os.tcgetpgrp(fd) != previous:
            yield
            return
        os.setpgid(0, 0)
    except OSError:  # stdin closed, or a session leader (it cannot change group)
        yield
        return
    try:
        give_terminal(fd, os.getpgrp())
    except OSError:
        os.setpgid(0, previous)
        yield
        return
    # A stopped demo would hold the terminal with nobody to resume it (the shell
    # waits for make, which is not stopped): Ctrl-Z is refused instead.
    suspend = signal.signal(signal.SIGTSTP, suspend_refused)
    try:
        yield
    finally:
        signal.signal(signal.SIGTSTP, suspend)
        with contextlib.suppress(OSError):  # that group has gone (make was killed)
            give_terminal(fd, previous)


def start(stop: Stop, command: list[str]) -> None:
    """Start ``command`` in a process group of its own (see ``Stop``)."""
    stop.processes[command[2]] = subprocess.Popen(command, cwd=ROOT, process_group=0)


def report_new_jobs(first_id: int, seen: int, ran: set[int]) -> tuple[int, int]:
    """Print this run's fires (jobs after ``seen``) and its completed jobs (after
    ``first_id``, the newest job when the demo started: an earlier run's jobs are
    not this run's). Returns the newest job id seen and the number of new fires."""
    from awa_django.models import Job

    fired = 0
    for job in Job.objects.filter(id__gt=seen).order_by("id"):
        seen = job.id
        fired += 1
        meta = job.metadata
        print(
            f"demo: fired {meta.get('cron_name')} for {meta.get('cron_fire_at')} "
            f"-> job {job.id} ({job.kind}, queue {job.queue})",
            flush=True,
        )
    done = Job.objects.filter(id__gt=first_id, id__lte=seen, state="completed").exclude(id__in=ran)
    for job in done.order_by("id"):
        ran.add(job.id)
        print(f"demo: job {job.id} completed, returned {job.result!r}", flush=True)
    return seen, fired


def main() -> int:
    stop = Stop()  # first: a Ctrl-C from here on is a stop request, never a traceback
    for signum in STOP_SIGNALS:
        signal.signal(signum, stop)
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--seconds", type=float, default=0, help="stop after this long (0 = run until Ctrl-C)"
    )
    parser.add_argument(
        "--admin",
        type=int,
        default=0,
        metavar="PORT",
        help="also serve the Django admin on 127.0.0.1:PORT (0 = no admin)",
    )
    args = parser.parse_args()
    with terminal_foreground():
        return demo(args, stop)


def demo(args: argparse.Namespace, stop: Stop) -> int:
    """Migrate, then run the processes until a stop request (see ``run``)."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "example_project.settings")
    sys.path.insert(0, str(ROOT))
    manage = [sys.executable, str(ROOT / "manage.py")]
    # In a group of its own too: a Ctrl-C while it runs lets it finish, then the demo ends.
    if subprocess.run([*manage, "migrate", "--verbosity", "0"], cwd=ROOT, process_group=0).returncode:
        return 1
    if stop.requested:
        print("demo: stopped after migrate, before starting runcron and runtasks", flush=True)
        return 0

    import django

    django.setup()
    from awa_django.models import Job

    first_id = Job.objects.order_by("-id").values_list("id", flat=True).first() or 0
    try:
        code = run(args, stop, manage, first_id)
    finally:
        stop.stop_children()  # at once when run() stopped them already
    return 1 if stop.killed else code


def run(args: argparse.Namespace, stop: Stop, manage: list[str], first_id: int) -> int:
    """Start the processes, print what they do until a stop request (or the
    deadline), then the run's summary."""
    start(stop, [*manage, "runcron"])
    start(stop, [*manage, "runtasks", "--concurrency", "2"])
    if args.admin:
        from django.contrib.auth.models import User

        if not User.objects.filter(username="admin").exists():
            # A throwaway demo database only: never do this in a real project.
            User.objects.create_superuser("admin", password="admin")
        start(stop, [*manage, "runserver", f"127.0.0.1:{args.admin}", "--noreload"])
        print(
            f"demo: operators' console at http://127.0.0.1:{args.admin}/admin/ (user admin, password admin)",
            flush=True,
        )
    print(
        "demo: runcron and runtasks started; schedules fire, the worker runs them (Ctrl-C to stop)",
        flush=True,
    )
    deadline = time.monotonic() + args.seconds if args.seconds > 0 else None
    seen, fired = first_id, 0
    ran: set[int] = set()
    while not stop.requested and (deadline is None or time.monotonic() < deadline):
        time.sleep(0.5)
        seen, new = report_new_jobs(first_id, seen, ran)
        fired += new
        if any(proc.poll() is not None for proc in stop.processes.values()):
            print("demo: runcron, runtasks or the admin server exited unexpectedly", file=sys.stderr)
            return 1
    print("demo: stopping runcron and runtasks", flush=True)
    stop.stop_children()
    seen, new = report_new_jobs(first_id, seen, ran)
    fired += new
    print(f"demo: {fired} fire(s) seen, {len(ran)} job(s) completed", flush=True)
    # A bounded run (CI) must have shown the whole path working.
    return 0 if deadline is None or (fired and ran) else 1


if __name__ == "__main__":
    sys.exit(main())
