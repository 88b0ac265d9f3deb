"""Ranked search over one agent's memory (``memcli search``, MCP ``memory_search``, recall).

A search first catches the index up with the files (:func:`memcli.store.search_index.catch_up`;
only the files the search looks at), then ranks one list:

1. **Lexical.** FTS5 finds the records holding *any* of the query's terms
   (:meth:`memcli.search.query.Query.match_any`; stop words are already out) and gives the
   best :data:`POOL` by BM25 (SQLite's ``bm25()``). Each is read back from its JSONL line and
   re-scored: ``bm25 x (1 + COVER x coverage) x (1 + NEAR x proximity)``, where ``coverage`` is
   the share of the query's terms the record holds (each term weighted by its IDF, so a rare word
   counts more than a common one) and ``proximity`` is 1 when the matched terms stand within a
   few words of each other (:mod:`memcli.search.match`). So a record with every word comes
   first, and records with some of them fill the rest of the page — one list, never "all words,
   else any word". With ``recent`` the score is also weighted by age: ``x (0.5 + 0.5 x
   2^(-age / RECENT_HALF_LIFE))``, the age counted back from the newest candidate.
2. **Hybrid**, when an embedding model is given (``embed_model``, else the store's
   ``config.json`` ``embed_model``; :mod:`memcli.search.embed`): the records nearest the
   query's embedding are a second ranked list, fused with the lexical one by reciprocal rank
   (``sum 1 / (RRF_K + rank)``). A model that fails leaves the lexical list, with a note.
3. Identical texts (boilerplate tool results, the same fact remembered twice) are one hit: the
   best ranked, with ``count`` the number of ranked candidates that had that text.

Facts and summaries that were superseded or forgotten (:func:`memcli.models.superseded_ids`;
a forget tombstone supersedes its item and itself) are left out unless ``history``; with it
they are ranked with the rest, and every hit says which it is.

Hit fields (stable: ``search --all`` and ``search --remote`` keep this shape)::

    id, kind (trace|episodic|semantic), tier (active|archive|episodic|semantic), turn, ts,
    trace_type, tool_name, score (higher is better: the boosted BM25, or the fused reciprocal
    rank in a hybrid search), snippet (about SNIPPET_CHARS characters, every matched term
    **marked**), count (identical texts collapsed into this hit, 1 when alone),
    status (live|superseded|forgotten), superseded_by (the id that superseded it, else null)

Order: best score first, ties newest first. ``mode`` is ``"all"`` when the best hit holds every
term, else ``"any"``. A query more than :data:`BROAD_MATCHES` records match ranks only the newest
that many (with a note). A trace indexed in both the active file and the archive (a search while
a compaction moves it) is reported once. An index that is not a usable database is deleted and
built again (it is a cache), with a note.
"""

from __future__ import annotations

import math
import sqlite3
from dataclasses import dataclass, field

from memcli.errors import UsageError
from memcli.search.match import Matcher, coverage, highlight, proximity
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
POOL = 200              # lexical candidates re-scored (at least; more for a deep page)
MAX_POOL = 2_000        # ... and at most, when identical texts fill the first pools
COVER = 2.0             # weight of coverage (share of the query's terms held)
NEAR = 0.5              # weight of proximity
RRF_K = 60
RECENT_HALF_LIFE = 7 * 86400.0
LIVE, SUPERSEDED, FORGOTTEN = "live", "superseded", "forgotten"


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
    count: int = 1
    status: str = LIVE
    superseded_by: str | None = None
    record: dict = field(repr=False, default_factory=dict)

    def to_json(self) -> dict:
        return {"id": self.id, "kind": self.kind, "tier": self.tier, "turn": self.turn, "ts": self.ts,
                "trace_type": self.trace_type, "tool_name": self.tool_name, "score": self.score,
                "snippet": self.snippet, "count": self.count, "status": self.status,
                "superseded_by": self.superseded_by}


@dataclass
class SearchResult:
    query: Query
    mode: str                                  # "all": the best hit has every term; else "any"
    hits: list[Hit]
    notes: list[str] = field(default_factory=list)
    hybrid: bool = False                       # an embedding ranking was fused in


@dataclass
class _Candidate:
    rowid: int
    name: str
    record: dict
    text: str
    spans: list
    score: float = 0.0
    covers_all: bool = False


def parse_kinds(kinds) -> tuple[str, ...]:
    """``--kind`` values (repeatable, comma-separated) -> kinds; none given means every kind."""
    out: list[str] = []
    for value in kinds or ():
        for part in str(value).split(","):
            part = part.strip()
            if not part:
                continue
            if part not in KINDS:
                raise UsageError(f"{{kind}}: expected trace, episodic or semantic, got {part!r}", param="kind")
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


def parse(text: str) -> Query:
    """The query, or a usage error for one with nothing to search for."""
    query = parse_query(text)
    if query.only_stop_words:
        raise UsageError(f"the query {text!r} has only common words ({', '.join(query.dropped)}), which say nothing "
                         "about what to find: add a word that does, or quote a phrase (\"...\") to search for it")
    if query.empty:
        raise UsageError(f"the query {text!r} has no word to search for (letters or digits)")
    return query


def search(store: AgentStore, text: str, *, limit: int = 10, offset: int = 0, kinds=None,
           since: float | None = None, until: float | None = None, history: bool = False, recent: bool = False,
           embed_model: str | None = None, embed_api_base: str | None = None) -> SearchResult:
    store.require()
    if limit < 1 or limit > MAX_LIMIT:
        raise UsageError(f"{{limit}} must be between 1 and {MAX_LIMIT}, got {limit}", param="limit")
    if offset < 0:
        raise UsageError(f"offset must be 0 or more, got {offset}")
    query = parse(text)
    names = tuple(name for kind in parse_kinds(kinds) for name in KINDS[kind])
    from memcli.search import embed

    model, api_base = embed.settings(store, embed_model, embed_api_base)
    store.recover_if_needed()  # an interrupted ingest or compaction is settled before reading
    notes: list[str] = []
    statuses = _statuses(store, names)
    pool = max(POOL, 2 * (offset + limit))
    conn = open_index(store, names, notes)
    vectors = None
    try:
        for _attempt in range(2):
            ranked = _lexical(store, conn, query, names, since, until, pool, statuses, history, notes)
            if model is not None and ranked is not None:
                vectors = embed.nearest(store, conn, query.text, model, api_base, names, since, until, pool, notes)
                if vectors:
                    ranked = _fuse(store, conn, query, ranked, vectors, statuses, history)
            if ranked is not None:
                break
            search_index.catch_up(store.paths, conn, names)  # a file was rewritten under us
        else:
            ranked = []
    finally:
        conn.close()
    if recent:
        _weigh_recency(ranked)
    ranked.sort(key=lambda c: (-c.score, -c.rowid))
    hits = _collapse(ranked, statuses)[offset:offset + limit]
    mode = "all" if ranked and ranked[0].covers_all else "any"
    return SearchResult(query, mode, hits, notes, hybrid=bool(vectors))


def _statuses(store: AgentStore, names) -> dict[str, tuple[str, str | None]]:
    """id -> (superseded|forgotten, the id that superseded it or None) for the summaries and
    facts that are not live."""
    from memcli.models import superseded_ids
    from memcli.store import jsonl

    out: dict[str, tuple[str, str | None]] = {}
    for name in ("episodic", "semantic"):
        if name in names:
            by = superseded_ids(record for _, _, record in jsonl.iter_records(getattr(store.paths, name)))
            for old, new in by.items():
                tombstone = by.get(new) == new          # a forget tombstone supersedes itself
                out[old] = (FORGOTTEN if tombstone else SUPERSEDED, None if new == old else new)
    return out


def _weights(conn, query: Query) -> list[float]:
    """Per term, the IDF of its rarest word (1.0 where the index cannot tell)."""
    from memcli.search.match import stem

    total = search_index.record_count(conn)
    out = []
    for term in query.terms:
        words = term.words[:-1] if term.prefix else term.words
        dfs = [search_index.document_frequency(conn, stem(w)) for w in words]
        dfs = [d for d in dfs if d is not None]
        if not dfs or not total:
            out.append(1.0)
            continue
        df = min(dfs)
        out.append(math.log(1.0 + (total - df + 0.5) / (df + 0.5)))
    return out


def _lexical(store, conn, query: Query, names, since, until, pool: int, statuses, history: bool,
             notes: list[str]) -> list[_Candidate] | None:
    """The re-scored lexical candidates, unsorted; None when a hit's file changed since it was
    indexed (catch up and ask again)."""
    match = query.match_any()
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
    matcher = Matcher(query)
    weights = _weights(conn, query) if len(query.terms) > 1 else [1.0]
    rows: list = []
    found: list[_Candidate] = []
    # read on while identical texts leave fewer distinct candidates than a pool (boilerplate that
    # a word matches in hundreds of records must not crowd out everything else), up to MAX_POOL
    while True:
        try:
            page = search_index.query(conn, match, names=names, since=since, until=until, limit=pool,
                                      offset=len(rows), min_rowid=min_rowid)
        except sqlite3.OperationalError as exc:  # defensive: parse_query never builds bad syntax
            raise UsageError(f"cannot search for {query.text!r}: {exc}") from None
        more = _read(store, conn, [r for r, _ in page], matcher, statuses, history)
        if more is None:
            return None
        rows += page
        found += more
        if len(page) < pool or len(rows) >= MAX_POOL or len({c.text for c in found}) >= pool // 2:
            break
    bm25 = dict(rows)
    for c in found:
        cov = coverage(c.spans, weights)
        c.covers_all = all(c.spans)
        c.score = -bm25[c.rowid] * (1.0 + COVER * cov) * (1.0 + NEAR * proximity(c.spans))
    return found


def _read(store, conn, rowids, matcher: Matcher, statuses, history: bool) -> list[_Candidate] | None:
    expected = search_index.covered_files(conn)
    out: list[_Candidate] = []
    seen: set[str] = set()
    for rowid, name, _offset, record in search_index.read_records(store.paths, rowids, expected):
        if record is None:
            return None
        rid = record.get("id")
        if not isinstance(rid, str) or rid in seen:
            continue
        if not history and rid in statuses and KIND_OF_FILE[name] != "trace":
            continue
        seen.add(rid)
        text = " ".join(search_index.record_text(name, record).split())
        out.append(_Candidate(rowid, name, record, text, matcher.spans(text)))
    return out


def _fuse(store, conn, query: Query, lexical: list[_Candidate], nearest: list[int], statuses,
          history: bool) -> list[_Candidate] | None:
    """Reciprocal-rank fusion of the lexical candidates and the nearest vectors."""
    lexical = sorted(lexical, key=lambda c: (-c.score, -c.rowid))
    by_rowid = {c.rowid: c for c in lexical}
    missing = [r for r in nearest if r not in by_rowid]
    if missing:
        extra = _read(store, conn, missing, Matcher(query), statuses, history)
        if extra is None:
            return None
        ids = {c.record["id"] for c in lexical}
        for c in extra:
            if c.record["id"] not in ids:
                c.covers_all = all(c.spans)
                by_rowid[c.rowid] = c
    fused = reciprocal_rank([c.rowid for c in lexical], [r for r in nearest if r in by_rowid])
    out = []
    for rowid, score in fused.items():
        c = by_rowid[rowid]
        c.score = score
        out.append(c)
    return out


def reciprocal_rank(*rankings) -> dict:
    """Reciprocal-rank fusion of ranked lists of keys, best first: key -> the sum, over the lists
    holding it, of ``1 / (RRF_K + rank)`` (rank from 1). The rule of hybrid search, local and
    remote (:mod:`memcli.remote.search`)."""
    fused: dict = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, 1):
            fused[key] = fused.get(key, 0.0) + 1.0 / (RRF_K + rank)
    return fused


def _weigh_recency(ranked: list[_Candidate]) -> None:
    times = [c.record.get("ts") for c in ranked]
    times = [t for t in times if isinstance(t, (int, float)) and not isinstance(t, bool)]
    if not times:
        return
    newest = max(times)
    for c in ranked:
        ts = c.record.get("ts")
        age = newest - ts if isinstance(ts, (int, float)) and not isinstance(ts, bool) else None
        c.score *= 0.5 if age is None else 0.5 + 0.5 * 2.0 ** (-max(0.0, age) / RECENT_HALF_LIFE)


def _collapse(ranked: list[_Candidate], statuses) -> list[Hit]:
    """One hit per distinct text (per kind), best ranked first, counting the others."""
    hits: list[Hit] = []
    first: dict[tuple[str, str], Hit] = {}
    for c in ranked:
        key = (KIND_OF_FILE[c.name], c.text)
        hit = first.get(key) if c.text else None
        if hit is not None:
            hit.count += 1
            continue
        status, by = statuses.get(c.record["id"], (LIVE, None)) if KIND_OF_FILE[c.name] != "trace" else (LIVE, None)
        hit = _hit(c.name, c.record, c.score, None, text=c.text, spans=c.spans, status=status, superseded_by=by)
        if c.text:
            first[key] = hit
        hits.append(hit)
    return hits


def match_terms(query: Query) -> str:
    return ", ".join(t.text for t in query.terms)


def _hit(name: str, record: dict, score: float, query: Query | None, *, text: str | None = None, spans=None,
         status: str = LIVE, superseded_by: str | None = None) -> Hit:
    """The hit for ``record`` of file ``name`` (also for :mod:`memcli.remote.search`'s rows): its
    snippet from ``text``/``spans`` when the ranking has them, else found for ``query``."""
    kind = KIND_OF_FILE[name]
    if kind == "trace":
        turn = record.get("turn_id")
    elif kind == "episodic":
        turn_ids = [t for t in record.get("turn_ids") or () if isinstance(t, str)]
        turn = None if not turn_ids else turn_ids[0] if len(turn_ids) == 1 else f"{turn_ids[0]}..{turn_ids[-1]}"
    else:
        turn_ids = [t for t in record.get("source_turn_ids") or () if isinstance(t, str)]
        turn = turn_ids[-1] if turn_ids else None
    if text is None:
        text = " ".join(search_index.record_text(name, record).split())
    if spans is None:
        spans = Matcher(query).spans(text)
    ts = record.get("ts")
    return Hit(id=record["id"], kind=kind, tier=TIER_OF_FILE[name], turn=turn if isinstance(turn, str) else None,
               ts=float(ts) if isinstance(ts, (int, float)) and not isinstance(ts, bool) else None,
               trace_type=record.get("trace_type") if kind == "trace" else None,
               tool_name=record.get("tool_name") if kind == "trace" else None,
               score=round(score, 4), snippet=highlight(text, spans, SNIPPET_CHARS), status=status,
               superseded_by=superseded_by, record=record)
