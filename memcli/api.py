"""The Python API: ``memcli.Memory(path).agent(name)``.

One object per memory directory (:class:`Memory`) and per agent (:class:`Agent`), each method
the library call the matching command makes, with Python values in and out::

    import memcli

    mem = memcli.Memory("memory")                 # like --dir; None: $MEMCLI_DIR, else ./memory
    coder = mem.agent("coder")
    coder.ingest([{"trace_type": "user", "content": "hi"}])   # dicts, or a path, or bytes
    payload = coder.snapshot(provider="anthropic", max_tokens=8000)   # the request body, a dict
    for call in coder.tools(status="pending"): ...

Rules every method keeps:

* it does what the command of the same name does, through the same library code (validation,
  locking, crash safety, redaction): nothing here writes a file itself;
* errors are :class:`memcli.errors.MemcliError` subclasses; their message names the *parameter*
  (``since``, ``fmt``), not the command-line flag;
* importing this module (or ``memcli``) loads neither typer nor rich, and nothing heavy: each
  method imports what it needs when called.

This module sits above ingest/compaction/snapshot/inspect/export and below the CLI (see
docs/design.md, "Layers"). New features add a method to :class:`Agent` here (``search``,
``remember``, ``forget``, the memory tool ...).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable, Iterator

from memcli.errors import UsageError

# The display rules every client applies to stored text before a person sees it (control
# characters shown, never sent; Claude Code's slash commands as typed): the CLI's views take them
# from here, with the rest of the library, so there is one rule for every client.
from memcli.neutral import neutral, readable_text  # noqa: F401

__all__ = ["Memory", "Agent"]

class Memory:
    """A memory directory (``path``; None: ``$MEMCLI_DIR``, else ``./memory``). Cheap to create:
    nothing is read until a method asks."""

    def __init__(self, path: str | os.PathLike | None = None):
        from memcli.store.layout import resolve_memory_dir

        self.path: Path = resolve_memory_dir(path)

    def __repr__(self) -> str:
        return f"memcli.Memory({str(self.path)!r})"

    def agent(self, name: str) -> "Agent":
        """The agent ``name`` (created by its first ingest). Raises InvalidAgentIdError for a name
        that is not a valid agent id."""
        return Agent(self, name)

    def agents(self) -> list:
        """One summary per agent (:class:`memcli.inspect.agents.AgentSummary`), as ``memcli agents``."""
        from memcli.inspect.agents import iter_agents

        return list(iter_agents(self.path))

    # ------------------------------------------------------------------ agent homes (sync)
    def sync(self, *, home: str | os.PathLike | None = None, source: str | Iterable[str] | None = None,
             dry_run: bool = False, redact: bool = True, progress=None,
             path: str | os.PathLike | Iterable | None = None):
        """Import every harness session found under ``home`` (default ``~``) that is new or has
        grown, one agent per session, as ``memcli sync``; ``source`` limits the sources
        (claude-code, codex, ...), ``dry_run`` only says what would be imported, ``path`` adds
        files kept elsewhere (a ChatGPT / Claude.ai ``conversations.json``, an Aider chat log). A
        session that cannot be read is reported in the result and skipped. Returns
        :class:`memcli.sync.engine.SyncReport`."""
        from memcli.sync.engine import sync

        paths = [path] if isinstance(path, (str, os.PathLike)) else list(path or ())
        return sync(self.path, home=home, source=_listed(source), dry_run=dry_run, redact=redact,
                    progress=progress, path=paths)

    def search_all(self, query: str, *, limit: int = 10, **options):
        """Ranked hits over every agent, as ``memcli search --all``: each agent searched as
        :meth:`Agent.search` (``options`` are its options: ``kind``, ``since``, ``until`` ...),
        merged by score; each hit names its agent and, for a synced session, how to resume it
        (:class:`memcli.search.across.AcrossResult`)."""
        from memcli.search.across import search_all
        from memcli.search.engine import parse

        parse(query)   # an empty or stop-words-only query is one usage error, not a note per agent
        return search_all(self.path, lambda name: self.agent(name).search(query, limit=limit, **options), limit)

    # ------------------------------------------------------------------ the shared store (memcli.remote)
    def push(self, agents: Iterable[str] | None = None, *, to: str | None = None, all: bool = False,
             store_id: str | None = None, as_name: str | None = None, progress=None):
        """Replicate ``agents`` (every agent with ``all``) into the shared PostgreSQL store at ``to``
        (else ``$MEMCLI_REMOTE``), as ``memcli push``: idempotent, resumable, safe from many machines.
        Returns :class:`memcli.remote.push.PushResult`."""
        from memcli.remote.push import push

        return push(self.path, _listed(agents), to, all=all, store_id=store_id, as_name=as_name, progress=progress)

    def pull(self, agent: str, *, from_: str | None = None, as_name: str | None = None):
        """Restore ``agent`` (``NAME`` or ``STORE/NAME``) from the shared store at ``from_`` (else
        ``$MEMCLI_REMOTE``) as a new local agent (``as_name``, else its name), as ``memcli pull``.
        Returns :class:`memcli.remote.pull.PullResult`."""
        from memcli.remote.pull import pull

        return pull(self.path, agent, from_, as_name=as_name)

    def search_remote(self, query: str, *, remote: str | None = None, agent: str | None = None, all: bool = False,
                      limit: int = 10, offset: int = 0, kind: str | Iterable[str] | None = None,
                      since: str | float | None = None, until: str | float | None = None,
                      embed_model: str | None = None, embed_api_base: str | None = None):
        """Ranked hits from the shared store (``agent``: ``NAME`` or ``STORE/NAME``; every agent with
        ``all``), as ``memcli search --remote``; hybrid (words + the pushed vectors) with an embedding
        model (``embed_model``, else this store's config.json). Returns
        :class:`memcli.remote.search.RemoteSearchResult`."""
        from memcli.remote.search import search
        from memcli.search.embed import settings_in

        model, api_base = settings_in(self.path, embed_model, embed_api_base)
        return search(remote, query, agent=agent, all=all, limit=limit, offset=offset, kinds=_listed(kind),
                      since=_time(since, "since"), until=_time(until, "until", end_of_day=True),
                      embed_model=model, embed_api_base=api_base)

    def remote(self, url: str | None = None):
        """The shared store at ``url`` (else ``$MEMCLI_REMOTE``) as an object the MCP tools use
        (:class:`memcli.remote.tools.RemoteStore`; ``close()`` it)."""
        from memcli.remote.tools import RemoteStore
        from memcli.search.embed import settings_in

        return RemoteStore(url, *settings_in(self.path, None, None))

    # ------------------------------------------------------------------ harness hooks
    def hooks_install(self, harness: str, *, scope: str = "user", agent: str | None = None,
                      project_dir: str | os.PathLike | None = None, home: str | os.PathLike | None = None):
        """Merge memcli's hook entries into ``harness``'s settings for ``scope`` (user, project,
        local), as ``memcli hooks install``; their commands run this memcli on this store, with
        ``agent`` fixed when given (else each session gets the agent ``sync`` gives it). Project
        scopes use ``project_dir`` (default: the current directory). Returns
        :class:`memcli.hooks.settings.SettingsChange`."""
        from memcli.hooks import settings
        from memcli.hooks.harnesses import harness as find

        h = find(harness)
        if agent is not None:
            from memcli.store.layout import validate_agent_id

            validate_agent_id(agent)
        return settings.install(h, scope, h.settings_path(scope, project_dir, home), self.path, agent)

    def hooks_uninstall(self, harness: str, *, scope: str = "user", project_dir: str | os.PathLike | None = None,
                        home: str | os.PathLike | None = None):
        """Take memcli's entries (and only them) out of ``harness``'s settings, as ``memcli hooks
        uninstall``. Returns :class:`memcli.hooks.settings.SettingsChange` (``changed`` False when
        there was nothing of memcli's)."""
        from memcli.hooks import settings
        from memcli.hooks.harnesses import harness as find

        h = find(harness)
        return settings.uninstall(h, scope, h.settings_path(scope, project_dir, home))

    def hooks_status(self, harness: str, *, scope: str | None = None, project_dir: str | os.PathLike | None = None,
                     home: str | os.PathLike | None = None) -> list:
        """What of memcli is installed in ``harness``'s settings, per scope (every scope when
        ``scope`` is None), as ``memcli hooks status``: :class:`memcli.hooks.settings.ScopeStatus` items."""
        from memcli.hooks import settings
        from memcli.hooks.harnesses import harness as find

        h = find(harness)
        scopes = [scope] if scope else list(h.scopes)
        return [settings.status(h, s, h.settings_path(s, project_dir, home)) for s in scopes]

    def hook(self, harness: str, event: str, payload: bytes | str | dict, *, agent: str | None = None,
             max_chars: int | None = None):
        """Handle one hook event of ``harness`` (its payload: the JSON the harness writes on the
        hook's stdin), as ``memcli hook``. Returns :class:`memcli.hooks.run.HookResult`; its
        ``output`` is what the hook prints. Every failure raises :class:`memcli.hooks.run.HookFailed`."""
        from memcli.hooks.context import DEFAULT_MAX_CHARS
        from memcli.hooks.run import run_hook

        if isinstance(payload, dict):
            import orjson

            payload = orjson.dumps(payload)
        elif isinstance(payload, str):
            payload = payload.encode("utf-8")
        return run_hook(self.path, harness, event, payload, agent=agent,
                        max_chars=DEFAULT_MAX_CHARS if max_chars is None else max_chars)

    # ------------------------------------------------------------------ the seam (issue 21)
    def doctor(self, agent: str | None = None, *, all: bool = False, repair: bool = False,
               secrets: bool = False) -> list:
        """:meth:`Agent.doctor` of ``agent``, or of every agent (``all``, the default without
        ``agent``), as ``memcli doctor``: one report per agent, in natural order (none: no agents).
        ``--strict`` is the caller's reading of ``report.remaining(strict=True)``."""
        from memcli.store.layout import list_agent_ids

        if agent is not None and all:
            raise UsageError("give an agent or {all}, not both", param="all")
        names = list_agent_ids(self.path) if agent is None else [agent]
        return [self.agent(name).doctor(repair=repair, secrets=secrets) for name in names]

    def hooks_harness(self, harness: str):
        """What memcli's hooks are in ``harness`` (:class:`memcli.hooks.harnesses.Harness`: its
        title, the events hooked and what each does, what it has no hook for, a note), as
        ``memcli hooks status`` prints after the scopes. Raises UsageError for an unknown harness."""
        from memcli.hooks.harnesses import harness as find

        return find(harness)


class Agent:
    """One agent of a :class:`Memory`. Methods mirror the commands (``memcli <command> AGENT``)."""

    def __init__(self, memory: Memory, name: str):
        from memcli.store.layout import validate_agent_id

        self.parent = memory                       # the Memory (``memory()`` lists memory items)
        self.memory_dir: Path = memory.path
        self.name: str = validate_agent_id(name)

    def __repr__(self) -> str:
        return f"{self.parent!r}.agent({self.name!r})"

    @property
    def store(self):
        """The :class:`memcli.store.agent.AgentStore` (for what this API does not cover)."""
        from memcli.store.agent import AgentStore

        return AgentStore(self.memory_dir, self.name)

    def exists(self) -> bool:
        return self.store.exists()

    # ------------------------------------------------------------------ writing
    def ingest(self, events: Iterable[dict] | bytes | str | os.PathLike, fmt: str = "auto", *,
               skip_invalid: bool = False, redact: bool = True, stream: bool = False, split: bool = False):
        """Append events, as ``memcli ingest``: ``events`` is an iterable of dicts (native events,
        or records of any supported format), the bytes of an input, a path to a file, or ``"-"``
        (standard input). All or nothing unless ``skip_invalid`` (or ``stream``: each event is
        kept as it arrives, for a long-lived pipe); ``split`` imports each conversation of a
        multi-conversation file into its own agent ``<name>.<id or index>``. Returns
        :class:`memcli.ingest.pipeline.IngestResult` (with ``split``,
        :class:`memcli.ingest.split.SplitResult`)."""
        from memcli.ingest.api import ingest

        file, stdin = None, None
        if isinstance(events, (str, os.PathLike)):
            file = events
        elif isinstance(events, (bytes, bytearray, memoryview)):
            import io

            stdin = io.BytesIO(bytes(events))
        else:
            import io

            import orjson

            if isinstance(events, dict):
                raise UsageError("events: expected an iterable of events (a list of dicts), got one dict")
            try:
                data = b"".join(orjson.dumps(event) + b"\n" for event in events)
            except TypeError as exc:
                raise UsageError(f"events: not JSON-serializable ({exc})") from None
            stdin = io.BytesIO(data)
        if stream and stdin is not None:
            raise UsageError("{stream} reads a file or a pipe as it grows: give events as a path (or '-' for "
                             "standard input)", param="stream")
        return ingest(self.memory_dir, self.name, file, fmt=fmt, skip_invalid=skip_invalid,
                      redact=redact, stdin=stdin, stream=stream, split=split)

    def compact(self, *, model: str | None = None, api_base: str | None = None, api_key: str | None = None,
                api_key_env: str | None = None, tail_turns: int = 4, target_tokens: int | None = None,
                keep_steps: int = 4, if_needed: bool = False, max_context_tokens: int | None = None,
                dry_run: bool = False, concurrency: int = 4, timeout: float = 120.0, retries: int = 2,
                strategy: str = "summarize", force: bool = False, max_cost: float | None = None,
                summarizer=None, on_progress=None, on_note=None):
        """Compact older turns into memory, as ``memcli compact`` with the same options and
        defaults: the offline summarizer, or the LiteLLM one with ``model`` (``api_base``,
        ``api_key``/``api_key_env``, ``timeout``, ``retries`` go with it), or ``summarizer`` (a
        :class:`memcli.compaction.summarizer.Summarizer`). ``on_progress(done, total)`` hears of
        the chunks summarized, ``on_note(text)`` of what the command says on stderr. Returns
        :class:`memcli.compaction.compactor.CompactResult` (``to_dict()``: the ``--json`` document)."""
        from memcli.compaction.compactor import compact, model_summarizer
        from memcli.compaction.policy import CompactionPolicy

        if summarizer is None and model and strategy == "summarize":
            summarizer = model_summarizer(model, api_base=api_base, timeout=timeout, retries=retries,
                                          max_context_tokens=max_context_tokens, api_key=api_key,
                                          api_key_env=api_key_env)
        policy = CompactionPolicy(tail_turns=tail_turns, keep_steps=keep_steps, target_tokens=target_tokens)
        return compact(self.memory_dir, self.name, summarizer=summarizer, strategy=strategy, policy=policy,
                       if_needed=if_needed, force=force, dry_run=dry_run, model=model,
                       max_context_tokens=max_context_tokens, concurrency=concurrency, on_progress=on_progress,
                       on_note=on_note, max_cost=max_cost)

    def clear(self, *, keep_memory: bool = False, dry_run: bool = False):
        """Delete the agent's memory (with ``keep_memory``, only its traces), as ``memcli clear
        --yes``: :class:`memcli.store.clear.ClearResult`. With ``dry_run`` nothing is deleted and
        the :class:`memcli.store.clear.ClearPlan` says what would be (what ``clear`` asks about)."""
        from memcli.store.clear import clear_agent, plan_clear

        if dry_run:
            return plan_clear(self.memory_dir, self.name, keep_memory=keep_memory)
        return clear_agent(self.memory_dir, self.name, keep_memory=keep_memory)

    def doctor(self, *, repair: bool = False, secrets: bool = False):
        """Check the agent's files (and with ``repair``, fix what loses no data), as
        ``memcli doctor AGENT``. Returns :class:`memcli.inspect.doctor.DoctorReport`; with
        ``secrets``, the secrets in its data files (redacted in place with ``repair``):
        :class:`memcli.inspect.secrets.SecretReport`. ``report.remaining(strict=)`` is what fails
        the check (``--strict``: warnings too)."""
        if secrets:
            from memcli.inspect.secrets import check

            return check(self.store.require(), fix=repair)
        from memcli.inspect import doctor

        store = self.store   # an agent whose first import never finished can be checked (and repaired)
        return doctor.repair(store) if repair else doctor.diagnose(store)

    def memory_tool(self, command: dict | bytes | str, *, full: bool = False):
        """Answer one Anthropic memory-tool command (the ``input`` of a ``tool_use`` named
        ``memory``: view, create, str_replace, insert, delete, rename on ``/memories``; a dict,
        or its JSON text as ``memcli memory-tool`` reads it on stdin), as ``memcli memory-tool``:
        the ``tool_result`` text, exactly as the SDK's reference implementation answers (with
        ``full``, :class:`memcli.memory_tool.MemoryToolResult`: the text, the change written,
        the secrets redacted). A refused command raises :class:`memcli.errors.MemoryToolRefused`,
        whose message is the error text to send back with ``is_error: true``; nothing was written then."""
        from memcli.memory_tool import parse_command, run_memory_tool

        if isinstance(command, (bytes, bytearray, str)):
            command = parse_command(bytes(command) if isinstance(command, bytearray) else command)
        result = run_memory_tool(self.store, command)
        return result if full else result.text

    # ------------------------------------------------------------------ reading
    def memory_files(self) -> dict[str, str]:
        """The working memory files (``/memories/...`` path -> text), as ``memcli memory --files``."""
        return dict(self.store.require().memory_tree().sorted_files())

    def snapshot(self, provider: str = "openai-chat", *, full: bool = False, **options: Any):
        """The prompt for ``provider`` (openai-chat, openai-responses, anthropic, gemini, text), as
        ``memcli snapshot``: the request payload (a dict; a str for ``text``). Options are the
        fields of :class:`memcli.snapshot.assemble.SnapshotOptions` (``max_tokens``,
        ``tail_turns``, ``system``, ``model`` ...). ``full=True`` returns the whole
        :class:`memcli.snapshot.assemble.Snapshot` (messages, token count, notes)."""
        from dataclasses import fields

        from memcli.snapshot.assemble import SnapshotOptions, take_snapshot

        known = {f.name for f in fields(SnapshotOptions)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise UsageError(f"snapshot() got unknown option(s) {', '.join(unknown)} "
                             f"(expected {', '.join(sorted(known - {'provider'}))})")
        with self.store.counting_cache():  # counts of texts seen before: no tokenizer start-up
            snap = take_snapshot(self.memory_dir, self.name, SnapshotOptions(provider=provider, **options))
        return snap if full else snap.payload

    def turns(self, *, last: int | None = None, archive: bool = False, since: str | float | None = None,
              until: str | float | None = None, stream: bool = False) -> list | Iterator:
        """One summary per turn (:class:`memcli.inspect.turns.TurnSummary`), oldest first, as
        ``memcli turns``; ``since``/``until`` keep the turns with time in that range. With
        ``stream``, an iterator (what the command prints as it reads) instead of a list."""
        from memcli.filters import TraceFilter
        from memcli.inspect.turns import in_range, iter_turns, recent_turns

        flt = TraceFilter.from_options(since=_when(since), until=_when(until))
        store = self.store.require()
        if last is not None and last < 1:
            raise UsageError("{last} must be 1 or more", param="last")
        rows = recent_turns(store, last, archive=archive) if last else iter_turns(store, archive=archive)
        rows = (t for t in rows if in_range(t, flt))
        return rows if stream else list(rows)

    def tools(self, *, status: str | Iterable[str] | None = None, name: str | Iterable[str] | None = None,
              turn: str | Iterable[str] | None = None, last: int | None = None,
              tag: str | Iterable[str] | None = None, since: str | float | None = None,
              until: str | float | None = None, archive: bool = False, stream: bool = False) -> list | Iterator:
        """Tool interactions (:class:`memcli.models.ToolInteraction`), each call with its result,
        as ``memcli tools``; ``status`` one or more of pending, success, error, orphan. With
        ``stream``, an iterator (what the command prints as it reads) instead of a list."""
        from memcli.filters import TraceFilter
        from memcli.inspect.tools import parse_statuses, select_tool_interactions

        flt = TraceFilter.from_options(None, _listed(tag), _when(since), _when(until))
        store = self.store.require()
        rows = select_tool_interactions(store, statuses=parse_statuses(_listed(status)), names=_listed(name),
                                        turn=turn, flt=flt, last=last, archive=archive)
        return rows if stream else list(rows)

    def get(self, id: str):
        """The record with this id — a trace, an episodic item, a semantic fact, or a working-memory
        change (a dict with the file's ``content`` as that change left it) — or, for a tool call
        id, the call(s) with their results (:class:`memcli.inspect.records.FoundToolCall`), as
        ``memcli get``. Raises RecordNotFoundError."""
        from memcli.inspect.records import FoundRecord

        found = self.locate(id)
        return found.record if isinstance(found, FoundRecord) else found

    def locate(self, id: str):
        """What :meth:`get` answers, with where it was found: a
        :class:`memcli.inspect.records.FoundRecord` (tier, file, line, record) or a
        :class:`memcli.inspect.records.FoundToolCall`."""
        from memcli.inspect.records import locate

        return locate(self.store.require(), id)

    def memory(self, *, include_superseded: bool = False, tier: str | None = None, files: bool = False) -> list:
        """Episodic summaries then semantic facts (:class:`memcli.inspect.memory.MemoryEntry`),
        live ones only unless ``include_superseded`` (``--all``), of one ``tier`` (episodic or
        semantic) if given, as ``memcli memory``; with ``files``, the working-memory tree instead
        (one entry per directory and file, as ``memcli memory --files``)."""
        from memcli.inspect.memory import TIERS, iter_memory, iter_working_memory

        if files:
            return list(iter_working_memory(self.store.require()))
        if tier is not None and tier not in TIERS:
            raise UsageError(f"{{tier}}: expected episodic or semantic, got {tier!r}", param="tier")
        return list(iter_memory(self.store.require(), include_superseded=include_superseded,
                                tiers=(tier,) if tier else TIERS))

    def search(self, query: str, *, limit: int = 10, offset: int = 0, kind: str | Iterable[str] | None = None,
               since: str | float | None = None, until: str | float | None = None, history: bool = False,
               recent: bool = False, embed_model: str | None = None, embed_api_base: str | None = None):
        """Ranked hits over traces, summaries and facts (:class:`memcli.search.SearchResult`:
        ``hits``, ``mode`` "all" or "any", ``notes``), as ``memcli search``: superseded and
        forgotten items only with ``history``; ``recent`` weighs newer records up;
        ``embed_model`` (any LiteLLM embedding model; else the store's config.json) makes it
        hybrid."""
        from memcli.search import search

        return search(self.store, query, limit=limit, offset=offset, kinds=_listed(kind), since=_time(since, "since"),
                      until=_time(until, "until", end_of_day=True), history=history, recent=recent,
                      embed_model=embed_model, embed_api_base=embed_api_base)

    def remember(self, fact: str, *, tags: Iterable[str] = (), pin: bool = False,
                 supersedes: str | Iterable[str] | None = None, full: bool = False):
        """Append a semantic fact (redacted; ``pin`` puts it into every snapshot), as
        ``memcli remember``. Returns the record written — or, when a live fact already says the
        same text with these tags, that fact's record (nothing written); with ``full``, the whole
        :class:`memcli.search.facts.Remembered` (superseded ids, redacted secrets, existing)."""
        from memcli.search.facts import remember

        done = remember(self.store, fact, tags=list(tags), pin=pin, supersedes=_listed(supersedes))
        return done if full else done.record

    def forget(self, id: str, *, reason: str | None = None, full: bool = False):
        """Supersede a fact or summary with a tombstone, as ``memcli forget``. Returns the
        tombstone, or None when the item was already superseded (nothing written); with ``full``,
        the whole :class:`memcli.search.facts.Forgotten` (tier, tombstone, already_superseded_by)."""
        from memcli.search.facts import forget

        done = forget(self.store.require(), id, reason=reason)
        return done if full else done.tombstone

    def stats(self, *, model: str | None = None, max_context_tokens: int | None = None):
        """Counts, tokens and budget (:class:`memcli.inspect.stats.AgentStats`), as ``memcli stats``."""
        from memcli.inspect.stats import compute_stats

        store = self.store.require()
        with store.counting_cache():  # counts of texts seen before: no tokenizer start-up
            return compute_stats(store, model=model, max_context_tokens=max_context_tokens)

    def export(self, fmt: str = "jsonl", output: str | os.PathLike | None = None, *, with_memory: bool = False,
               turns: Iterable[str] | None = None, since: str | None = None, until: str | None = None,
               stream=None, progress=None):
        """The complete history (archive, then active) in ``fmt`` (jsonl, json, markdown, openai,
        anthropic), as ``memcli export``. Without ``output`` the export is returned as bytes; with
        it, the file appears only when complete and :class:`memcli.export.api.ExportResult` is
        returned — as it is with ``stream`` (a binary file the export is streamed to, with flat
        memory). ``progress(bytes_done, total)`` hears how far it got."""
        from memcli.export.api import export

        args = dict(fmt=fmt, with_memory=with_memory, turns=list(turns) if turns else None, since=since, until=until,
                    progress=progress)
        if output is not None or stream is not None:
            return export(self.memory_dir, self.name, output=output, stdout=stream, **args)
        import io

        buffer = io.BytesIO()
        export(self.memory_dir, self.name, stdout=buffer, **args)
        return buffer.getvalue()

    # ------------------------------------------------------------------ compaction ledger (issue 23)
    def compactions(self) -> list:
        """Every compaction of the agent, oldest first (:class:`memcli.compaction.undo.CompactionEntry`,
        ``to_dict()`` for JSON): what moved, tokens before/after, summarizer, model tokens and cost,
        whether it was undone — as ``memcli compactions``."""
        from memcli.compaction.undo import list_compactions

        return list_compactions(self.store.require())

    def uncompact(self, compaction_id: str | None = None):
        """Undo a compaction (default: the newest not undone), as ``memcli uncompact``: its traces
        go back to the active file where they were, its memory items are superseded. Returns
        :class:`memcli.compaction.undo.UncompactResult`."""
        from memcli.compaction.undo import uncompact

        return uncompact(self.memory_dir, self.name, compaction_id)

    # ------------------------------------------------------------------ the HTML view (issue 29)
    def view(self, output: str | os.PathLike | None = None, *, stream=None, model: str | None = None,
             max_context_tokens: int | None = None):
        """Write one self-contained HTML page of the agent's memory, as ``memcli view``: to
        ``output`` (default ``./<agent>.html``), or to ``stream`` (a binary file). ``model`` and
        ``max_context_tokens`` set the token counter and the trigger line, as for ``stats``.
        Returns :class:`memcli.view.ViewResult`."""
        from memcli.view import write_view

        return write_view(self.memory_dir, self.name, output, stream=stream, model=model,
                          max_context_tokens=max_context_tokens)

    # ------------------------------------------------------------------ result summaries (issue 30)
    def summarize_results(self, *, tool: str | Iterable[str] | None = None, older_than: int = 0,
                          min_chars: int = 4_000, model: str | None = None, api_base: str | None = None,
                          api_key: str | None = None, api_key_env: str | None = None, timeout: float = 120.0,
                          retries: int = 2, max_cost: float | None = None, dry_run: bool = False):
        """Summarize old, large tool results once each, as ``memcli summarize-results``: stored
        beside the trace (never changing it) for ``snapshot(expire=["TOOL=TURNS:summary"])``.
        Returns :class:`memcli.compaction.results.SummarizeResultsReport`."""
        from memcli.compaction.results import summarize_results

        return summarize_results(self.memory_dir, self.name, tool=tool, older_than=older_than, min_chars=min_chars,
                                 model=model, api_base=api_base, api_key=api_key, api_key_env=api_key_env,
                                 timeout=timeout, retries=retries, max_cost=max_cost, dry_run=dry_run)


    # ------------------------------------------------------------------ the seam (issue 21)
    def show(self, *, turn: str | Iterable[str] | None = None, last: int | None = None,
             type: str | Iterable[str] | None = None, tag: str | Iterable[str] | None = None,
             since: str | None = None, until: str | None = None, archive: bool = False) -> Iterator:
        """The traces themselves (:class:`memcli.models.RawTrace`), in store order, streamed (an
        iterator: a long history is never held), as ``memcli show``: of the turns ``turn`` names, or the ``last`` N turns; ``type``/``tag`` any of
        those; ``since``/``until`` a time range; with ``archive`` the compacted ones too."""
        from memcli.filters import TraceFilter
        from memcli.inspect.traces import select_traces

        flt = TraceFilter.from_options(_listed(type), _listed(tag), since, until)
        return select_traces(self.store.require(), flt=flt, turn=_listed(turn), last=last, archive=archive)

def ingest_formats() -> tuple[str, ...]:
    """The input formats ``Agent.ingest(fmt=)`` names besides ``auto`` (``memcli ingest --from``)."""
    from memcli.importers import FORMATS

    return FORMATS


def _time(value, option: str, *, end_of_day: bool = False) -> float | None:
    if value is None or isinstance(value, (int, float)):
        return value
    from memcli.filters import parse_time

    return parse_time(value, option, end_of_day=end_of_day)


def _when(value) -> str | None:
    """A ``since``/``until`` given as epoch seconds (a number), as the text the option takes."""
    return str(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value


def _listed(value) -> list | None:
    if value is None:
        return None
    return [value] if isinstance(value, str) else list(value)
