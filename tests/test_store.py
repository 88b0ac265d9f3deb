"""The store's invariants: torn tails, corrupt lines, reading from the end, the state cache and the
id index being rebuildable, crash rollback of ingest, permissions."""

from __future__ import annotations

import os
import stat

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memcli.errors import CorruptStoreError
from memcli.store import jsonl
from memcli.store.agent import AgentStore
from tests.events import A, U
from tests.helpers import agent_dir, ndjson, read_jsonl, tree_digest


def CALL(call_id, **kw):
    return {"trace_type": "tool_call", "tool_name": "sh", "tool_call_id": call_id, **kw}


def RES(call_id, **kw):
    return {"trace_type": "tool_result", "tool_call_id": call_id, "tool_result": "ok", **kw}


# ----------------------------------------------------------------------------- torn tails

@pytest.mark.slow
def test_torn_tail_at_every_byte_offset_is_repaired_and_never_glued(cli, memory_dir):
    cli("ingest", "a", input=[U("one"), A("two"), U("three")])
    path = agent_dir(memory_dir, "a") / "raw_traces.jsonl"
    full = path.read_bytes()
    lines = full.splitlines(keepends=True)
    keep = b"".join(lines[:2])
    last = lines[2]
    for cut in range(1, len(last) - 1):  # every proper prefix of the last record (newline excluded)
        path.write_bytes(keep + last[:cut])
        (agent_dir(memory_dir, "a") / ".state.json").unlink(missing_ok=True)
        result = cli("ingest", "a", input=[A(f"after {cut}")])
        assert result.exit_code == 0, result.stderr
        records = read_jsonl(path)  # every line parses
        assert [r["content"] for r in records] == ["one", "two", f"after {cut}"], cut
        assert "torn last line" in result.stderr
    # a record that only lost its newline is kept, not cut
    path.write_bytes(keep + last[:-1])
    result = cli("ingest", "a", input=[A("glue?")])
    assert [r["content"] for r in read_jsonl(path)] == ["one", "two", "three", "glue?"]
    assert "added it" in result.stderr


def test_readers_ignore_an_unterminated_last_line(cli, memory_dir):
    cli("ingest", "a", input=[U("one"), A("two")])
    path = agent_dir(memory_dir, "a") / "raw_traces.jsonl"
    with open(path, "ab") as f:
        f.write(b'{"id": "half')
    store = AgentStore(memory_dir, "a")
    assert [t.content for t in store.iter_active()] == ["one", "two"]
    assert [t.content for _, traces in store.last_turns(5) for t in traces] == ["one", "two"]


def test_bad_line_in_the_middle_is_an_error_naming_file_and_line(cli, memory_dir):
    cli("ingest", "a", input=[U("one"), A("two"), U("three")])
    path = agent_dir(memory_dir, "a") / "raw_traces.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0] + b"garbage\n" + lines[2])
    store = AgentStore(memory_dir, "a")
    with pytest.raises(CorruptStoreError) as err:
        list(store.iter_active())
    assert err.value.path == str(path) and err.value.line == 2
    with pytest.raises(CorruptStoreError) as err:
        list(store.iter_recent_turns())
    assert err.value.line == 2
    (agent_dir(memory_dir, "a") / ".state.json").unlink()
    result = cli("ingest", "a", input=[U("x")])
    assert result.exit_code == 1
    assert f"{path}:2: not valid JSON" in result.stderr
    assert "memcli doctor" in result.stderr
    assert "Traceback" not in result.stderr


# ----------------------------------------------------------------------------- reading from the end

@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.text(max_size=40), st.integers(0, 3)), max_size=40), st.integers(1, 200))
def test_reverse_reader_yields_exactly_the_lines_forward_reading_does(tmp_path_factory, rows, block):
    path = tmp_path_factory.mktemp("rev") / "f.jsonl"
    data = b"".join(orjson.dumps({"t": t}) + b"\n" * (1 + blanks % 2) for t, blanks in rows)
    path.write_bytes(data)
    old = jsonl.BLOCK
    jsonl.BLOCK = block  # small blocks: lines cross block boundaries
    try:
        backward = list(jsonl.iter_lines_reverse(path))
    finally:
        jsonl.BLOCK = old
    forward = list(jsonl.iter_lines(path))
    assert backward == list(reversed(forward))


def test_last_turns_returns_whole_turns_including_late_results(cli, memory_dir):
    cli("ingest", "a", input=[U("q1"), CALL("c1"), U("q2"), A("a2"), U("q3"), RES("c1"), A("a3")])
    store = AgentStore(memory_dir, "a")
    got = [(turn, [t.content or t.tool_call_id for t in traces]) for turn, traces in store.last_turns(2)]
    assert got == [("turn_0002", ["q2", "a2"]), ("turn_0003", ["q3", "a3"])]
    got = [(turn, [t.content or t.tool_call_id for t in traces]) for turn, traces in store.last_turns(3)]
    assert got[0] == ("turn_0001", ["q1", "c1", "c1"])


def test_last_turns_reads_only_the_end_of_a_large_file(cli, memory_dir, monkeypatch):
    cli("ingest", "a", input=[e for i in range(3000) for e in (U(f"q{i}"), A(f"a{i}"))])
    calls = []
    real = jsonl.open_read

    class Counting:
        def __init__(self, f):
            self.f = f

        def __getattr__(self, name):
            return getattr(self.f, name)

        def __enter__(self):
            return self

        def __exit__(self, *a):
            self.f.close()

        def read(self, n=-1):
            data = self.f.read(n)
            calls.append(len(data))
            return data

    monkeypatch.setattr(jsonl, "open_read", lambda p: Counting(real(p)))
    store = AgentStore(memory_dir, "a")
    turns = store.last_turns(3)
    assert [turn for turn, _ in turns] == ["turn_2998", "turn_2999", "turn_3000"]
    size = (agent_dir(memory_dir, "a") / "raw_traces.jsonl").stat().st_size
    assert sum(calls) < size / 10


# ----------------------------------------------------------------------------- state cache and id index

def test_state_and_id_index_are_rebuilt_from_the_jsonl_files(cli, memory_dir):
    cli("ingest", "a", input=[U("q", id="i1"), CALL("c", id="i2"), U("q2", id="i3")])
    d = agent_dir(memory_dir, "a")
    (d / ".state.json").unlink()
    (d / ".ids").unlink()
    result = cli("ingest", "a", input=[RES("c", id="i4"), U("q2", id="i3")])  # i3 is a duplicate
    assert "1 already present" in result.stderr
    assert [(r["id"], r["turn_id"], r["seq"]) for r in read_jsonl(d / "raw_traces.jsonl")] == [
        ("i1", "turn_0001", 1), ("i2", "turn_0001", 2), ("i3", "turn_0002", 1), ("i4", "turn_0001", 3)]


def test_corrupt_state_cache_is_ignored(cli, memory_dir):
    cli("ingest", "a", input=[U("q"), CALL("c")])
    (agent_dir(memory_dir, "a") / ".state.json").write_bytes(b"{not json")
    cli("ingest", "a", input=[U("q2"), RES("c")])
    assert [(r["turn_id"], r["seq"]) for r in read_jsonl(agent_dir(memory_dir, "a") / "raw_traces.jsonl")] == [
        ("turn_0001", 1), ("turn_0001", 2), ("turn_0002", 1), ("turn_0001", 3)]


def test_records_appended_by_another_writer_are_caught_up(cli, memory_dir):
    """AutoByteus (or a hand edit) appends to raw_traces.jsonl without touching memcli's cache."""
    cli("ingest", "a", input=[U("q"), CALL("c1")])
    path = agent_dir(memory_dir, "a") / "raw_traces.jsonl"
    foreign = [
        {"id": "ab_1", "ts": 1.0, "turn_id": "turn_0002", "seq": 1, "trace_type": "user", "content": "hi",
         "source_event": "LLMUserMessageReadyEvent"},
        {"id": "ab_2", "ts": 2.0, "turn_id": "turn_0002", "seq": 2, "trace_type": "tool_call", "content": "",
         "source_event": "PendingToolInvocationEvent", "tool_name": "t", "tool_call_id": "c2"},
    ]
    with open(path, "ab") as f:
        f.write(ndjson(foreign))
    cli("ingest", "a", input=[RES("c2"), RES("c1"), A("x"), U("hi", id="ab_1")])
    got = [(r["trace_type"], r["turn_id"], r["seq"]) for r in read_jsonl(path)][4:]
    assert got == [("tool_result", "turn_0002", 3), ("tool_result", "turn_0001", 3), ("assistant", "turn_0002", 4)]


def test_turn_numbers_continue_after_the_archive(cli, memory_dir):
    """Turn numbering counts on from the archive too (after a compaction moved old turns)."""
    d = agent_dir(memory_dir, "a")
    d.mkdir(parents=True)
    archived = [{"id": f"x{i}", "ts": 1.0, "turn_id": f"turn_{i:04d}", "seq": 1, "trace_type": "user",
                 "content": "old", "source_event": "s"} for i in range(1, 6)]
    (d / "raw_traces_archive.jsonl").write_bytes(ndjson(archived))
    cli("ingest", "a", input=[U("new"), U("x5", id="x5")])
    assert [r["turn_id"] for r in read_jsonl(d / "raw_traces.jsonl")] == ["turn_0006"]


# ----------------------------------------------------------------------------- crash rollback

@pytest.mark.parametrize("point", ["ingest:marker", "ingest:append", "ingest:appended", "ingest:ids", "ingest:state"])
def test_ingest_killed_at_each_step_leaves_no_trace_of_the_unacknowledged_batch(memcli_proc, memory_dir, point):
    assert memcli_proc("ingest", "a", input=[U("kept", id="k1"), CALL("c", id="k2")]).returncode == 0
    before = tree_digest(memory_dir / "agents")
    big = [A("x" * 2_000_000, id="big1"), A("y", id="big2")]  # > 1 MiB: 'ingest:append' hits mid-copy
    crashed = memcli_proc("ingest", "a", input=big, env={"MEMCLI_CRASH_AT": point})
    assert crashed.returncode == -9
    # the next command rolls the batch back, then carries on as if it never happened
    after = memcli_proc("ingest", "a", input=[RES("c", id="k3")])
    assert after.returncode == 0, after.stderr
    assert "rolled back an interrupted ingest" in after.stderr.decode()
    records = read_jsonl(agent_dir(memory_dir, "a") / "raw_traces.jsonl")
    assert [(r["id"], r["turn_id"], r["seq"]) for r in records] == [
        ("k1", "turn_0001", 1), ("k2", "turn_0001", 2), ("k3", "turn_0001", 3)]
    assert before["a/raw_traces.jsonl"] != tree_digest(memory_dir / "agents")["a/raw_traces.jsonl"]
    # and the retried batch goes in (its ids were not left behind in the index)
    assert memcli_proc("ingest", "a", input=big).returncode == 0
    assert [r["id"] for r in read_jsonl(agent_dir(memory_dir, "a") / "raw_traces.jsonl")][-2:] == ["big1", "big2"]


# ----------------------------------------------------------------------------- permissions

@pytest.mark.parametrize("umask", [0o000, 0o077, 0o022])
def test_files_are_0600_and_directories_0700_whatever_the_umask(memcli_proc, memory_dir, umask):
    old = os.umask(umask)
    try:
        assert memcli_proc("ingest", "a", input=[U("q"), CALL("c")]).returncode == 0
    finally:
        os.umask(old)
    for path in [memory_dir, *memory_dir.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        if path.is_dir():
            assert mode == 0o700, (path, oct(mode))
        else:
            assert mode == 0o600, (path, oct(mode))


def test_a_planted_symlink_for_the_agent_dir_is_refused(cli, memory_dir, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (memory_dir / "agents").mkdir(parents=True)
    (memory_dir / "agents" / "victim").symlink_to(outside)
    result = cli("ingest", "victim", input=[U("q")])
    assert result.exit_code == 1
    assert "symlink" in result.stderr
    assert list(outside.iterdir()) == []


def test_a_planted_symlink_for_a_data_file_is_not_followed(cli, memory_dir, tmp_path):
    target = tmp_path / "target.txt"
    target.write_text("precious\n")
    d = memory_dir / "agents" / "victim"
    d.mkdir(parents=True)
    (d / "raw_traces.jsonl").symlink_to(target)
    result = cli("ingest", "victim", input=[U("q")])
    assert result.exit_code == 1
    assert "symlink" in result.stderr
    assert target.read_text() == "precious\n"


def test_a_busy_sync_state_lock_is_a_clear_timeout_and_writes_nothing(tmp_path, monkeypatch):
    """The store-wide sync lock times out like an agent's lock (LockTimeoutError, exit 1 with a
    message), not with filelock's own exception."""
    from memcli.errors import LockTimeoutError
    from memcli.store.sync_state import load_files, save_files, sync_lock

    save_files(tmp_path, "codex", {"/a.jsonl": {"agent": "a", "offset": 1}})
    before = tree_digest(tmp_path)
    monkeypatch.setenv("MEMCLI_LOCK_TIMEOUT", "0.2")
    with sync_lock(tmp_path):
        with pytest.raises(LockTimeoutError, match=r"\.sync\.lock is held by another memcli process \(waited 0.2s"):
            save_files(tmp_path, "codex", {"/b.jsonl": {"agent": "b", "offset": 2}})
    assert tree_digest(tmp_path) == before
    assert load_files(tmp_path, "codex") == {"/a.jsonl": {"agent": "a", "offset": 1}}


def test_a_running_compaction_makes_another_busy(tmp_path):
    from memcli.errors import CompactionBusy
    from memcli.store.layout import agent_paths
    from memcli.store.lock import compaction_lock

    paths = agent_paths(tmp_path, "a")
    with compaction_lock(paths):
        with pytest.raises(CompactionBusy, match="another compaction of agent 'a' is running"):
            with compaction_lock(paths):
                pass
    with compaction_lock(paths):   # released: taken again at once
        pass
