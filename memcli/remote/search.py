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


# a summary or fact another item of its agent and file supersedes (memcli.models.superseded_ids: a
# forget tombstone lists the item and itself) is left out, as local search leaves it out
# (with ``history`` they are ranked too, their hits marked superseded)
_SUPERSEDED = """(r.kind IN ('episodic', 'semantic') AND EXISTS (
    SELECT 1 FROM memcli_records s WHERE s.agent_key = r.agent_key AND s.file = r.file
    AND s.line LIKE '%%' || r.id || '%%' AND (s.line::jsonb -> 'supersedes') ? r.id))"""


def _ranked(conn, tsquery_text: str, agent_key, kinds, since, until, limit: int, offset: int, notes: list[str],
            history: bool = False):
    where = ["r.tsv @@ q.q"] + ([] if history else [f"NOT {_SUPERSEDED}"])
    args: list = [tsquery_text]
    if agent_key is not None:
        where.append("r.agent_key = %s")
        args.append(agent_key)
    if kinds:
        where.append("r.kind = ANY(%s)")
        args.append(list(kinds))
    if since is not None:
        where.append("r.ts >= %s")
        args.append(since)
    if until is not None:
        where.append("r.ts <= %s")
        args.append(until)
    sql = f"""
        WITH q AS (SELECT websearch_to_tsquery('{schema.TS_CONFIG}', %s) AS q),
        m AS (SELECT r.agent_key, r.stream, r.id, r.ts, ts_rank_cd(r.tsv, q.q) AS score
              FROM memcli_records r, q WHERE {' AND '.join(where)} LIMIT {BROAD_MATCHES + 1}),
        top AS (SELECT * FROM m ORDER BY score DESC, ts DESC NULLS LAST LIMIT %s OFFSET %s)
        SELECT a.store_id, a.name, r.tier, r.line, top.score, (SELECT count(*) FROM m) AS matched,
               {_SUPERSEDED if history else 'false'} AS superseded
        FROM top JOIN memcli_records r USING (agent_key, stream, id) JOIN memcli_agents a USING (agent_key)
        ORDER BY top.score DESC, top.ts DESC NULLS LAST"""
    conn.execute(f"SET LOCAL gin_fuzzy_search_limit = {BROAD_MATCHES}")   # a GIN scan returns a sample beyond it
    conn.execute("SET LOCAL jit = off")   # the plans are small; compiling one cost 35-600 ms per query
    rows = conn.execute(sql, (*args, limit, offset)).fetchall()
    conn.rollback()
    if rows and rows[0][5] >= BROAD_MATCHES * 3 // 4:
        note = (f"about {BROAD_MATCHES:,} or more records match: ranked a sample of about {BROAD_MATCHES:,} "
                "of them (add a rarer word to search all)")
        if note not in notes:
            notes.append(note)
    return rows


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
           history: bool = False) -> RemoteSearchResult:
    """Hits for ``text`` (module docstring); on ``conn`` when given (left open), else a new connection."""
    from memcli.search.engine import MAX_LIMIT, parse_kinds
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
    try:
        try:
            if own:
                schema.check(conn, where)
            key = schema.find_agent(conn, agent, where)[0] if agent else None
            mode = "all"
            rows = _ranked(conn, websearch(query, " "), key, wanted, since, until, limit, offset, notes, history)
            if not rows and len(query.terms) > 1:
                mode = "any"
                rows = _ranked(conn, websearch(query, " or "), key, wanted, since, until, limit, offset, notes,
                               history)
        except Exception as exc:
            import psycopg

            if isinstance(exc, psycopg.Error) and own:   # on a caller's connection, the caller's to handle
                raise rc.failed(exc, url, "searching") from None
            raise
    finally:
        if own:
            conn.close()
    return RemoteSearchResult(query, mode, [remote_hit(*row[:5], query, superseded=row[6]) for row in rows], notes)


def remote_hit(store_id: str, name: str, tier: str, line: str, score: float, query, *, superseded: bool = False):
    """A local-shaped hit for a stored line, with ``agent`` = ``STORE/NAME``."""
    from memcli.search.engine import LIVE, SUPERSEDED, _hit

    hit = _hit(tier, orjson.loads(line), float(score), query, status=SUPERSEDED if superseded else LIVE)
    hit.agent = f"{store_id}/{name}"
    return hit
