"""``memcli search --remote``: ranked hits from the shared store (memcli.remote, docs/remote.md).

The question is split into terms by the local search's rules (:func:`memcli.search.query.parse_query`:
``"a phrase"``, punctuation splitting identifiers) and handed to PostgreSQL's
``websearch_to_tsquery('english', ...)`` (stop words dropped, words stemmed); it is matched against the GIN-indexed
``tsv`` column; hits are ranked by ``ts_rank_cd``, best first, ties newest first. As in local
search, every word must match first; when nothing has them all and the query has more than one
word, records with any of them are ranked instead (``mode == "any"``). A query matching more than
about :data:`BROAD_MATCHES` records ranks a sample of about that many (``gin_fuzzy_search_limit``
bounds the index scan; a sequential scan stops at that many), with a note, so a common word answers
in bounded time over millions of rows.

A hit has the shape of a local hit (:meth:`memcli.search.engine.Hit.to_json`: id, kind, tier,
turn, ts, trace_type, tool_name, score, snippet), built by the same code from the stored line,
plus ``agent`` (``STORE/NAME``: ids expand with ``memcli pull`` or ``mcp --remote``'s
memory_get).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import orjson

from memcli.errors import UsageError
from memcli.remote import connect as rc
from memcli.remote import schema

BROAD_MATCHES = 5_000


@dataclass
class RemoteSearchResult:
    query: object                     # memcli.search.query.Query (the words, for notes)
    mode: str                         # "all" or "any"
    hits: list                        # memcli.search.engine.Hit, each with .agent set
    notes: list[str] = field(default_factory=list)
    hybrid: bool = False              # the nearest vectors were fused in (memcli.remote.vectors)


# a summary or fact another item of its agent and file supersedes (memcli.models.superseded_ids: a
# forget tombstone lists the item and itself) is left out, as local search leaves it out
# (with ``history`` they are ranked too, their hits marked superseded)
_SUPERSEDED = """(r.kind IN ('episodic', 'semantic') AND EXISTS (
    SELECT 1 FROM memcli_records s WHERE s.agent_key = r.agent_key AND s.file = r.file
    AND s.line LIKE '%%' || r.id || '%%' AND (s.line::jsonb -> 'supersedes') ? r.id))"""


def _filters(agent_key, kinds, since, until, history: bool) -> tuple[list[str], list]:
    """The conditions on a record ``r`` every ranking of a search applies, and their arguments."""
    where = [] if history else [f"NOT {_SUPERSEDED}"]
    args: list = []
    for condition, value in (("r.agent_key = %s", agent_key), ("r.kind = ANY(%s)", list(kinds) if kinds else None),
                             ("r.ts >= %s", since), ("r.ts <= %s", until)):
        if value is not None:
            where.append(condition)
            args.append(value)
    return where, args


def _ranked(conn, tsquery_text: str, filters, limit: int, offset: int, notes: list[str], history: bool = False):
    """Rows (store_id, name, tier, line, score, matched, superseded, agent_key, stream, id, ts), best first."""
    where, args = filters
    sql = f"""
        WITH q AS (SELECT websearch_to_tsquery('{schema.TS_CONFIG}', %s) AS q),
        m AS (SELECT r.agent_key, r.stream, r.id, r.ts, ts_rank_cd(r.tsv, q.q) AS score
              FROM memcli_records r, q WHERE {' AND '.join(["r.tsv @@ q.q", *where])} LIMIT {BROAD_MATCHES + 1}),
        top AS (SELECT * FROM m ORDER BY score DESC, ts DESC NULLS LAST LIMIT %s OFFSET %s)
        SELECT a.store_id, a.name, r.tier, r.line, top.score, (SELECT count(*) FROM m) AS matched,
               {_SUPERSEDED if history else 'false'} AS superseded, r.agent_key, r.stream, r.id, r.ts
        FROM top JOIN memcli_records r USING (agent_key, stream, id) JOIN memcli_agents a USING (agent_key)
        ORDER BY top.score DESC, top.ts DESC NULLS LAST"""
    _settings(conn)
    rows = conn.execute(sql, (tsquery_text, *args, limit, offset)).fetchall()
    conn.rollback()
    if rows and rows[0][5] >= BROAD_MATCHES * 3 // 4:
        note = (f"about {BROAD_MATCHES:,} or more records match: ranked a sample of about {BROAD_MATCHES:,} "
                "of them (add a rarer word to search all)")
        if note not in notes:
            notes.append(note)
    return rows


def _settings(conn) -> None:
    conn.execute(f"SET LOCAL gin_fuzzy_search_limit = {BROAD_MATCHES}")   # a GIN scan returns a sample beyond it
    conn.execute("SET LOCAL jit = off")   # the plans are small; compiling one cost 35-600 ms per query


def _rows_of(conn, keys, history: bool) -> dict:
    """The result rows of records named by key (agent_key, stream, id), score 0."""
    if not keys:
        return {}
    sql = f"""SELECT a.store_id, a.name, r.tier, r.line, 0::float8, 0::bigint,
                     {_SUPERSEDED if history else 'false'}, r.agent_key, r.stream, r.id, r.ts
              FROM unnest(%s::bigint[], %s::text[], %s::text[]) AS k(agent_key, stream, id)
              JOIN memcli_records r USING (agent_key, stream, id) JOIN memcli_agents a USING (agent_key)"""
    rows = conn.execute(sql, [list(col) for col in zip(*keys)]).fetchall()
    conn.rollback()
    return {tuple(row[7:10]): row for row in rows}


def _hybrid(conn, lexical: list, query_vector, model: str, filters, pool: int, limit: int, offset: int,
            history: bool, agent_key, kinds, timed: bool):
    """The lexical rows and the nearest vectors fused by reciprocal rank (the local rule,
    :func:`memcli.search.engine.reciprocal_rank`), paged; None when the store has no vector of
    this model and dimension for these records."""
    from memcli.remote import vectors
    from memcli.search.engine import reciprocal_rank

    _settings(conn)
    near = vectors.nearest(conn, query_vector, model, len(query_vector), agent_key, kinds, filters, pool,
                           timed=timed)
    conn.rollback()
    if not near:
        return None
    by_key = {tuple(row[7:10]): row for row in lexical}
    by_key.update({k: row for k, row in _rows_of(conn, [k for k in near if k not in by_key], history).items()})
    fused = reciprocal_rank([tuple(row[7:10]) for row in lexical], [k for k in near if k in by_key])
    ranked = sorted(fused, key=lambda k: (-fused[k], -(by_key[k][10] or 0.0)))
    return [(*by_key[k][:4], fused[k], 0, *by_key[k][6:]) for k in ranked[offset:offset + limit]]


def websearch(query, joiner: str) -> str:
    """The question as ``websearch_to_tsquery`` text: the terms of :func:`memcli.search.query.parse_query`
    (the local search's rules), each made plain words as the index holds them, a term of several
    words quoted as a phrase, joined by ``joiner`` (" ": all, " or ": any)."""
    from memcli.remote.push import plain_words

    parts = []
    for term in query.terms:
        words = plain_words(" ".join(term.words)).split()
        if words:
            parts.append(f'"{" ".join(words)}"' if len(words) > 1 else words[0])
    return joiner.join(parts)


def search(url: str | None, text: str, *, agent: str | None = None, all: bool = False, limit: int = 10,
           offset: int = 0, kinds=None, since: float | None = None, until: float | None = None, conn=None,
           history: bool = False, embed_model: str | None = None, embed_api_base: str | None = None
           ) -> RemoteSearchResult:
    """Hits for ``text`` (module docstring); on ``conn`` when given (left open), else a new
    connection. With ``embed_model`` (a LiteLLM embedding model; the caller resolves the store's
    config) and vectors of that model in the store, a hybrid ranking."""
    from memcli.search.engine import MAX_LIMIT, POOL, parse_kinds
    from memcli.search.query import parse_query

    if bool(agent) == bool(all):
        raise UsageError("{remote}: name one agent (NAME or STORE/NAME) or {all}", param="remote", also=("all",))
    if not 1 <= limit <= MAX_LIMIT:
        raise UsageError(f"{{limit}} must be between 1 and {MAX_LIMIT}, got {limit}", param="limit")
    query = parse_query(text)
    if query.empty:
        raise UsageError(f"the query {text!r} has no word to search for (letters or digits)")
    wanted = parse_kinds(kinds)
    url = rc.resolve_url(url, "remote")
    where = rc.describe(url)
    own = conn is None
    conn = rc.connect(url) if own else conn
    notes: list[str] = []
    hybrid = False
    try:
        try:
            if own:
                schema.check(conn, where)
            key = schema.find_agent(conn, agent, where)[0] if agent else None
            filters = _filters(key, wanted, since, until, history)
            vector = _query_vector(conn, query.text, embed_model, embed_api_base, notes) if embed_model else None
            page, start = (max(POOL, 2 * (offset + limit)), 0) if vector is not None else (limit, offset)
            mode = "all"
            rows = _ranked(conn, websearch(query, " "), filters, page, start, notes, history)
            if not rows and len(query.terms) > 1:
                mode = "any"
                rows = _ranked(conn, websearch(query, " or "), filters, page, start, notes, history)
            if vector is not None:
                fused = _hybrid(conn, rows, vector, embed_model, filters, page, limit, offset, history, key,
                                wanted, since is not None or until is not None)
                if fused is None:
                    notes.append(f"no vectors of {embed_model} ({len(vector)} dimensions) in the shared store for "
                                 "this search: ranked by words alone")
                    rows = rows[offset:offset + limit]
                else:
                    best_has_all = mode == "all" and bool(fused) and tuple(fused[0][7:10]) in {
                        tuple(row[7:10]) for row in rows}
                    rows, hybrid, mode = fused, True, "all" if best_has_all else "any"
        except Exception as exc:
            import psycopg

            if isinstance(exc, psycopg.Error) and own:   # on a caller's connection, the caller's to handle
                raise rc.failed(exc, url, "searching") from None
            raise
    finally:
        if own:
            conn.close()
    hits = [remote_hit(*row[:5], query, superseded=row[6]) for row in rows]
    return RemoteSearchResult(query, mode, hits, notes, hybrid=hybrid)


def _query_vector(conn, text: str, model: str, api_base: str | None, notes: list[str]):
    """The query's unit vector when the store has vectors at all and the model answers; else None
    (a failing model is a note, as in local search)."""
    from memcli.remote import vectors
    from memcli.search.embed import EmbeddingFailed, embed_query

    present = vectors.has_table(conn)
    conn.rollback()
    if not present:
        notes.append("the shared store has no vectors (pushed from no store with embeddings, or its server has no "
                     "pgvector): ranked by words alone")
        return None
    try:
        return embed_query(model, api_base, text)
    except EmbeddingFailed as exc:
        notes.append(f"embedding model {model} failed ({exc}): lexical results only")
        return None


def remote_hit(store_id: str, name: str, tier: str, line: str, score: float, query, *, superseded: bool = False):
    """A local-shaped hit for a stored line, with ``agent`` = ``STORE/NAME``."""
    from memcli.search.engine import LIVE, SUPERSEDED, _hit

    hit = _hit(tier, orjson.loads(line), float(score), query, status=SUPERSEDED if superseded else LIVE)
    hit.agent = f"{store_id}/{name}"
    return hit
