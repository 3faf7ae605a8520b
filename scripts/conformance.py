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

With ``DJANGO_TASKS_SOURCE`` set to a git repository of the backport
(github.com/RealOrangeOne/django-tasks; not reachable from CI, so it is given,
never fetched), the run on the backport is instead the backport's *own*
test-suite: ``tests/`` at the tag of the installed release (``git archive``),
its backend paths mapped the same way, run with
``conformance/settings_backport.py`` against
``conformance/expected_deviations_backport.txt``.

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
    "django_tasks.backends.dummy.DummyBackend": "conformance.backends.RecordingAwaBackend",
    "django_tasks.backends.immediate.ImmediateBackend": "conformance.backends.ImmediateAwaBackend",
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


def backport_suite(source: Path) -> tuple[Path, str]:
    """The backport's own ``tests/`` at the tag of the installed release,
    unpacked fresh from the git repository ``source``; (directory, version)."""
    from importlib.metadata import version as installed

    release = installed("django-tasks")
    target = CACHE / f"django-tasks-{release}-tests"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "--git-dir", str(git_dir(source)), "archive", "--format=tar", release, "tests"],
        check=True,
        capture_output=True,
    ).stdout
    archive_path = target / "tests.tar"
    archive_path.write_bytes(archive)
    with tarfile.open(archive_path) as tar:
        tar.extractall(target, filter="data")
    archive_path.unlink()
    return target, release


def git_dir(source: Path) -> Path:
    """The git directory of ``source``: a bare repository or a checkout's ``.git``."""
    return source / ".git" if (source / ".git").exists() else source


def map_backends(tests_dir: Path, backport: bool, package: str = "tasks") -> None:
    """Point the backend paths the tests in ``tests_dir/package`` configure at
    AwaBackend (and, for Django's tests on the backport, the framework's names
    at ``django_tasks``)."""
    for path in sorted((tests_dir / package).rglob("*.py")):
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
    from awa_django.client import compat

    return compat.FRAMEWORK


def main() -> int:
    if not os.environ.get("DATABASE_URL"):
        raise SystemExit("conformance: set DATABASE_URL (or run through scripts/with_db.py)")
    backport = framework() == "django_tasks"
    source = os.environ.get("DJANGO_TASKS_SOURCE")
    if backport and source:
        return run_backport_suite(Path(source))
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
    print(f"conformance: {label} against AwaBackend", flush=True)
    deviations = "expected_deviations_django52.txt" if backport else "expected_deviations.txt"
    return run_pytest(tests_dir, tests_dir / "tasks", deviations)


def run_pytest(rootdir: Path, target: Path, deviations: str, *options: str) -> int:
    """pytest on ``target`` with the conformance plugin, ``rootdir``'s packages
    importable first, then this repository's (awa_django, conformance)."""
    env = dict(os.environ)
    env["AWA_CONFORMANCE_DEVIATIONS"] = deviations
    env["PYTHONPATH"] = os.pathsep.join([str(rootdir), str(ROOT), env.get("PYTHONPATH", "")])
    return subprocess.call(
        [
            sys.executable,
            "-m",
            "pytest",
            "-c",
            str(ROOT / "conformance" / "pytest.ini"),
            "--rootdir",
            str(rootdir),
            "-p",
            "no:cacheprovider",
            *options,
            str(target),
            *sys.argv[1:],
        ],
        cwd=rootdir,
        env=env,
    )


def run_backport_suite(source: Path) -> int:
    """The backport's own test-suite against AwaBackend (Django 5.2)."""
    suite, release = backport_suite(source)
    map_backends(suite, backport=False, package="tests")
    print(
        f"conformance: the django-tasks {release} test-suite (from {source}) "
        f"against AwaBackend on Django {django.get_version()}",
        flush=True,
    )
    return run_pytest(
        suite,
        suite / "tests" / "tests",
        "expected_deviations_backport.txt",
        "--ds",
        "conformance.settings_backport",
        # Not this checkout's manage.py directory first on sys.path: its
        # "tests" package would shadow the suite's (placed first).
        "-o",
        "django_find_project=false",
    )


if __name__ == "__main__":
    sys.exit(main())
