"""A real PostgreSQL server for the tests of the shared store (memcli.remote): no mocks.

:class:`PgServer` makes a private cluster in a temporary directory (``initdb``), starts it on
127.0.0.1 at a free port with ``fsync=off`` (the tests kill clients, never the server), and
stops and deletes it afterwards. The server is Debian's ``postgresql`` package (any version;
``/usr/lib/postgresql/*/bin`` or ``initdb`` on PATH, or ``$MEMCLI_TEST_PG_BIN``): installed by
``.ci/run`` on CI. Run as root, the server runs as the ``postgres`` OS user (``runuser``), as
PostgreSQL refuses root.

The vector tests need a server with the pgvector extension, which Debian bookworm does not
package: they use the PostgreSQL 16 + pgvector build of the ``pgserver`` wheel (PyPI, a ``[test]``
dependency; only its ``pginstall`` binaries are used, the package is never imported), started the
same way (:func:`pgvector_bindir`). As root its files must be usable by the ``postgres`` user; where
they are not (a virtualenv under a private home), the binaries are copied into the server's
temporary directory first.

Where no server can be found or started, the tests skip naming what is missing; under CI
(``CI=true``) they fail instead: CI must run them all.

Fixtures: ``pg_server`` (session) and ``pg_url`` (a fresh, empty database per test) on Debian's
server, without pgvector; ``pgvector_server`` and ``pgvector_url`` on pgserver's, with it.
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


def pgvector_bindir() -> str:
    """The ``bin`` directory of the PostgreSQL build in the ``pgserver`` wheel (with pgvector)."""
    import importlib.util

    spec = importlib.util.find_spec("pgserver")
    if spec is None or not spec.submodule_search_locations:
        raise PgUnavailable("the pgserver package (PostgreSQL with pgvector) is not installed: pip install -e '.[test]'")
    bindir = os.path.join(list(spec.submodule_search_locations)[0], "pginstall", "bin")
    if not os.path.exists(os.path.join(bindir, "initdb")):
        raise PgUnavailable(f"no initdb in {bindir}")
    return bindir


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PgServer:
    def __init__(self, bindir: str | None = None):
        self.bindir = bindir or _bindir()
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
            if subprocess.run([*self.as_user, "test", "-x", os.path.join(self.bindir, "initdb")]).returncode:
                self.bindir = self._copy_for_postgres()
        self._databases = itertools.count(1)

    def _copy_for_postgres(self) -> str:
        """The binaries copied where the ``postgres`` user can run them, with the layout their
        run path expects (pgserver's: ``$ORIGIN/../../../pgserver.libs``)."""
        install = os.path.dirname(self.bindir)                    # .../pgserver/pginstall
        package = os.path.dirname(install)                        # .../pgserver
        copy = os.path.join(self.root, "site", os.path.basename(package), os.path.basename(install))
        shutil.copytree(install, copy, symlinks=True)
        libs = package + ".libs"                                  # the wheel's bundled libpq
        if os.path.isdir(libs):
            shutil.copytree(libs, os.path.join(self.root, "site", os.path.basename(libs)), symlinks=True)
        subprocess.run(["chmod", "-R", "a+rX", os.path.join(self.root, "site")], check=True)
        return os.path.join(copy, os.path.basename(self.bindir))

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


def start_or_skip(bindir=_bindir) -> PgServer:
    try:
        return PgServer(bindir()).start()
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


@pytest.fixture(scope="session")
def pgvector_server():
    server = start_or_skip(pgvector_bindir)
    yield server
    server.stop()


@pytest.fixture
def pgvector_url(pgvector_server) -> str:
    return pgvector_server.new_database()
