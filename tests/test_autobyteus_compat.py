"""A store written by AutoByteus must be readable by memcli and the other way round (docs/design.md §1).

AutoByteus itself is installed for the tests without its (heavy) dependencies
(``pip install --no-deps autobyteus``, see the Makefile); its memory store modules depend only
on the standard library, so they are loaded straight from its package directory without running
the package ``__init__`` files, which would import the whole framework.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from pathlib import Path

import pytest

from memcli.store.agent import AgentStore
from tests.helpers import missing_here, read_jsonl


@pytest.fixture(scope="module")
def autobyteus():
    spec = importlib.util.find_spec("autobyteus")
    if spec is None or not spec.submodule_search_locations:
        missing_here("autobyteus (make test installs it with --no-deps)")
    root = Path(list(spec.submodule_search_locations)[0])
    saved = {k: v for k, v in sys.modules.items() if k == "autobyteus" or k.startswith("autobyteus.")}
    for name, rel in [("autobyteus", ""), ("autobyteus.memory", "memory"),
                      ("autobyteus.memory.models", "memory/models"), ("autobyteus.memory.store", "memory/store")]:
        module = types.ModuleType(name)
        module.__path__ = [str(root / rel)]
        sys.modules[name] = module
    try:
        file_store = importlib.import_module("autobyteus.memory.store.file_store")
        models = importlib.import_module("autobyteus.memory.models.raw_trace_item")
        episodic = importlib.import_module("autobyteus.memory.models.episodic_item")
        semantic = importlib.import_module("autobyteus.memory.models.semantic_item")
        types_mod = importlib.import_module("autobyteus.memory.models.memory_types")
        yield types.SimpleNamespace(FileMemoryStore=file_store.FileMemoryStore, RawTraceItem=models.RawTraceItem,
                                    EpisodicItem=episodic.EpisodicItem, SemanticItem=semantic.SemanticItem,
                                    MemoryType=types_mod.MemoryType)
    finally:
        for k in [k for k in sys.modules if k == "autobyteus" or k.startswith("autobyteus.")]:
            del sys.modules[k]
        sys.modules.update(saved)


def test_autobyteus_reads_what_memcli_writes(autobyteus, cli, memory_dir):
    cli("ingest", "agent-1", input=[
        {"trace_type": "user", "content": "hi", "media": {"images": ["https://x/a.png"]}},
        {"trace_type": "tool_call", "tool_name": "search", "tool_call_id": "c1", "tool_args": {"q": "x"}},
        {"trace_type": "tool_result", "tool_call_id": "c1", "tool_result": {"hits": 2}, "usage_note": "extra"},
        {"trace_type": "assistant", "content": "done", "usage": {"prompt_tokens": 10, "completion_tokens": 2}},
    ])
    store = autobyteus.FileMemoryStore(memory_dir, "agent-1")
    items = store.list(autobyteus.MemoryType.RAW_TRACE)
    assert [(i.trace_type, i.turn_id, i.seq) for i in items] == [
        ("user", "turn_0001", 1), ("tool_call", "turn_0001", 2), ("tool_result", "turn_0001", 3),
        ("assistant", "turn_0001", 4)]
    assert items[0].media == {"images": ["https://x/a.png"]}
    assert items[1].tool_args == {"q": "x"} and items[2].tool_result == {"hits": 2}
    assert items[-1].content == "done"


def test_memcli_reads_what_autobyteus_writes(autobyteus, cli, memory_dir):
    store = autobyteus.FileMemoryStore(memory_dir, "ab")
    store.add([
        autobyteus.RawTraceItem(id="rt_1", ts=1.0, turn_id="turn_0001", seq=1, trace_type="user", content="q",
                                source_event="LLMUserMessageReadyEvent",
                                media={"images": [], "audio": [], "video": []}, tags=["processed"]),
        autobyteus.RawTraceItem(id="rt_2", ts=2.0, turn_id="turn_0001", seq=2, trace_type="tool_call", content="",
                                source_event="PendingToolInvocationEvent", tool_name="ls", tool_call_id="t1",
                                tool_args={"path": "."}),
        autobyteus.EpisodicItem(id="ep_1", ts=3.0, turn_ids=["turn_0000"], summary="earlier work"),
        autobyteus.SemanticItem(id="sem_1", ts=3.0, fact="user likes tabs", confidence=0.9),
    ])
    memcli_store = AgentStore(memory_dir, "ab")
    traces = list(memcli_store.iter_active())
    assert [(t.id, t.trace_type, t.tags) for t in traces] == [
        ("rt_1", "user", ["processed"]), ("rt_2", "tool_call", [])]
    episodic, semantic = memcli_store.live_memory()
    assert [e.summary for e in episodic] == ["earlier work"] and [s.fact for s in semantic] == ["user likes tabs"]
    # memcli continues the AutoByteus turn and answers its pending call
    result = cli("ingest", "ab", input=[{"trace_type": "tool_result", "tool_call_id": "t1", "tool_result": "a b"}])
    assert result.exit_code == 0
    last = read_jsonl(memory_dir / "agents" / "ab" / "raw_traces.jsonl")[-1]
    assert (last["turn_id"], last["seq"]) == ("turn_0001", 3)
    # and AutoByteus still reads the file after memcli wrote to it
    assert [i.seq for i in store.list(autobyteus.MemoryType.RAW_TRACE)] == [1, 2, 3]


def test_autobyteus_reads_a_harness_compaction_item_as_an_episodic_item(autobyteus, cli, memory_dir):
    """An imported harness compaction's memory item (memcli.store.harness_items) is an ordinary
    episodic record to AutoByteus: its summary and turns, the mark an extra field."""
    cli("ingest", "agent-1", input=[
        {"id": "u1", "trace_type": "user", "content": "fix it"},
        {"id": "s1", "trace_type": "user", "content": "the harness's summary", "tags": ["compact_summary"],
         "harness_compaction": {"harness": "claude-code", "trigger": "auto", "pre_tokens": 9000}},
    ])
    store = autobyteus.FileMemoryStore(memory_dir, "agent-1")
    (item,) = store.list(autobyteus.MemoryType.EPISODIC)
    assert (item.summary, item.turn_ids) == ("the harness's summary", ["turn_0001"])
    assert [i.id for i in store.list(autobyteus.MemoryType.RAW_TRACE)] == ["u1", "s1"]
