"""``memcli ingest --split``: each conversation of a many-conversation file into its own agent.

Two passes. First every conversation is read and every event validated, in memory; by default a
bad conversation rejects the whole file before any agent is touched (``--skip-invalid`` leaves
bad conversations out and names them). Then the agents are written one after another, each
through the ordinary all-or-nothing ingest under that agent's own lock. Event ids come from the
source, so running the same command again adds nothing.
"""

from __future__ import annotations

import os
from collections import Counter

from memcli.errors import InputError
from memcli.events import validate_event
from memcli.importers.conversations import Conversation, agent_names
from memcli.ingest.pipeline import IngestResult, Redactor, ingest_events
from memcli.store.agent import AgentStore


class SplitResult:
    """What a ``--split`` import did, across its agents."""

    def __init__(self, agent_id: str, conversations: int):
        self.agent_id = agent_id
        self.conversations = conversations
        self.format = "native"
        self.detected = False
        self.agents: list[str] = []
        self.results: list[IngestResult] = []
        self.skipped_conversations: list[str] = []
        self.errors: list = []
        self.notes: list = []

    def __repr__(self) -> str:
        return (f"SplitResult(agent_id={self.agent_id!r}, format={self.format!r}, conversations={self.conversations}, "
                f"agents={len(self.agents)}, appended={self.appended}, "
                f"skipped_conversations={len(self.skipped_conversations)})")

    def total(self, attribute: str) -> int:
        return sum(getattr(r, attribute) for r in self.results)

    @property
    def appended(self) -> int:
        return self.total("appended")

    def trace_count(self, trace_type: str) -> int:
        return sum(r.trace_types.get(trace_type, 0) for r in self.results)

    def summary(self) -> str:
        n = len(self.agents)
        events, calls = self.appended, self.trace_count("tool_call")
        turns = sum(len(r.turns) for r in self.results)
        span = f"{self.agents[0]} … {self.agents[-1]}" if n > 1 else (self.agents[0] if n else "none")
        parts = [f"split {self.conversations} conversation{'s' if self.conversations != 1 else ''} into"
                 f" {n} agent{'s' if n != 1 else ''} ({span}): {events} event{'s' if events != 1 else ''},"
                 f" {turns} turn{'s' if turns != 1 else ''}, {calls} tool call{'s' if calls != 1 else ''},"
                 f" {self.trace_count('tool_result')} result{'s' if self.trace_count('tool_result') != 1 else ''}"]
        parts.append(f"format {self.format}" + (" (detected)" if self.detected else ""))
        duplicates = self.total("duplicates")
        if duplicates:
            parts.append(f"{duplicates} already present")
        if self.skipped_conversations:
            parts.append(f"{len(self.skipped_conversations)} invalid conversation"
                         f"{'s' if len(self.skipped_conversations) != 1 else ''} skipped")
        kinds: Counter = Counter()
        skipped: Counter = Counter()
        for r in self.results:
            kinds.update(r.redacted_kinds)
            skipped.update(r.skipped)
        if sum(kinds.values()):
            from memcli.redact import describe_counts

            parts.append(describe_counts(kinds))   # as one file's summary says it, kinds included
        if skipped:
            parts.append("skipped " + ", ".join(f"{n} {kind}" for kind, n in sorted(skipped.items())))
        return "; ".join(parts)


def _read(importer, conversation: Conversation, result: IngestResult) -> tuple[list, InputError | None]:
    """Every event of one conversation, validated; or the first error."""
    events = []
    for line, event in importer.events(iter(conversation.values), result):
        if isinstance(event, InputError):
            return events, event
        try:
            validate_event(event, line)
        except InputError as exc:
            return events, exc
        events.append((line, event))
    return events, None


def ingest_split(memory_dir: str | os.PathLike, agent_id: str, importer, conversations: list[Conversation], *,
                 skip_invalid: bool = False, redactor: Redactor | None = None,
                 result: SplitResult) -> SplitResult:
    AgentStore(memory_dir, agent_id)  # the base id must be valid itself
    names = agent_names(agent_id, conversations)
    ready = []
    for conversation, name in zip(conversations, names):
        partial = IngestResult(name)
        events, error = _read(importer, conversation, partial)
        if error is not None:
            where = f"{conversation.label()} ({name})"
            if not skip_invalid:
                raise InputError(f"{where}: {error}", line=error.line,
                                 hint="nothing was written to any agent; --skip-invalid leaves bad conversations out")
            result.skipped_conversations.append(where)
            result.errors.append(f"{where}: {error}")
            continue
        ready.append((name, events, partial))
    for name, events, partial in ready:
        store = AgentStore(memory_dir, name)
        ingest_events(store, events, redactor=redactor, source_event=importer.source_event, result=partial)
        partial.format, partial.detected = result.format, result.detected
        result.agents.append(name)
        result.results.append(partial)
        result.notes.extend(partial.notes)
    return result
