"""Embeddings in the shared store: ``push`` sends an agent's vectors, ``search --remote`` ranks with
them (pgvector; memcli.remote, docs/remote.md "Vectors").

The vectors are the ones hybrid search computed locally (:mod:`memcli.search.embed`: one per
record, unit length, for the model and dimensions recorded in the agent's search index). They
go to one table, made only on a server that has the ``vector`` extension (pgvector)::

    memcli_vectors    agent_key, stream, id    the record's key in memcli_records (a foreign key,
                                               ON DELETE CASCADE: a record a re-push deletes takes
                                               its vector with it)
                      model, dim               the embedding model (LiteLLM name) and dimensions
                      hash                     the content hash of the embedded text (model + text,
                                               :func:`memcli.search.embed.content_hash`)
                      embedding                vector (no fixed dimension: stores of different
                                               models share the table; a search compares only
                                               vectors of its own model and dimension)

``embedding`` is stored ``MAIN`` (in the row, uncompressed when it does not compress, as random
floats do not): out of line (PostgreSQL's default past 2 KB, 512 dimensions) an exact ranking of
100,000 vectors of 768 dimensions took 0.50 s instead of 0.13 s. No index on ``embedding``: a
search ranks every vector of its agent(s) and model exactly (:func:`nearest`; as local hybrid
search does, by brute force); docs/scale.md says when an HNSW index is the next step.

Push (:func:`push_agent`, called by :func:`memcli.remote.push.push` after an agent's records):
the local index names each embedded record by file and byte offset, which is where the records
just pushed are in ``memcli_records`` (``file``, ``pos``). A vector whose record already has one
there with the same content hash is skipped without reading anything else, so a re-push sends
nothing. Each other vector's record is read back from the local file and its text hashed: only
a vector that is the embedding of that record's current text is sent (an index that lags the
files sends less, never a wrong vector). Vectors go by binary COPY, in batches of
:data:`BATCH`, each one transaction, upserted by key.

On a server without pgvector (or where this user may not create the extension) nothing fails:
the records are pushed, and the reason vectors were not is one note of the push (stderr).
The table is an optional addition: the schema version is unchanged, and an older memcli that
pushes or pulls never reads it.
"""

from __future__ import annotations

import struct

BATCH = 2_000
EXTENSION = "vector"
_LOCK = 0x6D656D766563  # "memvec": the advisory lock taken while creating the extension and table

DDL = """
CREATE TABLE IF NOT EXISTS memcli_vectors (
    agent_key bigint NOT NULL,
    stream text NOT NULL,
    id text NOT NULL,
    model text NOT NULL,
    dim integer NOT NULL,
    hash bytea NOT NULL,
    embedding vector NOT NULL,
    PRIMARY KEY (agent_key, stream, id),
    FOREIGN KEY (agent_key, stream, id) REFERENCES memcli_records ON DELETE CASCADE
);
ALTER TABLE memcli_vectors ALTER COLUMN embedding SET STORAGE MAIN
"""

_STAGE = """CREATE TEMP TABLE IF NOT EXISTS memcli_vstage (stream text, id text, hash bytea, embedding vector)
            ON COMMIT DELETE ROWS"""

_UPSERT = """
INSERT INTO memcli_vectors AS v (agent_key, stream, id, model, dim, hash, embedding)
SELECT r.agent_key, s.stream, s.id, %(model)s, %(dim)s, s.hash, s.embedding
FROM memcli_vstage s JOIN memcli_records r ON r.agent_key = %(key)s AND r.stream = s.stream AND r.id = s.id
ON CONFLICT (agent_key, stream, id) DO UPDATE SET model = EXCLUDED.model, dim = EXCLUDED.dim,
    hash = EXCLUDED.hash, embedding = EXCLUDED.embedding
WHERE (v.model, v.dim, v.hash) IS DISTINCT FROM (EXCLUDED.model, EXCLUDED.dim, EXCLUDED.hash)
"""

_COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack("!ii", 0, 0)


def has_table(conn) -> bool:
    """Whether the store has vectors at all (a reader's question: never creates anything)."""
    return bool(conn.execute("SELECT to_regclass('memcli_vectors') IS NOT NULL").fetchone()[0])


def ensure(conn) -> str | None:
    """Make the extension (when the server has it) and the table; None when ready, else why not."""
    import psycopg

    if has_table(conn):
        conn.commit()
        return None
    row = conn.execute("SELECT default_version, installed_version FROM pg_available_extensions WHERE name = %s",
                       (EXTENSION,)).fetchone()
    conn.commit()
    if row is None:
        return "the server has no pgvector extension ('vector')"
    try:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK,))
            if row[1] is None:
                conn.execute(f"CREATE EXTENSION IF NOT EXISTS {EXTENSION}")
            conn.execute(DDL)
    except psycopg.errors.InsufficientPrivilege as exc:
        reason = str(exc).strip().splitlines()[0]
        return f"this user may not create the pgvector extension ({reason}): ask a superuser to run " \
               "CREATE EXTENSION vector in this database"
    except psycopg.Error as exc:
        from memcli.remote.connect import is_lost

        if is_lost(exc):
            raise                       # the push retries it on a new connection
        return f"the pgvector extension could not be used ({str(exc).strip().splitlines()[0]})"
    return None


def _copy_row(stream: str, rid: str, digest: bytes, vec) -> bytes:
    """One row of binary COPY: stream, id (text), hash (bytea), embedding (pgvector's binary
    form: int16 dimensions, int16 0, big-endian float4s)."""
    out = [struct.pack("!h", 4)]
    for value in (stream.encode(), rid.encode(), digest):
        out += [struct.pack("!i", len(value)), value]
    body = struct.pack("!hh", len(vec), 0) + vec.astype(">f4").tobytes()
    out += [struct.pack("!i", len(body)), body]
    return b"".join(out)


def push_agent(conn, memory_dir, agent: str, key: int, notes: list[str]) -> int:
    """Send the agent's new or changed vectors (module docstring); returns how many the store added
    or changed. A reason not
    to (no pgvector) is added to ``notes`` once."""
    import numpy as np

    from memcli.remote.push import SEARCHED, file_kind
    from memcli.search.embed import content_hash, embedded_text
    from memcli.store import search_index
    from memcli.store.agent import AgentStore

    paths = AgentStore(memory_dir, agent).paths
    index = _open_index(search_index, paths)
    if index is None:
        return 0
    try:
        model, dim, _ = search_index.vector_state(index)
        rows = search_index.embedded_rows(index) if model and dim else []
        expected = search_index.covered_files(index)
    finally:
        index.close()
    if not rows:
        return 0
    why = ensure(conn)
    if why is not None:
        note = f"vectors not pushed: {why}; search --remote ranks by words alone"
        if note not in notes:
            notes.append(note)
        return 0
    data_file = {index_name: name for name, index_name in SEARCHED.items()}
    have = {(file, pos, bytes(h)) for file, pos, h in conn.execute(
        """SELECT r.file, r.pos, v.hash FROM memcli_vectors v JOIN memcli_records r USING (agent_key, stream, id)
           WHERE v.agent_key = %s AND v.model = %s AND v.dim = %s""", (key, model, dim))}
    conn.commit()
    todo = {}
    for rowid, slot, digest in rows:
        name, offset = search_index.split_rowid(rowid)
        if (data_file[name], offset, bytes(digest)) not in have:
            todo[rowid] = (slot, bytes(digest))
    if not todo:
        return 0
    try:
        mapped = np.memmap(search_index.vectors_path(paths), dtype=np.float32, mode="r")
    except (OSError, ValueError):
        return 0
    count = mapped.shape[0] // dim
    matrix = mapped[:count * dim].reshape(count, dim)
    conn.execute(_STAGE)
    conn.commit()
    sent = 0
    batch: list[bytes] = []

    def flush() -> int:
        with conn.transaction():
            cur = conn.cursor()
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (-key,))
            with cur.copy("COPY memcli_vstage (stream, id, hash, embedding) FROM STDIN (FORMAT BINARY)") as copy:
                copy.write(_COPY_HEADER + b"".join(batch) + struct.pack("!h", -1))
            cur.execute(_UPSERT, {"model": model, "dim": dim, "key": key})
        batch.clear()
        return max(cur.rowcount, 0)

    for rowid, name, _offset, record in search_index.read_records(paths, list(todo), expected):
        slot, digest = todo[rowid]
        rid = record.get("id") if record is not None else None
        if not isinstance(rid, str) or not rid or slot >= count:
            continue
        if content_hash(model, embedded_text(name, record)) != digest:
            continue        # the index lags the file: that vector is not this record's (any more)
        batch.append(_copy_row(file_kind(data_file[name])[0], rid, digest, matrix[slot]))
        if len(batch) >= BATCH:
            sent += flush()
    if batch:
        sent += flush()
    return sent


def _open_index(search_index, paths):
    """The agent's search index, read as it is (never created), or None."""
    from memcli.errors import StoreError

    try:
        return search_index.connect(paths, create=False)
    except (search_index.IndexUnreadable, StoreError):
        return None


def nearest(conn, query_vector, model: str, dim: int, agent_key, kinds, filters, pool: int, *,
            timed: bool) -> list[tuple]:
    """The keys (agent_key, stream, id) of the ``pool`` records nearest ``query_vector`` by cosine
    distance among the vectors of ``model``/``dim`` whose records pass ``filters`` (conditions on
    ``r``, the record, and their arguments), nearest first.

    The distances are computed over the vectors alone (agent and kind are columns of the vector
    row: ``stream`` is the kind), the nearest ``2 x pool`` kept, and only those joined to their
    records for the other conditions (superseded items): joined first, PostgreSQL sorted whole
    vectors (3 KB rows at 768 dimensions) on disk, 0.35 s instead of 0.1 s over 100,000. With a
    time range (``timed``), which the vectors cannot answer alone, the join comes first."""
    text = "[" + ",".join(repr(float(x)) for x in query_vector) + "]"
    where, args = filters
    if timed:
        sql = f"""SELECT r.agent_key, r.stream, r.id FROM memcli_vectors v
                  JOIN memcli_records r USING (agent_key, stream, id)
                  WHERE v.model = %s AND v.dim = %s AND {' AND '.join(where) or 'true'}
                  ORDER BY v.embedding <=> %s::vector LIMIT %s"""
        return [tuple(r) for r in conn.execute(sql, (model, dim, *args, text, pool)).fetchall()]
    own, own_args = ["v.model = %s", "v.dim = %s"], [model, dim]
    if agent_key is not None:
        own.append("v.agent_key = %s")
        own_args.append(agent_key)
    if kinds:
        own.append("v.stream = ANY(%s)")
        own_args.append(list(kinds))
    sql = f"""WITH k AS MATERIALIZED (
                  SELECT v.agent_key, v.stream, v.id, v.embedding <=> %s::vector AS d FROM memcli_vectors v
                  WHERE {' AND '.join(own)} ORDER BY d LIMIT %s)
              SELECT k.agent_key, k.stream, k.id FROM k JOIN memcli_records r USING (agent_key, stream, id)
              WHERE {' AND '.join(where) or 'true'} ORDER BY k.d LIMIT %s"""
    rows = conn.execute(sql, (text, *own_args, 2 * pool, *args, pool)).fetchall()
    return [tuple(r) for r in rows]
