"""The read commands on a known store (tests/inspect_fixtures.py): exact ``--json`` output, exit
codes, filters, and the human view at a fixed width (plain: NO_COLOR, not a terminal)."""

from __future__ import annotations

import json

import orjson
import pytest

from memcli.store.agent import AgentStore
from tests.helpers import agent_dir, ok
from tests.inspect_fixtures import ACTIVE, ARCHIVE, BASE, EPISODIC, LONG_ASK, SEMANTIC, build_fixture_store


@pytest.fixture
def fx(memory_dir):
    return build_fixture_store(memory_dir)


def as_json(value) -> str:
    """What ``--json`` must print: exactly ``json.dumps(indent=2)`` plus a newline."""
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def by_id(id_):
    return next(r for r in ARCHIVE + ACTIVE if r["id"] == id_)


# ------------------------------------------------------------------------------------ agents

def test_agents_json(cli, fx, memory_dir):
    size = sum(p.stat().st_size for p in fx.iterdir())
    result = ok(cli("agents", "--json"))
    assert result.stdout == as_json([{
        "agent": "fx", "active": 14, "archive": 6, "turns": 5, "episodic": 3, "semantic": 3,
        "bytes": size, "last_activity": BASE + 41 * 60, "problem": None,
        "title": by_id(next(r["id"] for r in ARCHIVE + ACTIVE if r["trace_type"] == "user" and not r.get("tags")))["content"],
        "source": None, "source_path": None,
    }])


def test_agents_empty_store_is_an_empty_list(cli):
    result = ok(cli("agents", "--json"))
    assert result.stdout == "[]\n"
    assert "no agents" in result.stderr


def test_agents_lists_a_corrupt_agent_with_its_problem_and_goes_on(cli, fx, memory_dir):
    cli("ingest", "good", input=[{"trace_type": "user", "content": "hi"}])
    path = fx / "raw_traces.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0] + b"{oops\n" + b"".join(lines[1:]))
    result = ok(cli("agents", "--ndjson"))
    rows = [orjson.loads(line) for line in result.stdout.splitlines()]
    assert [r["agent"] for r in rows] == ["fx", "good"]
    assert rows[0]["problem"].startswith(f"{path}:2: not valid JSON")
    assert rows[0]["active"] is None and rows[1]["problem"] is None and rows[1]["active"] == 1
    assert "warning: agent 'fx'" in result.stderr


# ------------------------------------------------------------------------------------ stats

def test_stats_json(cli, fx, memory_dir):
    from memcli.snapshot import take_snapshot
    from memcli.snapshot.assemble import working_counter

    counter = working_counter()
    estimate = take_snapshot(memory_dir, "fx").tokens  # stats counts what the working snapshot sends
    size = {name: (fx / name).stat().st_size for name in
            ("raw_traces.jsonl", "raw_traces_archive.jsonl", "episodic.jsonl", "semantic.jsonl")}
    result = ok(cli("stats", "fx", "--json"))
    assert result.stdout == as_json({
        "agent": "fx",
        "files": {
            "active": {"file": "raw_traces.jsonl", "bytes": size["raw_traces.jsonl"], "records": 14},
            "archive": {"file": "raw_traces_archive.jsonl", "bytes": size["raw_traces_archive.jsonl"], "records": 6},
            "episodic": {"file": "episodic.jsonl", "bytes": size["episodic.jsonl"], "records": 3},
            "semantic": {"file": "semantic.jsonl", "bytes": size["semantic.jsonl"], "records": 3},
        },
        "traces": {
            "active": {"total": 14, "user": 4, "assistant": 2, "tool_call": 4, "tool_result": 4},
            "archive": {"total": 6, "user": 2, "assistant": 2, "tool_call": 1, "tool_result": 1},
        },
        "turns": {"active": 3, "archive": 2, "total": 5, "split": 0},
        "tool_calls": {"calls": 5, "results": 5, "success": 3, "error": 1, "pending": 1, "orphan": 1},
        "memory": {"episodic": 3, "episodic_live": 1, "semantic": 3, "semantic_live": 2},
        "tokens": {"estimate": estimate, "counter": counter.describe(), "exact": counter.exact,
                   "last_prompt_tokens": 2100},
        "last_activity": BASE + 41 * 60,
        "last_compaction": {"compaction_id": "cmp_2", "ts": BASE + 17 * 60, "episodic_id": "ep_3", "turns": 2,
                            "traces": 6, "model": "offline", "moved": None},   # (no ledger record of it)
        "budget": None,
        "compaction_cost": {"records": 0, "requests": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0,
                            "unpriced": 0},
    })
    assert estimate > 0


def test_stats_says_a_compaction_of_steps_moved_steps(cli, memory_dir):
    """``stats`` said "1 turn, 25 traces" of a compaction that moved 8 steps of the open turn (its
    episodic item names the one turn): what it moved comes from its ledger record, as
    ``compactions`` says it."""
    events = [{"trace_type": "user", "content": "Make the suite pass."}]
    for i in range(30):
        events += [{"trace_type": "tool_call", "tool_name": "Bash", "tool_call_id": f"c{i}",
                    "tool_args": {"command": f"pytest -q tests/test_{i}.py"}},
                   {"trace_type": "tool_result", "tool_call_id": f"c{i}", "tool_result": f"{i} passed " + "." * 400}]
    assert cli("ingest", "a", input=events).exit_code == 0
    result = cli("compact", "a", "--target-tokens", "700", "--json")
    assert result.exit_code == 0, result.stderr
    steps = orjson.loads(result.stdout)["steps"]
    assert steps > 1
    stats = cli("stats", "a")
    assert f": {steps} steps, {steps * 2} traces, model offline\n" in stats.stdout, stats.stdout
    assert orjson.loads(cli("stats", "a", "--json").stdout)["last_compaction"]["moved"] == f"{steps} steps"


def test_stats_budget_uses_the_shared_trigger(cli, fx, memory_dir):
    from memcli.compaction.policy import budget_status

    due = orjson.loads(ok(cli("stats", "fx", "--json", "--max-context-tokens", "2000")).stdout)["budget"]
    expected = budget_status(AgentStore(memory_dir, "fx"), max_context_tokens=2000)
    assert due == {
        "max_context_tokens": 2000, "reserved_output_tokens": 500, "safety_margin_tokens": 1024,
        "input_budget": 476, "threshold": 380, "prompt_tokens": 2100, "source": "provider",
        "context_source": "--max-context-tokens", "due": True, "explanation": expected.explain(),
    }
    assert due["explanation"].startswith("compaction is due: provider-reported prompt_tokens 2,100 > 380")
    roomy = orjson.loads(ok(cli("stats", "fx", "--json", "--max-context-tokens", "100000")).stdout)["budget"]
    assert roomy["due"] is False and roomy["input_budget"] == 100000 - 4096 - 1024
    human = ok(cli("stats", "fx", "--max-context-tokens", "2000")).stdout
    assert "  budget           compaction is due: provider-reported prompt_tokens 2,100 > 380" in human


def test_stats_human_view(cli, fx, memory_dir):
    from memcli.snapshot import take_snapshot
    from memcli.snapshot.assemble import working_counter

    counter = working_counter()
    estimate = take_snapshot(memory_dir, "fx").tokens  # stats counts what the working snapshot sends
    result = ok(cli("stats", "fx", "--width", "100"))
    sizes = [(fx / n).stat().st_size for n in ("raw_traces.jsonl", "raw_traces_archive.jsonl", "episodic.jsonl",
                                               "semantic.jsonl")]
    assert result.stdout == (
        "fx\n"
        "  active traces    14  (user 4, assistant 2, tool_call 4, tool_result 4)\n"
        "  archived traces  6  (user 2, assistant 2, tool_call 1, tool_result 1)\n"
        "  turns            3 active, 2 archived, 5 in all\n"
        "  tool calls       5 calls, 5 results: 3 success, 1 error, 1 pending, 1 orphan\n"
        "  episodic         3 (1 live)\n"
        "  semantic         3 (2 live)\n"
        f"  tokens           {estimate:,} estimated for the working snapshot ({counter.describe()})\n"
        "  prompt_tokens    2,100 (last provider-reported)\n"
        f"  files            raw_traces.jsonl {sizes[0] / 1024:,.1f} KiB, raw_traces_archive.jsonl {sizes[1]} B, "
        f"episodic.jsonl {sizes[2]} B,\n"  # folded to fit --width 100
        f"                   semantic.jsonl {sizes[3]} B\n"
        "  last activity    2026-03-02T09:41:00Z\n"
        "  last compaction  2026-03-02T09:17:00Z  cmp_2: 2 turns, 6 traces, model offline\n"
    )


def test_stats_of_an_agent_without_archive_or_memory(cli):
    cli("ingest", "a", input=[{"trace_type": "user", "content": "hi"}, {"trace_type": "assistant", "content": "yo"}])
    doc = orjson.loads(ok(cli("stats", "a", "--json")).stdout)
    assert doc["traces"]["archive"]["total"] == 0 and doc["turns"] == {"active": 1, "archive": 0, "total": 1, "split": 0}
    assert doc["last_compaction"] is None and doc["tokens"]["last_prompt_tokens"] is None
    assert doc["files"]["archive"] == {"file": "raw_traces_archive.jsonl", "bytes": 0, "records": 0}


# ------------------------------------------------------------------------------------ turns

TURNS = [
    {"turn_id": "turn_0001", "tier": "archive", "started": BASE, "ended": BASE + 180, "traces": 4,
     "ask": "Set up the project.", "answer": "Done.", "tool_calls": 1, "tools": ["sh"], "errors": 0,
     "pending": 0, "orphans": 0},
    {"turn_id": "turn_0002", "tier": "archive", "started": BASE + 600, "ended": BASE + 660, "traces": 2,
     "ask": "What is in README?", "answer": "A title.", "tool_calls": 0, "tools": [], "errors": 0,
     "pending": 0, "orphans": 0},
    {"turn_id": "turn_0003", "tier": "active", "started": BASE + 1200, "ended": BASE + 1500, "traces": 7,
     "ask": "Run the tests and read the config.", "answer": "Two tests fail; debug is on.", "tool_calls": 2,
     "tools": ["run_tests", "read_file"], "errors": 1, "pending": 0, "orphans": 0},
    {"turn_id": "turn_0004", "tier": "active", "started": BASE + 1800, "ended": BASE + 2040, "traces": 5,
     "ask": "Try again.", "answer": "All green now.", "tool_calls": 1, "tools": ["run_tests"], "errors": 0,
     "pending": 0, "orphans": 1},
    {"turn_id": "turn_0005", "tier": "active", "started": BASE + 2400, "ended": BASE + 2460, "traces": 2,
     "ask": LONG_ASK, "answer": None, "tool_calls": 1, "tools": ["deploy"], "errors": 0, "pending": 1,
     "orphans": 0},
]


def test_turns_json(cli, fx):
    assert ok(cli("turns", "fx", "--json")).stdout == as_json(TURNS[2:])
    assert ok(cli("turns", "fx", "--json", "--archive")).stdout == as_json(TURNS)


def test_turns_last_reads_from_the_end_and_reaches_into_the_archive_only_when_asked(cli, fx):
    assert ok(cli("turns", "fx", "--json", "--last", "2")).stdout == as_json(TURNS[3:])
    assert ok(cli("turns", "fx", "--json", "--last", "4")).stdout == as_json(TURNS[2:])
    assert ok(cli("turns", "fx", "--json", "--last", "4", "--archive")).stdout == as_json(TURNS[1:])
    lines = ok(cli("turns", "fx", "--ndjson", "--last", "1")).stdout.splitlines()
    assert [orjson.loads(line) for line in lines] == [TURNS[4]]


def test_turns_human_view_at_a_fixed_width(cli, fx):
    result = ok(cli("turns", "fx", "--archive", env={"COLUMNS": "100"}))
    assert result.stdout == (
        # at 100 columns the start is a date (an age when recent), "traces" and "calls" give their
        # room to the ask, and the ask and the tools shrink: the table fits
        "turn       tier     started     ask                            tools                 errors  pending\n"
        "turn_0001  archive  2026-03-02  Set up the project.            sh\n"
        "turn_0002  archive  2026-03-02  What is in README?\n"
        "turn_0003  active   2026-03-02  Run the tests an… (+18 chars)  run_tests, read_file       1\n"
        "turn_0004  active   2026-03-02  Try again.                     run_tests\n"
        "turn_0005  active   2026-03-02  Deploy it to pr… (+285 chars)  deploy                              1\n"
    )
    wide = ok(cli("turns", "fx", "--width", "140")).stdout.splitlines()
    assert wide[3] == ("turn_0005  2026-03-02T09:40:00Z       2  Deploy it to production. Check every se… "
                       "(+261 chars)  deploy                    1                1")
    assert LONG_ASK.strip() in ok(cli("turns", "fx", "--no-clip")).stdout


# ------------------------------------------------------------------------------------ show

def test_show_json_is_the_records_as_stored(cli, fx):
    assert ok(cli("show", "fx", "--json")).stdout == as_json(ACTIVE)
    assert ok(cli("show", "fx", "--json", "--archive")).stdout == as_json(ARCHIVE + ACTIVE)
    lines = ok(cli("show", "fx", "--ndjson")).stdout.encode().splitlines(keepends=True)
    assert b"".join(lines) == (fx / "raw_traces.jsonl").read_bytes()  # byte for byte: re-ingestable


@pytest.mark.parametrize("args, ids", [
    (["--last", "1"], ["t13", "t14"]),
    (["--last", "2", "--type", "user"], ["t08", "t13"]),
    (["--turn", "turn_0003", "--type", "tool_call", "--type", "tool_result"], ["t03", "t04", "t05", "t06"]),
    (["--turn", "turn_0001", "--archive"], ["a1", "a2", "a3", "a4"]),
    (["--tag", "retry"], ["t08", "t10"]),
    (["--tag", "system,retry"], ["t01", "t08", "t10"]),
    (["--since", "2026-03-02T09:33:00Z"], ["t11", "t12", "t13", "t14"]),
    (["--until", "2026-03-02T09:21:00Z", "--archive"], ["a1", "a2", "a3", "a4", "a5", "a6", "t01", "t02"]),
    (["--since", str(BASE + 22 * 60), "--until", "2026-03-02T09:23:00+00:00"], ["t03", "t04", "t05"]),
    (["--since", "2026-03-02T10:22:30+01:00", "--until", "2026-03-02T09:22:30Z"], ["t04"]),
    (["--archive", "--type", "assistant", "--since", "2026-03-02"], ["a4", "a6", "t07", "t12"]),
])
def test_show_filters(cli, fx, args, ids):
    result = ok(cli("show", "fx", "--json", *args))
    assert result.stdout == as_json([by_id(i) for i in ids])


def test_show_human_view(cli, fx):
    result = ok(cli("show", "fx", "--turn", "turn_0003", "--width", "80"))
    assert result.stdout == (
        "turn_0003 #1  2026-03-02T09:20:00Z  user  {system}  t01\n"
        "    You are a helpful agent.\n"
        "turn_0003 #2  2026-03-02T09:21:00Z  user  t02\n"
        "    Run the tests and read the config.\n"
        "turn_0003 #3  2026-03-02T09:22:00Z  tool_call  run_tests  [c1]  t03\n"
        '    {"path":"tests"}\n'
        "turn_0003 #4  2026-03-02T09:22:30Z  tool_call  read_file  [c2]  t04\n"
        '    {"path":"config.toml"}\n'
        "turn_0003 #5  2026-03-02T09:23:00Z  tool_result  read_file  [c2]  ok  t05\n"
        '    {"text":"debug = true"}\n'
        "turn_0003 #6  2026-03-02T09:24:00Z  tool_result  run_tests  [c1]  ERROR  t06\n"
        "    ERROR: 2 failed\n"
        "turn_0003 #7  2026-03-02T09:25:00Z  assistant  prompt_tokens=1,500  t07\n"
        "    Two tests fail; debug is on.\n"
    )


def test_show_clips_long_content_and_says_how_much(cli, fx):
    out = ok(cli("show", "fx", "--last", "1", "--width", "40")).stdout
    shown = LONG_ASK[:200]
    assert f"    {shown}… (+{len(LONG_ASK) - 200:,} chars)\n" in out
    assert f"    {LONG_ASK}\n" in ok(cli("show", "fx", "--last", "1", "--width", "40", "--no-clip")).stdout


def test_show_unknown_turn_is_not_found(cli, fx):
    result = cli("show", "fx", "--turn", "turn_0001")
    assert result.exit_code == 3 and result.stdout == ""
    assert "no turn 'turn_0001' in agent 'fx'" in result.stderr and "--archive" in result.stderr
    assert cli("show", "fx", "--turn", "turn_0042", "--archive").exit_code == 3


def test_show_nothing_matched_is_an_empty_list(cli, fx):
    result = ok(cli("show", "fx", "--json", "--tag", "nope"))
    assert result.stdout == "[]\n"
    result = ok(cli("show", "fx", "--tag", "nope"))
    assert result.stdout == "" and "no traces matched" in result.stderr


# ------------------------------------------------------------------------------------ tools

def interaction(call, result, status, *, archived=False):
    out = {"tool_call_id": (call or result)["tool_call_id"], "turn_id": (call or result)["turn_id"],
           "tool_name": (call or result).get("tool_name"), "arguments": call.get("tool_args") if call else None,
           "result": result.get("tool_result") if result else None,
           "error": result.get("tool_error") if result else None, "status": status}
    if call:
        out["call_trace_id"] = call["id"]
    if result:
        out["result_trace_id"] = result["id"]
    if call:
        out["call_ts"] = call["ts"]
    if result:
        out["result_ts"] = result["ts"]
    return out


I_SH = interaction(by_id("a2"), by_id("a3"), "SUCCESS")
I_TESTS_ERR = interaction(by_id("t03"), by_id("t06"), "ERROR")
I_READ = interaction(by_id("t04"), by_id("t05"), "SUCCESS")
I_TESTS_OK = interaction(by_id("t09"), by_id("t10"), "SUCCESS")
I_GHOST = interaction(None, by_id("t11"), "ORPHAN")
I_DEPLOY = interaction(by_id("t14"), None, "PENDING")


def test_tools_json_pairs_fifo_with_reused_ids_parallel_calls_orphans_and_pending(cli, fx):
    assert ok(cli("tools", "fx", "--json")).stdout == as_json([I_TESTS_ERR, I_READ, I_TESTS_OK, I_GHOST, I_DEPLOY])
    assert ok(cli("tools", "fx", "--json", "--archive")).stdout == as_json(
        [I_SH, I_TESTS_ERR, I_READ, I_TESTS_OK, I_GHOST, I_DEPLOY])
    # the exact key order of one interaction, as a script sees it
    assert list(I_DEPLOY) == ["tool_call_id", "turn_id", "tool_name", "arguments", "result", "error", "status",
                              "call_trace_id", "call_ts"]


@pytest.mark.parametrize("args, expected", [
    (["--status", "pending"], [I_DEPLOY]),
    (["--status", "error"], [I_TESTS_ERR]),
    (["--status", "orphan"], [I_GHOST]),
    (["--status", "success", "--archive"], [I_SH, I_READ, I_TESTS_OK]),
    (["--status", "error,pending"], [I_TESTS_ERR, I_DEPLOY]),
    (["--name", "run_tests"], [I_TESTS_ERR, I_TESTS_OK, I_GHOST]),
    (["--turn", "turn_0004"], [I_TESTS_OK, I_GHOST]),
    (["--tag", "retry"], [I_TESTS_OK]),
    (["--last", "1"], [I_DEPLOY]),
    (["--last", "2"], [I_TESTS_OK, I_GHOST, I_DEPLOY]),
    (["--since", "2026-03-02T09:30:00Z"], [I_TESTS_OK, I_GHOST, I_DEPLOY]),
    (["--until", "2026-03-02T09:22:30Z"], [I_TESTS_ERR, I_READ]),
])
def test_tools_filters(cli, fx, args, expected):
    assert ok(cli("tools", "fx", "--json", *args)).stdout == as_json(expected)


def test_tools_pending_fast_path_agrees_with_the_full_pairing(cli, memory_dir):
    # ingested (so the state cache holds the offsets), with ids reused across turns
    events = [{"trace_type": "user", "content": "go"},
              {"trace_type": "tool_call", "tool_name": "a", "tool_call_id": "x"},
              {"trace_type": "tool_call", "tool_name": "b", "tool_call_id": "x"},
              {"trace_type": "tool_result", "tool_call_id": "x", "tool_result": 1},
              {"trace_type": "user", "content": "again"},
              {"trace_type": "tool_call", "tool_name": "c", "tool_call_id": "x"},
              {"trace_type": "tool_call", "tool_name": "d", "tool_call_id": "y"}]
    ok(cli("ingest", "p", input=events))
    fast = orjson.loads(ok(cli("tools", "p", "--json", "--status", "pending")).stdout)
    full = [i for i in orjson.loads(ok(cli("tools", "p", "--json")).stdout) if i["status"] == "PENDING"]
    assert fast == full and [i["tool_name"] for i in fast] == ["b", "c", "d"]
    assert [i["turn_id"] for i in fast] == ["turn_0001", "turn_0002", "turn_0002"]


def test_tools_pending_falls_back_when_the_cache_points_at_the_wrong_line(cli, memory_dir):
    ok(cli("ingest", "p", input=[{"trace_type": "user", "content": "go"},
                                 {"trace_type": "tool_call", "tool_name": "a", "tool_call_id": "x"}]))
    state_path = agent_dir(memory_dir, "p") / ".state.json"
    state = orjson.loads(state_path.read_bytes())
    state["pending"]["x"][0][2] = 0  # offset of the user trace: a cache out of step
    state_path.write_bytes(orjson.dumps(state))
    result = orjson.loads(ok(cli("tools", "p", "--json", "--status", "pending")).stdout)
    assert [i["tool_name"] for i in result] == ["a"]


def test_tools_human_view(cli, fx):
    result = ok(cli("tools", "fx", "--archive", env={"COLUMNS": "100"}))
    assert result.stdout == (
        "turn       call id  tool       status   arguments               result\n"
        'turn_0001  c1       sh         SUCCESS  {"cmd":"init"}          ok\n'
        'turn_0003  c1       run_tests  ERROR    {"path":"tests"}        2 failed\n'
        'turn_0003  c2       read_file  SUCCESS  {"path":"config.toml"}  {"text":"debug = true"}\n'
        'turn_0004  c1       run_tests  SUCCESS  {"path":"tests"}        all passed\n'
        "turn_0004  ghost    run_tests  ORPHAN                           late output\n"
        'turn_0005  c3       deploy     PENDING  {"env":"prod"}\n'
    )


def test_tools_bad_status_is_a_usage_error(cli, fx):
    result = cli("tools", "fx", "--status", "done")
    assert result.exit_code == 2 and "unknown status 'done'" in result.stderr


# ------------------------------------------------------------------------------------ get

@pytest.mark.parametrize("record_id, tier, line, expected", [
    ("t06", "active", 6, by_id("t06")),
    ("a3", "archive", 3, by_id("a3")),
    ("ep_1", "episodic", 1, EPISODIC[0]),
    ("sem_3", "semantic", 3, SEMANTIC[2]),
])
def test_get_prints_the_record_in_full_wherever_it_lives(cli, fx, record_id, tier, line, expected):
    file = {"active": "raw_traces.jsonl", "archive": "raw_traces_archive.jsonl", "episodic": "episodic.jsonl",
            "semantic": "semantic.jsonl"}[tier]
    result = ok(cli("get", "fx", record_id, "--json"))
    assert result.stdout == as_json(expected)
    assert result.stderr == f"memcli: {record_id} is in {tier} ({fx / file}:{line})\n"
    assert ok(cli("get", "fx", record_id)).stdout == as_json(expected)  # human view: the same pretty JSON
    assert ok(cli("get", "fx", record_id, "--ndjson")).stdout == orjson.dumps(expected).decode() + "\n"


def test_get_long_content_is_never_clipped(cli, fx):
    assert orjson.loads(ok(cli("get", "fx", "t13")).stdout)["content"] == LONG_ASK


def test_get_unknown_id_names_what_and_where(cli, fx):
    result = cli("get", "fx", "nope")
    assert result.exit_code == 3 and result.stdout == ""
    assert f"no record with id 'nope' in agent 'fx' (looked in raw_traces.jsonl, raw_traces_archive.jsonl, " \
           f"episodic.jsonl, semantic.jsonl under {fx})" in result.stderr
    assert "show fx --turn turn_0001" in cli("get", "fx", "turn_0001").stderr


# ------------------------------------------------------------------------------------ memory

def entry(tier, record, superseded_by=None):
    return {"tier": tier, "superseded_by": superseded_by, **record}


def test_memory_json(cli, fx):
    assert ok(cli("memory", "fx", "--json")).stdout == as_json(
        [entry("episodic", EPISODIC[2]), entry("semantic", SEMANTIC[1]), entry("semantic", SEMANTIC[2])])
    assert ok(cli("memory", "fx", "--json", "--all")).stdout == as_json([
        entry("episodic", EPISODIC[0], "ep_3"), entry("episodic", EPISODIC[1], "ep_3"), entry("episodic", EPISODIC[2]),
        entry("semantic", SEMANTIC[0], "sem_3"), entry("semantic", SEMANTIC[1]), entry("semantic", SEMANTIC[2]),
    ])
    assert ok(cli("memory", "fx", "--json", "--tier", "semantic")).stdout == as_json(
        [entry("semantic", SEMANTIC[1]), entry("semantic", SEMANTIC[2])])


def test_memory_human_view_marks_superseded_items(cli, fx):
    result = ok(cli("memory", "fx", "--all", "--tier", "episodic", "--width", "100"))
    assert result.stdout == (
        "episodic  2026-03-02T09:15:00Z  ep_1  turn_0001 (1 turn)  model offline  {setup}  superseded by ep_3\n"
        "    Set up the project.\n"
        "episodic  2026-03-02T09:16:00Z  ep_2  turn_0002 (1 turn)  model offline  superseded by ep_3\n"
        "    Looked at the README.\n"
        "episodic  2026-03-02T09:17:00Z  ep_3  turn_0001..turn_0002 (2 turns)  model offline\n"
        "    Set up the project and read the README.\n"
    )


def test_memory_of_an_agent_without_any(cli):
    cli("ingest", "a", input=[{"trace_type": "user", "content": "hi"}])
    result = ok(cli("memory", "a", "--json"))
    assert result.stdout == "[]\n"


# ------------------------------------------------------------------------------------ errors

READ_COMMANDS = [["stats"], ["turns"], ["show"], ["tools"], ["memory"], ["doctor"], ["get", "ID"]]


@pytest.mark.parametrize("command", READ_COMMANDS)
def test_unknown_agent_is_exit_3_naming_agent_and_place(cli, fx, memory_dir, command):
    args = [command[0], "ghost", *command[1:]]
    result = cli(*args, "--json")
    assert result.exit_code == 3, result.stderr
    assert result.stdout == ""
    assert f"no agent 'ghost' in {memory_dir}" in result.stderr


@pytest.mark.parametrize("command", READ_COMMANDS)
def test_invalid_agent_id_is_a_usage_error(cli, command):
    result = cli(command[0], "../etc", *command[1:])
    assert result.exit_code == 2 and "invalid agent id" in result.stderr


@pytest.mark.parametrize("command", [["show"], ["turns"], ["tools"], ["stats"], ["memory"], ["get", "t01"]])
def test_json_and_ndjson_together_is_a_usage_error(cli, fx, command):
    result = cli(command[0], "fx", *command[1:], "--json", "--ndjson")
    assert result.exit_code == 2 and "cannot be used together" in result.stderr


@pytest.mark.parametrize("args, message", [
    (["--since", "yesterday"], "--since 'yesterday': not an ISO-8601 time or epoch seconds"),
    (["--until", "2026-13-01"], "--until '2026-13-01': not an ISO-8601 time"),
    (["--type", "thought"], "--type: unknown trace type 'thought'"),
    (["--since", "2026-03-03", "--until", "2026-03-02"], "--since is after --until"),
    (["--turn", "turn_0003", "--last", "2"], "--turn and --last cannot be used together"),
])
def test_bad_filter_values_are_usage_errors(cli, fx, args, message):
    result = cli("show", "fx", *args)
    assert result.exit_code == 2, result.stderr
    assert message in result.stderr and result.stdout == ""


@pytest.mark.parametrize("command", [["show"], ["turns"], ["tools"], ["stats"], ["get", "t05"]])
def test_a_corrupt_line_is_reported_with_file_and_line_not_a_traceback(cli, fx, command):
    path = fx / "raw_traces.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:4]) + b'{"id": "t05", "trace_type": \n' + b"".join(lines[5:]))
    result = cli(command[0], "fx", *command[1:], "--json")
    assert result.exit_code == 1
    assert f"memcli: error: {path}:5: not valid JSON" in result.stderr
    assert "memcli doctor" in result.stderr and "Traceback" not in result.stderr


def test_memcli_debug_shows_the_traceback(cli, fx):
    from memcli.errors import CorruptStoreError

    (fx / "raw_traces.jsonl").write_bytes(b"[1]\n")
    with pytest.raises(CorruptStoreError):
        cli("show", "fx", env={"MEMCLI_DEBUG": "1"})


def test_read_commands_write_nothing(cli, fx, memory_dir):
    from tests.helpers import store_digest

    before = store_digest(memory_dir)  # (stats may fill the token count cache)
    for args in (["agents"], ["stats", "fx"], ["turns", "fx", "--archive"], ["show", "fx", "--archive"],
                 ["tools", "fx", "--status", "pending"], ["get", "fx", "a1"], ["memory", "fx", "--all"],
                 ["doctor", "fx"]):
        cli(*args, "--json")
    assert store_digest(memory_dir) == before


def test_closed_pipe_ends_quietly(memcli_proc, fx, memory_dir):
    import subprocess
    import sys

    from tests.helpers import proc_env

    events = b"".join(orjson.dumps({"trace_type": "user", "content": f"m{i}"}) + b"\n" for i in range(20000))
    assert memcli_proc("ingest", "big", input=events).returncode == 0
    proc = subprocess.Popen([sys.executable, "-m", "memcli", "show", "big", "--ndjson"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=proc_env())
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 0, err
    assert orjson.loads(first)["content"] == "m0"
    assert b"Traceback" not in err and b"Broken pipe" not in err


def test_a_bare_date_for_until_means_the_end_of_that_day_as_in_export(cli, memory_dir):
    cli("ingest", "d", input=[{"trace_type": "user", "content": "morning", "ts": "2026-03-02T08:00:00Z"},
                              {"trace_type": "user", "content": "evening", "ts": "2026-03-02T22:00:00Z"},
                              {"trace_type": "user", "content": "next day", "ts": "2026-03-03T01:00:00Z"}])
    shown = cli("show", "d", "--until", "2026-03-02", "--ndjson").stdout.splitlines()
    exported = cli("export", "d", "--until", "2026-03-02").stdout.splitlines()
    assert [__import__("orjson").loads(line)["content"] for line in shown] == ["morning", "evening"]
    assert shown == exported
