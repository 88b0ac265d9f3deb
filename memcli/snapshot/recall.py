"""Which episodic summaries and semantic facts enter the snapshot's memory bundle (docs/design.md §5).

Pinned facts (tag ``pinned``, see :mod:`memcli.search.facts`) always enter, first. Then:

* without recall — the last :data:`MAX_EPISODIC` live summaries and the last
  :data:`MAX_SEMANTIC` live facts that are not pinned (what snapshots always carried);
* with ``recall=QUERY`` (or ``"auto"``: the latest user ask of the active file) — the live
  summaries and facts that best match the query (:func:`memcli.search.search`, the lexical
  ranking: never an embedding model, so a snapshot stays offline and fast), best first, each taken while the bundle stays within ``memory_tokens``
  (pinned facts count, and are never left out); then the most recent live summary, if it fits
  and is not in yet. Summaries are listed oldest first (a story reads forwards), facts pinned
  first and then by score. The same store and query always give the same bundle.

A harness compaction's item (memcli.store.harness_items) never enters the bundle without recall
(``live_memory`` leaves it out): while its summary trace is active the snapshot renders that
trace in place, and once a memcli compaction archived the trace, memcli's own summary of that
window stands for the same span (the compaction planner counts the bundle so). With recall it
may be chosen like any summary, within ``memory_tokens``, once its trace is archived; never while
the trace is active.

Every choice is explained in ``notes`` (the snapshot prints them on stderr): which ids, with
their scores or why they were taken, and how many matches did not fit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memcli.models import EpisodicItem, SemanticItem, is_pinned
from memcli.store.agent import AgentStore
from memcli.store.harness_items import rendered_in_place

MAX_EPISODIC = 3
MAX_SEMANTIC = 20
DEFAULT_MEMORY_TOKENS = 2_000
RECALL_CANDIDATES = 50
AUTO_QUERY_TERMS = 48


@dataclass
class Bundle:
    episodic: list[EpisodicItem]
    semantic: list[SemanticItem]
    notes: list[str] = field(default_factory=list)


def _not_in_place(store: AgentStore, episodic: list) -> list:
    """``episodic`` without the harness compactions whose summary trace is still active: the
    snapshot renders that trace in place, so the bundle does not carry its text again
    (memcli.store.harness_items)."""
    shown = rendered_in_place(store.paths, episodic)
    return [item for item in episodic if item.id not in shown] if shown else episodic


def latest_user_ask(store: AgentStore) -> str | None:
    """The text of the newest user ask in the active file (read from the end)."""
    trace = latest_user_ask_trace(store)
    return None if trace is None else trace.content


def latest_user_ask_trace(store: AgentStore):
    """The newest user ask of the active file (a RawTrace; None when there is none)."""
    recent = store.iter_recent_turns()
    try:
        for _turn, traces in recent:
            for trace in reversed(traces):
                if trace.trace_type == "user" and not trace.is_context and trace.content.strip():
                    return trace
    finally:
        recent.close()
    return None


def default_bundle(episodic: list, semantic: list) -> tuple[list, list]:
    """The items the bundle carries without recall, out of these live items (oldest first): the
    last :data:`MAX_EPISODIC` summaries; every pinned fact, first, then the last
    :data:`MAX_SEMANTIC` others. The one rule: the snapshot applies it to the store's live
    items, and a compaction to the live items it would leave (memcli.compaction.compactor)."""
    pinned = [f for f in semantic if is_pinned(f)]
    rest = [f for f in semantic if not is_pinned(f)]
    return episodic[-MAX_EPISODIC:], pinned + rest[-MAX_SEMANTIC:]


def select_bundle(store: AgentStore, *, recall: str | None, memory_tokens: int, count) -> Bundle:
    """The bundle's items (module docstring); ``count(text) -> tokens``."""
    if recall is None:
        return Bundle(*default_bundle(*store.live_memory(MAX_EPISODIC, None)))

    query = label = recall
    notes: list[str] = []
    if recall == "auto":
        query = label = latest_user_ask(store)
        if query is None:
            bundle = select_bundle(store, recall=None, memory_tokens=memory_tokens, count=count)
            bundle.notes.append("recall auto: no user ask in the active history; used the most recent memory")
            return bundle
        from memcli.search.query import parse_query

        terms = parse_query(query).terms[:AUTO_QUERY_TERMS]
        query = " ".join(t.expression() for t in terms)
    episodic, semantic = store.live_memory(harness=True)
    episodic = _not_in_place(store, episodic)
    by_id = {item.id: item for item in episodic + semantic}
    pinned = [f for f in semantic if is_pinned(f)]
    chosen: dict[str, str] = {f.id: "pinned" for f in pinned}
    used = sum(count(f.fact) for f in pinned)

    from memcli.errors import UsageError
    from memcli.search import search

    try:
        result = search(store, query, limit=RECALL_CANDIDATES, kinds=("episodic", "semantic"),
                        embed_model=False)   # lexical: a snapshot (a hook's) never waits on a model
        hits = result.hits
    except UsageError:  # a query without words: nothing to match
        hits = []
    scores: dict[str, float] = {}
    left_out = 0
    for hit in hits:
        item = by_id.get(hit.id)
        if item is None or hit.id in chosen:
            continue
        tokens = count(item.summary if isinstance(item, EpisodicItem) else item.fact)
        if used + tokens > memory_tokens:
            left_out += 1
            continue
        used += tokens
        chosen[hit.id] = f"score {hit.score:.2f}"
        scores[hit.id] = hit.score
    if episodic and episodic[-1].id not in chosen:
        latest = episodic[-1]
        tokens = count(latest.summary)
        if used + tokens <= memory_tokens:
            used += tokens
            chosen[latest.id] = "most recent summary"
        else:
            notes.append(f"the most recent summary {latest.id} did not fit the {memory_tokens:,}-token budget")

    picked_episodic = [e for e in episodic if e.id in chosen]
    ranked = sorted((f for f in semantic if f.id in chosen and not is_pinned(f)),
                    key=lambda f: (-scores.get(f.id, 0.0), f.id))
    picked_semantic = pinned + ranked
    label = " ".join(label.split())
    shown = label if len(label) <= 80 else label[:77] + "..."
    listing = ", ".join(f"{i} ({why})" for i, why in chosen.items()) or "nothing matched"
    notes.insert(0, f"recall {shown!r}: {listing}; ~{used:,} of {memory_tokens:,} memory tokens")
    if left_out:
        notes.append(f"recall: {left_out} more matching item{'s' if left_out != 1 else ''} did not fit "
                     f"--memory-tokens {memory_tokens:,}")
    return Bundle(picked_episodic, picked_semantic, notes)
