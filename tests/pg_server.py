"""A real PostgreSQL server for the tests of the shared store (memcli.remote): no mocks.

:class:`PgServer` makes a private cluster in a temporary directory (``initdb``), starts it on
127.0.0.1 at a free port with ``fsync=off`` (the tests kill clients, never the server), and
stops and deletes it afterwards. The server is Debian's ``postgresql`` package (any version;
``/usr/lib/postgresql/*/bin`` or ``initdb`` on PATH, or ``$MEMCLI_TEST_PG_BIN``): installed by
``.ci/run`` on CI. Run as root, the server runs as the ``postgres`` OS user (``runuser``), as
PostgreSQL refuses root.

Where no server can be found or started, the tests skip naming what is missing; under CI
(``CI=true``) they fail instead: CI must run them all.

Fixtures: ``pg_server`` (session) and ``pg_url`` (a fresh, empty database per test).
"""

from __future__ import annotations

import glob
import itertools
import os
import shutil
import socket
import subprocess
import tempfile

import pytest


class PgUnavailable(Exception):
    pass


def _bindir() -> str:
    given = os.environ.get("MEMCLI_TEST_PG_BIN")
    if given:
        if not os.path.exists(os.path.join(given, "initdb")):
            raise PgUnavailable(f"no initdb in $MEMCLI_TEST_PG_BIN ({given})")
        return given
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if found:
        return os.path.dirname(found[-1])
    initdb = shutil.which("initdb")
    if initdb:
        return os.path.dirname(initdb)
    raise PgUnavailable("PostgreSQL is not installed (no initdb: apt-get install postgresql)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PgServer:
    def __init__(self):
        self.bindir = _bindir()
        self.root = tempfile.mkdtemp(prefix="memcli-pg-")
        self.data = os.path.join(self.root, "data")
        self.port = _free_port()
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            import pwd

            try:
                pwd.getpwnam("postgres")
            except KeyError:
                raise PgUnavailable("running as root and there is no 'postgres' OS user to run the server") from None
            shutil.chown(self.root, "postgres")
            self.as_user = ["runuser", "-u", "postgres", "--"]
        self._databases = itertools.count(1)

    def _run(self, *args: str) -> None:
        done = subprocess.run([*self.as_user, *args], capture_output=True, text=True, timeout=120)
        if done.returncode:
            raise PgUnavailable(f"{os.path.basename(args[0])} failed: {(done.stderr or done.stdout).strip()[-500:]}")

    def start(self) -> "PgServer":
        self._run(os.path.join(self.bindir, "initdb"), "-D", self.data, "-A", "trust", "-U", "memcli",
                  "-E", "UTF8", "--locale=C.UTF-8", "--no-sync")
        self._run(os.path.join(self.bindir, "pg_ctl"), "-D", self.data, "-l", os.path.join(self.root, "log"),
                  "-w", "-t", "60", "-o",
                  f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
                  "-c synchronous_commit=off -c full_page_writes=off -c max_connections=100", "start")
        return self

    def stop(self) -> None:
        try:
            self._run(os.path.join(self.bindir, "pg_ctl"), "-D", self.data, "-m", "immediate", "-w", "stop")
        except PgUnavailable:
            pass
        shutil.rmtree(self.root, ignore_errors=True)

    def url(self, db: str = "postgres") -> str:
        return f"postgresql://memcli@127.0.0.1:{self.port}/{db}"

    def new_database(self) -> str:
        import psycopg

        name = f"t{next(self._databases)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)


def start_or_skip() -> PgServer:
    try:
        return PgServer().start()
    except PgUnavailable as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"PostgreSQL tests cannot run under CI: {exc}", pytrace=False)
        pytest.skip(f"PostgreSQL tests skipped: {exc}")


@pytest.fixture(scope="session")
def pg_server():
    server = start_or_skip()
    yield server
    server.stop()


@pytest.fixture
def pg_url(pg_server) -> str:
    return pg_server.new_database()
