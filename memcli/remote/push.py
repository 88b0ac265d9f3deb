"""``memcli push``: replicate agents into the shared store (memcli.remote, docs/remote.md).

For each agent, every data file (:data:`memcli.store.layout.DATA_FILES`, so files added later are
carried too; the archive first, so a trace a compaction moved is never missing remotely) is read
from where the last push left it, in batches of whole lines (about :data:`BATCH_BYTES`). A batch
is one transaction: COPY into a temporary table, ``INSERT ... ON CONFLICT (agent_key, stream, id)``
into ``memcli_records`` (so a record is there once, whoever pushes it, however often), and the
file's position with a fingerprint of its bytes in ``memcli_positions``. The batches of a file go
over up to :data:`CONNECTIONS` connections at once (the server indexes them on as many cores), so
they may commit out of order. The position a batch stores is therefore the end of the contiguous
run of batches known committed when it commits (:class:`_Prefix`): its own end when every earlier
batch has committed, else where that run ends; after the file, its end. Hence:

* idempotent: a re-push reads from the stored positions and finds nothing new; a record pushed
  twice (two processes, a position lost, a batch that committed beyond the stored position) conflicts
  on its id and changes nothing;
* resumable: a push killed at any point has committed whole batches, and everything before the
  stored position; the next one continues from there (sending again, as no-ops, at most the
  batches that were in flight);
* ordered: a record id that appears twice in a file keeps its later line, whichever batch commits
  first (an append batch does not replace a row of the same file at a later position);
* a lost connection (server restart, network) is retried up to :data:`RETRIES` times from the
  last committed position, on a new connection;
* compaction moves: a file whose bytes up to the stored position changed (the active file is
  rewritten by every compaction) is pushed again whole, in one transaction that also deletes the
  rows no longer in it; a trace moved to the archive has already been re-keyed there by then
  (same stream ``trace``, same id: its row now says ``archive``);
* many machines: append batches take the agent's advisory lock shared, a rewrite (and a remote
  write by ``mcp --remote``) exclusive; the uniqueness is the database's primary key, not the
  client's memory. Every batch inserts in key order, so concurrent batches cannot deadlock.

The local files are read from descriptors opened under the agent's lock (with an interrupted
ingest or compaction settled first) and up to the sizes they had then: a push sees a
consistent agent and never blocks writers for longer than the opening. Two pushes of the same
remote agent run one after the other (a session advisory lock, :meth:`_Pusher.hold`, taken before
the files are opened), so the later push always sends the newer view.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from memcli.errors import RemoteError, UsageError
from memcli.remote import connect as rc
from memcli.remote import schema, vectors
from memcli.store import jsonl
from memcli.store.agent import crash_point
from memcli.store.layout import ACTIVE, ARCHIVE, DATA_FILES, list_agent_ids

BATCH_BYTES = int(os.environ.get("MEMCLI_PUSH_BATCH_BYTES") or 4 << 20)   # the variable: tests only
CONNECTIONS = 3     # batches of a file in flight at once; $MEMCLI_PUSH_CONNECTIONS overrides it
FINGERPRINT_BYTES = 4096
RETRIES = 5
SEARCHED = {ACTIVE: "active", ARCHIVE: "archive", "episodic.jsonl": "episodic", "semantic.jsonl": "semantic"}
FILE_ORDER = (ARCHIVE,) + tuple(name for name in DATA_FILES if name != ARCHIVE)
STAGE_COLUMNS = "stream, id, file, pos, kind, tier, ts, turn_id, trace_type, tool_name, line, body"

Progress = Callable[[str, int], None]   # (agent, records just committed)


def file_kind(name: str) -> tuple[str, str, str]:
    """(stream, kind, tier) of a data file's records."""
    if name in (ACTIVE, ARCHIVE):
        return "trace", "trace", SEARCHED[name]
    stem = name.removesuffix(".jsonl").lstrip(".")
    return stem, stem, stem


@dataclass
class AgentPushed:
    agent: str                      # the local name
    remote: str                     # store_id/name in the shared store
    records: int = 0                # records sent
    changed: int = 0                # rows the database added or updated
    rewritten: list[str] = field(default_factory=list)   # files pushed again whole (rewritten locally)
    retries: int = 0
    vectors: int = 0                # embeddings sent (memcli.remote.vectors)


@dataclass
class PushResult:
    store_id: str
    where: str
    agents: list[AgentPushed]
    seconds: float
    notes: list[str] = field(default_factory=list)   # e.g. why vectors were not pushed

    @property
    def records(self) -> int:
        return sum(a.records for a in self.agents)


# ---------------------------------------------------------------------------- the local view

class _View:
    """An agent's data files, opened under its lock: name -> (fd, size)."""

    def __init__(self, memory_dir, agent: str):
        from memcli.store.agent import AgentStore
        from memcli.store.lock import agent_lock

        store = AgentStore(memory_dir, agent).require()
        store.recover_if_needed()          # an interrupted ingest or compaction is settled first
        self.files: dict[str, tuple[int, int]] = {}
        with agent_lock(store.paths):      # no write is half done while the files are opened
            for name in FILE_ORDER:
                path = store.paths.dir / name
                try:
                    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
                except FileNotFoundError:
                    continue
                self.files[name] = (fd, os.fstat(fd).st_size)
        self.dir = store.paths.dir

    def close(self) -> None:
        for fd, _ in self.files.values():
            os.close(fd)
        self.files.clear()


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def fingerprint(fd: int, end: int) -> tuple[str, str]:
    """(head, tail): digests of the first and the last :data:`FINGERPRINT_BYTES` bytes before ``end``."""
    n = min(end, FINGERPRINT_BYTES)
    return _digest(os.pread(fd, n, 0)), _digest(os.pread(fd, n, end - n))


def _chunks(fd: int, start: int, end: int):
    """(offset, bytes) of whole lines from ``start`` up to the last newline before ``end``."""
    pos = start
    while pos < end:
        data = os.pread(fd, min(BATCH_BYTES, end - pos), pos)
        cut = data.rfind(b"\n")
        while cut < 0 and pos + len(data) < end:      # one line longer than a batch
            more = os.pread(fd, min(BATCH_BYTES, end - pos - len(data)), pos + len(data))
            found = more.find(b"\n")
            data += more
            cut = len(data) - len(more) + found if found >= 0 else -1
        if cut < 0:
            return                                     # a torn last line: not a record yet
        yield pos, data[:cut + 1]
        pos += cut + 1


_NOT_WORD = re.compile(r"[\W_]+")
# ASCII bytes that are not letters or digits -> space (UTF-8 sequences, all >= 0x80, untouched)
_PLAIN = bytes(b if chr(b).isalnum() or b >= 0x80 else 0x20 for b in range(256))
_SPECIAL = re.compile(rb"[\\\t\n\r]")


def plain_words(text: str) -> str:
    """The text PostgreSQL indexes: punctuation (``_`` too) made spaces, so ``app/api_v2.py`` is the
    words app api v2 py, as the local index's tokenizer sees it (PostgreSQL's own parser would keep
    paths, hosts and dotted names whole). Queries go through the same function."""
    return _NOT_WORD.sub(" ", text)


def _plain_bytes(text: str) -> bytes:
    """:func:`plain_words` for ASCII punctuation, as COPY-safe bytes (a byte table: ~50x faster
    than the regex on the push path; non-ASCII punctuation is left to PostgreSQL's parser)."""
    return text.encode("utf-8", "replace").translate(_PLAIN)


def _escape(data: bytes) -> bytes:
    """A value in COPY's text format (backslash, tab, newline, CR escaped)."""
    if not _SPECIAL.search(data):
        return data
    return (data.replace(b"\\", b"\\\\").replace(b"\t", b"\\t").replace(b"\n", b"\\n")
            .replace(b"\r", b"\\r"))


def _field(value) -> bytes:
    if value is None:
        return b"\\N"
    return _escape(str(value).replace("\x00", "").encode("utf-8", "replace"))


def copy_rows(path, name: str, start: int, data: bytes) -> tuple[bytes, int]:
    """The COPY text rows of the whole lines in ``data`` (read at offset ``start`` of ``name``)."""
    from memcli.store.search_index import record_text

    stream, kind, tier = (_field(v) for v in file_kind(name))
    searched = SEARCHED.get(name)
    is_trace = kind == b"trace"
    file = _field(name)
    none = b"\\N"
    out: list[bytes] = []
    pos = start
    for raw in data.split(b"\n")[:-1]:
        offset, pos = pos, pos + len(raw) + 1
        if not raw.strip():
            continue
        record = jsonl.parse_line(path, raw, None, offset)
        rid = record.get("id")
        rid = rid if isinstance(rid, str) and rid else f"@{offset}"
        ts = record.get("ts")
        ts = repr(float(ts)).encode() if isinstance(ts, (int, float)) and not isinstance(ts, bool) else none
        if is_trace:
            turn, ttype, tool = record.get("turn_id"), record.get("trace_type"), record.get("tool_name")
            turn = _field(turn) if isinstance(turn, str) else none
            ttype = _field(ttype) if isinstance(ttype, str) else none
            tool = _field(tool) if isinstance(tool, str) else none
        else:
            turn = ttype = tool = none
        body = _plain_bytes(record_text(searched, record)) if searched else none
        out.append(b"\t".join((stream, _field(rid), file, str(offset).encode(), kind, tier, ts, turn, ttype, tool,
                                _escape(raw), body)))
    return (b"\n".join(out) + b"\n") if out else b"", len(out)


# ---------------------------------------------------------------------------- the database side

_UPSERT = f"""
INSERT INTO memcli_records AS r (agent_key, stream, id, file, pos, kind, tier, ts, turn_id, trace_type,
                                 tool_name, line, tsv)
SELECT DISTINCT ON (stream, id) %s, stream, id, file, pos, kind, tier, ts, turn_id, trace_type, tool_name, line,
       CASE WHEN body IS NULL THEN NULL ELSE to_tsvector('{schema.TS_CONFIG}', body) END
FROM memcli_stage ORDER BY stream, id, pos DESC
ON CONFLICT (agent_key, stream, id) DO UPDATE SET file = EXCLUDED.file, pos = EXCLUDED.pos, kind = EXCLUDED.kind,
    tier = EXCLUDED.tier, ts = EXCLUDED.ts, turn_id = EXCLUDED.turn_id, trace_type = EXCLUDED.trace_type,
    tool_name = EXCLUDED.tool_name, line = EXCLUDED.line, tsv = EXCLUDED.tsv
WHERE (r.file, r.pos, r.line) IS DISTINCT FROM (EXCLUDED.file, EXCLUDED.pos, EXCLUDED.line)
"""
# an append batch keeps a later line of the same file (a batch after it committed first), but
# replaces a row ``mcp --remote`` wrote (pos >= REMOTE_POS) with the pushed line
_IN_ORDER = f" AND (r.file <> EXCLUDED.file OR r.pos <= EXCLUDED.pos OR r.pos >= {schema.REMOTE_POS})"

_STAGE = """
CREATE TEMP TABLE IF NOT EXISTS memcli_stage (
    stream text, id text, file text, pos bigint, kind text, tier text, ts double precision, turn_id text,
    trace_type text, tool_name text, line text, body text) ON COMMIT DELETE ROWS
"""


def _set_position(cur, key: int, name: str, end: int, fp: tuple[str, str], *, exact: bool) -> None:
    """Store ``end`` (exact: whatever was there; else only forward, with its own fingerprint)."""
    forward = "" if exact else " WHERE p.pos <= EXCLUDED.pos"
    cur.execute(f"""INSERT INTO memcli_positions AS p VALUES (%s, %s, %s, %s, %s)
                    ON CONFLICT (agent_key, file) DO UPDATE SET pos = EXCLUDED.pos, head = EXCLUDED.head,
                    tail = EXCLUDED.tail{forward}""", (key, name, end, fp[0], fp[1]))


class _Prefix:
    """The batches of one file committed so far, pushed from ``start`` over several connections:
    :attr:`end` is where the contiguous run of committed batches from ``start`` ends (everything
    before it is in the database), :attr:`stored` the highest position a batch stored."""

    def __init__(self, start: int):
        self.end = self.stored = start
        self._beyond: dict[int, int] = {}      # offset -> end of batches committed after a gap
        self._lock = threading.Lock()

    def position(self, offset: int, end: int) -> int:
        """What the batch [offset, end) stores with its rows: its end if every batch before it has
        committed (its own rows commit with it), else the end of the committed run."""
        with self._lock:
            return end if self.end == offset else self.end

    def committed(self, offset: int, end: int, stored: int) -> None:
        with self._lock:
            self._beyond[offset] = end
            while self.end in self._beyond:
                self.end = self._beyond.pop(self.end)
            self.stored = max(self.stored, stored)


class _Pusher:
    def __init__(self, url: str, where: str, progress: Progress | None, connections: int = 1):
        self.url, self.where, self.progress, self.connections = url, where, progress, connections
        self.conn = None
        self.lanes: list = []          # the connections batches go over; the first is self.conn

    def open(self):
        self.conn = self._connect()
        schema.ensure(self.conn, self.where)
        self.lanes = [self.conn]

    def _connect(self):
        conn = rc.connect(self.url)
        conn.execute(_STAGE)
        conn.commit()
        return conn

    def _open_lanes(self) -> list:
        """Up to ``self.connections`` lanes; a server that refuses more connections gets fewer."""
        while len(self.lanes) < self.connections:
            try:
                self.lanes.append(self._connect())
            except RemoteError:
                break
        return self.lanes

    def close(self):
        for conn in self.lanes or [self.conn]:
            try:
                if conn is not None:
                    conn.close()
            except Exception:
                pass
        self.conn, self.lanes = None, []

    def agent_key(self, store_id: str, name: str) -> int:
        with self.conn.transaction():
            row = self.conn.execute(
                """INSERT INTO memcli_agents (store_id, name) VALUES (%s, %s) ON CONFLICT (store_id, name)
                   DO UPDATE SET pushed_at = now() RETURNING agent_key""", (store_id, name)).fetchone()
        return row[0]

    def hold(self, key: int) -> float:
        """Wait until no other push of this remote agent runs, and keep it so until :meth:`release`
        (a session lock: a push that dies or loses its connection lets it go). The local files are
        opened after it: two pushes of one agent never send views of different ages out of order
        (a push that opened its files before a compaction, finishing after a push made after it,
        would file the moved traces as active again). Returns the seconds it waited."""
        lock = (f"memcli push {key}",)
        if self.conn.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", lock).fetchone()[0]:
            self.conn.commit()
            return 0.0
        started = time.perf_counter()
        self.conn.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", lock)
        self.conn.commit()
        return time.perf_counter() - started

    def release(self, key: int) -> None:
        self.conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (f"memcli push {key}",))
        self.conn.commit()

    def push(self, view: _View, key: int, done: AgentPushed) -> None:
        positions = {row[0]: row[1:] for row in self.conn.execute(
            "SELECT file, pos, head, tail FROM memcli_positions WHERE agent_key = %s", (key,))}
        self.conn.commit()
        for name in FILE_ORDER:
            fd, size = view.files.get(name, (None, 0))
            stored = positions.get(name)
            if stored is None and fd is None:
                continue
            if stored is not None and (fd is None or stored[0] > size or fingerprint(fd, stored[0]) != tuple(stored[1:])):
                self._rewrite(view, key, name, fd, size, done)
                continue
            self._append(view, key, name, fd, stored[0] if stored else 0, size, done)

    def _append(self, view: _View, key: int, name: str, fd: int, start: int, size: int, done: AgentPushed) -> None:
        """The file's lines from ``start``, batch by batch over the lanes (module docstring). A failed
        batch stops new ones; those in flight finish; then its error is raised."""
        from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

        prefix = _Prefix(start)
        free = list(self._open_lanes()) if size - start > BATCH_BYTES else [self.conn]
        flying: dict = {}
        failed: list[BaseException] = []

        def settle(finished) -> None:
            for future in finished:
                lane, n = flying.pop(future)
                if future.exception() is not None:
                    failed.append(future.exception())
                    continue
                free.append(lane)
                done.changed += future.result()
                done.records += n
                if self.progress and n:
                    self.progress(done.agent, n)

        with ThreadPoolExecutor(len(free)) as pool:
            batches = _prepared(view.dir / name, name, fd, start, size)
            for batch in batches:
                while not free and not failed:
                    settle(wait(flying, return_when=FIRST_COMPLETED).done)
                if failed:
                    break
                lane = free.pop()
                flying[pool.submit(self._batch, lane, key, name, fd, batch, prefix)] = (lane, batch[3])
            batches.close()
            settle(wait(flying).done)
        if failed:
            raise failed[0]
        if prefix.stored < prefix.end:     # batches committed out of order: the run's end, now
            with self.conn.transaction():
                _set_position(self.conn.cursor(), key, name, prefix.end, fingerprint(fd, prefix.end), exact=False)

    def _batch(self, conn, key: int, name: str, fd: int, batch, prefix: _Prefix) -> int:
        """One batch in one transaction on ``conn`` (a lane's thread): rows added or changed."""
        offset, data, rows, _ = batch
        end = offset + len(data)
        with conn.transaction():
            cur = conn.cursor()
            cur.execute("SELECT pg_advisory_xact_lock_shared(%s)", (-key,))
            changed = self._stage_and_upsert(cur, key, rows, in_order=True)
            stored = prefix.position(offset, end)
            _set_position(cur, key, name, stored, fingerprint(fd, stored), exact=False)
            crash_point("push:staged")
        prefix.committed(offset, end, stored)
        crash_point("push:committed")
        return changed

    def _stage_and_upsert(self, cur, key: int, rows: bytes, *, in_order: bool = False) -> int:
        if not rows:
            return 0
        with cur.copy(f"COPY memcli_stage ({STAGE_COLUMNS}) FROM STDIN") as copy:
            copy.write(rows)
        cur.execute(_UPSERT + (_IN_ORDER if in_order else ""), (key,))
        return max(cur.rowcount, 0)

    def _rewrite(self, view: _View, key: int, name: str, fd, size: int, done: AgentPushed) -> None:
        """The file was rewritten since the last push: all of it again, and the rows it no longer has
        removed, in one transaction (rows written remotely by ``mcp --remote`` are kept)."""
        n = 0
        with self.conn.transaction():
            cur = self.conn.cursor()
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (-key,))
            if fd is not None:
                with cur.copy(f"COPY memcli_stage ({STAGE_COLUMNS}) FROM STDIN") as copy:
                    for offset, data in _chunks(fd, 0, size):
                        rows, count = copy_rows(view.dir / name, name, offset, data)
                        copy.write(rows)
                        n += count
                cur.execute(_UPSERT, (key,))
                done.changed += max(cur.rowcount, 0)
            cur.execute("""DELETE FROM memcli_records r WHERE r.agent_key = %s AND r.file = %s AND r.pos < %s
                           AND NOT EXISTS (SELECT 1 FROM memcli_stage s WHERE s.stream = r.stream AND s.id = r.id)""",
                        (key, name, schema.REMOTE_POS))
            done.changed += max(cur.rowcount, 0)
            if fd is None:
                cur.execute("DELETE FROM memcli_positions WHERE agent_key = %s AND file = %s", (key, name))
            else:
                end = _last_line_end(fd, size)
                _set_position(cur, key, name, end, fingerprint(fd, end), exact=True)
        done.records += n
        done.rewritten.append(name)
        if self.progress and n:
            self.progress(done.agent, n)


def _prepared(path, name: str, fd: int, start: int, end: int):
    """(offset, data, COPY rows, records) of each batch, the next one made by a helper thread while
    the database works on the current one (the driver releases the GIL while it waits)."""
    from concurrent.futures import ThreadPoolExecutor

    def prepare(chunk):
        offset, data = chunk
        return (offset, data, *copy_rows(path, name, offset, data))

    chunks = _chunks(fd, start, end)
    with ThreadPoolExecutor(1) as pool:
        chunk = next(chunks, None)
        future = pool.submit(prepare, chunk) if chunk else None
        while future is not None:
            done = future.result()
            chunk = next(chunks, None)
            future = pool.submit(prepare, chunk) if chunk else None
            yield done


def connections() -> int:
    """How many connections a file's batches go over: ``$MEMCLI_PUSH_CONNECTIONS``, else :data:`CONNECTIONS`."""
    given = os.environ.get("MEMCLI_PUSH_CONNECTIONS", "").strip()
    if not given:
        return CONNECTIONS
    if not given.isdigit() or not 1 <= int(given) <= 64:
        raise UsageError(f"MEMCLI_PUSH_CONNECTIONS: a whole number from 1 to 64, got {given!r}")
    return int(given)


def _last_line_end(fd: int, size: int) -> int:
    """The offset just after the last newline before ``size`` (a torn last line is not pushed)."""
    pos = size
    while pos > 0:
        n = min(FINGERPRINT_BYTES, pos)
        data = os.pread(fd, n, pos - n)
        cut = data.rfind(b"\n")
        if cut >= 0:
            return pos - n + cut + 1
        pos -= n
    return 0


def push(memory_dir, agents: list[str] | None, url: str | None, *, all: bool = False, store_id: str | None = None,
         as_name: str | None = None, progress: Progress | None = None) -> PushResult:
    """Push ``agents`` (every agent with ``all``) to the shared store at ``url`` (module docstring)."""
    from memcli.store.layout import validate_agent_id
    from memcli.store.restore import STORE_ID_RE
    from memcli.store.restore import store_id as local_store_id

    names = list(dict.fromkeys(agents or ()))
    if all and names:
        raise UsageError("{all}: name agents or use {all}, not both", param="all")
    if all:
        names = list_agent_ids(memory_dir)
    elif not names:
        raise UsageError("name the agents to push, or {all}", param="all")
    for name in names:
        validate_agent_id(name)
    if as_name is not None:
        if len(names) != 1:
            raise UsageError("{as_name}: renames one agent; push the others separately", param="as_name")
        validate_agent_id(as_name)
    if store_id is not None and not STORE_ID_RE.fullmatch(store_id):
        raise UsageError(f"{{store_id}}: 1-64 of A-Z a-z 0-9 . _ -, starting with a letter or digit, got {store_id!r}", param="store_id")
    url = rc.resolve_url(url, "to")
    where = rc.describe(url)
    lanes = connections()
    from memcli.store.agent import AgentStore

    for name in names:                  # every agent checked before connecting
        AgentStore(memory_dir, name).require()
    started = time.perf_counter()
    pusher = _Pusher(url, where, progress, lanes)
    try:
        pusher.open()
        sid = store_id or local_store_id(memory_dir)
        results = []
        notes: list[str] = []
        for name in names:
            done = AgentPushed(name, f"{sid}/{as_name or name}")
            for attempt in range(RETRIES + 1):
                view = None
                try:
                    if pusher.conn is None:
                        pusher.open()
                    key = pusher.agent_key(sid, as_name or name)
                    waited = pusher.hold(key)
                    if waited:
                        notes.append(f"waited {waited:.1f}s for another push of {done.remote!r} to finish")
                    view = _View(memory_dir, name)    # opened once no other push of the agent runs
                    pusher.push(view, key, done)
                    done.vectors += vectors.push_agent(pusher.conn, memory_dir, name, key, notes)
                    pusher.release(key)
                    break
                except Exception as exc:
                    if not _psycopg_error(exc):
                        raise
                    if not rc.is_lost(exc) or attempt == RETRIES:
                        raise rc.failed(exc, url, f"pushing {name!r}") from None
                    done.retries += 1
                    pusher.close()
                    time.sleep(min(0.2 * 2 ** attempt, 5))
                finally:
                    if view is not None:
                        view.close()
            results.append(done)
    finally:
        pusher.close()
    return PushResult(sid, where, results, time.perf_counter() - started, notes)


def _psycopg_error(exc: BaseException) -> bool:
    import psycopg

    return isinstance(exc, psycopg.Error)
