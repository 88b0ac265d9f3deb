"""The search index: a derived, rebuildable SQLite FTS5 cache over one agent's JSONL files
(docs/design.md §8). Never the source of truth: delete it and the next search builds it again.

File: ``agents/<agent>/.search.sqlite`` (0600; SQLite adds ``-wal``/``-shm`` beside it in WAL
mode). ``clear`` removes it with the rest of the agent's caches.

Schema (:data:`SCHEMA_VERSION`)::

    meta(key, value)                       schema version
    files(name, ino, covered, head, tail)  per JSONL file: inode, bytes indexed so far (always the
                                           end of a complete line), the file's first bytes and
                                           the bytes just before ``covered`` (a fingerprint)
    fts(body)                              FTS5, contentless, tokenizer porter unicode61; bm25
    rows(rowid, ts)                        every indexed record's timestamp (--since/--until)
    texts(rowid, body)                     the indexed text of records in the active, episodic
                                           and semantic files, kept so that their rows can be
                                           taken out of the contentless index again
    vcache(hash, slot)                     embeddings by content hash, for the model in meta
                                           ``embed_model`` (hybrid search): the vector is row
                                           ``slot`` of the vectors file
    vrows(rowid, slot)                     which records have an embedding, and which one

meta keys: ``version``; for embeddings ``embed_model``, ``embed_dim``, ``embed_tokens`` (tokens
the model reported, summed: the spend) and ``vcovered:<file>`` (every row of that file up to
this rowid has been embedded or had no text). Rows taken out of ``fts`` are taken out of
``vrows`` too, and their file's ``vcovered`` reset; ``vcache`` stays (a compaction moves a trace
to the archive: its text is embedded once). Another model empties the three and the vectors
file (:func:`reset_vectors`). The vectors are computed by :mod:`memcli.search.embed`, never at
ingest.

The vectors file ``.search.vectors`` (0600) beside the index holds the vectors themselves, one
row of ``embed_dim`` float32 (unit length) per slot, appended only, so a search maps it and
ranks every vector with one matrix product (a BLOB column read back costs ~40 ms per 1,000
vectors of 768 dimensions; the mapped file, nothing). Slots are given out under SQLite's write
lock (``BEGIN IMMEDIATE``): the file is appended, then the rows that name the new slots are
committed. A crash between the two leaves rows no slot names (never read); a torn last row is
cut off before the next append.

A row's ``rowid`` is ``file_number << 40 | byte offset of its line``: a hit names its file and
line without another lookup, a file's rows are one rowid range, and rowid order is recency order
(archive 1, active 2, episodic 3, semantic 4: :data:`FILE_NUMBERS`).

What is indexed per record (:func:`record_text`, capped so one huge tool result cannot dominate
the index): a trace's tool name, content, tool arguments, result and error; a summary's text and
tags; a fact's text and tags. The records are read from the files as stored, so anything
redaction replaced at ingest is indexed as its ``[REDACTED:...]`` placeholder.

Catch-up (:func:`catch_up`, run by searches — never by ingest, so ingest costs the same with or
without an index): for each file, the part after ``covered`` is read and indexed, in one
transaction per file. A file whose fingerprint no longer matches (another inode, shorter than
``covered``, other first bytes, other bytes before ``covered``) was rewritten — compaction
rewrites the active file, an interrupted ingest is rolled back, ``doctor --repair`` moves bad
lines aside, ``clear --keep-memory`` drops the traces — and its rows are removed (through
``texts``) and it is indexed again from the start. The archive keeps no ``texts`` (it is the
large file, and only ``doctor --repair`` ever rewrites it): a rewritten archive rebuilds the
whole index. Lines of an ingest still in progress (``.ingest.pending`` present) are not indexed.

Concurrency: WAL mode, so searches read while another process catches up; catch-ups serialize on
SQLite's write lock (``BEGIN IMMEDIATE``, busy timeout :data:`BUSY_TIMEOUT_MS`) and re-read
``files`` inside the transaction, so two searches never index the same lines twice. The agent
lock is not taken: the JSONL files are only read. During a compaction a trace can briefly be
indexed in both the active file and the archive; :mod:`memcli.search` keeps one hit per id.
"""

from __future__ import annotations

import os
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Iterable, Iterator

import orjson

from memcli.errors import StoreError
from memcli.store import jsonl, layout
from memcli.store.layout import FILE_MODE, AgentPaths

INDEX_NAME = layout.SEARCH_INDEX
VECTORS_NAME = layout.SEARCH_VECTORS
SCHEMA_VERSION = "4"
BUSY_TIMEOUT_MS = 60_000
OFFSET_BITS = 40
OFFSET_MASK = (1 << OFFSET_BITS) - 1
# rowid order is recency order: the archive (oldest), the active file, then memory items
FILE_NUMBERS = {"archive": 1, "active": 2, "episodic": 3, "semantic": 4}
FILE_NAMES = {n: name for name, n in FILE_NUMBERS.items()}
KEEPS_TEXT = frozenset({"active", "episodic", "semantic"})
FINGERPRINT_BYTES = 64
BATCH = 5_000

# caps on what one record contributes to the index (characters)
CAP_CONTENT = 4_000
CAP_ARGS = 1_000
CAP_RESULT = 2_000
CAP_ERROR = 1_000

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT)",
    "CREATE TABLE IF NOT EXISTS files(name TEXT PRIMARY KEY, ino INTEGER, covered INTEGER, head BLOB, tail BLOB)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(body, content='', "
    "tokenize='porter unicode61 remove_diacritics 2')",
    "CREATE TABLE IF NOT EXISTS rows(rowid INTEGER PRIMARY KEY, ts REAL)",
    "CREATE TABLE IF NOT EXISTS texts(rowid INTEGER PRIMARY KEY, body TEXT)",
    "CREATE TABLE IF NOT EXISTS vcache(hash BLOB PRIMARY KEY, slot INTEGER) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS vrows(rowid INTEGER PRIMARY KEY, slot INTEGER)",
)


class IndexUnreadable(StoreError):
    """The index file is not a database memcli can use (corrupt, foreign, another version)."""


def index_path(paths: AgentPaths) -> Path:
    return paths.dir / INDEX_NAME


def vectors_path(paths: AgentPaths) -> Path:
    return paths.dir / VECTORS_NAME


def file_path(paths: AgentPaths, name: str) -> Path:
    return getattr(paths, name)


def rowid_for(name: str, offset: int) -> int:
    return (FILE_NUMBERS[name] << OFFSET_BITS) | offset


def split_rowid(rowid: int) -> tuple[str, int]:
    return FILE_NAMES[rowid >> OFFSET_BITS], rowid & OFFSET_MASK


def file_range(name: str) -> tuple[int, int]:
    lo = FILE_NUMBERS[name] << OFFSET_BITS
    return lo, lo | OFFSET_MASK


# ---------------------------------------------------------------------------- text of a record

def _clip(value, cap: int) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else orjson.dumps(value).decode()
    return text[:cap]


def record_text(name: str, record: dict) -> str:
    """The text indexed for a record of file ``name`` (module docstring)."""
    if name in ("episodic", "semantic"):
        text = record.get("summary" if name == "episodic" else "fact")
        tags = record.get("tags")
        parts = [text if isinstance(text, str) else ""]
        if isinstance(tags, list):
            parts.append(" ".join(t for t in tags if isinstance(t, str)))
        return "\n".join(p for p in parts if p)
    parts = []
    for key, cap in (("tool_name", 200), ("content", CAP_CONTENT), ("tool_args", CAP_ARGS),
                     ("tool_result", CAP_RESULT), ("tool_error", CAP_ERROR)):
        value = record.get(key)
        if value is not None and value != "":
            parts.append(_clip(value, cap))
    return "\n".join(parts)


# ---------------------------------------------------------------------------- opening

def _create_file(path: Path) -> None:
    """Create the database file 0600 (never through a symlink) before SQLite opens it."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), FILE_MODE)
    except FileExistsError:
        return
    except OSError as exc:
        raise StoreError(f"cannot create {path}: {exc.strerror}") from exc
    os.fchmod(fd, FILE_MODE)
    os.close(fd)


def _is_corruption(exc: sqlite3.DatabaseError) -> bool:
    if isinstance(exc, sqlite3.OperationalError):
        text = str(exc).lower()
        return "malformed" in text or "no such table" in text or "not a database" in text
    return True


def connect(paths: AgentPaths, *, create: bool = True) -> sqlite3.Connection | None:
    """An open index (schema created when new); None when ``create`` is false and there is none.
    Raises :class:`IndexUnreadable` for a file that is not a usable index."""
    path = index_path(paths)
    if os.path.islink(path):
        raise StoreError(f"{path} is a symlink; memcli refuses to follow it")
    if not path.exists():
        if not create:
            return None
        if not paths.dir.is_dir():
            return None
        _create_file(path)
    conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                           check_same_thread=False)
    try:
        conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")  # a cache: losing the last commit only means re-indexing
        version = None
        has_meta = conn.execute("SELECT 1 FROM sqlite_master WHERE name='meta'").fetchone()
        if has_meta:
            row = conn.execute("SELECT value FROM meta WHERE key='version'").fetchone()
            version = row[0] if row else None
        if version is None:
            conn.execute("BEGIN IMMEDIATE")
            try:
                for statement in _SCHEMA:
                    conn.execute(statement)
                conn.execute("INSERT OR REPLACE INTO meta VALUES('version', ?)", (SCHEMA_VERSION,))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        elif version != SCHEMA_VERSION:
            raise IndexUnreadable(f"{path} is a search index of another memcli version ({version})")
    except sqlite3.DatabaseError as exc:
        conn.close()
        if _is_corruption(exc):
            raise IndexUnreadable(f"{path} is not a usable search index ({exc})") from None
        raise StoreError(f"cannot open the search index {path}: {exc}") from None
    except BaseException:
        conn.close()
        raise
    return conn


def remove(paths: AgentPaths) -> bool:
    """Delete the index file and its WAL/SHM companions; True if anything was removed."""
    removed = False
    base = index_path(paths)
    for name in [f"{base}{suffix}" for suffix in ("", "-wal", "-shm", "-journal")] + [vectors_path(paths)]:
        try:
            os.unlink(name)
            removed = True
        except FileNotFoundError:
            pass
    return removed


# ---------------------------------------------------------------------------- catching up

class _Fingerprint:
    __slots__ = ("ino", "size", "head", "tail")

    def __init__(self, ino: int, size: int, head: bytes, tail: bytes):
        self.ino, self.size, self.head, self.tail = ino, size, head, tail


def _read_at(f, offset: int, n: int) -> bytes:
    f.seek(offset)
    return f.read(n)


def _ingest_cap(paths: AgentPaths) -> int | None:
    """Size of the active file before an ingest still in flight (its lines are not indexed)."""
    try:
        with jsonl.open_read(paths.ingest_marker) as f:
            return int(orjson.loads(f.read())["active_size"])
    except (FileNotFoundError, orjson.JSONDecodeError, KeyError, TypeError, ValueError, StoreError):
        return None


class CatchUp:
    """What one :func:`catch_up` did: records indexed, files re-indexed after a rewrite."""

    __slots__ = ("indexed", "reindexed", "rebuilt")

    def __init__(self):
        self.indexed = 0
        self.reindexed: list[str] = []
        self.rebuilt = False


def catch_up(paths: AgentPaths, conn: sqlite3.Connection, names: Iterable[str] = tuple(FILE_NUMBERS)) -> CatchUp:
    """Bring the index up to date with the files ``names`` (module docstring)."""
    result = CatchUp()
    names = tuple(names)
    for name in names:
        if _catch_up_file(paths, conn, name, result) == "rebuild":
            _reset(conn)
            result.rebuilt = True
            for again in names:
                _catch_up_file(paths, conn, again, result)
            break
    return result


def _stored_state(conn, name: str) -> tuple | None:
    return conn.execute("SELECT ino, covered, head, tail FROM files WHERE name=?", (name,)).fetchone()


def _matches(stored: tuple, f, st) -> bool:
    ino, covered, head, tail = stored
    if covered == 0:
        return True
    if st.st_ino != ino or st.st_size < covered:
        return False
    if _read_at(f, 0, len(head)) != head:
        return False
    return _read_at(f, covered - len(tail), len(tail)) == tail


def _catch_up_file(paths: AgentPaths, conn: sqlite3.Connection, name: str, result: CatchUp) -> str:
    path = file_path(paths, name)
    try:
        f = jsonl.open_read(path)
    except FileNotFoundError:
        f = None
    with closing(f) if f is not None else _nothing():
        if f is not None:
            st = os.fstat(f.fileno())
            ino, size = st.st_ino, st.st_size
        else:
            st, ino, size = None, 0, 0
        stored = _stored_state(conn, name)
        if stored is not None and stored[1] == size and stored[0] == ino and (size == 0 or _matches(stored, f, st)):
            return "ok"  # the common case: nothing new, no write transaction
        conn.execute("BEGIN IMMEDIATE")
        try:
            stored = _stored_state(conn, name)  # another search may have caught up meanwhile
            start = 0
            if stored is not None and stored[1]:
                if f is not None and _matches(stored, f, st):
                    start = stored[1]
                else:
                    if name not in KEEPS_TEXT:
                        conn.execute("ROLLBACK")
                        return "rebuild"
                    _drop_file_rows(conn, name)
                    result.reindexed.append(name)
            end = size
            if name == "active":
                cap = _ingest_cap(paths)
                if cap is not None:
                    end = min(end, cap)
            covered = start
            if f is not None and end > start:
                covered = _index_lines(conn, f, name, start, end, result)
            head = _read_at(f, 0, FINGERPRINT_BYTES) if f is not None and covered else b""
            tail = _read_at(f, max(0, covered - FINGERPRINT_BYTES), min(covered, FINGERPRINT_BYTES)) if covered else b""
            conn.execute("INSERT OR REPLACE INTO files VALUES(?, ?, ?, ?, ?)", (name, ino, covered, head[:covered], tail))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return "ok"


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def _index_lines(conn, f, name: str, start: int, end: int, result: CatchUp) -> int:
    """Index complete lines in [start, end); returns the offset after the last one indexed."""
    base = FILE_NUMBERS[name] << OFFSET_BITS
    keep_text = name in KEEPS_TEXT
    f.seek(start)
    offset = start
    fts_rows: list[tuple[int, str]] = []
    ts_rows: list[tuple[int, float | None]] = []
    loads = orjson.loads

    def flush():
        conn.executemany("INSERT INTO fts(rowid, body) VALUES(?, ?)", fts_rows)
        conn.executemany("INSERT OR REPLACE INTO rows(rowid, ts) VALUES(?, ?)", ts_rows)
        if keep_text:
            conn.executemany("INSERT OR REPLACE INTO texts(rowid, body) VALUES(?, ?)", fts_rows)
        result.indexed += len(fts_rows)
        fts_rows.clear()
        ts_rows.clear()

    for raw in f:
        if offset >= end or not raw.endswith(b"\n") or offset + len(raw) > end:
            break
        line_offset = offset
        offset += len(raw)
        try:
            record = loads(raw)
        except orjson.JSONDecodeError:
            continue  # blank or bad line: doctor's business; nothing to index
        if type(record) is not dict:
            continue
        rowid = base | line_offset
        ts = record.get("ts")
        fts_rows.append((rowid, record_text(name, record)))
        ts_rows.append((rowid, float(ts) if isinstance(ts, (int, float)) and not isinstance(ts, bool) else None))
        if len(fts_rows) >= BATCH:
            flush()
    if fts_rows:
        flush()
    return offset


def _drop_file_rows(conn, name: str) -> None:
    lo, hi = file_range(name)
    rows = conn.execute("SELECT rowid, body FROM texts WHERE rowid BETWEEN ? AND ?", (lo, hi)).fetchall()
    conn.executemany("INSERT INTO fts(fts, rowid, body) VALUES('delete', ?, ?)", rows)
    conn.execute("DELETE FROM texts WHERE rowid BETWEEN ? AND ?", (lo, hi))
    conn.execute("DELETE FROM rows WHERE rowid BETWEEN ? AND ?", (lo, hi))
    conn.execute("DELETE FROM vrows WHERE rowid BETWEEN ? AND ?", (lo, hi))
    conn.execute("DELETE FROM meta WHERE key=?", (f"vcovered:{name}",))
    conn.execute("DELETE FROM files WHERE name=?", (name,))


def _reset(conn) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("INSERT INTO fts(fts) VALUES('delete-all')")
        for table in ("rows", "texts", "files", "vrows"):
            conn.execute(f"DELETE FROM {table}")
        conn.execute("DELETE FROM meta WHERE key LIKE 'vcovered:%'")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


# ---------------------------------------------------------------------------- querying

def broad_boundary(conn, match: str, *, names: Iterable[str], newest: int) -> int | None:
    """The rowid of the ``newest``-th newest match when there are more matches than that, else
    None. Cheap: FTS5 walks matches in rowid order without scoring them."""
    where, args = _file_filter(names)
    sql = f"SELECT rowid FROM fts WHERE fts MATCH ?{where} ORDER BY rowid DESC LIMIT 2 OFFSET ?"
    rows = conn.execute(sql, [match, *args, newest - 1]).fetchall()
    return rows[0][0] if len(rows) == 2 else None


def _file_filter(names: Iterable[str]) -> tuple[str, list]:
    names = tuple(names)
    if set(names) == set(FILE_NUMBERS):
        return "", []
    ranges, args = [], []
    for name in names:
        lo, hi = file_range(name)
        ranges.append("fts.rowid BETWEEN ? AND ?")
        args += [lo, hi]
    return " AND (" + " OR ".join(ranges or ["0"]) + ")", args


def _time_filter(table: str, since, until, where: list, args: list) -> str:
    """The join on ``rows`` (and its conditions, added to ``where``/``args``) for --since/--until."""
    if since is None and until is None:
        return ""
    if since is not None:
        where.append("rows.ts >= ?")
        args.append(since)
    if until is not None:
        where.append("rows.ts <= ?")
        args.append(until)
    return f" JOIN rows ON rows.rowid = {table}.rowid"


def query(conn, match: str, *, names: Iterable[str], since: float | None = None, until: float | None = None,
          limit: int = 10, offset: int = 0, min_rowid: int | None = None) -> list[tuple[int, float]]:
    """(rowid, bm25 score — lower is better) of the best matches of an FTS5 expression, best
    first, ties newest (highest rowid) first; with ``min_rowid`` only matches from that rowid on.
    Raises sqlite3.OperationalError for a bad expression (the caller builds expressions that
    cannot be bad)."""
    where = ["fts MATCH ?"]
    args: list = [match]
    if min_rowid is not None:
        where.append("fts.rowid >= ?")
        args.append(min_rowid)
    file_clause, file_args = _file_filter(names)
    if file_clause:
        where.append(file_clause.removeprefix(" AND "))
        args += file_args
    join = _time_filter("fts", since, until, where, args)
    sql = (f"SELECT fts.rowid, bm25(fts) AS score FROM fts{join} WHERE {' AND '.join(where)} "
           "ORDER BY score, fts.rowid DESC LIMIT ? OFFSET ?")
    args += [limit, offset]
    return conn.execute(sql, args).fetchall()


def covered_files(conn) -> dict[str, tuple[int, int]]:
    """name -> (inode, bytes covered) as the index records them."""
    return {name: (ino, covered) for name, ino, covered in conn.execute("SELECT name, ino, covered FROM files")}


def count_rows(conn, name: str) -> int:
    lo, hi = file_range(name)
    return conn.execute("SELECT count(*) FROM rows WHERE rowid BETWEEN ? AND ?", (lo, hi)).fetchone()[0]


def read_records(paths: AgentPaths, rowids: Iterable[int], expected: dict[str, tuple[int, int]]
                 ) -> Iterator[tuple[int, str, int, dict | None]]:
    """(rowid, file name, offset, record) for hits, read from the files; the record is None when
    the file is no longer the one the index describes (rewritten since: catch up and ask again)."""
    handles: dict[str, object] = {}
    try:
        for rowid in rowids:
            name, offset = split_rowid(rowid)
            f = handles.get(name)
            if f is None and name not in handles:
                try:
                    f = jsonl.open_read(file_path(paths, name))
                except FileNotFoundError:
                    f = None
                if f is not None and os.fstat(f.fileno()).st_ino != expected.get(name, (None,))[0]:
                    f.close()
                    f = None
                handles[name] = f
            record = None
            if f is not None and (offset == 0 or _read_at(f, offset - 1, 1) == b"\n"):
                f.seek(offset)
                raw = f.readline()
                try:
                    value = orjson.loads(raw) if raw.endswith(b"\n") else None
                except orjson.JSONDecodeError:
                    value = None
                record = value if type(value) is dict else None
            yield rowid, name, offset, record
    finally:
        for f in handles.values():
            if f is not None:
                f.close()


def record_count(conn) -> int:
    """Records indexed (every file)."""
    return conn.execute("SELECT count(*) FROM rows").fetchone()[0]


def document_frequency(conn, token: str) -> int | None:
    """How many records hold ``token`` (a stemmed index token), from FTS5's vocabulary; None
    when the index cannot tell."""
    try:
        conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.vocab USING fts5vocab(main, fts, 'row')")
        row = conn.execute("SELECT doc FROM temp.vocab WHERE term = ?", (token,)).fetchone()
    except sqlite3.OperationalError:
        return None
    return row[0] if row else 0


# ---------------------------------------------------------------------------- embeddings

def _meta(conn, key: str) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
    return row[0] if row else None


def vector_state(conn) -> tuple[str | None, int | None, int]:
    """(model, dimensions, tokens embedded so far) of the stored embeddings."""
    dim = _meta(conn, "embed_dim")
    return _meta(conn, "embed_model"), int(dim) if dim else None, int(_meta(conn, "embed_tokens") or 0)


def _open_vectors(paths: AgentPaths) -> int:
    """The vectors file, opened for appending (created 0600; never through a symlink)."""
    path = vectors_path(paths)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), FILE_MODE)
    except OSError as exc:
        raise StoreError(f"cannot open {path}: {exc.strerror}") from exc
    return fd


def reset_vectors(conn, paths: AgentPaths, model: str) -> None:
    """Forget every embedding and start over for ``model`` (the spend so far is kept)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("DELETE FROM vrows")
        conn.execute("DELETE FROM vcache")
        conn.execute("DELETE FROM meta WHERE key LIKE 'vcovered:%' OR key = 'embed_dim'")
        conn.execute("INSERT OR REPLACE INTO meta VALUES('embed_model', ?)", (model,))
        fd = _open_vectors(paths)
        try:
            os.ftruncate(fd, 0)
        finally:
            os.close(fd)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def unembedded(conn, names: Iterable[str], limit: int) -> list[int]:
    """Up to ``limit`` rowids of the files ``names`` past their ``vcovered`` mark, oldest first."""
    out: list[int] = []
    for name in names:
        lo, hi = file_range(name)
        covered = _meta(conn, f"vcovered:{name}")
        start = int(covered) + 1 if covered else lo
        out += [r for (r,) in conn.execute("SELECT rowid FROM rows WHERE rowid BETWEEN ? AND ? ORDER BY rowid "
                                           "LIMIT ?", (start, hi, limit - len(out)))]
        if len(out) >= limit:
            break
    return out


def unembedded_count(conn, names: Iterable[str]) -> int:
    total = 0
    for name in names:
        lo, hi = file_range(name)
        covered = _meta(conn, f"vcovered:{name}")
        total += conn.execute("SELECT count(*) FROM rows WHERE rowid BETWEEN ? AND ?",
                              (int(covered) + 1 if covered else lo, hi)).fetchone()[0]
    return total


def cached_slots(conn, hashes: Iterable[bytes]) -> dict[bytes, int]:
    """hash -> slot of the texts already embedded."""
    out = {}
    for h in hashes:
        row = conn.execute("SELECT slot FROM vcache WHERE hash=?", (h,)).fetchone()
        if row is not None:
            out[h] = row[0]
    return out


def read_vector(paths: AgentPaths, slot: int, dim: int) -> bytes | None:
    """The stored vector of ``slot`` (``dim`` float32), None when the file does not hold it."""
    try:
        with jsonl.open_read(vectors_path(paths)) as f:
            data = _read_at(f, slot * dim * 4, dim * 4)
    except FileNotFoundError:
        return None
    return data if len(data) == dim * 4 else None


def add_vectors(conn, paths: AgentPaths, model: str, dim: int, rows: list[tuple[int, bytes]],
                new: list[tuple[bytes, bytes]], covered: Iterable[int], tokens: int) -> bool:
    """Store embeddings in one transaction: ``new`` (hash, ``dim`` float32 bytes) appended to the
    vectors file and named in the cache, ``rows`` (rowid, hash) pointed at their vectors, and for
    each rowid in ``covered`` every row of its file up to it marked done. False (and nothing
    written) when another search switched the model or the dimensions meanwhile."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        stored_dim = _meta(conn, "embed_dim")
        if _meta(conn, "embed_model") != model or (stored_dim is not None and int(stored_dim) != dim):
            conn.execute("ROLLBACK")
            return False
        slots: dict[bytes, int] = {}
        if new:
            width = dim * 4
            fd = _open_vectors(paths)
            try:
                size = os.fstat(fd).st_size
                if size % width:
                    os.ftruncate(fd, size - size % width)      # a torn last row
                    size -= size % width
                os.lseek(fd, size, os.SEEK_SET)
                jsonl.write_all(fd, b"".join(vec for _, vec in new))
            finally:
                os.close(fd)
            first = size // width
            slots = {h: first + i for i, (h, _) in enumerate(new)}
            conn.executemany("INSERT OR REPLACE INTO vcache(hash, slot) VALUES(?, ?)", slots.items())
        missing = {h for _, h in rows if h not in slots}
        slots.update(cached_slots(conn, missing))
        conn.executemany("INSERT OR REPLACE INTO vrows(rowid, slot) VALUES(?, ?)",
                         [(rowid, slots[h]) for rowid, h in rows if h in slots])
        for mark in covered:
            name, _ = split_rowid(mark)
            old = _meta(conn, f"vcovered:{name}")
            if old is None or int(old) < mark:
                conn.execute("INSERT OR REPLACE INTO meta VALUES(?, ?)", (f"vcovered:{name}", str(mark)))
        conn.execute("INSERT OR REPLACE INTO meta VALUES('embed_dim', ?)", (str(dim),))
        conn.execute("INSERT OR REPLACE INTO meta VALUES('embed_tokens', ?)",
                     (str(int(_meta(conn, "embed_tokens") or 0) + tokens),))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return True


def vector_slots(conn, names: Iterable[str], since: float | None = None, until: float | None = None
                 ) -> tuple[list[int], list[int]]:
    """The rowids that have an embedding in the files ``names`` (and time range), and the slot
    of each in the vectors file."""
    rowids: list[int] = []
    slots: list[int] = []
    for name in names:
        lo, hi = file_range(name)
        where, args = ["vrows.rowid BETWEEN ? AND ?"], [lo, hi]
        join = _time_filter("vrows", since, until, where, args)
        for rowid, slot in conn.execute(f"SELECT vrows.rowid, vrows.slot FROM vrows{join} WHERE "
                                        f"{' AND '.join(where)}", args):
            rowids.append(rowid)
            slots.append(slot)
    return rowids, slots


def embedded_rows(conn) -> list[tuple[int, int, bytes]]:
    """(rowid, slot, content hash) of every record that has an embedding (``push`` sends them)."""
    return conn.execute("SELECT vrows.rowid, vrows.slot, vcache.hash FROM vrows JOIN vcache USING (slot) "
                        "ORDER BY vrows.rowid").fetchall()


def read_vector_state(paths: AgentPaths) -> tuple[str | None, int | None, int] | None:
    """:func:`vector_state` of the agent's index without creating one; None when there is none
    or it cannot be read."""
    try:
        conn = connect(paths, create=False)
    except (IndexUnreadable, StoreError):
        return None
    if conn is None:
        return None
    try:
        return vector_state(conn)
    except sqlite3.DatabaseError:
        return None
    finally:
        conn.close()


# ---------------------------------------------------------------------------- doctor

def verify(paths: AgentPaths) -> str | None:
    """What is wrong with the index, or None (also when there is none yet: built on demand).

    Unreadable (not a database, another version), or *drifted*: for a file the index says it
    covers completely, and that is still the file it indexed, the number of indexed records
    differs from the number of records in the file. A file that grew or was rewritten since is not
    a problem: the next search catches up."""
    try:
        conn = connect(paths, create=False)
    except IndexUnreadable as exc:
        return f"cannot be used: {exc.message}"
    if conn is None:
        return None
    try:
        with conn:
            covered = covered_files(conn)
            for name, (ino, size) in covered.items():
                path = file_path(paths, name)
                try:
                    st = os.lstat(path)
                except FileNotFoundError:
                    continue
                if st.st_ino != ino or st.st_size != size or name not in FILE_NUMBERS:
                    continue
                records = sum(1 for _, line in jsonl.iter_lines(path) if line.startswith(b"{"))
                indexed = count_rows(conn, name)
                if records != indexed:
                    return f"has drifted: {indexed:,} records indexed for {path.name}, which holds {records:,}"
    except sqlite3.DatabaseError as exc:
        return f"cannot be used: {exc}"
    finally:
        conn.close()
    return None


def rebuild(paths: AgentPaths) -> CatchUp:
    """Delete the index and build it again from the files."""
    remove(paths)
    conn = connect(paths)
    if conn is None:
        return CatchUp()
    try:
        return catch_up(paths, conn)
    finally:
        conn.close()
