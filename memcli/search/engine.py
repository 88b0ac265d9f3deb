"""Ranked search over one agent's memory (``memcli search``, MCP ``memory_search``, recall).

A search first catches the index up with the files (:func:`memcli.store.search_index.catch_up`;
only the files the search looks at), then asks FTS5 for the best matches of *all* the query's
terms; when nothing has them all and the query has more than one term, it asks again for *any*
of them and says so (``mode == "any"``). Ranking is BM25 (SQLite's ``bm25()``), best first, ties
newest first; ``score`` is the negated bm25 value, so higher is better.

Each hit is read back from its JSONL line (the index stores no text for the archive), which also
gives the snippet: up to :data:`SNIPPET_CHARS` characters around the first query word found,
the word marked ``**like this**``. A trace indexed in both the active file and the archive (a
search while a compaction moves it) is reported once. With ``live_only`` superseded summaries and
facts are left out (the snapshot's recall wants only live memory). An index that is not a usable
database is deleted and built again (it is a cache), with a note.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass, field

from memcli.errors import UsageError
from memcli.search.query import Query, parse_query
from memcli.sizes import counted
from memcli.store import search_index
from memcli.store.agent import AgentStore

KINDS = {"trace": ("active", "archive"), "episodic": ("episodic",), "semantic": ("semantic",)}
KIND_OF_FILE = {"active": "trace", "archive": "trace", "episodic": "episodic", "semantic": "semantic"}
TIER_OF_FILE = {"active": "active", "archive": "archive", "episodic": "episodic", "semantic": "semantic"}
SNIPPET_CHARS = 200
# a query matching more records than this ranks only the newest this many: scoring every match
# of words found in most records costs seconds on a million traces, and tells little
BROAD_MATCHES = 20_000
MAX_LIMIT = 1000


@dataclass
class Hit:
    id: str
    kind: str            # trace, episodic or semantic
    tier: str            # active, archive, episodic or semantic
    turn: str | None     # a trace's turn; a summary's first..last turn
    ts: float | None
    trace_type: str | None
    tool_name: str | None
    score: float
    snippet: str
    record: dict = field(repr=False, default_factory=dict)

    def to_json(self) -> dict:
        return {"id": self.id, "kind": self.kind, "tier": self.tier, "turn": self.turn, "ts": self.ts,
                "trace_type": self.trace_type, "tool_name": self.tool_name, "score": self.score,
                "snippet": self.snippet}


@dataclass
class SearchResult:
    query: Query
    mode: str                                  # "all" (every term) or "any" (fallback)
    hits: list[Hit]
    notes: list[str] = field(default_factory=list)


def parse_kinds(kinds) -> tuple[str, ...]:
    """``--kind`` values (repeatable, comma-separated) -> kinds; none given means every kind."""
    out: list[str] = []
    for value in kinds or ():
        for part in str(value).split(","):
            part = part.strip()
            if not part:
                continue
            if part not in KINDS:
                raise UsageError(f"--kind: expected trace, episodic or semantic, got {part!r}")
            if part not in out:
                out.append(part)
    return tuple(out) or tuple(KINDS)


def open_index(store: AgentStore, names, notes: list[str]):
    """The agent's index, caught up with the files ``names``; rebuilt if unreadable."""
    new = not search_index.index_path(store.paths).exists()
    try:
        conn = search_index.connect(store.paths)
    except search_index.IndexUnreadable as exc:
        search_index.remove(store.paths)
        notes.append(f"{exc.message}: rebuilt it")
        conn = search_index.connect(store.paths)
    try:
        done = search_index.catch_up(store.paths, conn, names)
    except sqlite3.DatabaseError as exc:
        conn.close()
        if not search_index._is_corruption(exc):
            raise
        search_index.remove(store.paths)
        notes.append(f"the search index was damaged ({exc}): rebuilt it")
        conn = search_index.connect(store.paths)
        done = search_index.catch_up(store.paths, conn, names)
    if done.rebuilt:
        notes.append("a file was rewritten: rebuilt the search index")
    elif new and done.indexed:
        notes.append(f"built the search index ({counted(done.indexed, 'record')}); later searches only add what is new")
    return conn


def search(store: AgentStore, text: str, *, limit: int = 10, offset: int = 0, kinds=None,
           since: float | None = None, until: float | None = None, live_only: bool = False) -> SearchResult:
    store.require()
    if limit < 1 or limit > MAX_LIMIT:
        raise UsageError(f"--limit must be between 1 and {MAX_LIMIT}, got {limit}")
    if offset < 0:
        raise UsageError(f"offset must be 0 or more, got {offset}")
    query = parse_query(text)
    if query.empty:
        raise UsageError(f"the query {text!r} has no word to search for (letters or digits)")
    names = tuple(name for kind in parse_kinds(kinds) for name in KINDS[kind])
    store.recover_if_needed()  # an interrupted ingest or compaction is settled before reading
    notes: list[str] = []
    superseded = _superseded(store, names) if live_only else set()
    conn = open_index(store, names, notes)
    try:
        for _attempt in range(2):
            mode = "all"
            hits = _ranked(store, conn, query.match_all(), query, names, since, until, limit, offset, superseded,
                           notes)
            if hits is not None and not hits and len(query.terms) > 1:
                mode = "any"
                hits = _ranked(store, conn, query.match_any(), query, names, since, until, limit, offset,
                               superseded, notes)
            if hits is not None:
                break
            search_index.catch_up(store.paths, conn, names)  # a file was rewritten under us
        else:
            hits = []
    finally:
        conn.close()
    return SearchResult(query, mode, hits, notes)


def _superseded(store: AgentStore, names) -> set[str]:
    from memcli.models import superseded_ids
    from memcli.store import jsonl

    out: set[str] = set()
    for name in ("episodic", "semantic"):
        if name in names:
            out.update(superseded_ids(record for _, _, record in jsonl.iter_records(getattr(store.paths, name))))
    return out


def _ranked(store, conn, match: str, query: Query, names, since, until, limit: int, offset: int,
            superseded: set[str], notes: list[str]) -> list[Hit] | None:
    """The hits of one expression; None when a hit's file changed since it was indexed."""
    want = limit
    fetch = limit + 8
    sql_offset = offset
    hits: list[Hit] = []
    seen: set[str] = set()
    min_rowid = None
    if since is None and until is None:
        try:
            min_rowid = search_index.broad_boundary(conn, match, names=names, newest=BROAD_MATCHES)
        except sqlite3.OperationalError as exc:
            raise UsageError(f"cannot search for {query.text!r}: {exc}") from None
        if min_rowid is not None:
            note = (f"more than {BROAD_MATCHES:,} records match {match_terms(query)}: ranked the "
                    f"{BROAD_MATCHES:,} newest of them (add a rarer word to search all)")
            if note not in notes:   # once, though a retry after a catch-up ranks again
                notes.append(note)
    while True:
        try:
            rows = search_index.query(conn, match, names=names, since=since, until=until, limit=fetch,
                                      offset=sql_offset, min_rowid=min_rowid)
        except sqlite3.OperationalError as exc:  # defensive: parse_query never builds bad syntax
            raise UsageError(f"cannot search for {query.text!r}: {exc}") from None
        expected = search_index.covered_files(conn)
        scores = dict(rows)
        for rowid, name, _offset, record in search_index.read_records(store.paths, [r for r, _ in rows], expected):
            if record is None:
                return None
            rid = record.get("id")
            if not isinstance(rid, str) or rid in seen or rid in superseded:
                continue
            seen.add(rid)
            hits.append(_hit(name, record, -scores[rowid], query))
            if len(hits) >= want:
                return hits
        if len(rows) < fetch:
            return hits
        sql_offset += fetch


def match_terms(query: Query) -> str:
    return ", ".join(t.text for t in query.terms)


def _hit(name: str, record: dict, score: float, query: Query) -> Hit:
    kind = KIND_OF_FILE[name]
    if kind == "trace":
        turn = record.get("turn_id")
    elif kind == "episodic":
        turn_ids = [t for t in record.get("turn_ids") or () if isinstance(t, str)]
        turn = None if not turn_ids else turn_ids[0] if len(turn_ids) == 1 else f"{turn_ids[0]}..{turn_ids[-1]}"
    else:
        turn_ids = [t for t in record.get("source_turn_ids") or () if isinstance(t, str)]
        turn = turn_ids[-1] if turn_ids else None
    ts = record.get("ts")
    return Hit(id=record["id"], kind=kind, tier=TIER_OF_FILE[name], turn=turn if isinstance(turn, str) else None,
               ts=float(ts) if isinstance(ts, (int, float)) and not isinstance(ts, bool) else None,
               trace_type=record.get("trace_type") if kind == "trace" else None,
               tool_name=record.get("tool_name") if kind == "trace" else None,
               score=round(score, 4), snippet=snippet(search_index.record_text(name, record), query), record=record)


def snippet(text: str, query: Query, width: int = SNIPPET_CHARS) -> str:
    """About ``width`` characters of ``text`` around the first query word in it, marked **so**."""
    text = " ".join(text.split())
    match = None
    prefixes = query.prefix_words()
    for word in query.words:
        # the word itself; else, for a prefix term or a word the stemmer may have shortened
        # (alphabetic), any word starting like it
        m = re.search(r"(?<!\w)" + re.escape(word) + r"(?!\w)", text, re.IGNORECASE)
        if m is None and (word in prefixes or word.isalpha()):
            stem = word if word in prefixes or len(word) <= 4 else word[:max(4, len(word) - 3)]
            m = re.search(r"(?<!\w)" + re.escape(stem) + r"\w*", text, re.IGNORECASE)
        if m and (match is None or m.start() < match.start()):
            match = m
    if match is None:
        return text[:width] + ("…" if len(text) > width else "")
    start = max(0, match.start() - width // 3)
    if start:
        space = text.find(" ", start, match.start())
        start = space + 1 if space >= 0 else start
    end = min(len(text), start + width)
    body = text[start:match.start()] + "**" + match.group(0) + "**" + text[match.end():end]
    return ("…" if start else "") + body + ("…" if end < len(text) else "")
