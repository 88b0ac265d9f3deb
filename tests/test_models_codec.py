"""The record codec (memcli.models.from_record) and the store's trace reader built on it: the fast
path (one generated builder per key order) makes exactly the objects the general rule makes, and
bad records fail as before, naming file and line."""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from memcli.errors import CorruptStoreError
from memcli.models import (
    EpisodicItem,
    RawTrace,
    SemanticItem,
    _from_record_general,
    from_record,
    record_builder,
    record_builders,
    to_record,
)
from memcli.store.agent import trace_from_record

BASE = {"id": "rt_1", "ts": 1.5, "turn_id": "turn_0001", "seq": 1, "trace_type": "user",
        "content": "hello", "source_event": "memcli.ingest"}
OPTIONAL = {"tool_name": "run", "tool_call_id": "c1", "tool_args": {"cmd": "ls"}, "tags": ["x"],
            "usage": {"input_tokens": 3}, "tokens": 7}


def same(a, b) -> None:
    """Same class, fields, repr, record, and attributes in the same order (same layout)."""
    assert type(a) is type(b)
    assert a == b
    assert repr(a) == repr(b)
    assert to_record(a) == to_record(b)
    assert list(vars(a).items()) == list(vars(b).items())
    assert dataclasses.asdict(a) == dataclasses.asdict(b)


def build_twice(cls, record):
    """from_record on a new key order (compiles its builder) and again (uses it)."""
    first = from_record(cls, dict(record))
    second = from_record(cls, dict(record))
    same(first, second)
    return second


def test_usual_record_gets_exact_fields_and_defaults():
    trace = build_twice(RawTrace, BASE)
    assert trace == RawTrace("rt_1", 1.5, "turn_0001", 1, "user", "hello", "memcli.ingest")
    assert (trace.media, trace.tool_name, trace.tool_args, trace.tool_result, trace.tokens) == (None,) * 5
    assert trace.tags == [] and trace.extra == {}
    assert to_record(trace) == BASE


@pytest.mark.parametrize("cls,record", [
    (RawTrace, BASE),
    (EpisodicItem, {"id": "ep_1", "ts": 2.0, "turn_ids": ["turn_0001"], "summary": "s"}),
    (SemanticItem, {"id": "sm_1", "ts": 3.0, "fact": "f", "confidence": 0.5}),
])
def test_every_key_order_matches_the_general_rule(cls, record):
    optional = {**OPTIONAL, "content": None, "salience": 0.9, "trace_ids": ["rt_1"], "odd": 1,
                "extra": {"kept": True}}
    optional = {k: v for k, v in optional.items() if k not in record or k == "content"}
    for n in range(3):
        for extra_keys in itertools.permutations(optional, n):
            data = dict(record)
            for key in extra_keys:
                data[key] = optional[key]
            same(build_twice(cls, data), _from_record_general(cls, dict(data)))
    reordered = dict(reversed(list(record.items())))
    same(build_twice(cls, reordered), _from_record_general(cls, reordered))


def test_a_checked_builder_builds_the_same_object_or_none_when_a_named_field_is_not_a_str():
    strings = ("id", "trace_type")
    for data in (BASE, {**BASE, **OPTIONAL, "odd": 1}, dict(reversed(list(BASE.items())))):
        build = record_builder(RawTrace, tuple(data), strings)
        assert record_builders(RawTrace, strings)[tuple(data)] is build        # kept for the next record
        same(build(dict(data)), _from_record_general(RawTrace, dict(data)))
        for bad in ({"id": 5}, {"trace_type": None}, {"id": b"rt"}):
            assert build({**data, **bad}) is None
    assert record_builder(RawTrace, ("ts", "turn_id", "seq", "trace_type", "content", "source_event"), strings) is None
    assert record_builder(RawTrace, tuple(BASE)) is record_builders(RawTrace)[tuple(BASE)]   # unchecked: apart


def test_absent_or_none_content_and_tags_become_empty():
    for data in ({k: v for k, v in BASE.items() if k != "content"}, {**BASE, "content": None, "tags": None}):
        trace = build_twice(RawTrace, data)
        assert trace.content == "" and trace.tags == []
    assert build_twice(RawTrace, {**BASE, "content": 0}).content == 0  # only None is filled in


def test_unknown_keys_go_to_extra_in_their_order():
    data = {"zeta": 1, **BASE, "extra": {"a": 1}, "agent_id": "x"}
    trace = build_twice(RawTrace, data)
    assert list(trace.extra.items()) == [("zeta", 1), ("extra", {"a": 1}), ("agent_id", "x")]
    assert list(to_record(trace)) == [*BASE, "zeta", "extra", "agent_id"]


def test_instances_never_share_mutable_defaults():
    a = from_record(RawTrace, dict(BASE))
    b = from_record(RawTrace, dict(BASE))
    a.tags.append("mine")
    a.extra["k"] = 1
    assert b.tags == [] and b.extra == {}
    assert from_record(RawTrace, dict(BASE)).tags == []
    e1 = from_record(EpisodicItem, {"id": "e", "ts": 1.0, "turn_ids": [], "summary": ""})
    e2 = from_record(EpisodicItem, {"id": "e", "ts": 1.0, "turn_ids": [], "summary": ""})
    e1.supersedes.append("x")
    e1.trace_ids.append("y")
    assert e2.supersedes == [] and e2.trace_ids == [] and e2.salience == 0.0


def test_record_values_are_kept_not_copied():
    args = {"cmd": "ls"}
    trace = from_record(RawTrace, {**BASE, "tool_args": args})
    assert trace.tool_args is args


def test_many_key_orders_stay_correct_beyond_the_builder_cache():
    keys = list(BASE)
    for i, order in enumerate(itertools.islice(itertools.permutations(keys), 400)):
        data = {k: BASE[k] for k in order}
        data[f"k{i}"] = i
        same(from_record(RawTrace, data), _from_record_general(RawTrace, data))
    assert len(record_builders(RawTrace)) <= 256


def test_missing_required_field_raises_the_dataclass_error():
    data = {k: v for k, v in BASE.items() if k not in ("ts", "seq")}
    for _ in range(2):
        with pytest.raises(TypeError) as raised:
            from_record(RawTrace, dict(data))
        assert str(raised.value) == "RawTrace.__init__() missing 2 required positional arguments: 'ts' and 'seq'"
    with pytest.raises(TypeError, match="not iterable"):
        from_record(RawTrace, None)


def test_trace_from_record_builds_the_same_trace(tmp_path):
    path = tmp_path / "raw_traces.jsonl"
    for data in (BASE, {**BASE, **OPTIONAL}, {**BASE, "content": None}, {"x": 1, **BASE}):
        for _ in range(2):
            same(trace_from_record(path, 1, 0, dict(data)), _from_record_general(RawTrace, dict(data)))

    class Text(str):
        pass

    trace = trace_from_record(path, 1, 0, {**BASE, "id": Text("rt_9")})  # a str subclass is a str
    assert trace.id == "rt_9" and type(trace.id) is Text


@pytest.mark.parametrize("change,reason", [
    ({"id": None}, "trace without a valid 'id'"),
    ({"id": 5, "turn_id": 6}, "trace without a valid 'id'"),
    ({"turn_id": ["t"]}, "trace without a valid 'turn_id'"),
    ({"trace_type": 1, "ts": None}, "trace without a valid 'trace_type'"),
    ({"ts": None}, "not a RawTrace record (RawTrace.__init__() missing 1 required positional argument: 'ts')"),
    ({"seq": None, "source_event": None, "zz": 1},
     "not a RawTrace record (RawTrace.__init__() missing 2 required positional arguments: 'seq' and 'source_event')"),
])
def test_bad_traces_fail_naming_file_and_line(tmp_path, change, reason):
    path = tmp_path / "raw_traces.jsonl"
    trace_from_record(path, 1, 0, dict(BASE))  # the key order's builder exists
    data = {k: v for k, v in {**BASE, **change}.items() if v is not None}  # None: the key is absent
    lines = [b'{"id":"rt_0"}\n', b"{}\n", b"{}\n"]
    path.write_bytes(b"".join(lines))
    for line_no in (3, None):
        with pytest.raises(CorruptStoreError) as raised:
            trace_from_record(path, line_no, len(lines[0]) + len(lines[1]), dict(data))
        assert (raised.value.path, raised.value.line, raised.value.reason) == (str(path), 3, reason)
