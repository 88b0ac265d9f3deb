"""Rules with one implementation each: superseding (memcli.models.superseded_ids), byte sizes
(memcli.sizes), and the one filter type (memcli.filters.TraceFilter) on traces and records."""

from __future__ import annotations

from memcli.filters import TraceFilter
from memcli.models import RawTrace, superseded_ids, supersedes_of
from memcli.sizes import format_size


def test_an_item_is_superseded_only_by_a_later_item_that_lists_it():
    items = [
        {"id": "f1", "supersedes": ["f3"]},          # names a later item: no effect
        {"id": "f2"},
        {"id": "f3", "supersedes": ["f1", "f2", 7]},  # a non-string entry is ignored
        {"id": "f4", "supersedes": ["f1"]},          # f1 already superseded by f3: the first one wins
        {"id": "f5", "supersedes": "f4"},            # not a list: supersedes nothing
    ]
    assert superseded_ids(items) == {"f1": "f3", "f2": "f3"}
    assert supersedes_of(items[2]) == ["f1", "f2"]
    assert supersedes_of(items[4]) == []


def test_the_live_memory_views_agree_on_superseding(cli, memory_dir):
    from memcli.inspect.memory import iter_memory
    from memcli.store.agent import AgentStore

    cli("ingest", "a", input=[{"trace_type": "user", "content": "hi"}])
    path = memory_dir / "agents" / "a" / "semantic.jsonl"
    facts = [{"id": "sem_1", "ts": 1.0, "fact": "old"},
             {"id": "sem_2", "ts": 2.0, "fact": "new", "supersedes": ["sem_1"]}]
    import orjson

    path.write_bytes(b"".join(orjson.dumps(f) + b"\n" for f in facts))
    store = AgentStore(memory_dir, "a")
    assert [f.id for f in store.live_memory()[1]] == ["sem_2"]
    assert [e.item.id for e in iter_memory(store)] == ["sem_2"]
    markdown = cli("export", "a", "-f", "markdown", "--with-memory").stdout
    assert "new" in markdown and "- old" not in markdown and "1 superseded fact not shown" in markdown


def test_one_size_format():
    assert [format_size(n) for n in (0, 1023, 1024, 1536, 5 * 1024 ** 2, 3 * 1024 ** 5)] == [
        "0 B", "1023 B", "1.0 KiB", "1.5 KiB", "5.0 MiB", "3,072.0 TiB"]


def test_one_filter_type_matches_traces_and_their_records_alike():
    flt = TraceFilter(types=frozenset({"user"}), tags=frozenset({"t"}), since=10.0, until=20.0,
                      turns=frozenset({"turn_0001"}))
    trace = RawTrace(id="rt_1", ts=15.0, turn_id="turn_0001", seq=1, trace_type="user", content="x", tags=["t"],
                     source_event="test")
    record = {"id": "rt_1", "ts": 15.0, "turn_id": "turn_0001", "seq": 1, "trace_type": "user", "tags": ["t"]}
    assert flt.matches(trace) and flt.matches(record)
    for change in ({"ts": 21.0}, {"trace_type": "assistant"}, {"tags": []}, {"turn_id": "turn_0002"}, {"ts": None}):
        assert not flt.matches({**record, **change}), change
    assert flt.matched_turns == {"turn_0001"}
    export_filter = TraceFilter.from_options(turns=["1"], until="1970-01-01")
    assert export_filter.turns == frozenset({"turn_0001"}) and export_filter.until == 86400 - 1e-6
