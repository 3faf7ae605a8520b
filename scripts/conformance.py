"""``make conformance``: Django's own ``tests/tasks`` against AwaBackend on PostgreSQL.

1. ``pip download`` the source distribution of the *installed* Django version
   (nothing of it is stored in this repository) into ``.cache/conformance/``.
   On Django 5.2 with the ``django-tasks`` backport, the newest Django 6.0
   release instead: the backport publishes no tests in its distributions (only
   package registries are reachable here), and it tracks ``django.tasks`` of
   6.0, so 6.0's ``tests/tasks`` are rewritten to import ``django_tasks`` (and
   its ``...Error`` exception names) and run against the backport.
2. Unpack its ``tests/`` directory there, fresh on every run.
3. In the unpacked ``tests/tasks/*.py``, and only there, replace the backend
   paths the tests configure: Django's ``DummyBackend`` becomes
   ``conformance.backends.RecordingAwaBackend`` (AwaBackend plus the
   ``results``/``clear()`` helpers the tests inspect) and ``ImmediateBackend``
   becomes ``conformance.backends.ImmediateAwaBackend`` (AwaBackend that runs
   the job through the worker at once). No test code changes.
4. Run them with pytest and ``conformance/settings.py``. Tests listed in
   ``conformance/expected_deviations.txt`` must fail (strict xfail); every
   other test must pass. On the backport the list is
   ``conformance/expected_deviations_django52.txt``.

Usage: python scripts/conformance.py [PYTEST_ARGS...]   (DATABASE_URL must be set)
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import django

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache" / "conformance"
BACKENDS = {
    "django.tasks.backends.dummy.DummyBackend": "conformance.backends.RecordingAwaBackend",
    "django.tasks.backends.immediate.ImmediateBackend": "conformance.backends.ImmediateAwaBackend",
}
# The Django release whose tests/tasks run against the backport, and the renames
# that point them at it (whole words, applied in this order).
BACKPORT_TESTS_FROM = "6.0"
BACKPORT_NAMES = [
    (r"\bInvalidTaskBackend\b", "InvalidTaskBackendError"),
    (r"\bInvalidTask\b", "InvalidTaskError"),
    (r"\bdjango\.tasks\b", "django_tasks"),
]


def sdist(version: str, requirement: str | None = None) -> Path:
    """The Django sdist for ``version`` (or the newest matching ``requirement``,
    downloaded each run then), kept in the cache."""
    CACHE.mkdir(parents=True, exist_ok=True)
    found = sorted(CACHE.glob(f"[dD]jango-{version}.tar.gz"))
    if found and requirement is None:
        return found[0]
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-binary",
            ":all:",
            "--no-deps",
            requirement or f"django=={version}",
            "-d",
            str(CACHE),
        ],
        check=True,
    )
    found = sorted(CACHE.glob(f"[dD]jango-{version}.tar.gz"), key=lambda p: release_of(p.name))
    if not found:
        raise SystemExit(f"conformance: pip did not produce django-{version}.tar.gz in {CACHE}")
    return found[-1]


def release_of(name: str) -> tuple[int, ...]:
    """``(6, 0, 3)`` of ``django-6.0.3.tar.gz``."""
    digits = name.split("-", 1)[1].removesuffix(".tar.gz").split(".")
    return tuple(int(d) if d.isdigit() else -1 for d in digits)


def unpack_tests(archive: Path, version: str) -> Path:
    """Unpack ``tests/`` of the sdist into a fresh directory; return it."""
    target = CACHE / f"django-{version}-tests"
    shutil.rmtree(target, ignore_errors=True)
    with tarfile.open(archive) as tar:
        prefix = tar.getnames()[0].split("/")[0] + "/tests/"
        members = [m for m in tar.getmembers() if m.name.startswith(prefix + "tasks/")]
        for member in members:
            member.name = member.name[len(prefix) :]
        tar.extractall(target, members=members, filter="data")
    return target


def map_backends(tests_dir: Path, backport: bool) -> None:
    """Point the backend paths the tests configure at AwaBackend (and, on the
    backport, the framework's names at ``django_tasks``)."""
    for path in sorted((tests_dir / "tasks").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        for old, new in BACKENDS.items():
            text = text.replace(f'"{old}"', f'"{new}"')
        if backport:
            for pattern, name in BACKPORT_NAMES:
                text = re.sub(pattern, name, text)
        path.write_text(text, encoding="utf-8")


def framework() -> str:
    """``django.tasks`` or ``django_tasks``: what awa_django runs on here."""
    sys.path.insert(0, str(ROOT))
    from awa_django.tasks import compat

    return compat.FRAMEWORK


def main() -> int:
    if not os.environ.get("DATABASE_URL"):
        raise SystemExit("conformance: set DATABASE_URL (or run through scripts/with_db.py)")
    backport = framework() == "django_tasks"
    if backport:
        archive = sdist(
            f"{BACKPORT_TESTS_FROM}.*", f"django>={BACKPORT_TESTS_FROM},<{BACKPORT_TESTS_FROM}.999"
        )
        version = archive.name.split("-", 1)[1].removesuffix(".tar.gz")
        label = f"Django {version} tests/tasks on the django-tasks backport (Django {django.get_version()})"
    else:
        version = django.get_version()
        archive = sdist(version)
        label = f"Django {version} tests/tasks"
    tests_dir = unpack_tests(archive, version)
    map_backends(tests_dir, backport)
    env = dict(os.environ)
    env["AWA_CONFORMANCE_DEVIATIONS"] = (
        "expected_deviations_django52.txt" if backport else "expected_deviations.txt"
    )
    # Django's tests/ (for the "tasks" package) and this repository (awa_django, conformance).
    env["PYTHONPATH"] = os.pathsep.join([str(tests_dir), str(ROOT), env.get("PYTHONPATH", "")])
    print(f"conformance: {label} against AwaBackend", flush=True)
    return subprocess.call(
        [
            sys.executable,
            "-m",
            "pytest",
            "-c",
            str(ROOT / "conformance" / "pytest.ini"),
            "--rootdir",
            str(tests_dir),
            "-p",
            "no:cacheprovider",
            str(tests_dir / "tasks"),
            *sys.argv[1:],
        ],
        cwd=tests_dir,
        env=env,
    )


if __name__ == "__main__":
    sys.exit(main())
