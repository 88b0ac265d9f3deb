"""``memcli snapshot``: stdout is exactly the payload, options compose the prompt, windows are read
from the end of the file, the store never changes, errors exit with the documented codes."""

from __future__ import annotations

import re

import orjson
import pytest

from memcli.renderers import RENDERERS, get_renderer
from memcli.snapshot import SnapshotOptions, take_snapshot
from memcli.store.agent import AgentStore
from tests.events import A, U
from tests.helpers import agent_dir, store_digest
from tests.snapshot_fixtures import AGENT, make_fixture_store
from tests.snapshot_validation import check_payload


def many_turns(n, start=1, result="x" * 40):
    events = []
    for t in range(start, start + n):
        events += [U(f"ask {t}"),
                   {"trace_type": "tool_call", "tool_call_id": f"c{t}", "tool_name": "read_file", "tool_args": {"t": t}},
                   {"trace_type": "tool_result", "tool_call_id": f"c{t}", "tool_result": f"{result} {t}"},
                   A(f"answer {t}")]
    return events


def test_stdout_is_exactly_the_payload_and_stderr_reports(cli, memory_dir):
    make_fixture_store(memory_dir)
    result = cli("snapshot", AGENT)
    assert result.exit_code == 0
    payload = orjson.loads(result.stdout)
    assert result.stdout == orjson.dumps(payload, option=orjson.OPT_INDENT_2).decode() + "\n"
    assert payload["messages"][0] == {"role": "system",
                                      "content": "You are a careful build engineer. Answer in one or two sentences."}
    lines = result.stderr.splitlines()
    assert len(payload["messages"]) == 21  # as rendered: the system prompt, the memory, each tool result
    assert re.fullmatch(r"memcli: snapshot of 'fixture' for openai-chat: 4 turns, 21 messages, ~[\d,]+ tokens "
                        r"\(tiktoken o200k_base\)", lines[0])
    assert lines[1:] == [
        "memcli: note: 1 tool call has no result yet: each got a placeholder result saying so",
        "memcli: note: 1 tool result without a matching call rendered as plain text",
        "memcli: note: renamed 2 tool call ids (reused, or not accepted by every provider): call_1 -> call_1_2, "
        "fc.tool:7/grep -> fc_tool_7_grep",
        "memcli: note: left out 1 reasoning trace: providers accept only their own signed reasoning "
        "(--provider text shows it)",
        "memcli: note: left out 1 sidechain trace (a subagent's own conversation, which the main agent did not see)",
    ]


def test_dropped_media_is_reported_per_provider(cli, memory_dir):
    make_fixture_store(memory_dir)
    result = cli("snapshot", AGENT, "--provider", "anthropic")
    assert "memcli: note: left out 1 audio item in user messages: anthropic does not accept it there" in result.stderr
    assert "tiktoken cl100k_base (an approximation: anthropic's tokenizer is not available offline)" in result.stderr
    result = cli("snapshot", AGENT, "--provider", "openai-responses")
    assert "left out 1 audio item in user messages: openai-responses does not accept it there" in result.stderr


def test_compact_and_ndjson_outputs(cli, memory_dir):
    make_fixture_store(memory_dir)
    pretty = orjson.loads(cli("snapshot", AGENT, "-p", "anthropic").stdout)
    compact = cli("snapshot", AGENT, "-p", "anthropic", "--compact").stdout
    assert compact.count("\n") == 1 and orjson.loads(compact) == pretty
    lines = cli("snapshot", AGENT, "-p", "anthropic", "--ndjson").stdout.splitlines()
    assert orjson.loads(lines[0]) == {"system": pretty["system"]}
    assert [orjson.loads(line) for line in lines[1:]] == pretty["messages"]
    text = cli("snapshot", AGENT, "-p", "text", "--json").stdout
    assert orjson.loads(text)["text"].startswith("[SYSTEM]\n")


def test_system_prompt_composition(cli, memory_dir, tmp_path):
    make_fixture_store(memory_dir)
    (tmp_path / "sys.txt").write_text("From a file.\n")
    (tmp_path / "AGENT.md").write_text("# Conventions\n\nUse tabs.\n")
    (tmp_path / "NOTES.md").write_text("Deploys on Fridays are frozen.")
    args = ["snapshot", AGENT, "-p", "anthropic", "--system", "You are Bob.", "--system-file", tmp_path / "sys.txt",
            "--memory-file", tmp_path / "AGENT.md", "--memory-file", tmp_path / "NOTES.md"]
    system = orjson.loads(cli(*args).stdout)["system"]
    assert system == (
        "You are Bob.\n\nFrom a file.\n\nYou are a careful build engineer. Answer in one or two sentences.\n\n"
        f"# Memory file: {tmp_path / 'AGENT.md'}\n\n# Conventions\n\nUse tabs.\n\n"
        f"# Memory file: {tmp_path / 'NOTES.md'}\n\nDeploys on Fridays are frozen.")
    payload = orjson.loads(cli("snapshot", AGENT, "-p", "anthropic", "--no-stored-system", "--no-memory").stdout)
    assert "system" not in payload
    assert "[MEMORY:" not in orjson.dumps(payload).decode()


def test_memory_bundle_holds_the_live_items_only(cli, memory_dir):
    make_fixture_store(memory_dir)
    payload = orjson.loads(cli("snapshot", AGENT).stdout)
    assert payload["messages"][1] == {"role": "user", "content": (
        "[MEMORY:EPISODIC]\n1) The user set up the repository and asked for reproducible builds.\n"
        "2) Earlier builds passed on the CI image, which ships gcc 13.\n\n"
        "[MEMORY:SEMANTIC]\n- The project builds with make and a C compiler.\n- The user prefers short answers.")}


@pytest.mark.parametrize("args,code,message", [
    (["snapshot", "nobody"], 3, "no agent 'nobody'"),
    (["snapshot", AGENT, "--provider", "cohere"], 2, "unknown provider 'cohere'"),
    (["snapshot", AGENT, "--expire", "read_file"], 2, "expected TOOL=TURNS[:clip=N|:remove|:summary]"),
    (["snapshot", AGENT, "--memory-file", "/nonexistent/AGENT.md"], 2, "cannot read --memory-file"),
    (["snapshot", AGENT, "--system-file", "/nonexistent/sys.txt"], 2, "cannot read --system-file"),
    (["snapshot", AGENT, "--tail-turns", "-1"], 2, "--tail-turns must be 0 or more"),
    (["snapshot", AGENT, "--max-tokens", "0"], 2, "--max-tokens must be 1 or more"),
    (["snapshot", AGENT, "--max-tool-result-chars", "-3"], 2, "--max-tool-result-chars"),
    (["snapshot", "../etc"], 2, ""),
])
def test_errors_exit_with_the_documented_codes(cli, memory_dir, args, code, message):
    make_fixture_store(memory_dir)
    result = cli(*args)
    assert result.exit_code == code
    assert result.stdout == ""
    assert result.stderr.startswith("memcli: error: ") and message in result.stderr


def test_views_never_change_the_store(cli, memory_dir):
    make_fixture_store(memory_dir)
    before = store_digest(memory_dir)  # (snapshot may fill the token count cache)
    for provider in RENDERERS:
        for args in ([], ["--tail-turns", "2"], ["--max-tokens", "2000", "--max-tool-result-chars", "50"],
                     ["--expire", "*=0:remove"]):
            assert cli("snapshot", AGENT, "-p", provider, *args).exit_code == 0
    assert store_digest(memory_dir) == before


def test_every_shortened_result_names_a_trace_the_store_can_expand(cli, memory_dir):
    store = make_fixture_store(memory_dir)
    text = cli("snapshot", AGENT, "-p", "text", "--max-tool-result-chars", "100", "--expire", "screenshot=0").stdout
    commands = re.findall(r"`memcli get fixture (\S+)`", text)
    assert commands == ["fx-09", "fx-18"]  # the clipped log, the expired screenshot
    for trace_id in commands:
        tier, _, record = store.find(trace_id)
        assert tier == "active" and record.trace_type == "tool_result"


def test_tail_turns_is_the_compaction_snapshot_and_keeps_the_stored_system_prompt(cli, memory_dir):
    make_fixture_store(memory_dir)
    payload = orjson.loads(cli("snapshot", AGENT, "--tail-turns", "2").stdout)
    assert payload["messages"][0]["role"] == "system" and "careful build engineer" in payload["messages"][0]["content"]
    users = [m["content"] for m in payload["messages"] if m["role"] == "user" and isinstance(m["content"], str)]
    assert "Any news?" in users and not any("Why does the build fail" in str(u) for u in users)
    zero = orjson.loads(cli("snapshot", AGENT, "--tail-turns", "0").stdout)
    assert [m["role"] for m in zero["messages"]] == ["system", "user"]  # system prompt and memory only


def _corrupt_middle(memory_dir, agent):
    """Break a line in the middle of the active file and fill the archive with garbage: a read
    that touches either fails."""
    path = agent_dir(memory_dir, agent) / "raw_traces.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    middle = len(lines) // 2
    lines[middle] = b'{"this is": not json}\n'
    path.write_bytes(b"".join(lines))
    (agent_dir(memory_dir, agent) / "raw_traces_archive.jsonl").write_bytes(b"garbage, not JSON\n" * 100)


def test_windows_are_read_from_the_end_of_the_file(cli, memory_dir):
    cli("ingest", AGENT, input=[U("Be brief.", tags=["system"])] + many_turns(200))
    _corrupt_middle(memory_dir, AGENT)
    full = cli("snapshot", AGENT)
    assert full.exit_code == 1 and "raw_traces.jsonl:401: not valid JSON" in full.stderr
    tail = cli("snapshot", AGENT, "--tail-turns", "4")
    assert tail.exit_code == 0, tail.stderr
    messages = orjson.loads(tail.stdout)["messages"]
    assert messages[0] == {"role": "system", "content": "Be brief."}
    assert [m["content"] for m in messages if m["role"] == "user"] == [f"ask {t}" for t in range(197, 201)]
    budget = cli("snapshot", AGENT, "--max-tokens", "800")
    assert budget.exit_code == 0, budget.stderr
    assert "read the" in budget.stderr and "newest turns from the end of the active file" in budget.stderr
    asks = [m["content"] for m in orjson.loads(budget.stdout)["messages"] if m["role"] == "user"]
    assert asks[-1] == "ask 200" and len(asks) > 4


def test_max_tokens_alone_gives_the_same_payload_as_over_the_whole_file(memory_dir):
    store = AgentStore(memory_dir, AGENT)
    from memcli.ingest.pipeline import ingest_events

    events = [U("Be brief.", tags=["system"])] + many_turns(60, result="lorem ipsum dolor " * 30)
    ingest_events(store, ((i + 1, e) for i, e in enumerate(events)))
    for budget in (300, 1000, 2500, 6000, 100_000):
        windowed = take_snapshot(memory_dir, AGENT, SnapshotOptions(max_tokens=budget))
        # the same budget over every turn read forward (--tail-turns larger than the file)
        whole = take_snapshot(memory_dir, AGENT, SnapshotOptions(max_tokens=budget, tail_turns=10_000))
        assert windowed.payload == whole.payload
        assert windowed.tokens <= budget or any(s.action == "over" for s in windowed.steps)


def test_iter_chunks_streams_exactly_the_rendered_payload(memory_dir):
    make_fixture_store(memory_dir)
    snap = take_snapshot(memory_dir, AGENT, SnapshotOptions(provider="text"))
    for name in RENDERERS:
        renderer = get_renderer(name)
        streamed = b"".join(get_renderer(name).iter_chunks(snap.system, iter(snap.messages)))
        rendered = renderer.render(snap.system, snap.messages)
        if renderer.is_json:
            assert orjson.loads(streamed) == rendered
            check_payload(name, orjson.loads(streamed))
        else:
            assert streamed.decode() == rendered
    empty = get_renderer("openai-chat")
    assert orjson.loads(b"".join(empty.iter_chunks("", iter(())))) == {"messages": []}


def test_an_empty_agent_renders_an_empty_conversation(cli, memory_dir):
    (agent_dir(memory_dir, "blank")).mkdir(parents=True)
    (agent_dir(memory_dir, "blank") / "raw_traces.jsonl").write_bytes(b"")
    assert orjson.loads(cli("snapshot", "blank").stdout) == {"messages": []}
    assert orjson.loads(cli("snapshot", "blank", "-p", "gemini", "--system", "hi").stdout) == {
        "system_instruction": {"parts": [{"text": "hi"}]}, "contents": []}
    text = cli("snapshot", "blank", "-p", "text").stdout
    assert text == ("[SYSTEM]\n(none)\n\n[MEMORY:EPISODIC]\n(none)\n\n[MEMORY:SEMANTIC]\n(none)\n\n"
                    "[RECENT TURNS]\n(none)\n")


def test_the_real_process_writes_the_payload_to_stdout(memcli_proc, memory_dir):
    make_fixture_store(memory_dir)
    proc = memcli_proc("snapshot", AGENT, "-p", "gemini", "--tail-turns", "1")
    assert proc.returncode == 0, proc.stderr
    payload = orjson.loads(proc.stdout)
    check_payload("gemini", payload)
    assert proc.stderr.decode().startswith("memcli: snapshot of 'fixture' for gemini: 1 turn, 3 messages")


def test_a_system_prompt_given_and_stored_appears_once(cli, memory_dir):
    make_fixture_store(memory_dir)
    stored = "You are a careful build engineer. Answer in one or two sentences."
    payload = orjson.loads(cli("snapshot", AGENT, "-p", "anthropic", "--system", stored + "\n").stdout)
    assert payload["system"] == stored
