"""Native ingest: stamping, turns, seq and tool linkage (docs/design.md §2), across invocations."""

from __future__ import annotations

import subprocess
import sys
import time

import orjson

from tests.events import A, U
from tests.helpers import agent_dir, ndjson, proc_env, read_jsonl, tree_digest


def CALL(call_id, name="sh", **kw):
    return {"trace_type": "tool_call", "tool_name": name, "tool_call_id": call_id, "tool_args": {"cmd": call_id}, **kw}


def RES(call_id, result="ok", **kw):
    return {"trace_type": "tool_result", "tool_call_id": call_id, "tool_result": result, **kw}


def shape(memory_dir, agent="a"):
    """(trace_type, turn_id, seq, tool_call_id or content) per stored trace."""
    return [
        (r["trace_type"], r["turn_id"], r["seq"], r.get("tool_call_id") or r["content"])
        for r in read_jsonl(agent_dir(memory_dir, agent) / "raw_traces.jsonl")
    ]


def test_ingest_stamps_required_fields_and_reports_on_stderr(cli, memory_dir):
    result = cli("ingest", "a", input=[U("hi"), A("hello")])
    assert result.exit_code == 0
    assert result.stdout == ""
    assert result.stderr == "memcli: ingested 2 events into 'a' (1 turn, 0 tool calls, 0 results); format native (detected)\n"
    records = read_jsonl(agent_dir(memory_dir, "a") / "raw_traces.jsonl")
    assert [list(r) for r in records] == [
        ["id", "ts", "turn_id", "seq", "trace_type", "content", "source_event"]] * 2
    assert [r["turn_id"] for r in records] == ["turn_0001", "turn_0001"]
    assert [r["seq"] for r in records] == [1, 2]
    assert records[0]["id"] < records[1]["id"]  # time-sortable
    assert all(r["source_event"] == "memcli.ingest" for r in records)
    assert abs(records[0]["ts"] - time.time()) < 60


def test_turns_seq_and_linkage_continue_across_invocations(cli, memory_dir):
    # every event in its own invocation, as a script calling memcli per event would do
    events = [U("one"), CALL("c1"), CALL("c2"), A("working"), U("two"), RES("c2"), RES("c1"), A("done"),
              CALL("c3"), U("three"), RES("c3", "late")]
    for event in events:
        assert cli("ingest", "a", input=[event]).exit_code == 0
    assert shape(memory_dir) == [
        ("user", "turn_0001", 1, "one"),
        ("tool_call", "turn_0001", 2, "c1"),
        ("tool_call", "turn_0001", 3, "c2"),
        ("assistant", "turn_0001", 4, "working"),
        ("user", "turn_0002", 1, "two"),
        ("tool_result", "turn_0001", 5, "c2"),   # joins its call's turn, after the next user message
        ("tool_result", "turn_0001", 6, "c1"),
        ("assistant", "turn_0002", 2, "done"),
        ("tool_call", "turn_0002", 3, "c3"),
        ("user", "turn_0003", 1, "three"),
        ("tool_result", "turn_0002", 4, "c3"),
    ]


def test_one_invocation_gives_the_same_result_as_one_per_event(cli, memory_dir):
    events = [U("one"), CALL("c1"), U("two"), RES("c1"), A("x"), CALL("c1"), RES("c1")]
    cli("ingest", "single", input=events)
    for event in events:
        cli("ingest", "many", input=[event])
    assert shape(memory_dir, "single") == shape(memory_dir, "many")


def test_reused_tool_call_ids_pair_first_in_first_out(cli, memory_dir):
    events = [U("q"), CALL("dup", "a"), CALL("dup", "b"), RES("dup", "for a"), U("q2"), CALL("dup", "c"),
              RES("dup", "for b"), RES("dup", "for c")]
    cli("ingest", "a", input=events[:4])
    cli("ingest", "a", input=events[4:])
    got = [(t, turn, seq) for t, turn, seq, _ in shape(memory_dir)]
    assert got == [
        ("user", "turn_0001", 1), ("tool_call", "turn_0001", 2), ("tool_call", "turn_0001", 3),
        ("tool_result", "turn_0001", 4), ("user", "turn_0002", 1), ("tool_call", "turn_0002", 2),
        ("tool_result", "turn_0001", 5),   # answers the second call of turn 1 (FIFO)
        ("tool_result", "turn_0002", 3),   # then the call of turn 2
    ]


def test_orphan_result_joins_the_open_turn(cli, memory_dir):
    cli("ingest", "a", input=[U("q"), RES("nobody-called-me")])
    assert shape(memory_dir)[-1] == ("tool_result", "turn_0001", 2, "nobody-called-me")


def test_first_trace_that_is_not_user_opens_turn_one(cli, memory_dir):
    cli("ingest", "a", input=[A("greeting"), U("q")])
    assert [(t, turn) for t, turn, _, _ in shape(memory_dir)] == [
        ("assistant", "turn_0001"), ("user", "turn_0002")]


def test_context_messages_do_not_open_turns(cli, memory_dir):
    events = [U("You are helpful.", tags=["system"]), U("first ask"), A("ok"),
              U("<env>cwd=/x</env>", tags=["context"]), U("second ask")]
    cli("ingest", "a", input=events)
    assert [(turn, seq) for _, turn, seq, _ in shape(memory_dir)] == [
        ("turn_0001", 1), ("turn_0001", 2), ("turn_0001", 3), ("turn_0001", 4), ("turn_0002", 1)]


def test_given_turn_and_seq_are_kept_and_continued(cli, memory_dir):
    cli("ingest", "a", input=[U("q", turn_id="turn_0007", seq=3), A("a")])
    cli("ingest", "a", input=[U("next")])
    assert [(turn, seq) for _, turn, seq, _ in shape(memory_dir)] == [
        ("turn_0007", 3), ("turn_0007", 4), ("turn_0008", 1)]


def test_given_turn_of_an_old_turn_continues_its_seq(cli, memory_dir):
    cli("ingest", "a", input=[U("q1"), A("a1"), *([U("q"), A("a")] * 70)])  # turn_0001 leaves the cache
    cli("ingest", "a", input=[A("late note", turn_id="turn_0001")])
    assert shape(memory_dir)[-1] == ("assistant", "turn_0001", 3, "late note")


def test_unknown_fields_are_kept_and_required_fields_come_first(cli, memory_dir):
    cli("ingest", "a", input=[{"zzz": {"x": 1}, "tool_args": {"p": 1}, "trace_type": "tool_call",
                               "tool_call_id": "c", "tool_name": "t", "tags": ["a"], "aaa": 2}])
    (record,) = read_jsonl(agent_dir(memory_dir, "a") / "raw_traces.jsonl")
    # AutoByteus' required fields in its order, then the event's own fields in the order given
    assert list(record) == ["id", "ts", "turn_id", "seq", "trace_type", "content", "source_event",
                            "zzz", "tool_args", "tool_call_id", "tool_name", "tags", "aaa"]
    assert record["zzz"] == {"x": 1} and record["aaa"] == 2


def test_iso_and_millisecond_timestamps_become_epoch_seconds(cli, memory_dir):
    cli("ingest", "a", input=[U("x", ts="2025-01-02T03:04:05Z"), U("y", ts=1735787045000), U("z", ts=1735787045)])
    assert [r["ts"] for r in read_jsonl(agent_dir(memory_dir, "a") / "raw_traces.jsonl")] == [1735787045.0] * 3


def test_reingest_with_ids_is_a_no_op(cli, memory_dir):
    events = [U("q", id="e1"), CALL("c", id="e2"), RES("c", id="e3")]
    assert cli("ingest", "a", input=events).exit_code == 0
    before = tree_digest(memory_dir / "agents")
    again = cli("ingest", "a", input=events)
    assert again.exit_code == 0
    assert "ingested 0 events" in again.stderr and "3 already present" in again.stderr
    after = tree_digest(memory_dir / "agents")
    assert before["a/raw_traces.jsonl"] == after["a/raw_traces.jsonl"]


def test_duplicate_id_inside_one_input_is_stored_once(cli, memory_dir):
    cli("ingest", "a", input=[U("q", id="same"), U("again", id="same")])
    assert [r["content"] for r in read_jsonl(agent_dir(memory_dir, "a") / "raw_traces.jsonl")] == ["q"]


def test_export_style_reingest_of_own_records_adds_nothing(cli, memory_dir):
    cli("ingest", "a", input=[U("q"), CALL("c"), RES("c"), A("done")])
    path = agent_dir(memory_dir, "a") / "raw_traces.jsonl"
    original = path.read_bytes()
    result = cli("ingest", "a", input=original)
    assert "4 already present" in result.stderr
    assert path.read_bytes() == original
    # and into another agent: the same records, byte for byte
    cli("ingest", "b", input=original)
    assert (agent_dir(memory_dir, "b") / "raw_traces.jsonl").read_bytes() == original


def test_json_array_input(cli, memory_dir):
    data = orjson.dumps([U("q"), A("a")], option=orjson.OPT_INDENT_2)
    assert cli("ingest", "a", input=data).exit_code == 0
    assert [t for t, _, _, _ in shape(memory_dir)] == ["user", "assistant"]


def test_input_from_a_file_argument_and_dash(cli, memory_dir, tmp_path):
    f = tmp_path / "in.ndjson"
    f.write_bytes(ndjson([U("from file")]))
    assert cli("ingest", "a", f).exit_code == 0
    assert cli("ingest", "a", "-", input=[U("from stdin")]).exit_code == 0
    assert [c for _, _, _, c in shape(memory_dir)] == ["from file", "from stdin"]


def test_missing_input_file_is_a_usage_error(cli, memory_dir, tmp_path):
    result = cli("ingest", "a", tmp_path / "nope.ndjson")
    assert result.exit_code == 2
    assert "nope.ndjson: no such file" in result.stderr


def test_empty_input_writes_nothing(cli, memory_dir):
    result = cli("ingest", "a", input=b"\n\n")
    assert result.exit_code == 1
    assert result.stderr == "memcli: error: no events in the input (format native)\n  hint: nothing was written\n"
    assert not agent_dir(memory_dir, "a").exists()


def test_skip_invalid_ingests_the_valid_events_and_names_the_bad_lines(cli, memory_dir):
    data = ndjson([U("ok1")]) + b"not json\n" + ndjson([{"trace_type": "bogus"}, A("ok2")])
    result = cli("ingest", "a", "--skip-invalid", input=data)
    assert result.exit_code == 0
    assert "memcli: skipped line 2: not valid JSON" in result.stderr
    assert "memcli: skipped line 3: field 'trace_type': unknown value 'bogus'" in result.stderr
    assert "2 invalid skipped" in result.stderr
    assert [c for _, _, _, c in shape(memory_dir)] == ["ok1", "ok2"]


def test_stream_mode_persists_events_while_the_pipe_is_still_open(memory_dir):
    proc = subprocess.Popen([sys.executable, "-m", "memcli", "ingest", "live", "--stream"],
                            stdin=subprocess.PIPE, stderr=subprocess.PIPE, env=proc_env())
    path = agent_dir(memory_dir, "live") / "raw_traces.jsonl"
    try:
        for i, event in enumerate([U("first"), A("second"), CALL("c9"), RES("c9")]):
            proc.stdin.write(ndjson([event]))
            proc.stdin.flush()
            # the first event also waits for the interpreter to start (slow on a loaded machine);
            # once running, every event must be on disk within a second
            deadline = time.monotonic() + (30.0 if i == 0 else 1.0)
            while time.monotonic() < deadline and len(read_jsonl(path)) < i + 1:
                time.sleep(0.02)
            assert len(read_jsonl(path)) == i + 1, f"event {i} not on disk in time"
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    assert proc.returncode == 0
    assert "ingested 4 events" in proc.stderr.read().decode()


def test_stream_mode_stops_at_a_bad_event_after_committing_the_ones_before(memory_dir, memcli_proc):
    data = ndjson([U("a"), A("b")]) + b'{"trace_type": 5}\n' + ndjson([U("never")])
    result = memcli_proc("ingest", "s", "--stream", input=data)
    assert result.returncode == 1
    assert "line 3: field 'trace_type'" in result.stderr.decode()
    assert [r["content"] for r in read_jsonl(agent_dir(memory_dir, "s") / "raw_traces.jsonl")] == ["a", "b"]


def test_python_dash_m_and_version(memcli_proc):
    result = memcli_proc("--version")
    assert result.returncode == 0
    assert result.stdout.decode().startswith("memcli ")


def test_dir_option_wins_over_environment(cli, memory_dir, tmp_path):
    other = tmp_path / "other"
    assert cli("--dir", other, "ingest", "a", input=[U("x")]).exit_code == 0
    assert (other / "agents" / "a" / "raw_traces.jsonl").exists()
    assert not memory_dir.exists()


def test_default_memory_dir_is_dot_memory(memcli_proc, tmp_path, monkeypatch):
    monkeypatch.delenv("MEMCLI_DIR")
    monkeypatch.chdir(tmp_path)
    from tests.helpers import proc_env as env_for

    env = env_for()
    env.pop("MEMCLI_DIR", None)
    subprocess.run([sys.executable, "-m", "memcli", "ingest", "a"], input=ndjson([U("x")]),
                   env=env, cwd=tmp_path, check=True, capture_output=True)
    assert (tmp_path / "memory" / "agents" / "a" / "raw_traces.jsonl").exists()


def test_given_turn_ids_of_many_old_turns_cost_one_scan(cli, memory_dir, monkeypatch):
    """Re-ingesting records that name their own (old) turns looks each turn's seq up once."""
    from memcli.store import jsonl

    cli("ingest", "a", input=[e for i in range(200) for e in (U(f"q{i}"), A(f"a{i}"))])
    calls = []
    real = jsonl.iter_lines
    monkeypatch.setattr(jsonl, "iter_lines", lambda *a, **k: (calls.append(a[0]), real(*a, **k))[1])
    late = [A(f"note {i}", turn_id=f"turn_{i:04d}") for i in range(1, 101)]
    assert cli("ingest", "a", input=late).exit_code == 0
    assert len(calls) <= 2  # archive + active, once
    records = read_jsonl(agent_dir(memory_dir, "a") / "raw_traces.jsonl")
    assert [(r["turn_id"], r["seq"]) for r in records[-100:]] == [(f"turn_{i:04d}", 3) for i in range(1, 101)]
