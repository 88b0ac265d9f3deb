"""Helpers for the importer tests: import values through the library, read back traces."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import orjson

from memcli.ingest.api import ingest
from memcli.store.agent import AgentStore
from memcli.tool_interactions import pair_tool_traces


def write_input(path: Path, values, layout: str = "ndjson") -> Path:
    """Write ``values`` as NDJSON (default), a JSON ``array`` or one ``pretty`` document."""
    if layout == "ndjson":
        path.write_bytes(b"".join(orjson.dumps(v) + b"\n" for v in values))
    elif layout == "array":
        path.write_bytes(orjson.dumps(list(values)))
    elif layout == "pretty":
        (value,) = values
        path.write_bytes(orjson.dumps(value, option=orjson.OPT_INDENT_2))
    else:
        raise ValueError(layout)
    return path


def import_values(memory_dir: Path, agent: str, values, fmt: str = "auto", *, tmp_path: Path,
                  layout: str = "ndjson", name: str | None = None, **kw):
    path = write_input(tmp_path / (name or f"{agent}-{fmt}.input"), values, layout)
    return ingest(memory_dir, agent, path, fmt=fmt, **kw)


def traces(memory_dir: Path, agent: str) -> list:
    return [s.trace for s in AgentStore(memory_dir, agent).iter_traces()]


def shape(trace_list) -> list[tuple]:
    """(trace_type, turn_id, seq, tags, content or tool_call_id) per trace."""
    out = []
    for t in trace_list:
        what = t.tool_call_id if t.trace_type in ("tool_call", "tool_result") else t.content
        out.append((t.trace_type, t.turn_id, t.seq, tuple(t.tags), what))
    return out


def statuses(trace_list) -> Counter:
    return Counter(i.status.value for i in pair_tool_traces(trace_list))


def user_turns(trace_list) -> int:
    """Turns opened by a real user ask (not context)."""
    return len({t.turn_id for t in trace_list if t.trace_type == "user" and not t.is_context})


def comparable(trace_list) -> list[tuple]:
    """What must be identical between two imports of the same transcript."""
    return [(t.id, t.turn_id, t.seq, t.trace_type, t.content, t.tool_call_id, orjson.dumps(t.tool_result),
             t.tool_error, tuple(t.tags), orjson.dumps(t.tool_args), orjson.dumps(t.media)) for t in trace_list]


def one_conversation(path: Path, tmp_path: Path) -> Path:
    """``path`` itself, or for a file of many conversations (tau-bench records, a ShareGPT
    dataset, OpenHands outputs — refused without ``--split``) a file of its first conversation."""
    from memcli.importers import resolve
    from memcli.ingest.source import iter_json_values

    with open(path, "rb") as f:
        importer, values = resolve("auto", iter_json_values(f), str(path))
        split = getattr(importer, "conversations", None)
        conversations = list(split(values)) if split is not None else []
    if len(conversations) <= 1:
        return path
    out = tmp_path / f"first-{path.name}.jsonl"
    out.write_bytes(b"".join(orjson.dumps(v) + b"\n" for _, v in conversations[0].values))
    return out
