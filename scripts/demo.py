"""``make demo``: migrate the example project, run ``runcron`` and ``runtasks``,
and print each fire and what its task did.

Runs until Ctrl-C, or for ``--seconds N`` (CI uses a bounded run). Needs
DATABASE_URL; ``make demo`` starts an embedded PostgreSQL when it is unset.
``--admin PORT`` (``make demo DEMO_ADMIN=8000``) also serves the operators'
console at http://127.0.0.1:PORT/admin/ with a demo superuser admin/admin.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
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

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "example_project.settings")
    sys.path.insert(0, str(ROOT))
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "--verbosity", "0"], check=True, cwd=ROOT)

    import django

    django.setup()
    from awa_django.models import Job

    seen = Job.objects.order_by("-id").values_list("id", flat=True).first() or 0
    runcron = subprocess.Popen([*manage, "runcron"], cwd=ROOT)
    runtasks = subprocess.Popen([*manage, "runtasks", "--concurrency", "2"], cwd=ROOT)
    processes = [runcron, runtasks]
    if args.admin:
        from django.contrib.auth.models import User

        if not User.objects.filter(username="admin").exists():
            # A throwaway demo database only: never do this in a real project.
            User.objects.create_superuser("admin", password="admin")
        processes.append(
            subprocess.Popen([*manage, "runserver", f"127.0.0.1:{args.admin}", "--noreload"], cwd=ROOT)
        )
        print(
            f"demo: operators' console at http://127.0.0.1:{args.admin}/admin/ (user admin, password admin)",
            flush=True,
        )
    print(
        "demo: runcron and runtasks started; schedules fire, the worker runs them (Ctrl-C to stop)",
        flush=True,
    )
    deadline = time.monotonic() + args.seconds if args.seconds > 0 else None
    fired = 0
    ran: set[int] = set()
    try:
        while deadline is None or time.monotonic() < deadline:
            time.sleep(0.5)
            for job in Job.objects.filter(id__gt=seen).order_by("id"):
                seen = job.id
                fired += 1
                meta = job.metadata
                print(
                    f"demo: fired {meta.get('cron_name')} for {meta.get('cron_fire_at')} "
                    f"-> job {job.id} ({job.kind}, queue {job.queue})",
                    flush=True,
                )
            for job in Job.objects.filter(state="completed").exclude(id__in=ran).order_by("id"):
                ran.add(job.id)
                print(f"demo: job {job.id} completed, returned {job.result!r}", flush=True)
            if any(proc.poll() is not None for proc in processes):
                print("demo: runcron, runtasks or the admin server exited unexpectedly", file=sys.stderr)
                return 1
    except KeyboardInterrupt:
        pass
    finally:
        for proc in processes:
            proc.send_signal(signal.SIGTERM)
        for proc in processes:
            proc.wait(timeout=40)
    print(f"demo: {fired} fire(s) seen, {len(ran)} job(s) completed", flush=True)
    # A bounded run (CI) must have shown the whole path working.
    return 0 if deadline is None or (fired and ran) else 1


if __name__ == "__main__":
    sys.exit(main())
