"""The shared store's tables (schema version :data:`SCHEMA_VERSION`) and the version check.

    memcli_meta       key, value                  'schema_version' = the version that made the tables
    memcli_agents     agent_key, store_id, name   one row per (pushing store, agent name): the same
                                                  name pushed from two stores is two agents
    memcli_records    one row per record of an agent's data file:
        agent_key, stream, id                     the key (primary key): ``stream`` is ``trace`` for
                                                  raw_traces.jsonl and raw_traces_archive.jsonl (a
                                                  trace is in one of them), else the file's stem
        file, pos                                 the data file it is in on the pusher and its byte
                                                  offset there: ``pull`` writes the rows back in this
                                                  order; rows written by ``mcp --remote`` have
                                                  ``pos`` >= :data:`REMOTE_POS` (after every pushed one)
        kind, tier, ts, turn_id, trace_type, tool_name   what search and the MCP tools show
        line                                      the JSONL line, byte for byte (without its \\n)
        tsv                                       to_tsvector('english', the record's text), GIN-indexed
    memcli_positions  agent_key, file, pos, head, tail
                                                  how far each file was pushed (committed with the rows
                                                  of each batch) and a fingerprint of its bytes, to see
                                                  when the file was rewritten (compaction) since

:func:`ensure` creates the tables (under an advisory lock, so concurrent first pushes agree) and
refuses a database whose schema version is newer than this memcli's; :func:`check` is the read-only
check of pull and search.
"""

from __future__ import annotations

from memcli.errors import RemoteError

SCHEMA_VERSION = 1
REMOTE_POS = 1 << 60
TS_CONFIG = "english"
_LOCK = 0x6D656D636C69  # "memcli": the advisory lock taken while creating the tables

DDL = f"""
CREATE TABLE IF NOT EXISTS memcli_meta (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE IF NOT EXISTS memcli_agents (
    agent_key bigserial PRIMARY KEY,
    store_id text NOT NULL,
    name text NOT NULL,
    pushed_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (store_id, name)
);
CREATE TABLE IF NOT EXISTS memcli_records (
    agent_key bigint NOT NULL REFERENCES memcli_agents ON DELETE CASCADE,
    stream text NOT NULL,
    id text NOT NULL,
    file text NOT NULL,
    pos bigint NOT NULL,
    kind text NOT NULL,
    tier text NOT NULL,
    ts double precision,
    turn_id text,
    trace_type text,
    tool_name text,
    line text NOT NULL,
    tsv tsvector,
    PRIMARY KEY (agent_key, stream, id)
);
CREATE INDEX IF NOT EXISTS memcli_records_tsv ON memcli_records USING gin (tsv);
CREATE INDEX IF NOT EXISTS memcli_records_order ON memcli_records (agent_key, file, pos);
CREATE TABLE IF NOT EXISTS memcli_positions (
    agent_key bigint NOT NULL REFERENCES memcli_agents ON DELETE CASCADE,
    file text NOT NULL,
    pos bigint NOT NULL,
    head text NOT NULL,
    tail text NOT NULL,
    PRIMARY KEY (agent_key, file)
);
INSERT INTO memcli_meta VALUES ('schema_version', '{SCHEMA_VERSION}') ON CONFLICT (key) DO NOTHING;
"""


def _version(conn) -> int | None:
    row = conn.execute("SELECT to_regclass('memcli_meta') IS NOT NULL").fetchone()
    if not row[0]:
        return None
    row = conn.execute("SELECT value FROM memcli_meta WHERE key = 'schema_version'").fetchone()
    return int(row[0]) if row else None


def _refuse_newer(version: int, where: str) -> None:
    if version > SCHEMA_VERSION:
        raise RemoteError(f"the shared store at {where} has memcli schema version {version}, newer than this "
                          f"memcli's ({SCHEMA_VERSION}): upgrade memcli to use it")


def ensure(conn, where: str) -> None:
    """Create the tables if missing (one transaction); refuse a newer schema."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK,))
        version = _version(conn)
        if version is not None:
            _refuse_newer(version, where)
            return
        conn.execute(DDL)


def check(conn, where: str) -> None:
    """For readers: the tables exist and are not from a newer memcli."""
    version = _version(conn)
    conn.rollback()
    if version is None:
        raise RemoteError(f"no memcli store at {where}: nothing was pushed there yet (`memcli push AGENT --to URL`)")
    _refuse_newer(version, where)


def find_agent(conn, ref: str, where: str) -> tuple[int, str, str]:
    """(agent_key, store_id, name) of ``NAME`` or ``STORE/NAME``; a name pushed from several
    stores must be given with its store (the error lists them)."""
    from memcli.errors import AgentNotFoundError, UsageError

    store, _, name = ref.rpartition("/")
    if store:
        rows = conn.execute("SELECT agent_key, store_id, name FROM memcli_agents WHERE store_id = %s AND name = %s",
                            (store, name)).fetchall()
    else:
        rows = conn.execute("SELECT agent_key, store_id, name FROM memcli_agents WHERE name = %s ORDER BY store_id",
                            (name,)).fetchall()
    conn.rollback()
    if not rows:
        raise AgentNotFoundError(f"no agent {ref!r} in the shared store at {where}")
    if len(rows) > 1:
        listed = ", ".join(f"{r[1]}/{r[2]}" for r in rows)
        raise UsageError(f"agent {name!r} was pushed from {len(rows)} stores ({listed}): name one as STORE/NAME")
    return rows[0]
