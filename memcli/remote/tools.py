"""The shared store as the MCP tools see it (``memcli mcp --remote URL``; memcli.remote).

:class:`RemoteStore` answers what :class:`memcli.mcp.tools.MemoryTools` asks a local store:
ranked hits (:func:`memcli.remote.search.search`'s query, on this connection), one record by id,
the recent turns of the active history, and the two writes. Agents are named ``NAME`` or
``STORE/NAME`` (:func:`memcli.remote.schema.find_agent`).

Writes (``memory_remember``, ``memory_forget``) build the very records ``memcli remember``/
``forget`` append (:mod:`memcli.search.facts`: same checks, same redaction) and insert them as rows
of the agent's semantic/episodic file with a position after every pushed row
(>= :data:`memcli.remote.schema.REMOTE_POS`), under the agent's advisory lock: ``pull`` restores them
at the end of the file, and a later push from the agent's machine keeps them. A fact for an agent
the store does not have yet creates it under the store id ``shared``.
"""

from __future__ import annotations

import orjson

from memcli.errors import RecordNotFoundError, UsageError
from memcli.remote import connect as rc
from memcli.remote import schema

SHARED_STORE = "shared"


def _db(method):
    """A database error as one RemoteError line; a lost connection (server restart) is opened again
    and the call retried once (a long-running MCP server outlives connections)."""
    import functools

    @functools.wraps(method)
    def call(self, *args, **kwargs):
        import psycopg

        for attempt in (1, 2):
            try:
                return method(self, *args, **kwargs)
            except psycopg.Error as exc:
                if attempt == 1 and rc.is_lost(exc) and self.conn.closed:
                    self.conn = rc.connect(self.url)
                    continue
                try:
                    self.conn.rollback()
                except psycopg.Error:
                    pass
                raise rc.failed(exc, self.url, method.__name__) from None
    return call


class RemoteStore:
    def __init__(self, url: str | None, embed_model: str | None = None, embed_api_base: str | None = None):
        self.embed_model, self.embed_api_base = embed_model, embed_api_base   # hybrid memory_search
        self.url = rc.resolve_url(url, "remote")
        self.where = rc.describe(self.url)
        self.conn = rc.connect(self.url)
        schema.check(self.conn, self.where)

    def close(self) -> None:
        self.conn.close()

    def _key(self, agent: str, *, create: bool = False) -> int:
        from memcli.errors import AgentNotFoundError
        from memcli.store.layout import validate_agent_id

        try:
            return schema.find_agent(self.conn, agent, self.where)[0]
        except AgentNotFoundError:
            if not create:
                raise
        store, _, name = agent.rpartition("/")
        validate_agent_id(name)
        with self.conn.transaction():
            row = self.conn.execute(
                "INSERT INTO memcli_agents (store_id, name) VALUES (%s, %s) ON CONFLICT (store_id, name) "
                "DO UPDATE SET pushed_at = memcli_agents.pushed_at RETURNING agent_key",
                (store or SHARED_STORE, name)).fetchone()
        return row[0]

    # ---------------------------------------------------------------- reading
    @_db
    def search(self, agent: str, query: str, *, limit: int, offset: int, kinds, history: bool = False):
        """Hits as :func:`memcli.remote.search.search` gives them (on this connection)."""
        from memcli.remote.search import search

        return search(self.url, query, agent=agent, limit=limit, offset=offset, kinds=kinds, conn=self.conn,
                      history=history, embed_model=self.embed_model, embed_api_base=self.embed_api_base)

    @_db
    def get(self, agent: str, record_id: str) -> tuple[str, dict]:
        """(tier, record) of an id (a trace, summary, fact or any pushed record)."""
        key = self._key(agent)
        row = self.conn.execute("SELECT tier, line FROM memcli_records WHERE agent_key = %s AND id = %s "
                                "ORDER BY stream LIMIT 1", (key, record_id)).fetchone()
        self.conn.rollback()
        if row is None:
            raise RecordNotFoundError(f"no record {record_id!r} in agent {agent!r} of the shared store at {self.where}")
        return row[0], orjson.loads(row[1])

    def recent_turns(self, agent: str):
        """(turn_id, [RawTrace]) of the active traces, newest turn first."""
        from memcli.store.agent import trace_from_record

        key = self._key(agent)
        turn, traces = None, []
        with self.conn.cursor(name="memcli_recent") as cur:
            cur.itersize = 500
            cur.execute("SELECT pos, line FROM memcli_records WHERE agent_key = %s AND file = 'raw_traces.jsonl' "
                        "ORDER BY pos DESC", (key,))
            for pos, line in cur:
                trace = trace_from_record(self.where, None, pos, orjson.loads(line))
                if trace.turn_id != turn and traces:
                    yield turn, traces[::-1]
                    traces = []
                turn = trace.turn_id
                traces.append(trace)
        self.conn.rollback()
        if traces:
            yield turn, traces[::-1]

    def _memory_lines(self, key: int) -> list[tuple[str, dict]]:
        rows = self.conn.execute("SELECT kind, line FROM memcli_records WHERE agent_key = %s "
                                 "AND kind IN ('episodic', 'semantic') ORDER BY file, pos", (key,)).fetchall()
        return [(kind, orjson.loads(line)) for kind, line in rows]

    # ---------------------------------------------------------------- writing
    def _insert(self, key: int, name: str, record: dict) -> None:
        """One record appended to data file ``name`` of the agent, after every row it has."""
        from memcli.remote.push import SEARCHED, file_kind, plain_words
        from memcli.store.search_index import record_text

        stream, kind, tier = file_kind(name)
        searched = SEARCHED.get(name)
        line = orjson.dumps(record).decode()
        self.conn.execute(
            f"""INSERT INTO memcli_records (agent_key, stream, id, file, pos, kind, tier, ts, line, tsv)
                SELECT %s, %s, %s, %s, GREATEST(%s, COALESCE(max(pos), 0) + 1), %s, %s, %s, %s,
                       to_tsvector('{schema.TS_CONFIG}', %s)
                FROM memcli_records WHERE agent_key = %s AND file = %s""",
            (key, stream, record["id"], name, schema.REMOTE_POS, kind, tier, record.get("ts"), line,
             plain_words(record_text(searched, record)) if searched else None, key, name))

    @_db
    def remember(self, agent: str, fact: str, *, tags=(), pin: bool = False, supersedes=None):
        from memcli.search.facts import Remembered, fact_record, live_same_fact, merge_same, prepare_fact

        text, clean_tags, redacted = prepare_fact(fact, tags, pin)
        wanted = [s for s in dict.fromkeys(supersedes or ()) if s]
        key = self._key(agent, create=True)
        with self.conn.transaction():
            self.conn.execute("SELECT pg_advisory_xact_lock(%s)", (-key,))
            lines = self._memory_lines(key)
            known = {record.get("id"): kind for kind, record in lines}
            for old in wanted:
                if known.get(old) != "semantic":
                    raise UsageError(f"supersedes: {old!r} is not a fact of agent {agent!r}")
            same = live_same_fact([record for kind, record in lines if kind == "semantic"], text)
            if same is not None:
                clean_tags = merge_same(same, clean_tags, wanted)
                if clean_tags is None:
                    return Remembered(same, redacted, [], existing=True)
            record = fact_record(text, clean_tags, wanted)
            self._insert(key, "semantic.jsonl", record)
        return Remembered(record, redacted, wanted)

    @_db
    def forget(self, agent: str, record_id: str, *, reason: str | None = None):
        from memcli.models import superseded_ids
        from memcli.search.facts import Forgotten, forget_reason, tombstone_record

        key = self._key(agent)
        with self.conn.transaction():
            self.conn.execute("SELECT pg_advisory_xact_lock(%s)", (-key,))
            lines = self._memory_lines(key)
            tier = next((kind for kind, record in lines if record.get("id") == record_id), None)
            if tier is None:
                raise RecordNotFoundError(f"no fact or summary {record_id!r} in agent {agent!r} of the shared store")
            by = superseded_ids(record for kind, record in lines if kind == tier).get(record_id)
            if by is not None:
                return Forgotten(record_id, tier, None, by)
            record = tombstone_record(record_id, tier, forget_reason(reason))
            self._insert(key, f"{tier}.jsonl", record)
        return Forgotten(record_id, tier, record)

    # ---------------------------------------------------------------- working memory
    def _memory_tree(self, key: int | None):
        """The agent's /memories tree: its working-memory rows replayed in file order."""
        from memcli.errors import CorruptStoreError
        from memcli.store.layout import MEMORY_FILES
        from memcli.store.memory_files import MemoryTree, TreeError

        tree = MemoryTree()
        if key is None:
            return tree
        rows = self.conn.execute("SELECT pos, line FROM memcli_records WHERE agent_key = %s AND file = %s "
                                 "ORDER BY pos", (key, MEMORY_FILES)).fetchall()
        for pos, line in rows:
            try:
                tree.apply(orjson.loads(line))
            except TreeError as exc:
                raise CorruptStoreError(f"{self.where} {MEMORY_FILES}", pos,
                                        f"working-memory record does not apply: {exc}") from None
        return tree

    @_db
    def memory_tool(self, agent: str, command: dict) -> str:
        """Answer one Anthropic memory-tool command on the agent's working memory in the shared
        store, as :func:`memcli.memory_tool.answer` answers it locally: a change is checked against
        the tree replayed under the agent's advisory lock and appended as a row of its
        memory_files.jsonl (``pull`` restores it at the end of the file)."""
        from contextlib import contextmanager

        from memcli.errors import AgentNotFoundError
        from memcli.memory_tool import answer
        from memcli.store.layout import MEMORY_FILES

        try:
            key = self._key(agent)
        except AgentNotFoundError:
            key = None

        def tree():
            try:
                return self._memory_tree(key)
            finally:
                self.conn.rollback()

        @contextmanager
        def changing():
            own = self._key(agent, create=True)
            with self.conn.transaction():
                self.conn.execute("SELECT pg_advisory_xact_lock(%s)", (-own,))
                yield self._memory_tree(own), lambda record: self._insert(own, MEMORY_FILES, record)

        return answer(command, tree=tree, exists=lambda: key is not None, changing=changing).text
