"""``make release-check``: what a registry would get, checked as a user would use it.

Usage: python scripts/check_wheel.py dist/   (DATABASE_URL must be set)

1. The wheel holds the package's SQL files, templates and static files (each
   one in the tree), ``py.typed`` and the LICENSE; its metadata has the license
   expression, project URLs, known classifiers, a bounded Django and no
   development tools.
2. The sdist holds the tests, docs, CHANGELOG and LICENSE.
3. The wheel (not the tree) is installed into a fresh virtualenv, a tiny
   project is generated in a temporary directory, and ``migrate``,
   ``runcron --once``, ``awa cron trigger`` and ``runtasks --burst`` run against
   a fresh database on the server of DATABASE_URL: the triggered job must run.
"""

from __future__ import annotations

import email.parser
import os
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import venv
import zipfile
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "awa_django"
SHIPPED = ("sql/*.sql", "store/sql/**/*.sql", "templates/**/*.html", "static/**/*.css", "py.typed")
# A database of its own on the server, unique to this run.
DATABASE = f"awa_wheel_check_{os.getpid()}"


def fail(message: str) -> None:
    raise SystemExit(f"release-check: {message}")


def one(dist: Path, pattern: str) -> Path:
    found = sorted(dist.glob(pattern))
    if len(found) != 1:
        fail(f"expected one {pattern} in {dist}, found {[p.name for p in found]}")
    return found[0]


def check_wheel_contents(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = email.parser.Parser().parsestr(archive.read(metadata_name).decode())
    expected = {
        f"awa_django/{path.relative_to(PACKAGE).as_posix()}"
        for pattern in SHIPPED
        for path in PACKAGE.glob(pattern)
    }
    if missing := sorted(expected - names):
        fail(f"{wheel.name} lacks {missing}")
    if not any(n.endswith(".dist-info/licenses/LICENSE") for n in names):
        fail(f"{wheel.name} has no LICENSE")
    if any(n.startswith(("tests/", "example_project/", "conformance/")) for n in names):
        fail(f"{wheel.name} ships test or example code")
    check_metadata(metadata)
    print(f"release-check: {wheel.name}: {len(expected)} data files, LICENSE, metadata ok")


def check_metadata(metadata: email.message.Message) -> None:
    from trove_classifiers import classifiers as known

    if metadata.get("License-Expression") != "MIT":
        fail(f"License-Expression is {metadata.get('License-Expression')!r}, not 'MIT'")
    urls = {u.split(",")[0] for u in metadata.get_all("Project-URL") or []}
    if missing_urls := {"Homepage", "Documentation", "Changelog", "Source"} - urls:
        fail(f"Project-URL lacks {sorted(missing_urls)}")
    classifiers = metadata.get_all("Classifier") or []
    if unknown := [c for c in classifiers if c not in known]:
        fail(f"unknown classifiers {unknown}")
    requires = metadata.get_all("Requires-Dist") or []
    django = [r for r in requires if r.lower().startswith("django") and "extra" not in r]
    if not django or "<" not in django[0]:
        fail(f"Django has no upper bound: {django}")
    extras = set(metadata.get_all("Provides-Extra") or [])
    if extras != {"django52", "metrics", "otel"}:
        fail(f"extras are {sorted(extras)}; development tools belong in dependency groups")


def check_sdist_contents(sdist: Path) -> None:
    with tarfile.open(sdist) as archive:
        names = {n.split("/", 1)[1] for n in archive.getnames() if "/" in n}
    wanted = ["LICENSE", "CHANGELOG.md", "README.md", "docs/index.md", "tests/conftest.py", "tests/unit"]
    if missing := [w for w in wanted if w not in names]:
        fail(f"{sdist.name} lacks {missing}")
    if any("__pycache__" in n or n.startswith(".cache/") for n in names):
        fail(f"{sdist.name} holds caches")
    print(f"release-check: {sdist.name}: tests, docs, CHANGELOG, LICENSE present")


PROJECT_FILES = {
    "manage.py": """
        import os, sys
        from django.core.management import execute_from_command_line
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "site_settings")
        execute_from_command_line(sys.argv)
    """,
    "site_settings.py": """
        import os
        from urllib.parse import parse_qs, urlsplit

        from awa_django.client import compat

        url = urlsplit(os.environ["WHEEL_CHECK_DATABASE_URL"])
        SECRET_KEY = "release-check"
        USE_TZ = True
        INSTALLED_APPS = [
            "django.contrib.auth", "django.contrib.contenttypes", "django.contrib.admin",
            "django.contrib.sessions", "django.contrib.messages", *compat.APPS, "awa_django", "shop",
        ]
        DATABASES = {"default": {
            "ENGINE": "django.db.backends.postgresql", "NAME": url.path.lstrip("/"),
            "USER": url.username or "", "PASSWORD": url.password or "",
            # A Unix socket directory comes as ?host=/path (the embedded server).
            "HOST": url.hostname or parse_qs(url.query).get("host", [""])[0], "PORT": url.port or "",
        }}
        TASKS = {"default": {"BACKEND": "awa_django.backend.AwaBackend"}}
        MIDDLEWARE = [
            "django.contrib.sessions.middleware.SessionMiddleware",
            "django.contrib.auth.middleware.AuthenticationMiddleware",
            "django.contrib.messages.middleware.MessageMiddleware",
        ]
        TEMPLATES = [{
            "BACKEND": "django.template.backends.django.DjangoTemplates", "APP_DIRS": True,
            "OPTIONS": {"context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]},
        }]
    """,
    "shop/__init__.py": "",
    "shop/tasks.py": """
        import os
        from pathlib import Path

        from awa_django.client.compat import task

        @task
        def stamp() -> None:
            Path(os.environ["WHEEL_CHECK_STAMP"]).write_text("ran")
    """,
    "shop/cron.py": """
        from awa_django import periodic
        from shop.tasks import stamp

        periodic("wheel-check", "0 3 * * *", stamp)
    """,
}


def database_urls() -> tuple[str, str]:
    """(URL of the ``postgres`` database, URL of the fresh one) on the server of DATABASE_URL."""
    url = os.environ.get("DATABASE_URL") or fail("set DATABASE_URL (or run through scripts/with_db.py)")
    parts = urlsplit(str(url))
    return urlunsplit(parts._replace(path="/postgres")), urlunsplit(parts._replace(path=f"/{DATABASE}"))


def recreate_database(maintenance_url: str, drop_only: bool = False) -> None:
    import psycopg

    with psycopg.connect(maintenance_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
        if not drop_only:
            conn.execute(f"CREATE DATABASE {DATABASE}")


def run(cmd: list[str], cwd: Path, env: dict[str, str]) -> str:
    print("release-check: $", " ".join(cmd[1:] if cmd[0].endswith("python") else cmd), flush=True)
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    if done.returncode:
        fail(f"{cmd} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def check_installed_wheel(wheel: Path) -> None:
    maintenance_url, url = database_urls()
    with tempfile.TemporaryDirectory(prefix="awa-wheel-") as tmp:
        work = Path(tmp)
        venv.EnvBuilder(with_pip=True).create(work / "venv")
        python = str(work / "venv" / "bin" / "python")
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DJANGO_SETTINGS_MODULE")}
        run([python, "-m", "pip", "install", "--quiet", f"{wheel}", "psycopg[binary]"], work, env)
        project = work / "project"
        for name, text in PROJECT_FILES.items():
            (project / name).parent.mkdir(parents=True, exist_ok=True)
            (project / name).write_text(textwrap.dedent(text).lstrip())
        env |= {"WHEEL_CHECK_DATABASE_URL": url, "WHEEL_CHECK_STAMP": str(work / "stamp")}
        located = run([python, "-c", "import awa_django; print(awa_django.__file__)"], project, env)
        if not located.startswith(str(work / "venv")):
            fail(f"awa_django imported from {located.strip()}, not from the installed wheel")
        recreate_database(maintenance_url)
        try:
            manage = [python, "manage.py"]
            run([*manage, "migrate"], project, env)
            run([*manage, "check", "--fail-level", "ERROR"], project, env)
            print(run([*manage, "runcron", "--once"], project, env).strip())
            run([*manage, "awa", "cron", "trigger", "wheel-check"], project, env)
            run([*manage, "runtasks", "--burst"], project, env)
        finally:
            recreate_database(maintenance_url, drop_only=True)
        if not (work / "stamp").exists():
            fail("runtasks --burst did not run the triggered job")
    print("release-check: the installed wheel migrates, fires and runs a job")


def main() -> None:
    dist = Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "dist").resolve()
    check_wheel_contents(one(dist, "*.whl"))
    check_sdist_contents(one(dist, "*.tar.gz"))
    check_installed_wheel(one(dist, "*.whl"))


if __name__ == "__main__":
    main()
