"""Everything countable about one agent (``memcli stats``), in one streaming pass.

Memory stays flat as history grows: the traces stream once (archive, then active) through
counters, the tool pairing (which holds only calls still open) and the token counter; distinct
turns are counted in a bitmap indexed by turn number (other turn ids in a set).

* ``traces`` — per tier (active/archive): total and per trace type
* ``turns`` — distinct turns per tier and in all, and ``split``: turns in both tiers (compaction
  took some of their steps; the ask stays active). System/developer traces kept in the active
  file do not make a turn of their own.
* ``tool_calls`` — calls, results, and interactions by status over the whole history (archive
  and active paired together, as ``tools --archive`` shows them)
* ``memory`` — episodic and semantic items, all and live (not superseded)
* ``tokens.estimate`` — the working snapshot's tokens, the one count memcli has
  (:func:`memcli.snapshot.assemble.working_tokens`): what ``snapshot`` reports for the same
  agent and what the compaction trigger compares; ``tokens.counter`` says how it counts
  (tiktoken encoding, or the bytes/4 estimate when no encoding is available) and ``exact``
  whether those are real tiktoken counts; ``last_prompt_tokens`` is the newest provider-reported
  ``usage.prompt_tokens`` of the active traces.
* ``last_compaction`` — from the newest episodic item memcli wrote (its ``compaction_id``, ``ts``,
  turns and traces covered, ``model``; an imported harness compaction's item is not one)
* ``compaction_cost`` — what models were paid, from the compaction ledger
  (:func:`memcli.store.ledger.cost_total`): requests, input/output tokens, ``cost_usd`` of the
  records LiteLLM could price (null when it could price none), and ``unpriced``, how many it could not
* ``budget`` — only with a model or a context size: :func:`memcli.compaction.policy.budget_status`,
  the same decision ``compact --if-needed`` takes.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Iterator

from memcli.inspect.agents import last_activity
from memcli.models import TRACE_TYPES, RawTrace, ToolStatus
from memcli.store import jsonl
from memcli.store.agent import AgentStore
from memcli.store.harness_items import is_harness_item
from memcli.store.ledger import cost_total
from memcli.tool_interactions import iter_tool_interactions

_TURN_NUMBER = re.compile(r"turn_(\d{1,8})")
_BITMAP_LIMIT = 1 << 27  # turn numbers up to ~134M go in the bitmap (16 MiB at most)


class TurnSet:
    """Distinct turn ids: ``turn_NNNN`` in a bitmap (1 bit per number), others in a set."""

    def __init__(self):
        self.bits = bytearray()
        self.others: set[str] = set()
        self.count = 0

    def add(self, turn_id: str) -> None:
        m = _TURN_NUMBER.fullmatch(turn_id)
        if m is not None:
            n = int(m.group(1))
            if n < _BITMAP_LIMIT and turn_id == f"turn_{n:04d}":  # the canonical spelling only
                byte, bit = divmod(n, 8)
                if byte >= len(self.bits):
                    self.bits.extend(bytes(max(byte + 1, 2 * len(self.bits)) - len(self.bits)))
                if not self.bits[byte] & (1 << bit):
                    self.bits[byte] |= 1 << bit
                    self.count += 1
                return
        if turn_id not in self.others:
            self.others.add(turn_id)
            self.count += 1

    def __len__(self) -> int:
        return self.count

    def overlap(self, other: "TurnSet") -> int:
        """Turns in both sets."""
        return (sum(bin(a & b).count("1") for a, b in zip(self.bits, other.bits, strict=False))
                + len(self.others & other.others))


@dataclass
class FileStats:
    file: str
    bytes: int
    records: int


@dataclass
class TraceCounts:
    total: int
    user: int
    assistant: int
    tool_call: int
    tool_result: int


@dataclass
class TurnCounts:
    active: int             # turns with conversation traces in the active file
    archive: int            # turns with traces in the archive
    total: int
    split: int = 0          # turns in both: some steps archived, the ask and newer steps active


@dataclass
class ToolCounts:
    calls: int
    results: int
    success: int
    error: int
    pending: int
    orphan: int


@dataclass
class MemoryCounts:
    episodic: int
    episodic_live: int
    semantic: int
    semantic_live: int


@dataclass
class TokenStats:
    estimate: int
    counter: str
    exact: bool
    last_prompt_tokens: int | None


@dataclass
class CompactionInfo:
    compaction_id: str | None
    ts: float | None
    episodic_id: str
    turns: int
    traces: int
    model: str | None
    moved: str | None = None   # what it moved, from its ledger record: "8 steps", "2 turns and 120 steps"


@dataclass
class AgentStats:
    agent: str
    files: dict            # tier -> FileStats
    traces: dict           # "active"/"archive" -> TraceCounts
    turns: TurnCounts
    tool_calls: ToolCounts
    memory: MemoryCounts
    tokens: TokenStats
    last_activity: float | None
    last_compaction: CompactionInfo | None
    budget: dict | None
    compaction_cost: dict | None = None   # the ledger's model spending (memcli.store.ledger.cost_total)
    # hybrid search's spend: {"model", "dimensions", "tokens"} once a search embedded records
    embeddings: dict | None = None
    # memcli summarize-results: {"count", "chars_before", "chars_after"} once results were summarized
    result_summaries: dict | None = None


def _memory_counts(store: AgentStore) -> MemoryCounts:
    from memcli.inspect.memory import superseded_map

    counts = []
    for path in (store.paths.episodic, store.paths.semantic):
        superseded = superseded_map(path)
        total = live = 0
        for _, _, record in jsonl.iter_records(path):
            total += 1
            live += record.get("id") not in superseded
        counts += [total, live]
    return MemoryCounts(*counts)


def _last_compaction(store: AgentStore) -> CompactionInfo | None:
    for _, record in jsonl.iter_records_reverse(store.paths.episodic):
        if is_harness_item(record):
            continue   # a harness's own compaction, imported: not one of memcli's
        ts = record.get("ts")
        return CompactionInfo(
            compaction_id=record.get("compaction_id"), ts=ts if isinstance(ts, (int, float)) else None,
            episodic_id=str(record.get("id")), turns=len(record.get("turn_ids") or ()),
            traces=len(record.get("trace_ids") or ()), model=record.get("model"),
            moved=_moved(store, record.get("compaction_id")),
        )
    return None


def _moved(store: AgentStore, compaction_id) -> str | None:
    """What the compaction ``compaction_id`` moved, as its ledger record says (a compaction of
    steps is "1 turn" by its episodic item's turn ids: "8 steps" here); None without a record."""
    from memcli.sizes import what_moved
    from memcli.store.ledger import COMPACTION

    if not compaction_id:
        return None
    for _, record in jsonl.iter_records_reverse(store.paths.ledger):
        if record.get("kind") == COMPACTION and record.get("id") == compaction_id:
            whole, steps = record.get("whole_turns"), record.get("steps")
            return what_moved(whole, steps) if type(whole) is int and type(steps) is int else None
    return None


def compute_stats(store: AgentStore, *, model: str | None = None, max_context_tokens: int | None = None) -> AgentStats:
    from memcli.compaction.policy import budget_status, latest_prompt_tokens
    from memcli.snapshot.assemble import working_counter, working_tokens

    store.require()
    counter = working_counter(model)
    per_type = {tier: dict.fromkeys(TRACE_TYPES, 0) for tier in ("active", "archive")}
    totals = {"active": 0, "archive": 0}
    turn_sets = {"active": TurnSet(), "archive": TurnSet(), "all": TurnSet()}

    def traces() -> Iterator[RawTrace]:
        for stored in store.iter_traces(archive=True):
            trace, tier = stored.trace, stored.tier
            totals[tier] += 1
            if trace.trace_type in per_type[tier]:
                per_type[tier][trace.trace_type] += 1
            if not (trace.tags and trace.is_instruction):  # kept instructions are no turn
                turn_sets[tier].add(trace.turn_id)
                turn_sets["all"].add(trace.turn_id)
            yield trace

    status_counts = dict.fromkeys(ToolStatus, 0)
    for interaction in iter_tool_interactions(traces(), ordered=False):
        status_counts[interaction.status] += 1

    tokens = working_tokens(store, model, counter)

    paths = store.paths
    memory = _memory_counts(store)
    files = {
        "active": FileStats(paths.active.name, jsonl.file_size(paths.active), totals["active"]),
        "archive": FileStats(paths.archive.name, jsonl.file_size(paths.archive), totals["archive"]),
        "episodic": FileStats(paths.episodic.name, jsonl.file_size(paths.episodic), memory.episodic),
        "semantic": FileStats(paths.semantic.name, jsonl.file_size(paths.semantic), memory.semantic),
    }
    reported = latest_prompt_tokens(store)   # (read once: it may search the active file)
    budget = None
    if model or max_context_tokens is not None:
        status = budget_status(store, model=model, max_context_tokens=max_context_tokens, tokens=tokens,
                               reported=reported)
        budget = dataclasses.asdict(status)
        budget["explanation"] = status.explain()
    compaction = _last_compaction(store)
    calls = per_type["active"]["tool_call"] + per_type["archive"]["tool_call"]
    results = per_type["active"]["tool_result"] + per_type["archive"]["tool_result"]
    return AgentStats(
        agent=store.agent_id,
        files=files,
        traces={tier: TraceCounts(totals[tier], **per_type[tier]) for tier in ("active", "archive")},
        turns=TurnCounts(len(turn_sets["active"]), len(turn_sets["archive"]), len(turn_sets["all"]),
                         turn_sets["active"].overlap(turn_sets["archive"])),
        tool_calls=ToolCounts(calls, results, status_counts[ToolStatus.SUCCESS], status_counts[ToolStatus.ERROR],
                              status_counts[ToolStatus.PENDING], status_counts[ToolStatus.ORPHAN]),
        memory=memory,
        tokens=TokenStats(tokens, counter.describe(), counter.exact, reported),
        last_activity=last_activity(store),
        last_compaction=compaction,
        budget=budget,
        compaction_cost=cost_total(store.paths.ledger),
        embeddings=_embeddings(store),
        result_summaries=_result_summaries(store),
    )


def _result_summaries(store: AgentStore) -> dict | None:
    from memcli.store.result_summaries import read_result_summaries

    found = read_result_summaries(store.paths.result_summaries)
    if not found:
        return None
    return {"count": len(found), "chars_before": sum(int(r.get("chars") or 0) for r in found.values()),
            "chars_after": sum(len(r.get("summary") or "") for r in found.values())}


def _embeddings(store: AgentStore) -> dict | None:
    from memcli.store.search_index import read_vector_state

    state = read_vector_state(store.paths)
    if state is None or state[0] is None:
        return None
    return {"model": state[0], "dimensions": state[1], "tokens": state[2]}
