"""A private PostgreSQL server from a directory of server binaries.

One way to start every server the test-suite runs on: the embedded default of
``make test`` (scripts/with_db.py) and each version of ``make test-matrix``
(scripts/test_matrix.py). The server listens on a Unix socket (the URL a
newcomer's ``make test`` uses) and on a free TCP port on 127.0.0.1 (for the
tests that put PgBouncer or a TCP proxy in front of it). Authentication is
``trust`` for the ``postgres`` role on both.

PostgreSQL refuses to run as root: as root the server runs as the ``postgres``
system user (created if missing), and the directories on the way to the
binaries and the data are made traversable for it.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import socket
import stat
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

SERVER_USER = "postgres"
# sockaddr_un holds 107 bytes; ".s.PGSQL.NNNNN" needs 15 of them.
MAX_SOCKET_DIR = 90


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _server_user() -> pwd.struct_passwd | None:
    """The system user the server runs as (None: the current user)."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(SERVER_USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", SERVER_USER], check=True)
        return pwd.getpwnam(SERVER_USER)


def _traversable(path: Path) -> None:
    """Let every user reach ``path`` (its parents get o+rx)."""
    for parent in [path, *path.parents]:
        mode = parent.stat().st_mode
        wanted = mode | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH
        if mode != wanted:
            parent.chmod(wanted)


def binaries_version(bindir: Path) -> int:
    """The major version of the server binaries in ``bindir``."""
    out = subprocess.run(
        [str(bindir / "postgres"), "--version"],
        check=True,
        capture_output=True,
        text=True,
        process_group=0,  # as LocalServer._run: a Ctrl-C is the caller's to handle
    ).stdout
    return int(out.split()[-1].split(".")[0])


class LocalServer:
    """One PostgreSQL server with its data in ``data_dir``."""

    def __init__(self, bindir: Path, data_dir: Path, *, port: int | None = None) -> None:
        self.bindir = bindir
        self.data_dir = data_dir
        self.port = port or free_port()
        self.user = _server_user()
        self.socket_dir = data_dir
        if len(str(data_dir)) > MAX_SOCKET_DIR:
            self.socket_dir = Path(tempfile.mkdtemp(prefix="awa-pg-"))
        self.log = data_dir.parent / f"{data_dir.name}.log"

    # -- commands -----------------------------------------------------------------
    def _run(self, tool: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        options: dict[str, Any] = {}
        if self.user is not None:
            options = {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": [], "cwd": "/"}
        # In a process group of its own: a Ctrl-C at the terminal reaches the caller,
        # which decides, and never cuts a command in half (pg_ctl killed while the
        # postmaster, detached, goes on starting: a server nobody stops).
        return subprocess.run(
            [str(self.bindir / tool), *args],
            check=True,
            timeout=timeout,
            capture_output=True,
            text=True,
            process_group=0,
            **options,
        )

    def _own(self, path: Path) -> None:
        if self.user is not None:
            os.chown(path, self.user.pw_uid, self.user.pw_gid)

    def initialised(self) -> bool:
        return (self.data_dir / "PG_VERSION").exists()

    def init(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if self.user is not None:
            _traversable(self.bindir.parent)
            _traversable(self.data_dir.parent)
            self.data_dir.chmod(0o700)
        self._own(self.data_dir)
        self._run(
            "initdb",
            "-D",
            str(self.data_dir),
            "-U",
            SERVER_USER,
            "--auth=trust",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-instructions",
        )
        with (self.data_dir / "postgresql.conf").open("a") as conf:
            # A throwaway test server: durability is not wanted, speed is.
            conf.write(
                "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\nmax_connections = 200\n"
            )

    def start(self) -> None:
        if self.user is not None:
            if self.socket_dir != self.data_dir:
                _traversable(self.socket_dir)
                self._own(self.socket_dir)
            if not self.log.exists():
                self.log.touch()
            self._own(self.log)
        options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.socket_dir}"
        try:
            self._run(
                "pg_ctl",
                "-D",
                str(self.data_dir),
                "-l",
                str(self.log),
                "-o",
                options,
                "-w",
                "-t",
                "60",
                "start",
            )
        except subprocess.CalledProcessError as exc:
            log = self.log.read_text(errors="replace") if self.log.exists() else ""
            raise RuntimeError(f"PostgreSQL in {self.data_dir} did not start:\n{exc.stderr}\n{log}") from exc

    def stop(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError, subprocess.TimeoutExpired):
            self._run("pg_ctl", "-D", str(self.data_dir), "-m", "fast", "-w", "-t", "60", "stop")

    def running(self) -> bool:
        try:
            self._run("pg_ctl", "-D", str(self.data_dir), "status")
        except subprocess.CalledProcessError:
            return False
        return True

    def psql(self, sql: str, dbname: str = "postgres") -> str:
        return self._run(
            "psql", "-X", "-A", "-t", "-h", str(self.socket_dir), "-p", str(self.port),
            "-U", SERVER_USER, "-d", dbname, "-c", sql,
        ).stdout  # fmt: skip

    def ensure_database(self, name: str) -> None:
        if self.psql(f"SELECT 1 FROM pg_database WHERE datname = '{name}'").strip() != "1":
            self.psql(f'CREATE DATABASE "{name}"')

    # -- addresses ----------------------------------------------------------------
    def socket_url(self, dbname: str) -> str:
        return f"postgres://{SERVER_USER}@:{self.port}/{dbname}?host={self.socket_dir}"

    def tcp_url(self, dbname: str) -> str:
        return f"postgres://{SERVER_USER}@127.0.0.1:{self.port}/{dbname}"

    @property
    def tcp_address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.psql("SELECT 1")
                return
            except subprocess.CalledProcessError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
