"""Connecting to the shared store: the URL, the connection, and the one-line error.

The URL is a libpq connection string (``postgresql://user@host:5432/db`` or ``host=... dbname=...``),
from ``--to``/``--from``/``--remote`` or else ``$MEMCLI_REMOTE``. The password comes from where
libpq takes it (the URL, ``$PGPASSWORD``, ``~/.pgpass``, a service file) and is never printed:
messages name the server as ``host:port/dbname`` (:func:`describe`), and any text from libpq is
scrubbed of the password before it is shown.

A server that cannot be reached or refuses us is one :class:`~memcli.errors.RemoteError` line:
``cannot connect to PostgreSQL at HOST:PORT/DB: <libpq's reason>`` (exit 1).
"""

from __future__ import annotations

import os
import re

from memcli.errors import RemoteError, UsageError

ENV = "MEMCLI_REMOTE"
CONNECT_TIMEOUT = 10


def resolve_url(url: str | None, option: str = "to") -> str:
    """``url``, else ``$MEMCLI_REMOTE``; a usage error (naming the parameter ``option``) when
    neither is set."""
    value = (url or "").strip() or os.environ.get(ENV, "").strip()
    if not value:
        raise UsageError(f": give the PostgreSQL URL (postgresql://user@host:port/db) or set ${ENV}", param=option)
    return value


def _info(url: str) -> dict:
    from psycopg.conninfo import conninfo_to_dict

    try:
        return conninfo_to_dict(url)
    except Exception:  # psycopg's message quotes the string, which may hold a password
        raise UsageError("the remote URL is not a PostgreSQL connection URL (postgresql://user@host:port/db) "
                         "or key=value string") from None


def describe(url: str) -> str:
    """``host:port/dbname`` of a URL (libpq's defaults filled in), without user or password."""
    info = _info(url)
    host = info.get("host") or info.get("hostaddr") or os.environ.get("PGHOST") or "localhost"
    port = info.get("port") or os.environ.get("PGPORT") or "5432"
    db = info.get("dbname") or os.environ.get("PGDATABASE") or info.get("user") or os.environ.get("PGUSER") or ""
    return f"{host}:{port}" + (f"/{db}" if db else "")


def scrub(text: str, url: str) -> str:
    """libpq's text on one line, without the URL's password."""
    text = " ".join(str(text).split())
    password = _info(url).get("password") or os.environ.get("PGPASSWORD")
    if password:
        text = text.replace(password, "***")
    return re.sub(r"(postgres(?:ql)?://[^:/@\s]*:)[^@\s]*@", r"\1***@", text)


def connect(url: str):
    """An open psycopg connection (autocommit off), or RemoteError naming the server."""
    import psycopg

    where = describe(url)
    try:
        return psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT, application_name="memcli")
    except psycopg.Error as exc:
        reason = scrub(exc, url)
        reason = re.sub(r"^connection failed: ", "", reason)
        raise RemoteError(f"cannot connect to PostgreSQL at {where}: {reason}") from None


def is_lost(exc: BaseException) -> bool:
    """Whether ``exc`` is a lost connection (retry from the last commit), not a refusal."""
    import psycopg

    return isinstance(exc, psycopg.OperationalError) and not isinstance(exc, psycopg.errors.QueryCanceled)


def failed(exc: BaseException, url: str, doing: str) -> RemoteError:
    """A database error during ``doing`` as one line naming the server."""
    return RemoteError(f"PostgreSQL at {describe(url)}: {doing} failed: {scrub(exc, url)}")
