"""A real, throw-away PostgreSQL server for the tests (Debian's postgresql 15 binaries).

    from tests.pgserver import pg_url  # noqa: F401     (the session-scoped fixture)
    from tests.pgserver import fresh_pg_database        (a new empty database on that server)

The server runs on 127.0.0.1 on a free port, in a temporary directory, with trust authentication for
loopback only, and is stopped and deleted at the end of the test session.  PostgreSQL refuses to run as
root, so as root it runs as the ``postgres`` user through ``runuser`` in a directory owned by that user.
The fixture skips (with the reason) only when the server binaries are absent.
"""
from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Iterator

import pytest


def find_bindir() -> Path | None:
    env = os.environ.get("PG_BINDIR")
    cands = [env] if env else []
    cands += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    for c in cands:
        if c and (Path(c) / "initdb").exists() and (Path(c) / "pg_ctl").exists():
            return Path(c)
    which = shutil.which("initdb")
    return Path(which).parent if which and shutil.which("pg_ctl") else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PgServer:
    def __init__(self, bindir: Path, durable: bool = False) -> None:
        self.bindir = bindir
        self.durable = durable  # False (tests): fsync off, faster; True (benchmarks): default durability
        self.as_root = os.geteuid() == 0
        self.tmp = Path(tempfile.mkdtemp(prefix="gpu-doctor-pg-"))
        self.data = self.tmp / "data"
        self.sock = self.tmp / "sock"
        self.log = self.tmp / "server.log"
        self.port = 0
        if self.as_root:
            try:
                pw = pwd.getpwnam("postgres")
            except KeyError:
                raise RuntimeError("running as root, but there is no 'postgres' user to run the server as") from None
            os.chmod(self.tmp, 0o700)
            os.chown(self.tmp, pw.pw_uid, pw.pw_gid)

    def _cmd(self, *args: str) -> list[str]:
        cmd = [str(self.bindir / args[0]), *args[1:]]
        return ["runuser", "-u", "postgres", "--", *cmd] if self.as_root else cmd

    def _run(self, *args: str, timeout: float = 120) -> None:
        r = subprocess.run(self._cmd(*args), capture_output=True, text=True, timeout=timeout, cwd="/")
        if r.returncode != 0:
            log = self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""
            raise RuntimeError(f"{args[0]} failed ({r.returncode}): {r.stdout}\n{r.stderr}\n{log}")

    def start(self) -> None:
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale",
                  "--no-sync")
        if self.as_root:
            subprocess.run(["runuser", "-u", "postgres", "--", "mkdir", "-p", str(self.sock)], check=True)
        else:
            self.sock.mkdir()
        last: Exception | None = None
        for _ in range(5):  # the free port may be taken between probing and binding: retry
            self.port = _free_port()
            opts = (f"-c listen_addresses=127.0.0.1 -p {self.port} -c unix_socket_directories={self.sock} "
                    "-c max_connections=100")
            if not self.durable:
                opts += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
            try:
                self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", opts, "-w", "-t", "60", "start")
                return
            except RuntimeError as e:
                last = e
        raise RuntimeError(f"PostgreSQL did not start: {last}")

    @property
    def admin_url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres",
                             autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{name}"

    def stop(self) -> None:
        try:
            if self.data.exists():
                self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "-t", "60", "stop")
        except Exception:  # noqa: BLE001 - best effort at teardown
            pass
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)


_SERVER: PgServer | None = None


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """URL of an empty database ``gpu_doctor_test`` on a real PostgreSQL server started for this test session."""
    global _SERVER
    bindir = find_bindir()
    if bindir is None:
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) are not installed; "
                    "install Debian's 'postgresql' package or set PG_BINDIR")
    server = PgServer(bindir)
    t0 = time.monotonic()
    try:
        server.start()
    except Exception:
        server.stop()
        raise
    _SERVER = server
    try:
        url = server.create_database("gpu_doctor_test")
        server.start_s = round(time.monotonic() - t0, 2)  # kept off os.environ: probes would report it
        yield url
    finally:
        _SERVER = None
        server.stop()


def fresh_pg_database(pg_url: str) -> str:
    """A new, empty database on the test server (one per test keeps tests independent)."""
    if _SERVER is None:
        raise RuntimeError("the pg_url fixture is not active")
    return _SERVER.create_database("t_" + uuid.uuid4().hex[:16])


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty database of each kind: a SQLite file in tmp_path, and a new database on the test
    PostgreSQL server.  Tests that take it run once per backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'sessions.db'}"
    return fresh_pg_database(request.getfixturevalue("pg_url"))
