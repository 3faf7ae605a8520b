"""``make conformance``: Django's own ``tests/tasks`` against AwaBackend on PostgreSQL.

1. ``pip download`` the source distribution of the *installed* Django version
   (nothing of it is stored in this repository) into ``.cache/conformance/``.
2. Unpack its ``tests/`` directory there, fresh on every run.
3. In the unpacked ``tests/tasks/*.py``, and only there, replace the backend
   paths the tests configure: Django's ``DummyBackend`` becomes
   ``conformance.backends.RecordingAwaBackend`` (AwaBackend plus the
   ``results``/``clear()`` helpers the tests inspect) and ``ImmediateBackend``
   becomes ``conformance.backends.ImmediateAwaBackend`` (AwaBackend that runs
   the job through the worker at once). No test code changes.
4. Run them with pytest and ``conformance/settings.py``. Tests listed in
   ``conformance/expected_deviations.txt`` must fail (strict xfail); every
   other test must pass.

Usage: python scripts/conformance.py [PYTEST_ARGS...]   (DATABASE_URL must be set)
"""

from __future__ import annotations

import os
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


def sdist(version: str) -> Path:
    """The Django sdist for ``version``, downloaded once into the cache."""
    CACHE.mkdir(parents=True, exist_ok=True)
    found = sorted(CACHE.glob(f"[dD]jango-{version}.tar.gz"))
    if found:
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
            f"django=={version}",
            "-d",
            str(CACHE),
        ],
        check=True,
    )
    found = sorted(CACHE.glob(f"[dD]jango-{version}.tar.gz"))
    if not found:
        raise SystemExit(f"conformance: pip did not produce django-{version}.tar.gz in {CACHE}")
    return found[0]


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


def map_backends(tests_dir: Path) -> None:
    """Point the backend paths the tests configure at AwaBackend."""
    for path in sorted((tests_dir / "tasks").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        for old, new in BACKENDS.items():
            text = text.replace(f'"{old}"', f'"{new}"')
        path.write_text(text, encoding="utf-8")


def main() -> int:
    if not os.environ.get("DATABASE_URL"):
        raise SystemExit("conformance: set DATABASE_URL (or run through scripts/with_db.py)")
    version = django.get_version()
    tests_dir = unpack_tests(sdist(version), version)
    map_backends(tests_dir)
    env = dict(os.environ)
    # Django's tests/ (for the "tasks" package) and this repository (awa_django, conformance).
    env["PYTHONPATH"] = os.pathsep.join([str(tests_dir), str(ROOT), env.get("PYTHONPATH", "")])
    print(f"conformance: Django {version} tests/tasks against AwaBackend", flush=True)
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
