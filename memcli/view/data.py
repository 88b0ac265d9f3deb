"""The page model of ``memcli view``: one JSON document that the page's script draws.

Everything the page shows is in this document; the page itself holds no stored text outside it.
Shape (keys kept short: the document is most of the file's bytes)::

    {"agent": str, "generated": float, "counter": str,
     "turns":  [{"id", "ts", "tier": "active"|"archive"|"split", "tokens": int, "prompt": int|null,
                 "compaction": cid|null,             # the compaction that archived the turn (or its steps)
                 "items": [ITEM...]}],
     "compactions": [{"id", "ts", "summary", "moved", "before", "after", "model", "undone",
                      "first_turn", "last_turn"}],   # the range it covered (an undone one's turns are active again)
     "harness": [{"id", "ts", "harness", "trigger", "pre_tokens", "trace", "turn", "first_turn", "last_turn"}],
                                                     # a harness's own compaction, imported (memcli.store.harness_items):
                                                     # its item, the summary trace (drawn where it is) and the turns it covered
     "facts": [{"id", "ts", "text", "pinned", "tags"}],
     "files": [{"path", "text"}],
     "chart": {"threshold": int, "budget": int, "context": int}}

    ITEM = {"k": kind, "id": trace id, "ts", "text", "lane": subagent id|null, "a": archived (0/1),
            # tool calls only:
            "name", "args", "status": "pending"|"success"|"error"|"orphan", "result", "err", "line"}

``k`` is ``ask`` (a user ask), ``ctx`` (context injected in the user's place: system prompts,
harness notices), ``say`` (assistant text), ``think`` (reasoning), ``call`` (a tool call with its
result folded in), ``orphan`` (a result with no call). ``line`` is an error's informative line
(:func:`memcli.compaction.offline.informative_line`). ``tokens`` is memcli's one token count of
the turn's messages as the working snapshot renders them (docs/design.md §4), ``prompt`` the
largest provider-reported ``usage.prompt_tokens`` in the turn. Texts are whole: the page shows a
long one clipped and expands it on demand.
"""

from __future__ import annotations

import time
from typing import Any

from memcli.models import RawTrace, is_pinned
from memcli.store.agent import AgentStore
from memcli.store.harness_items import harness_mark

RESULT_KEEP_CHARS = 200_000   # a result longer than this is cut in the page (``memcli get ID`` has it whole)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    import orjson

    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    except TypeError:
        return str(value)


def _kind(trace: RawTrace) -> str:
    if trace.trace_type == "user":
        return "ctx" if trace.is_context else "ask"
    if "reasoning" in trace.tags:
        return "think"
    return "say"


def _lane(trace: RawTrace) -> str | None:
    agent = trace.extra.get("agent_id") if trace.extra else None
    if agent:
        return str(agent)
    return "subagent" if "sidechain" in trace.tags else None


def _cut(text: str) -> str:
    if len(text) <= RESULT_KEEP_CHARS:
        return text
    return text[:RESULT_KEEP_CHARS] + f"\n… {len(text) - RESULT_KEEP_CHARS:,} more characters: memcli get expands it"


def collect(store: AgentStore, *, model: str | None = None, max_context_tokens: int | None = None) -> dict:
    """The page model of one agent (module docstring). Reads the store; writes nothing."""
    from memcli.compaction.offline import informative_line
    from memcli.compaction.policy import CompactionPolicy, input_budget
    from memcli.compaction.undo import list_compactions
    from memcli.snapshot.assemble import STREAM_MEMO_LIMIT, count_working, working_counter
    from memcli.snapshot.views import TokenMeter
    from memcli.tool_interactions import iter_tool_pairs

    store.require()
    traces: list[RawTrace] = []
    archived: set[str] = set()
    for stored in store.iter_traces(archive=True):   # one read of each file: the archive can be most of the store
        traces.append(stored.trace)
        if stored.tier == "archive":
            archived.add(stored.trace.id)

    turns: dict[str, dict] = {}
    for trace in traces:
        turn = turns.get(trace.turn_id)
        if turn is None:
            turn = turns[trace.turn_id] = {"id": trace.turn_id, "ts": trace.ts, "tier": None, "tokens": 0,
                                           "prompt": None, "compaction": None, "items": [], "_tiers": set()}
        turn["_tiers"].add("archive" if trace.id in archived else "active")
        usage = trace.usage or {}
        prompt = usage.get("prompt_tokens") if isinstance(usage, dict) else None
        if isinstance(prompt, int) and prompt > (turn["prompt"] or 0):
            turn["prompt"] = prompt

    # tool calls with their results folded in; everything else as it comes
    folded: dict[str, dict] = {}   # result trace id -> its call's item
    pairs = {}
    for pair in iter_tool_pairs(traces, ordered=False):
        key = pair.call.id if pair.call is not None else pair.result.id
        pairs[key] = pair
        if pair.call is not None and pair.result is not None:
            folded[pair.result.id] = key
    for trace in traces:
        turn = turns[trace.turn_id]
        item = {"k": None, "id": trace.id, "ts": trace.ts, "lane": _lane(trace), "a": int(trace.id in archived),
                "_seq": trace.seq}
        if trace.trace_type == "tool_result" and trace.id in folded:
            continue
        if trace.trace_type in ("tool_call", "tool_result"):
            pair = pairs.get(trace.id)
            interaction = pair.interaction if pair is not None else None
            status = interaction.status.value.lower() if interaction is not None else "orphan"
            result = pair.result if pair is not None else trace
            error = result.tool_error if result is not None else None
            result_text = _text(result.tool_result) if result is not None else ""
            item.update(k="call" if trace.trace_type == "tool_call" else "orphan", name=trace.tool_name or "",
                        args=_text(trace.tool_args) if trace.trace_type == "tool_call" else "",
                        status=status, result=_cut(result_text), err=error or "",
                        text=trace.content or "")
            if status == "error":
                item["line"] = informative_line("\n".join(t for t in (error or "", result_text) if t))
        else:
            item.update(k=_kind(trace), text=trace.content or "")
        turn["items"].append(item)

    # the one token count, per turn, over the whole history (what the turn costs while it is active)
    counter = working_counter(model)
    per_turn: dict[str, int] = {}

    def add(message, tokens: int) -> None:
        if message.turn_id in per_turn:
            per_turn[message.turn_id] += tokens
        else:
            per_turn[message.turn_id] = tokens

    with store.counting_cache():   # counts of texts seen before: no tokenizer start-up
        count_working(store, TokenMeter(counter, memo_limit=STREAM_MEMO_LIMIT), traces=traces, on_message=add)

    compactions = []
    entries = list_compactions(store)
    undone = {entry.id for entry in entries if entry.undone}
    turn_of = {trace.id: trace.turn_id for trace in traces}
    turn_order = {turn_id: i for i, turn_id in enumerate(turns)}
    owner: dict[str, str] = {}     # archived trace id -> the live compaction that archived it
    summaries: dict[str, str] = {}
    covers: dict[str, list[str]] = {}   # compaction id -> the turns its items name, in order
    harness = []
    for item in store.iter_episodic():
        mark = harness_mark(item)
        if mark is not None and isinstance(mark.get("trace_id"), str) and mark["trace_id"] in turn_of:
            covered = item.turn_ids or []
            harness.append({"id": item.id, "ts": item.ts, "harness": mark.get("harness"), "trigger": mark.get("trigger"),
                            "pre_tokens": mark.get("pre_tokens"), "trace": mark["trace_id"],
                            "turn": turn_of[mark["trace_id"]], "first_turn": covered[0] if covered else None,
                            "last_turn": covered[-1] if covered else None})
        cid = item.compaction_id
        if not cid:
            continue
        if cid not in summaries:
            summaries[cid] = item.summary
        for trace_id in item.trace_ids or []:
            if trace_id in turn_of:
                covers.setdefault(cid, []).append(turn_of[trace_id])
            if cid not in undone and trace_id in archived:
                owner[trace_id] = cid     # an undone compaction's traces were archived again by a later one
    for entry in entries:
        for trace_id in entry.trace_ids or []:
            if trace_id in archived and entry.id not in undone:
                owner[trace_id] = entry.id
        turn_ids = entry.turn_ids or sorted(set(covers.get(entry.id, ())), key=turn_order.__getitem__)
        compactions.append({
            "id": entry.id, "ts": entry.ts, "summary": summaries.get(entry.id, ""), "moved": entry.moved(),
            "before": entry.tokens_before, "after": entry.tokens_after,
            "model": (entry.llm or {}).get("model") or entry.summarizer or "offline", "undone": entry.undone,
            "first_turn": turn_ids[0] if turn_ids else None, "last_turn": turn_ids[-1] if turn_ids else None,
        })

    for turn in turns.values():
        turn["items"].sort(key=lambda item: item.pop("_seq"))   # the turn's own order, archived part or not
        tiers = turn.pop("_tiers")
        turn["tier"] = "split" if len(tiers) == 2 else tiers.pop()
        turn["tokens"] = per_turn.get(turn["id"], 0)
        for item in turn["items"]:
            cid = owner.get(item["id"])
            if cid:
                turn["compaction"] = cid
                break
    for entry in compactions:
        if entry["last_turn"] is None:
            covered = [t["id"] for t in turns.values() if t["compaction"] == entry["id"]]
            entry["first_turn"], entry["last_turn"] = (covered[0], covered[-1]) if covered else (None, None)

    _, live_semantic = store.live_memory()
    facts = [{"id": f.id, "ts": f.ts, "text": f.fact, "pinned": is_pinned(f), "tags": list(f.tags or [])}
             for f in live_semantic]
    tree = store.memory_tree()
    files = [{"path": path, "text": text} for path, text in sorted(tree.files.items())]
    budget, context, _, _ = input_budget(model, max_context_tokens, CompactionPolicy())
    return {
        "agent": store.agent_id, "generated": time.time(), "counter": counter.describe(),
        "traces": len(traces), "turns": list(turns.values()), "compactions": compactions, "harness": harness,
        "facts": facts, "files": files,
        "chart": {"threshold": int(CompactionPolicy().trigger_ratio * budget), "budget": budget, "context": context},
    }
