"""``memcli summarize-results`` and ``snapshot --expire TOOL=TURNS:summary`` (memcli/compaction/results.py)."""

from __future__ import annotations

import orjson
import pytest

from memcli.compaction.results import offline_result_summary, result_kind, valid_summary
from memcli.renderers import RENDERERS
from tests.helpers import CORPORA, agent_dir, needs_corpora, read_jsonl, store_digest
from tests.import_helpers import one_conversation
from tests.snapshot_validation import check_payload

MODEL = "openai/test-model"
LOG = "\n".join([f"tests/test_mod_{i}.py::test_case PASSED" for i in range(300)]
                + ["FAILED tests/test_orders.py::test_total_with_discount - assert 100.0 == 90.0",
                   "E   AssertionError: assert 100.0 == 90.0", "=== 1 failed, 300 passed in 12.3s ===",
                   "exit code 1"])
SOURCE = "\n".join(f"{i + 1:6}→" + line for i, line in enumerate(
    ["import os", "", "class OrderService:", "    def total(self, order):"] + ["        x = 1"] * 200
    + ["    def apply_discount(self, order, code):", "        return order.total * RATE[code]"] + ["        pass"] * 200))


def _session() -> list[dict]:
    events = []
    for turn, (tool, args, result) in enumerate([
            ("Bash", {"command": "pytest -q"}, LOG), ("Read", {"file_path": "app/orders.py"}, SOURCE),
            ("Grep", {"pattern": "apply_discount"}, "\n".join(f"app/mod_{i}.py:{i}: apply_discount(x)" for i in range(200))),
            ("Bash", {"command": "ls"}, "short")], 1):
        events += [{"id": f"u{turn}", "trace_type": "user", "content": f"step {turn}"},
                   {"id": f"c{turn}", "trace_type": "tool_call", "tool_name": tool, "tool_call_id": f"k{turn}",
                    "tool_args": args},
                   {"id": f"r{turn}", "trace_type": "tool_result", "tool_name": tool, "tool_call_id": f"k{turn}",
                    "tool_result": result},
                   {"id": f"a{turn}", "trace_type": "assistant", "content": "Now I edit apply_discount in OrderService."}]
    events += [{"id": "u9", "trace_type": "user", "content": "and now?"}]
    return events


# ------------------------------------------------------------------------------ building blocks

def test_each_kind_of_tool_gets_the_summary_its_reader_needs():
    assert [result_kind(n, a) for n, a in [("Bash", {}), ("x", {"command": "ls"}), ("Read", {}),
                                          ("Grep", {}), ("lookup", {"id": 1})]] == ["command", "command", "read", "search", "other"]
    command = offline_result_summary("Bash", {"command": "pytest -q"}, LOG)
    assert command.startswith("[summary of a Bash result (command), ")
    assert "exit status: 1" in command and "FAILED tests/test_orders.py::test_total_with_discount" in command
    assert "=== 1 failed, 300 passed in 12.3s ===" in command          # the last lines
    read = offline_result_summary("Read", {"file_path": "app/orders.py"}, SOURCE, later={"apply_discount", "RATE"})
    assert "L3: class OrderService:" in read and "L205: def apply_discount(self, order, code):" in read
    assert "L206:         return order.total * RATE[code]" in read      # what the agent used later
    search = offline_result_summary("Grep", {"pattern": "apply_discount"}, "a.py:1: x\na.py:9: y\nb/c.py:3: z")
    assert "matches in 2 paths:" in search and "  a.py (2)" in search and "  b/c.py" in search


def test_a_summary_that_is_empty_longer_or_an_error_is_not_valid():
    assert valid_summary("", "x" * 100) == "empty summary"
    assert "not shorter" in valid_summary("y" * 100, "x" * 100)
    assert "error or a refusal" in valid_summary("Error: rate limited", "x" * 100)
    assert valid_summary("fine", "x" * 100) is None


# ------------------------------------------------------------------------------ the command

def test_results_are_summarized_once_and_the_traces_never_change(cli, memory_dir):
    assert cli("ingest", "s", input=_session()).exit_code == 0
    d = agent_dir(memory_dir, "s")
    traces_before = {n: (d / n).read_bytes() for n in ("raw_traces.jsonl",)}
    done = cli("summarize-results", "s", "--min-chars", "1000", "--json")
    assert done.exit_code == 0, done.stderr
    report = orjson.loads(done.stdout)
    assert [s["trace_id"] for s in report["summarized"]] == ["r1", "r2", "r3"]     # "short" is too short
    assert report["chars_after"] < report["chars_before"] / 5
    assert {n: (d / n).read_bytes() for n in traces_before} == traces_before
    stored = read_jsonl(d / "result_summaries.jsonl")
    assert [r["trace_id"] for r in stored] == ["r1", "r2", "r3"] and {r["summarizer"] for r in stored} == {"offline"}
    again = cli("summarize-results", "s", "--min-chars", "1000")
    assert again.exit_code == 0 and "would" not in again.stderr
    assert "summarized 0 tool results" in again.stderr and "3 already summarized" in again.stderr
    assert len(read_jsonl(d / "result_summaries.jsonl")) == 3
    got = orjson.loads(cli("get", "s", "r2", "--json").stdout)
    assert got["record"]["tool_result"] == SOURCE if "record" in got else got["tool_result"] == SOURCE
    assert "3 tool results summarized" in cli("stats", "s").stdout


def test_dry_run_shows_the_summaries_and_writes_nothing(cli, memory_dir):
    cli("ingest", "s", input=_session())
    before = store_digest(memory_dir)
    done = cli("summarize-results", "s", "--min-chars", "1000", "--dry-run", "--tool", "Bash")
    assert done.exit_code == 0
    assert done.stdout.startswith("== r1 (Bash, turn_0001, ") and "exit status: 1" in done.stdout
    assert "would summarize 1 tool result " in done.stderr
    assert store_digest(memory_dir) == before


def test_snapshot_expire_summary_shows_the_summary_and_names_how_to_expand(cli, memory_dir):
    cli("ingest", "s", input=_session())
    cli("summarize-results", "s", "--min-chars", "1000", "--tool", "Bash", "--tool", "Read")
    done = cli("snapshot", "s", "-p", "openai", "--expire", "*=0:summary")
    assert done.exit_code == 0, done.stderr
    tools = {m["tool_call_id"]: m["content"] for m in orjson.loads(done.stdout)["messages"] if m["role"] == "tool"}
    assert tools["k1"].startswith("[summary of a Bash result (command), ")
    assert tools["k1"].endswith(f"[summary of {len(LOG):,} characters; `memcli get s r1` expands it]")
    assert "clipped, no stored summary (memcli summarize-results makes one)" in tools["k3"]   # Grep: none stored
    assert tools["k4"] == "short"
    assert "1 tool result had no stored summary and was clipped instead" in done.stderr
    for provider in RENDERERS:
        payload = cli("snapshot", "s", "-p", provider, "--expire", "*=0:summary")
        assert payload.exit_code == 0
        check_payload(provider, payload.stdout if provider == "text" else orjson.loads(payload.stdout))
    clipped = cli("snapshot", "s", "-p", "openai", "--expire", "*=0:clip=200")
    assert len(clipped.stdout) < len(cli("snapshot", "s", "-p", "openai").stdout)


def test_a_torn_last_summary_is_cut_and_written_again_whole(cli, memory_dir):
    cli("ingest", "s", input=_session())
    cli("summarize-results", "s", "--min-chars", "1000")
    path = agent_dir(memory_dir, "s") / "result_summaries.jsonl"
    whole = path.read_bytes()
    last = whole.rstrip(b"\n").rfind(b"\n") + 1
    for cut in range(last + 1, len(whole), max(1, (len(whole) - last) // 25)):
        path.write_bytes(whole[:cut])                     # a crash in the middle of the last append
        assert cli("summarize-results", "s", "--min-chars", "1000").exit_code == 0
        records = read_jsonl(path)
        assert [r["trace_id"] for r in records] == ["r1", "r2", "r3"], cut


def test_bad_options_are_usage_errors_naming_the_flag(cli):
    cli("ingest", "s", input=_session())
    done = cli("summarize-results", "s", "--older-than", "-1")
    assert done.exit_code == 2 and "--older-than" in done.stderr
    assert cli("summarize-results", "nobody").exit_code == 3
    bad = cli("snapshot", "s", "--expire", "Bash=1:summarise")
    assert bad.exit_code == 2 and ":summary" in bad.stderr


# ------------------------------------------------------------------------------ with a model

def test_a_model_summarizes_each_result_and_its_spending_is_in_the_ledger(cli, memory_dir, server):
    cli("ingest", "s", input=_session())
    srv = server(lambda body, i: (200, "exit status 1; FAILED tests/test_orders.py::test_total_with_discount", 0)
                 if "Bash" in body["messages"][1]["content"] else (500, {"error": {"message": "boom"}}, 0))
    done = cli("summarize-results", "s", "--min-chars", "1000", "--model", MODEL, "--api-base", srv.api_base,
               "--retries", "0")
    assert done.exit_code == 1                                  # the Read and Grep requests failed
    assert "2 failed" in done.stderr and "r2: not summarized" in done.stderr
    (stored,) = read_jsonl(agent_dir(memory_dir, "s") / "result_summaries.jsonl")
    assert stored["trace_id"] == "r1" and stored["summarizer"] == MODEL
    assert stored["summary"].endswith("exit status 1; FAILED tests/test_orders.py::test_total_with_discount")
    first = srv.requests[0].body["messages"][1]["content"]
    assert first.startswith("Tool: Bash\nArguments: {\"command\":\"pytest -q\"}") and "the user asked: step 1" in first
    ledger = [r for r in read_jsonl(agent_dir(memory_dir, "s") / ".compactions.jsonl") if r["kind"] == "result-summaries"]
    assert len(ledger) == 1 and ledger[0]["llm"]["requests"] >= 1


def test_max_cost_refuses_before_the_first_request(cli, memory_dir, server):
    cli("ingest", "s", input=_session())
    srv = server(lambda body, i: (200, "never", 0))
    before = store_digest(memory_dir)
    done = cli("summarize-results", "s", "--min-chars", "1000", "--model", "openai/gpt-4o", "--api-base", srv.api_base,
               "--api-key", "k", "--max-cost", "0.000001")
    assert done.exit_code == 1 and "--max-cost" in done.stderr and "nothing was sent or written" in done.stderr
    assert srv.requests == [] and store_digest(memory_dir) == before


# ------------------------------------------------------------------------------ real transcripts

@needs_corpora
@pytest.mark.parametrize("name, fmt", [("claude-code/spotter_258c7280_compacted_by_claude-code.jsonl", "claude-code"),
                                       ("claude-code/ccviewer_fe5e1c67_todo-app_438ev.jsonl", "claude-code")])
def test_real_sessions_summaries_expand_byte_for_byte_and_render_for_every_provider(cli, memory_dir, tmp_path, name, fmt):
    assert cli("ingest", "c", one_conversation(CORPORA / name, tmp_path), "--from", fmt).exit_code == 0
    done = cli("summarize-results", "c", "--min-chars", "2000", "--json")
    assert done.exit_code == 0, done.stderr
    summarized = orjson.loads(done.stdout)["summarized"]
    assert len(summarized) >= 3, "no long result was summarized"
    originals = {t["id"]: t for t in read_jsonl(agent_dir(memory_dir, "c") / "raw_traces.jsonl")}
    for item in summarized:
        got = cli("get", "c", item["trace_id"], "--json")
        record = orjson.loads(got.stdout)
        record = record.get("record", record)
        assert record["tool_result"] == originals[item["trace_id"]]["tool_result"]
        assert len(item["summary"]) < item["chars"]
    for provider in RENDERERS:
        payload = cli("snapshot", "c", "-p", provider, "--expire", "*=0:summary")
        assert payload.exit_code == 0, payload.stderr
        check_payload(provider, payload.stdout if provider == "text" else orjson.loads(payload.stdout))
    assert cli("summarize-results", "c", "--min-chars", "2000").stderr.count("summarized 0 tool results") == 1


@pytest.mark.parametrize("answer, why", [("", "empty summary"), ("   \n", "empty summary"),
                                         ("Error: the context window was exceeded", "an error or a refusal"),
                                         ("I'm sorry, I cannot help with that.", "an error or a refusal"),
                                         ("Error 503 Service Unavailable", "an error or a refusal"),
                                         ("Error processing request: context length exceeded",
                                          "an error or a refusal")])
def test_a_model_answer_that_is_empty_or_an_error_is_not_stored_and_its_spending_still_counts(cli, memory_dir, server,
                                                                                             answer, why):
    cli("ingest", "s", input=_session())
    srv = server(lambda body, i: (200, answer, 0))
    done = cli("summarize-results", "s", "--min-chars", "1000", "--model", MODEL, "--api-base", srv.api_base,
               "--retries", "0")
    assert done.exit_code == 1, done.stderr
    assert "; 3 failed" in done.stderr
    assert done.stderr.count(why) == 3
    d = agent_dir(memory_dir, "s")
    assert read_jsonl(d / "result_summaries.jsonl") == []          # nothing stored: the results stay as they are
    ledger = [r for r in read_jsonl(d / ".compactions.jsonl") if r["kind"] == "result-summaries"]
    assert len(ledger) == 1 and ledger[0]["results"] == 0 and ledger[0]["llm"]["requests"] == len(srv.requests) == 3


def test_mcp_memory_get_pages_through_the_original_of_a_summarized_result(cli, memory_dir):
    from memcli.mcp.tools import MemoryTools

    cli("ingest", "s", input=_session())
    assert cli("summarize-results", "s", "--min-chars", "1000").exit_code == 0
    snap = orjson.loads(cli("snapshot", "s", "-p", "openai", "--expire", "Read=0:summary").stdout)
    assert "`memcli get s r2` expands it]" in [m["content"] for m in snap["messages"] if m.get("tool_call_id") == "k2"][0]
    tools, text, offset = MemoryTools(memory_dir, "s"), "", 0
    while offset is not None:
        page = tools.get(None, "r2", 4000, offset)
        text += page["record"]["tool_result"]
        offset = page.get("next_char_offset")
    assert text == SOURCE                                    # the original, byte for byte, not the summary


def test_the_cost_estimate_bounds_what_is_sent_answers_capped_and_checklist_counted(cli, memory_dir, server):
    from memcli.tokens import TokenCounter

    cli("ingest", "s", input=_session())
    srv = server(lambda body, i: (200, "exit status 1; the failing test is test_total_with_discount", 0))
    common = ["summarize-results", "s", "--min-chars", "1000", "--model", MODEL, "--api-base", srv.api_base]
    estimate = orjson.loads(cli(*common, "--dry-run", "--json").stdout)["estimate"]
    assert srv.requests == []
    assert cli(*common).exit_code == 0
    assert [r.body.get("max_tokens") for r in srv.requests] == [600, 600, 600]    # the answer is capped ...
    assert estimate["max_output_tokens"] == 600 * 3                                # ... at what was estimated
    counter = TokenCounter(MODEL)
    sent = sum(counter.count("\n".join(m["content"] for m in r.body["messages"])) for r in srv.requests)
    assert estimate["input_tokens"] >= sent                  # the checklist sent with each request is counted


def test_the_compaction_snapshot_and_the_token_count_see_the_summaries(cli, memory_dir):
    """``--tail-turns N`` (the compaction snapshot, docs/design.md §5) renders the stored summaries
    too, and the snapshot's one token count counts them as rendered."""
    from memcli.api import Memory

    cli("ingest", "s", input=_session())
    cli("summarize-results", "s", "--min-chars", "1000")
    agent = Memory(memory_dir).agent("s")
    tail = agent.snapshot("openai-chat", tail_turns=4, expire=("*=0:summary",))
    tools = {m["tool_call_id"]: m["content"] for m in tail["messages"] if m["role"] == "tool"}
    assert set(tools) == {"k2", "k3", "k4"} and tools["k2"].startswith("[summary of a Read result (read), ")
    full = agent.snapshot("openai-chat", full=True)
    summarized = agent.snapshot("openai-chat", full=True, expire=("*=0:summary",))
    assert summarized.tokens < full.tokens - 1_000
