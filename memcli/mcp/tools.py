"""Memory as tools: what the MCP server's tools do, as plain functions over the store (no SDK
here, so they are tested directly and reused by any other tool protocol).

Every answer is a small JSON object. Long text is never returned whole: each string field of a
record longer than ``max_chars`` is cut, the cut fields are named in ``clipped`` (with their full
lengths) and ``next_char_offset`` pages through them. Lists page too (``next_offset``,
``next_before_turn``). Writes (``remember``, ``forget``) go through :mod:`memcli.search.facts`:
the same agent lock and redaction as ``memcli remember``/``forget``.

``agent``: when the tools were made for one agent (``memcli mcp --agent A``) it may be omitted
(``None``); naming another agent is refused. Otherwise it is required.
"""

from __future__ import annotations

import os

from memcli.errors import UsageError

MAX_SEARCH_LIMIT = 50
MAX_RECENT_TURNS = 20
DEFAULT_MAX_CHARS = 4_000
TRACE_TEXT_CHARS = 500


def _clip_record(record: dict, max_chars: int, char_offset: int, clipped: dict) -> dict:
    out = {}
    for key, value in record.items():
        if isinstance(value, str) and (len(value) > max_chars or char_offset):
            if len(value) > max_chars:
                clipped[key] = len(value)
            value = value[char_offset:char_offset + max_chars]
        elif isinstance(value, (dict, list)) and key in ("tool_result", "tool_args", "media"):
            import orjson

            text = orjson.dumps(value).decode()
            if len(text) > max_chars:
                clipped[key] = len(text)
                value = text[char_offset:char_offset + max_chars]
        out[key] = value
    return out


def _trace_text(trace) -> str:
    """What a trace says: its content, then its arguments (a call) or its result or error."""
    import orjson

    extra = None
    if trace.trace_type == "tool_call" and trace.tool_args is not None:
        extra = trace.tool_args
    elif trace.trace_type == "tool_result":
        extra = f"ERROR: {trace.tool_error}" if trace.tool_error else trace.tool_result
    if extra is not None and not isinstance(extra, str):
        extra = orjson.dumps(extra).decode()
    return "\n".join(p for p in (trace.content, extra) if p)


class MemoryTools:
    """The tools over the store at ``memory_dir`` (module docstring)."""

    def __init__(self, memory_dir: str | os.PathLike, agent: str | None = None):
        self.memory_dir = memory_dir
        self.fixed_agent = agent

    def agent_name(self, agent: str | None) -> str:
        """The agent a tool call names, or the server's own; a usage error when it names none or
        another than the one agent this server serves."""
        if agent is None or agent == "":
            if self.fixed_agent is None:
                raise UsageError("agent: name the agent whose memory to use (this server serves every agent)")
            return self.fixed_agent
        if self.fixed_agent is not None and agent != self.fixed_agent:
            raise UsageError(f"agent: this server serves only agent {self.fixed_agent!r}, not {agent!r}")
        return agent

    def store(self, agent: str | None, *, must_exist: bool = True):
        """The :class:`memcli.api.Agent` a tool call names (or the server's own agent)."""
        from memcli.api import Memory

        found = Memory(self.memory_dir).agent(self.agent_name(agent))
        if must_exist:
            found.store.require()   # AgentNotFoundError, as every command says it
        return found

    # -------------------------------------------------------------------------- reading
    def search(self, agent: str | None, query: str, limit: int | None = None, offset: int | None = None,
               kind: str | None = None, history: bool | None = False) -> dict:
        limit = 10 if limit is None else limit
        offset = 0 if offset is None else offset
        if not 1 <= limit <= MAX_SEARCH_LIMIT:
            raise UsageError(f"limit: between 1 and {MAX_SEARCH_LIMIT}, got {limit}")
        options = {"history": True} if history else {}
        result = self._search(self.store(agent), query, limit=limit, offset=offset, kind=kind or None, **options)
        hits = [self._hit(h) for h in result.hits]
        return {"query": query, "matched": "every word" if result.mode == "all" else "any word", "hits": hits,
                "next_offset": offset + len(hits) if len(hits) == limit else None}

    def get(self, agent: str | None, record_id: str, max_chars: int | None = None,
            char_offset: int | None = None) -> dict:
        max_chars = DEFAULT_MAX_CHARS if max_chars is None else max_chars
        char_offset = 0 if char_offset is None else char_offset
        if max_chars < 100 or char_offset < 0:
            raise UsageError("max_chars: at least 100; char_offset: 0 or more")
        clipped: dict = {}
        out = self._get(self.store(agent), record_id, max_chars, char_offset, clipped)
        if clipped:
            out["clipped"] = clipped
            longest = max(clipped.values())
            out["next_char_offset"] = char_offset + max_chars if char_offset + max_chars < longest else None
        return out

    @staticmethod
    def _get(agent, record_id: str, max_chars: int, char_offset: int, clipped: dict) -> dict:
        from memcli.models import to_record

        found = agent.locate(record_id)
        if hasattr(found, "record"):
            out = {"id": record_id, "tier": found.tier,
                   "record": _clip_record(to_record(found.record), max_chars, char_offset, clipped)}
        else:   # a tool call id: the call(s) and their results
            calls = found
            interactions = []
            for i in calls.interactions:
                item = dict(i)
                for key in ("call", "result"):
                    if item[key] is not None:
                        item[key] = _clip_record(item[key], max_chars, char_offset, clipped)
                interactions.append(item)
            out = {"tool_call_id": record_id, "ambiguous": calls.ambiguous, "interactions": interactions}
            if calls.ambiguous:
                out["note"] = f"{len(interactions)} calls reuse this tool_call_id (the source reused it): all shown"
        return out

    def recent(self, agent: str | None, turns: int | None = None, before_turn: str | None = None) -> dict:
        turns = 3 if turns is None else turns
        if not 1 <= turns <= MAX_RECENT_TURNS:
            raise UsageError(f"turns: between 1 and {MAX_RECENT_TURNS}, got {turns}")
        recent = self._recent(self.store(agent))
        out = []
        more = False
        skipping = before_turn is not None
        try:
            for turn_id, traces in recent:
                if skipping:
                    if turn_id == before_turn:
                        skipping = False
                    continue
                if len(out) == turns:
                    more = True
                    break
                out.append({"turn_id": turn_id, "traces": [self._trace_line(t) for t in traces]})
        finally:
            recent.close()
        if skipping:
            raise UsageError(f"before_turn: no active turn {before_turn!r}")
        out.reverse()
        return {"turns": out, "next_before_turn": out[0]["turn_id"] if more and out else None}

    @staticmethod
    def _recent(agent):
        return agent.store.iter_recent_turns()

    @staticmethod
    def _trace_line(trace) -> dict:
        text = _trace_text(trace)
        item = {"id": trace.id, "type": trace.trace_type}
        if trace.tool_name:
            item["tool_name"] = trace.tool_name
        if trace.tool_call_id:
            item["tool_call_id"] = trace.tool_call_id
        if trace.tool_error:
            item["error"] = True
        item["text"] = text if len(text) <= TRACE_TEXT_CHARS else text[:TRACE_TEXT_CHARS] + (
            f"… (+{len(text) - TRACE_TEXT_CHARS:,} chars: memory_get id={trace.id})")
        return item

    # -------------------------------------------------------------------------- writing
    def remember(self, agent: str | None, fact: str, tags: list[str] | None = None, pin: bool | None = None,
                 supersedes: list[str] | None = None) -> dict:
        done = self._remember(self.store(agent, must_exist=False), fact, tags or (), bool(pin), supersedes)
        record = done.record
        return {"id": record["id"], "fact": record["fact"], "tags": record["tags"], "supersedes": done.superseded,
                "redacted_secrets": done.redacted, "existing": done.existing}

    def forget(self, agent: str | None, record_id: str, reason: str | None = None) -> dict:
        done = self._forget(self.store(agent), record_id, reason)
        return {"forgotten": record_id, "tier": done.tier,
                "tombstone_id": done.tombstone["id"] if done.tombstone else None,
                "already_superseded_by": done.already_superseded_by}

    def memory(self, agent: str | None, command: dict) -> str:
        """The working-memory tool (Anthropic's memory tool protocol): the tool_result text."""
        return self.store(agent, must_exist=False).memory_tool(command)

    @staticmethod
    def _search(agent, query, **options):
        return agent.search(query, **options)

    @staticmethod
    def _hit(hit) -> dict:
        return hit.to_json()

    @staticmethod
    def _remember(agent, fact, tags, pin, supersedes):
        return agent.remember(fact, tags=tags, pin=pin, supersedes=supersedes, full=True)

    @staticmethod
    def _forget(agent, record_id, reason):
        return agent.forget(record_id, reason=reason, full=True)



class RemoteMemoryTools(MemoryTools):
    """The same tools over the shared PostgreSQL store (``memcli mcp --remote URL``), through
    :meth:`memcli.api.Memory.remote`: agents are ``NAME`` or ``STORE/NAME``; memory_remember and
    memory_forget write there, and so does the working-memory tool (its changes are rows of the
    agent's memory_files.jsonl there, answered by the same code as locally)."""

    def __init__(self, remote, agent: str | None = None):
        super().__init__(None, agent)
        self.remote = remote

    def store(self, agent: str | None, *, must_exist: bool = True):
        return self.agent_name(agent)

    def _search(self, agent, query, kind=None, **options):
        return self.remote.search(agent, query, kinds=[kind] if kind else None, **options)

    @staticmethod
    def _hit(hit) -> dict:
        return {**hit.to_json(), "agent": hit.agent}

    def _get(self, agent, record_id: str, max_chars: int, char_offset: int, clipped: dict) -> dict:
        tier, record = self.remote.get(agent, record_id)
        return {"id": record_id, "tier": tier, "record": _clip_record(record, max_chars, char_offset, clipped)}

    def _recent(self, agent):
        return self.remote.recent_turns(agent)

    def _remember(self, agent, fact, tags, pin, supersedes):
        return self.remote.remember(agent, fact, tags=tags, pin=pin, supersedes=supersedes)

    def _forget(self, agent, record_id, reason):
        return self.remote.forget(agent, record_id, reason=reason)

    def memory(self, agent: str | None, command: dict) -> str:
        return self.remote.memory_tool(self.store(agent), command)
