"""``memcli sync``: every known source's sessions, each imported incrementally into its agent.

:func:`import_session` is the incremental import of one session (the rules are in
:mod:`memcli.sync`); :func:`sync` runs it over every session the chosen sources find. Per file:

* *unchanged* — size, mtime and inode as recorded: not opened;
* *appended* — same inode, larger, and the bytes before the recorded offset are still there:
  read from the offset with the importer's carry (an importer without ``resume`` re-reads the
  whole file; ids de-duplicate);
* *rewritten* — anything else: re-read whole, reconciled by trace ids (never stored twice).

Only complete lines are read from a line log; a last line without its newline is still being
written and is read next time. A session's files (a Claude Code session and its subagents) are
merged by timestamp into one ingest, all-or-nothing: a corrupt session writes nothing, keeps its
old state, and is reported (path, line, reason).
"""

from __future__ import annotations

import heapq
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import orjson

from memcli.errors import InputError, MemcliError
from memcli.sync import Identity, Session, SessionFile, get_source, parse_sources
from memcli.sync._head import is_compressed, read_bytes
from memcli.sync.naming import session_agent_id

TAIL_BYTES = 1024        # the bytes before the offset, and at the start, that must be unchanged to read on
SETTLED = 600.0           # seconds without a write after which a session is taken as finished
SAVE_EVERY = 200          # sessions between two saves of the sync state (bounds re-reading after a crash)
TITLE_CHARS = 100


@dataclass
class SessionReport:
    source: str
    path: str
    agent: str | None = None
    status: str = "unchanged"      # new | appended | rewritten | unchanged | failed
    events: int = 0                # traces added
    duplicates: int = 0            # traces read again that the agent already had
    files_read: int = 0
    skipped: Counter = field(default_factory=Counter)
    error: str | None = None       # "path: line N: reason"
    title: str | None = None
    resume: str | None = None

    def to_json(self) -> dict:
        out = {"agent": self.agent, "source": self.source, "path": self.path, "status": self.status,
               "events_added": self.events}
        if self.duplicates:
            out["duplicates"] = self.duplicates
        if self.skipped:
            out["skipped"] = dict(self.skipped)
        if self.error:
            out["error"] = self.error
        if self.resume:
            out["resume"] = self.resume
        return out


@dataclass
class SyncReport:
    sessions: list[SessionReport] = field(default_factory=list)
    dry_run: bool = False
    seconds: float = 0.0

    @property
    def failed(self) -> list[SessionReport]:
        return [s for s in self.sessions if s.status == "failed"]

    def summary(self) -> str:
        by = Counter(s.status for s in self.sessions)
        added = sum(s.events for s in self.sessions)
        changed = by["new"] + by["appended"] + by["rewritten"]
        verb = "would import" if self.dry_run else "imported"
        parts = [f"{len(self.sessions)} session{'s' if len(self.sessions) != 1 else ''} found",
                 f"{changed} {verb}" + (f" ({by['new']} new, {by['appended']} appended, {by['rewritten']} rewritten)"
                                        if changed else "")]
        if not self.dry_run:
            parts.append(f"{added} event{'s' if added != 1 else ''} added")
        parts.append(f"{by['unchanged']} unchanged")
        if by["failed"]:
            parts.append(f"{by['failed']} failed")
        skipped: Counter = Counter()
        for s in self.sessions:
            skipped.update(s.skipped)
        if skipped:
            top = ", ".join(f"{n} {kind}" for kind, n in skipped.most_common(6))
            parts.append(f"passed over: {top}" + (", ..." if len(skipped) > 6 else ""))
        return "sync: " + "; ".join(parts) + f" ({self.seconds:.2f}s)"


# ---------------------------------------------------------------------------- file state
def _stat(path: str):
    try:
        return os.stat(path)
    except OSError:
        return None


def _unchanged(entry: dict | None, st) -> bool:
    return (entry is not None and st is not None and not entry.get("pending") and entry.get("size") == st.st_size
            and entry.get("mtime_ns") == st.st_mtime_ns and entry.get("ino") == st.st_ino)


def _tail_digest(f, offset: int) -> str:
    """A digest of the first and the last :data:`TAIL_BYTES` bytes before ``offset``."""
    from memcli.importers._common import blake2b

    h = blake2b(digest_size=12)
    f.seek(0)
    h.update(f.read(min(offset, TAIL_BYTES)))
    start = max(0, offset - TAIL_BYTES)
    f.seek(start)
    h.update(f.read(offset - start))
    return h.hexdigest()


def _prefix_intact(path: str, entry: dict | None, st) -> bool:
    """The file is the one read last time, grown: same inode, not shorter than where reading
    stopped, and the bytes at its start and just before that offset are the ones read then."""
    if entry is None or st is None or entry.get("ino") != st.st_ino:
        return False
    offset = entry.get("offset")
    if not isinstance(offset, int) or offset <= 0 or st.st_size < offset:
        return False
    try:
        with open(path, "rb") as f:
            return _tail_digest(f, offset) == entry.get("tail")
    except OSError:
        return False


# ---------------------------------------------------------------------------- reading one file
class _FileRead:
    """The events one file gives this time, and the state to record once they are stored."""

    def __init__(self, spec: SessionFile, entry: dict | None, st):
        self.spec = spec
        self.entry = entry
        self.st = st
        self.items: list = []
        self.error: InputError | None = None
        self.mode = "new" if entry is None else "appended" if (
            spec.lines and not is_compressed(spec.path) and _prefix_intact(spec.path, entry, st)) else "rewritten"
        self.new_entry: dict | None = None


def _values_from(data: bytes, first_line: int, positions: list):
    """(line, value) of each complete line of ``data``; ``positions[0]`` is kept at the end offset
    (in ``data``) and line number of the last line handed out."""
    loads = orjson.loads
    from memcli.ingest.source import json_error
    from memcli.json_input import well_formed_json

    pos = 0
    line = first_line - 1
    n = len(data)
    while pos < n:
        end = data.find(b"\n", pos)
        end = n if end < 0 else end + 1
        raw = data[pos:end]
        line += 1
        positions[0] = (end, line)
        pos = end
        if not raw.strip():
            continue
        try:
            yield line, loads(raw)
        except orjson.JSONDecodeError as exc:
            value = well_formed_json(raw, exc)   # a lone surrogate, replaced (memcli.json_input)
            yield line, json_error(raw.rstrip(b"\r\n"), exc, line) if value is None else value


def _read_file(fr: _FileRead, result) -> None:
    """Read ``fr``'s file (from its offset with the importer's carry when it grew). A reader that
    finds its carry too short for what it reads (``ReadWhole``: copies of messages older than the
    carry holds) gets the file again from its start with no carry, once; what the first read
    collected is dropped, and the traces stored before are de-duplicated by id."""
    from memcli.importers._common import ReadWhole

    skipped, meta = Counter(result.skipped), dict(result.meta)
    try:
        _read_from(fr, result, resumed=True)
    except ReadWhole:
        fr.items, fr.error = [], None
        result.skipped.clear()
        result.skipped.update(skipped)
        result.meta.clear()
        result.meta.update(meta)
        _read_from(fr, result, resumed=False)


def _read_from(fr: _FileRead, result, resumed: bool) -> None:
    from memcli.importers import get_importer

    spec, entry, st = fr.spec, fr.entry, fr.st
    importer = get_importer(spec.fmt)
    resume = getattr(importer, "resume", None) if spec.lines else None
    start, line0, carry = 0, 1, None
    if resumed and fr.mode == "appended" and resume is not None and entry.get("carry") is not None:
        start, line0, carry = entry["offset"], entry.get("line", 0) + 1, entry["carry"]
    if is_compressed(spec.path):  # read whole (never "appended"); offsets and digests are of its text
        data = whole = read_bytes(spec.path)
    else:
        whole = None
        with open(spec.path, "rb") as f:
            f.seek(start)
            data = f.read()
    size_read = start + len(data)
    if spec.lines:
        end = data.rfind(b"\n") + 1  # a last line without its newline is still being written
        data, unterminated = data[:end], data[end:]
        if spec.complete_tail and unterminated.strip():
            # a format whose last line never gets its newline (Cursor): read it when it parses, but
            # never stop after it, so it is read again (and de-duplicated) once the file grows
            from memcli.json_input import loads

            try:
                loads(unterminated)   # (as the lines before it are read: a lone surrogate replaced)
            except orjson.JSONDecodeError:
                unterminated = b""
        else:
            unterminated = b""
        complete_end = start + len(data)
        positions = [(0, line0 - 1)]
        checkpoint = [None]
        reader = resume(result, carry) if resume is not None else None
        if reader is not None and hasattr(reader, "final"):
            # a file written in the last SETTLED seconds may still grow: what a reader holds
            # back awaiting its pair (a response's usage) waits for the next read
            reader.final = time.time() - st.st_mtime > SETTLED
        def values():
            for item in _values_from(data, line0, positions):
                yield item
                if reader is not None:  # the importer asks for the next line: it is done with this one
                    c = reader.checkpoint()
                    checkpoint[0] = (positions[0], c) if c is not None else checkpoint[0]
            if unterminated:
                yield from _values_from(unterminated, positions[0][1] + 1, [None])

        events = reader.events(values()) if reader is not None else importer.events(values(), result)
        _collect(fr, events)
        if checkpoint[0] is not None:
            (rel_end, last_line), carry_out = checkpoint[0]
        else:  # no point to stop at in what was read: where the last read stopped still holds
            (rel_end, last_line), carry_out = (0, line0 - 1), carry
        offset = start + rel_end
        if reader is None:
            offset, last_line = start + positions[0][0], positions[0][1]
        if whole is not None:
            import io

            tail = _tail_digest(io.BytesIO(whole), offset)
        else:
            with open(spec.path, "rb") as f:
                tail = _tail_digest(f, offset)
        # the reader holds lines back (awaiting their pair): read on from the offset next time even
        # if the file does not change, so that once it is settled they are imported
        pending = offset < complete_end
    else:
        import io

        from memcli.ingest.source import iter_json_values

        _collect(fr, importer.events(iter_json_values(io.BytesIO(data)), result))
        offset, last_line, carry_out, tail, pending = size_read, 0, None, None, False
    fr.new_entry = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "ino": st.st_ino, "offset": offset,
                    "line": last_line, "tail": tail, "carry": carry_out}
    if pending:
        fr.new_entry["pending"] = True


def _collect(fr: _FileRead, events) -> None:
    from memcli.models import TAG_SIDECHAIN

    sidechain = fr.spec.sidechain
    for line, event in events:
        if isinstance(event, Exception):
            if fr.error is None:
                fr.error = event if isinstance(event, InputError) else InputError(str(event), line=line)
            continue
        if sidechain is not None:
            tags = event.get("tags") or []
            if TAG_SIDECHAIN not in tags:
                event["tags"] = [*tags, TAG_SIDECHAIN]
            event["agent_id"] = sidechain  # the file is the subagent's (its lines' agentId is the same)
        fr.items.append((line, event))


def _merged(reads: list[_FileRead]):
    """The files' events as one stream: by timestamp across files, each file's own order kept."""
    if len(reads) == 1:
        return reads[0].items

    def keyed(i, items):
        last = float("-inf")
        for n, (line, event) in enumerate(items):
            ts = event.get("ts")
            if isinstance(ts, (int, float)):
                last = ts
            yield (last, i, n), (line, event)

    return [item for _, item in heapq.merge(*(keyed(i, r.items) for i, r in enumerate(reads)))]


# ---------------------------------------------------------------------------- one session
def _first_ask(items) -> str | None:
    for _, event in items:
        if event.get("trace_type") == "user" and not event.get("tags") and isinstance(event.get("content"), str):
            text = " ".join(event["content"].split())
            if text:
                return text[:TITLE_CHARS]
    return None


def session_agent(source, session: Session, files: dict) -> tuple[str, Identity | None]:
    """The session's agent name: remembered in the sync state, else from its identity."""
    known = files.get(session.main.path)
    if known and isinstance(known.get("agent"), str):
        return known["agent"], None
    ident = source.identify(session)
    return session_agent_id(source.name, ident.session_id, cwd=ident.cwd, project_key=ident.project_key), ident


def import_session(memory_dir: str | os.PathLike, session: Session, files: dict | None = None, *,
                   dry_run: bool = False, redact: bool = True, save: bool | None = None,
                   changed: dict | None = None) -> SessionReport:
    """Import what is new in one session (module docstring) into its agent.

    ``files`` is the source's sync state (path -> entry, :mod:`memcli.store.sync_state`), loaded
    when None; the entries this import changes are put into it and into ``changed``, and written
    to the store when ``save`` (default: when ``files`` was not given). This is the entry point a
    harness hook uses for a live transcript: the same agent name, the same offsets as ``sync``.
    """
    from memcli.store import sync_state

    source = get_source(session.source)
    own_state = files is None
    if files is None:
        files = sync_state.load_files(memory_dir, source.name)
    save = own_state if save is None else save
    report = SessionReport(source.name, session.main.path)
    stats = [(spec, _stat(spec.path)) for spec in session.files]
    todo = [(spec, st) for spec, st in stats if st is not None and not _unchanged(files.get(spec.path), st)]
    if not todo:
        report.agent = (files.get(session.main.path) or {}).get("agent")
        return report
    try:
        agent, ident = session_agent(source, session, files)
    except (OSError, MemcliError, ValueError) as exc:
        report.status, report.error = "failed", f"{session.main.path}: {exc}"
        return report
    report.agent = agent
    if ident is not None:
        report.resume, report.title = source.resume_command(ident), ident.title
    reads = [_FileRead(spec, files.get(spec.path), st) for spec, st in todo]
    statuses = {r.mode for r in reads}
    report.status = "new" if files.get(session.main.path) is None else (
        "rewritten" if "rewritten" in statuses else "appended" if "appended" in statuses else "new")
    if dry_run:
        return report
    from memcli.ingest.pipeline import IngestResult, ingest_events
    from memcli.store.agent import AgentStore

    store = AgentStore(memory_dir, agent)
    result = IngestResult(agent)
    for fr in reads:
        try:
            _read_file(fr, result)
        except OSError as exc:
            report.status, report.error = "failed", f"{fr.spec.path}: cannot read: {exc.strerror or exc}"
            return report
        report.files_read += 1
        if fr.error is not None:
            report.status = "failed"
            report.error = f"{fr.spec.path}: {fr.error}"
            return report
    items = _merged(reads)
    report.skipped = result.skipped
    redactor = None
    if redact:
        import memcli.redact as redactor
    if items:
        try:
            ingest_events(store, iter(items), redactor=redactor, source_event=source.name, result=result)
        except InputError as exc:
            report.status, report.error = "failed", f"{session.main.path}: {exc}"
            return report
    report.events, report.duplicates = result.appended, result.duplicates
    _write_meta(store, source, session, ident, report, _first_ask(items), result)
    new_entries = {}
    for fr in reads:
        entry = dict(fr.new_entry)
        entry["agent"] = agent
        files[fr.spec.path] = entry
        new_entries[fr.spec.path] = entry
    if changed is not None:
        changed.update(new_entries)
    if save:
        sync_state.save_files(memory_dir, source.name, new_entries)
    return report


def _write_meta(store, source, session: Session, ident: Identity | None, report: SessionReport,
                title: str | None, result) -> None:
    from memcli.store import sync_state

    if not store.exists():
        return
    old = sync_state.read_source_meta(store.paths) or {}
    meta = dict(old)
    meta.update({"source": source.name, "source_path": session.main.path})
    if ident is not None:
        meta["session_id"] = ident.session_id
        resume = source.resume_command(ident)
        if resume:
            meta["resume"] = resume
    for key, value in result.meta.items():
        if isinstance(value, list):  # lists grow across imports (linked pull requests)
            meta[key] = list(dict.fromkeys([*(meta.get(key) or []), *value]))
        else:
            meta[key] = value
    harness_title = meta.get("custom_title") or meta.get("ai_title")
    if harness_title or (title and not meta.get("title")):
        meta["title"] = harness_title or title
    report.title = meta.get("title")
    report.resume = meta.get("resume")
    sync_state.write_source_meta(store, meta)


# ---------------------------------------------------------------------------- every session
Progress = Callable[..., None]


def sync(memory_dir: str | os.PathLike, *, home: str | os.PathLike | None = None,
         source: str | list | None = None, dry_run: bool = False, redact: bool = True,
         progress: Progress | None = None, path: list | None = None) -> SyncReport:
    """Find the sessions of every chosen source under ``home`` (default ``~``) and import what is
    new (module docstring). ``progress(n, total=None)`` is told of each session done. ``path``:
    files kept elsewhere (a data export, an Aider log: :mod:`memcli.sync.given`), imported too."""
    from memcli.store import sync_state

    started = time.monotonic()
    home_path = Path(os.path.abspath(os.path.expanduser("~") if home is None else home))
    report = SyncReport(dry_run=dry_run)
    found = [(name, list(get_source(name).find(home_path))) for name in parse_sources(source)]
    if path:
        from memcli.sync.given import given_sessions

        extra = given_sessions(path, [name for name, _ in found])
        found = [(name, sessions + [s for s in extra.get(name, ())
                                    if s.main.path not in {x.main.path for x in sessions}])
                 for name, sessions in found]
    if progress is not None:
        progress(0, total=sum(len(sessions) for _, sessions in found))
    for name, sessions in found:
        files = sync_state.load_files(memory_dir, name)
        changed: dict = {}
        many = getattr(get_source(name), "import_sessions", None)  # one file of many sessions (a data export)
        for session in sessions:
            if many is not None:
                report.sessions.extend(many(memory_dir, session, files, dry_run=dry_run, redact=redact,
                                            changed=changed))
            else:
                report.sessions.append(import_session(memory_dir, session, files, dry_run=dry_run, redact=redact,
                                                      save=False, changed=changed))
            if progress is not None:
                progress(1)
            if len(changed) >= SAVE_EVERY:
                sync_state.save_files(memory_dir, name, changed)
                changed = {}
        if not dry_run:
            sync_state.save_files(memory_dir, name, changed)
    report.seconds = time.monotonic() - started
    return report
