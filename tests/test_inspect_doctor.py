"""``memcli doctor``: every problem with file and line, found before anything recovers; ``--repair``
fixes what it can without losing a byte of data and says what it did; exit 1 while errors remain."""

from __future__ import annotations

import json

import orjson
import pytest

from memcli.models import EpisodicItem
from tests.helpers import agent_dir, read_jsonl, tree_digest
from tests.inspect_fixtures import build_fixture_store, write_jsonl


def T(id_, turn, seq, kind="user", **kw):
    return {"id": id_, "ts": 1772442000.0 + seq, "turn_id": turn, "seq": seq, "trace_type": kind,
            "content": kw.pop("content", id_), "source_event": "test", **kw}


def error_of(func, *args) -> str:
    """The text of the exception ``func(*args)`` raises (library wording varies by version)."""
    try:
        func(*args)
    except Exception as exc:  # noqa: BLE001
        return str(exc)
    raise AssertionError("no exception")


def line(record) -> bytes:
    return orjson.dumps(record) + b"\n"


def run(cli, *args):
    result = cli("doctor", *args, "--json")
    return result.exit_code, orjson.loads(result.stdout) if result.stdout else None, result.stderr


def finding(severity, code, file, line_no, message, fixable=False, fixed=False, action=None):
    return {"severity": severity, "code": code, "file": str(file) if file else None, "line": line_no,
            "message": message, "fixable": fixable, "fixed": fixed, "action": action}


def test_a_clean_agent_has_no_findings(cli):
    cli("ingest", "a", input=[{"trace_type": "user", "content": "hi"},
                              {"trace_type": "tool_call", "tool_name": "sh", "tool_call_id": "c"}])
    code, findings, err = run(cli, "a")
    assert (code, findings) == (0, [])
    assert err == "memcli: doctor: agent 'a': no problems\n"
    assert cli("doctor", "a").stdout == ""


def test_fixture_store_has_one_orphan_warning_and_strict_fails_on_it(cli, memory_dir):
    root = build_fixture_store(memory_dir)
    code, findings, err = run(cli, "fx")
    assert code == 0
    assert findings == [finding("warning", "orphan-result", root / "raw_traces.jsonl", 11,
                                "tool result 't11' answers call id 'ghost', which has no call before it (turn turn_0004)")]
    assert "1 warning" in err
    result = cli("doctor", "fx", "--strict")
    assert result.exit_code == 1 and "1 warning" in result.stderr


def test_stale_pending_call_means_later_turns_exist(cli, memory_dir):
    root = agent_dir(memory_dir, "a")
    write_jsonl(root / "raw_traces.jsonl", [
        T("u1", "turn_0001", 1), T("c1", "turn_0001", 2, "tool_call", tool_name="sh", tool_call_id="x"),
        T("u2", "turn_0002", 1), T("u3", "turn_0003", 1),
        T("c2", "turn_0003", 2, "tool_call", tool_name="sh", tool_call_id="y"),  # in flight: not stale
    ])
    code, findings, _ = run(cli, "a")
    assert code == 0
    assert findings == [finding("warning", "stale-pending-call", root / "raw_traces.jsonl", 2,
                                "tool call 'x' (sh, turn_0001) has no result and 2 later turns exist: "
                                "it was never answered (compaction archives it with its step)")]


BAD_JSON = b'{"id": "bad", "ts": '


def corrupt_store(root):
    """Every repairable problem at once, in a store written by hand."""
    good = [T("r1", "turn_0001", 1), T("r2", "turn_0001", 2, "assistant"), T("r3", "turn_0002", 1),
            T("r4", "turn_0002", 2, "assistant")]
    root.mkdir(parents=True)
    (root / "raw_traces_archive.jsonl").write_bytes(line(T("r0", "turn_0000", 1)))
    active = (line(T("r0", "turn_0000", 1))          # 1: the archived trace again, byte-identical
              + line(good[0])                         # 2
              + BAD_JSON + b"\n"                     # 3: not JSON
              + line(good[1])                         # 4
              + b"[1, 2]\n"                           # 5: not an object
              + line(good[2])                         # 6
              + line(good[2])                         # 7: an exact copy
              + b'{"id": "x1", "trace_type": "user"}\n'  # 8: not a trace (no turn_id)
              + line(good[3])                         # 9
              + b'{"id": "torn", "ts": 17')           # 10: torn tail
    (root / "raw_traces.jsonl").write_bytes(active)
    write_jsonl(root / "episodic.jsonl", [{"id": "ep1", "ts": 1.0, "turn_ids": ["turn_0000"], "summary": "s"},
                                          {"id": "ep2", "ts": 2.0, "turn_ids": []}])  # 2: no summary
    return good


def test_every_repairable_problem_is_found_with_file_and_line_then_repaired(cli, memory_dir):
    root = agent_dir(memory_dir, "a")
    good = corrupt_store(root)
    active, episodic = root / "raw_traces.jsonl", root / "episodic.jsonl"
    before = tree_digest(memory_dir)
    torn_at = active.stat().st_size - 23
    quarantine = "move the line to raw_traces.jsonl.corrupt-lines"
    expected = [
        finding("error", "id-in-both-tiers", active, 1, "trace 'r0' is also archived (raw_traces_archive.jsonl:1), "
                "byte-identical", True, False, "drop the active copy (the archived one stays)"),
        finding("error", "bad-json", active, 3, "not valid JSON (" + error_of(orjson.loads, BAD_JSON) + ")",
                True, False, quarantine),
        finding("error", "not-an-object", active, 5, "a JSON list, not an object", True, False, quarantine),
        finding("error", "duplicate-id", active, 7, "id 'r3' is also on line 6 (a byte-identical copy)",
                True, False, "drop this copy"),
        finding("error", "invalid-record", active, 8, "trace without a valid 'turn_id'", True, False, quarantine),
        finding("error", "torn-tail", active, 10, "the last line has no newline (23 bytes): a write was cut short, "
                "or is in progress", True, False,
                "cut the 23 partial bytes off (a copy goes to raw_traces.jsonl.corrupt-lines)"),
        finding("error", "invalid-record", episodic, 2,
                f"not a EpisodicItem record ({error_of(lambda: EpisodicItem(id='ep2', ts=2.0, turn_ids=[]))})",
                True, False, "move the line to episodic.jsonl.corrupt-lines"),
    ]
    code, findings, err = run(cli, "a")
    assert code == 1
    assert findings == expected
    assert "memcli: error: doctor: agent 'a': 7 errors" in err and "--repair" in err
    assert tree_digest(memory_dir) == before  # looking changes nothing

    human = cli("doctor", "a", "--width", "200").stdout.splitlines()
    assert human[:2] == [f"{active}:1: error: trace 'r0' is also archived (raw_traces_archive.jsonl:1), "
                         "byte-identical [id-in-both-tiers]",
                         "    --repair would: drop the active copy (the archived one stays)"]

    code, findings, err = run(cli, "a", "--repair")
    assert code == 0, err
    assert findings == [dict(f, fixed=True) for f in expected]
    assert err.splitlines() == [
        "memcli: repaired: copied the 23 bytes of the torn last line of raw_traces.jsonl to "
        "raw_traces.jsonl.corrupt-lines",
        f"memcli: repaired: {active}: cut 23 bytes of a torn last line at byte {torn_at}",
        "memcli: repaired: raw_traces.jsonl: dropped line 1 (a byte-identical copy of an archived trace); "
        "moved line 3 (bad-json) to raw_traces.jsonl.corrupt-lines; moved line 5 (not-an-object) to "
        "raw_traces.jsonl.corrupt-lines; dropped line 7 (a byte-identical copy of an earlier line); "
        "moved line 8 (invalid-record) to raw_traces.jsonl.corrupt-lines",
        "memcli: repaired: episodic.jsonl: moved line 2 (invalid-record) to episodic.jsonl.corrupt-lines",
        "memcli: repaired: rebuilt the state cache from the files",
        "memcli: doctor: agent 'a': no problems (7 fixed)",
    ]
    # nothing lost: every good record stays, every bad byte is kept aside
    assert read_jsonl(active) == good
    assert (root / "raw_traces.jsonl.corrupt-lines").read_bytes() == (
        b'{"id": "torn", "ts": 17\n' + b'{"id": "bad", "ts": \n' + b"[1, 2]\n" + b'{"id": "x1", "trace_type": "user"}\n')
    assert (root / "episodic.jsonl.corrupt-lines").read_bytes() == b'{"id":"ep2","ts":2.0,"turn_ids":[]}\n'
    assert oct((root / "raw_traces.jsonl").stat().st_mode & 0o777) == "0o600"
    # and the agent works again
    assert run(cli, "a") == (0, [], "memcli: doctor: agent 'a': no problems\n")
    assert cli("ingest", "a", input=[{"trace_type": "user", "content": "after"}]).exit_code == 0
    assert [t["turn_id"] for t in read_jsonl(active)][-1] == "turn_0003"


def test_a_complete_last_record_that_lost_its_newline_is_kept(cli, memory_dir):
    root = agent_dir(memory_dir, "a")
    root.mkdir(parents=True)
    (root / "raw_traces.jsonl").write_bytes(line(T("r1", "turn_0001", 1)) + line(T("r2", "turn_0001", 2))[:-1])
    code, findings, _ = run(cli, "a")
    assert code == 1 and findings[0]["action"] == "add the missing newline (the record is complete)"
    code, findings, _ = run(cli, "a", "--repair")
    assert code == 0 and findings[0]["fixed"] is True
    assert [r["id"] for r in read_jsonl(root / "raw_traces.jsonl")] == ["r1", "r2"]
    assert not (root / "raw_traces.jsonl.corrupt-lines").exists()


def test_copies_that_differ_and_seq_going_backwards_are_reported_not_repaired(cli, memory_dir):
    root = agent_dir(memory_dir, "a")
    active = root / "raw_traces.jsonl"
    write_jsonl(active, [T("r1", "turn_0001", 1), T("r2", "turn_0001", 3, "assistant"),
                         T("r3", "turn_0001", 2, "assistant"), dict(T("r1", "turn_0002", 1), content="edited")])
    expected = [
        finding("error", "seq-backwards", active, 3,
                "seq 2 in turn_0001 after seq 3 (line 2); a turn's traces must rise in seq"),
        finding("error", "duplicate-id", active, 4, "id 'r1' is also on line 1 with different content"),
    ]
    data = active.read_bytes()
    code, findings, err = run(cli, "a", "--repair")
    assert code == 1 and findings == expected
    assert active.read_bytes() == data
    assert "2 errors" in err and "--repair" not in err  # no hint to do what cannot be done


def test_three_copies_are_two_findings_both_fixed(cli, memory_dir):
    root = agent_dir(memory_dir, "a")
    write_jsonl(root / "raw_traces.jsonl", [T("r1", "turn_0001", 1)] * 3 + [T("r2", "turn_0001", 2)])
    code, findings, _ = run(cli, "a")
    assert [(f["code"], f["line"]) for f in findings] == [("duplicate-id", 2), ("duplicate-id", 3)]
    code, findings, _ = run(cli, "a", "--repair")
    assert code == 0 and all(f["fixed"] for f in findings) and len(findings) == 2
    assert [r["id"] for r in read_jsonl(root / "raw_traces.jsonl")] == ["r1", "r2"]


def test_duplicate_memory_items(cli, memory_dir):
    root = agent_dir(memory_dir, "a")
    item = {"id": "s1", "ts": 1.0, "fact": "f"}
    write_jsonl(root / "semantic.jsonl", [item, item, dict(item, fact="g")])
    code, findings, _ = run(cli, "a", "--repair")
    assert code == 1
    assert [(f["code"], f["line"], f["fixed"], f["fixable"]) for f in findings] == [
        ("duplicate-id", 2, True, True), ("duplicate-id", 2, False, False)]  # the differing copy moved up a line
    assert read_jsonl(root / "semantic.jsonl") == [item, dict(item, fact="g")]


def test_interrupted_ingest_is_reported_before_anything_recovers_then_rolled_back(cli, memcli_proc, memory_dir):
    events = [{"trace_type": "user", "content": "kept"}]
    assert memcli_proc("ingest", "a", input=events).returncode == 0
    crashed = memcli_proc("ingest", "a", input=[{"trace_type": "user", "content": "never acknowledged"}],
                          env={"MEMCLI_CRASH_AT": "ingest:appended"})
    assert crashed.returncode != 0
    root = agent_dir(memory_dir, "a")
    assert (root / ".ingest.pending").exists()
    before = tree_digest(memory_dir)
    code, findings, _ = run(cli, "a")
    assert code == 0  # not an integrity problem: the next command rolls it back (a warning, exit 1 with --strict)
    assert findings[0]["code"] == "interrupted-ingest" and findings[0]["file"] == str(root / ".ingest.pending")
    assert findings[0]["severity"] == "warning"
    assert findings[0]["message"].startswith("interrupted ingest: will be rolled back; --repair rolls it back now (")
    assert "bytes after byte" in findings[0]["message"] and findings[0]["fixable"] is True
    assert run(cli, "a", "--strict")[0] == 1
    assert tree_digest(memory_dir) == before
    code, findings, err = run(cli, "a", "--repair")
    assert code == 0 and findings[0]["fixed"] is True
    assert "rolled back an interrupted ingest" in err
    assert [r["content"] for r in read_jsonl(root / "raw_traces.jsonl")] == ["kept"]
    assert not (root / ".ingest.pending").exists()


@pytest.fixture
def journal(cli, memory_dir):
    cli("ingest", "a", input=[{"trace_type": "user", "content": "hi"}])
    path = agent_dir(memory_dir, "a") / ".compaction.journal"
    path.write_bytes(b'{"compaction_id": "cmp_x"}\n')
    return path


def test_unfinished_compaction_that_cannot_be_recovered_stays_an_error(cli, journal, memory_dir, monkeypatch):
    import memcli.store.journal as mod
    from memcli.errors import StoreError

    def recover(session):
        raise StoreError("journal from the future")

    monkeypatch.setattr(mod, "recover", recover)
    before = tree_digest(memory_dir)
    code, findings, _ = run(cli, "a")
    assert code == 1 and findings == [finding(
        "error", "unfinished-compaction", journal, None, "a compaction did not finish (cmp_x)", True, False,
        "finish the compaction from its journal, as the next write would")]
    assert tree_digest(memory_dir) == before  # the check does not recover
    code, findings, err = run(cli, "a", "--repair")
    assert code == 1 and findings[0]["fixed"] is False
    assert "could not recover the unfinished compaction: journal from the future" in err
    assert "left every other problem alone" in err


def test_a_real_interrupted_compaction_is_one_finding_and_repair_finishes_it(cli, memcli_proc, memory_dir):
    events = [e for t in range(8) for e in ({"trace_type": "user", "content": f"q{t}"},  # (long answers: the
                                            {"trace_type": "assistant", "content": f"a{t} " + "word " * 300})]
    assert memcli_proc("ingest", "c", input=events).returncode == 0  # summary is smaller, so it is written)
    crashed = memcli_proc("compact", "c", env={"MEMCLI_CRASH_AT": "compact:archived"})
    assert crashed.returncode != 0
    root = agent_dir(memory_dir, "c")
    before = tree_digest(memory_dir)
    code, findings, _ = run(cli, "c")
    assert code == 1
    errors = [f for f in findings if f["severity"] == "error"]
    assert [f["code"] for f in errors] == ["unfinished-compaction"]  # the traces in both tiers are part of it
    assert errors[0]["message"].endswith("8 traces are in both the active file and the archive until it finishes")
    assert tree_digest(memory_dir) == before
    code, findings, err = run(cli, "c", "--repair")
    assert code == 0 and all(f["fixed"] for f in findings), findings
    assert "finished an interrupted compaction" in err
    active = {r["id"] for r in read_jsonl(root / "raw_traces.jsonl")}
    archived = {r["id"] for r in read_jsonl(root / "raw_traces_archive.jsonl")}
    assert not active & archived and len(active | archived) == 16
    assert run(cli, "c")[:2] == (0, [])


def test_unfinished_compaction_is_recovered_by_repair(cli, journal, monkeypatch):
    import memcli.store.journal as mod

    def recover(session):
        session.paths.compaction_journal.unlink()
        return "finished compaction cmp_x"

    monkeypatch.setattr(mod, "recover", recover)
    code, findings, err = run(cli, "a", "--repair")
    assert code == 0 and findings[0]["code"] == "unfinished-compaction" and findings[0]["fixed"] is True
    assert "memcli: repaired: finished compaction cmp_x" in err


def test_a_stale_cache_is_information_and_rebuilt(cli, memory_dir):
    cli("ingest", "a", input=[{"trace_type": "user", "content": "hi"},
                              {"trace_type": "tool_call", "tool_name": "sh", "tool_call_id": "c"}])
    state_path = agent_dir(memory_dir, "a") / ".state.json"
    state = orjson.loads(state_path.read_bytes())
    good = dict(state)
    state["pending"] = {}
    state_path.write_bytes(orjson.dumps(state))
    code, findings, _ = run(cli, "a")
    assert code == 0 and findings == [finding(
        "info", "stale-cache", state_path, None,
        "the state cache lists 0 unanswered calls; the files have 1; it is rebuilt on the next write",
        True, False, "rebuild the cache from the files")]
    code, findings, _ = run(cli, "a", "--repair")
    assert code == 0 and findings[0]["fixed"] is True
    assert orjson.loads(state_path.read_bytes())["pending"] == good["pending"]


def test_json_output_is_stable_and_streamed_like_every_read_command(cli, memory_dir):
    root = build_fixture_store(memory_dir)
    result = cli("doctor", "fx", "--json")
    assert result.stdout == json.dumps([finding(
        "warning", "orphan-result", root / "raw_traces.jsonl", 11,
        "tool result 't11' answers call id 'ghost', which has no call before it (turn turn_0004)")], indent=2) + "\n"


def test_a_compacted_store_with_a_pinned_system_prompt_is_clean(cli, memory_dir):
    """Compaction leaves system traces active while the rest of their turn is archived: the seq
    of that turn restarts across the two files, which is not a problem."""
    events = [{"trace_type": "user", "content": "You are terse.", "tags": ["system"]}]
    for i in range(8):
        events += [{"trace_type": "user", "content": f"q{i}"}, {"trace_type": "assistant", "content": f"a{i}"}]
    cli("ingest", "a", input=events)
    assert cli("compact", "a").exit_code == 0
    result = cli("doctor", "a")
    assert result.exit_code == 0, result.stdout + result.stderr
