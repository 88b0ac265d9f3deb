"""The smaller points of issue 26, each as a daily user meets it (the terminal-safety point is
tests/test_neutral_output.py)."""

from __future__ import annotations

import sys
import tempfile

import pytest

from tests.events import CALL, RES, A, U
from tests.helpers import CORPORA, REPO, needs_corpora, proc_env

# ---------------------------------------------------------------- 8: a quiet MCP server

def _mcp_stderr(memory_dir, *extra) -> str:
    """What ``memcli mcp`` writes on stderr while a client lists its tools and searches twice."""
    anyio = pytest.importorskip("anyio")
    pytest.importorskip("mcp")
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable, env=proc_env(), cwd=str(REPO),
                                   args=["-m", "memcli", "--dir", str(memory_dir), "mcp", "--agent", "a", *extra])
    with tempfile.TemporaryFile("w+") as errlog:
        async def main():
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    await session.list_tools()
                    for _ in range(2):
                        result = await session.call_tool("memory_search", {"query": "hello"})
                        assert not result.isError

        anyio.run(main)
        errlog.seek(0)
        return errlog.read()


def test_mcp_is_quiet_by_default_and_logs_requests_when_asked(cli, memory_dir):
    assert cli("ingest", "a", input=[U("hello there")]).exit_code == 0
    assert _mcp_stderr(memory_dir) == ""
    assert _mcp_stderr(memory_dir, "--log-level", "info").count("Processing request of type") >= 3  # list, 2 calls


# ---------------------------------------------------------------- 2: a rejected import leaves nothing

@pytest.mark.parametrize("case", ["wrong --from", "invalid event", "empty input", "blank lines"])
def test_a_rejected_first_import_leaves_no_agent(cli, memory_dir, case):
    args, data = {
        "wrong --from": (["--from", "codex"], [U("hello")]),
        "invalid event": ([], [U("hello"), {"trace_type": "bogus"}]),
        "empty input": ([], b""),
        "blank lines": ([], b"\n\n"),
    }[case]
    result = cli("ingest", "a", *args, input=data)
    assert result.exit_code == 1
    assert "nothing was written" in result.stderr
    assert not (memory_dir / "agents" / "a").exists()
    assert cli("agents").stdout == ""


def test_empty_input_is_no_events_not_zero_ingested(cli, memory_dir):
    result = cli("ingest", "a", input=b"")
    assert (result.exit_code, result.stderr) == (1, "memcli: error: no events in the input (format native)\n"
                                                    "  hint: nothing was written\n")


def test_a_rejected_import_into_an_existing_agent_keeps_it_byte_identical(cli, memory_dir):
    from tests.helpers import tree_digest

    assert cli("ingest", "a", input=[U("hello")]).exit_code == 0
    before = tree_digest(memory_dir / "agents" / "a")
    assert cli("ingest", "a", input=b"").exit_code == 1
    assert cli("ingest", "a", "--from", "codex", input=[U("x")]).exit_code == 1
    assert tree_digest(memory_dir / "agents" / "a") == before


# ---------------------------------------------------------------- 3: remember dedupes

def _semantic_lines(memory_dir) -> list[dict]:
    from tests.helpers import read_jsonl

    return read_jsonl(memory_dir / "agents" / "a" / "semantic.jsonl")


def test_remember_the_same_text_returns_the_existing_fact(cli, memory_dir):
    first = cli("remember", "a", "The deploy key lives in vault")
    again = cli("remember", "a", "  The deploy   key lives\nin vault ")
    assert first.exit_code == again.exit_code == 0
    assert first.stdout == again.stdout
    assert again.stderr == f"memcli: already remembered as {first.stdout.strip()} in 'a': nothing written\n"
    assert len(_semantic_lines(memory_dir)) == 1


def test_remember_dedupes_over_the_api_and_mcp(memory_dir):
    from memcli import Memory
    from memcli.mcp.tools import MemoryTools

    agent = Memory(memory_dir).agent("a")
    first = agent.remember("tests run with make test")
    assert agent.remember("tests run with  make test")["id"] == first["id"]
    answer = MemoryTools(memory_dir, "a").remember(None, "tests run with make test ")
    assert (answer["id"], answer["existing"]) == (first["id"], True)
    assert len(_semantic_lines(memory_dir)) == 1


def test_forget_takes_the_fact_out_of_recall(memory_dir):
    from memcli import Memory

    agent = Memory(memory_dir).agent("a")
    agent.remember("the staging database is pg-staging-3")
    fact = agent.remember("the staging  database is pg-staging-3", pin=True)  # a tag it lacked: replaces it
    assert fact["tags"] == ["pinned"] and len(_semantic_lines(memory_dir)) == 2
    assert agent.forget(fact["id"]) is not None
    from memcli.snapshot.recall import select_bundle

    bundle = select_bundle(agent.store, recall="staging database", memory_tokens=2000, count=len)
    assert bundle.semantic == []


# ---------------------------------------------------------------- 4: get by id prefix

def test_get_expands_a_unique_prefix_and_lists_an_ambiguous_one(cli, memory_dir):
    events = [U("ask", id="trace_alpha_1"), A("answer", id="trace_alpha_2"), A("more", id="trace_beta_1")]
    assert cli("ingest", "a", input=events).exit_code == 0
    found = cli("get", "a", "trace_b")
    assert found.exit_code == 0 and '"id": "trace_beta_1"' in found.stdout
    assert found.stderr.startswith("memcli: trace_beta_1 is in active (")
    assert cli("get", "a", "trace_beta…").exit_code == 0  # as a table shortens it
    ambiguous = cli("get", "a", "trace_al")
    assert ambiguous.exit_code == 2 and ambiguous.stdout == ""
    assert ambiguous.stderr == ("memcli: error: 'trace_al' is the start of 2 ids in agent 'a': trace_alpha_1, "
                                "trace_alpha_2\n  hint: give more of the id\n")
    assert cli("get", "a", "nothing_like_it").exit_code == 3


def test_tables_shorten_ids_to_a_prefix_get_expands(cli, memory_dir):

    ids = [f"toolu_01{k}Xq7vLrT9mZpW3sKdNbHfYcA" for k in "ABC"]
    events = [U("go")] + [e for i in ids for e in (CALL(i, args={"cmd": "x" * 80}), RES(i, "y" * 80))]
    assert cli("ingest", "a", input=events).exit_code == 0
    table = cli("tools", "a", "--width", "80").stdout.splitlines()
    at = table[0].index("call id")
    shown = [line[at:].split()[0] for line in table[1:]]
    assert all(cell.endswith("…") and len(cell) < len(ids[0]) for cell in shown), table
    for cell, full in zip(shown, ids):
        got = cli("get", "a", cell)
        assert got.exit_code == 0, got.stderr
        assert f'"tool_call_id": "{full}"' in got.stdout


# ---------------------------------------------------------------- 5: flags mean one thing

@pytest.fixture
def three_turns(cli, memory_dir):
    from tests.events import turns

    events = turns(3)
    for k, event in enumerate(events):
        event["ts"] = 1_790_000_000 + 3600 * (k // 4)  # one turn an hour
    assert cli("ingest", "a", input=events).exit_code == 0
    return memory_dir


def test_a_repeated_turn_selects_every_named_turn_alike(cli, three_turns):
    import orjson

    shown = orjson.loads(cli("show", "a", "--turn", "1", "--turn", "3", "--json").stdout)
    assert sorted({t["turn_id"] for t in shown}) == ["turn_0001", "turn_0003"] and len(shown) == 8
    tools = orjson.loads(cli("tools", "a", "--turn", "1", "--turn", "turn_0003", "--json").stdout)
    assert [t["turn_id"] for t in tools] == ["turn_0001", "turn_0003"]
    exported = cli("export", "a", "--turn", "1", "--turn", "3").stdout.splitlines()
    assert [orjson.loads(line)["id"] for line in exported] == [t["id"] for t in shown]
    missing = cli("show", "a", "--turn", "1", "--turn", "9")
    assert missing.exit_code == 3 and "turn_0009" in missing.stderr


def test_turns_has_since_and_until(cli, three_turns):
    import orjson

    def ids(*args):
        return [t["turn_id"] for t in orjson.loads(cli("turns", "a", "--json", *args).stdout)]

    assert ids("--since", str(1_790_000_000 + 3600)) == ["turn_0002", "turn_0003"]
    assert ids("--until", str(1_790_000_000 + 3599)) == ["turn_0001"]
    assert ids("--since", str(1_790_000_000 + 1800), "--until", str(1_790_000_000 + 5400)) == ["turn_0002"]


def test_search_honours_width_and_columns(cli, memory_dir):
    text = "needle " + " ".join(f"word{k}" for k in range(60))
    assert cli("ingest", "a", input=[U(text), U(text)]).exit_code == 0
    for args, env, width in ((["--width", "60"], None, 60), ([], {"COLUMNS": "70"}, 70)):
        out = cli("search", "a", "needle", *args, env=env).stdout
        lines = out.splitlines()
        assert len(lines) > 4 and max(map(len, lines)) <= width, out


def test_agents_sort_numbers_as_numbers(cli, memory_dir):
    for name in ("tau.10", "tau.2", "tau.1", "alpha"):
        assert cli("ingest", name, input=[U("hi")]).exit_code == 0
    assert [line.split()[0] for line in cli("agents").stdout.splitlines()[1:]] == ["alpha", "tau.1", "tau.2", "tau.10"]


def test_doctor_without_an_agent_checks_every_agent(cli, memory_dir):
    for name in ("a", "b"):
        assert cli("ingest", name, input=[U("hi")]).exit_code == 0
    clean = cli("doctor")
    assert clean.exit_code == 0
    assert clean.stderr == "memcli: doctor: agent 'a': no problems\nmemcli: doctor: agent 'b': no problems\n"
    assert cli("doctor", "--all").stderr == clean.stderr
    with open(memory_dir / "agents" / "b" / "raw_traces.jsonl", "ab") as f:
        f.write(b"not json\n")
    broken = cli("doctor")
    assert broken.exit_code == 1
    assert broken.stdout.startswith(f"{memory_dir}/agents/b/raw_traces.jsonl:2: error: ")
    assert "memcli: error: doctor: 1 of 2 agents have problems: b\n" in broken.stderr
    assert cli("doctor", "a", "--all").exit_code == 2


# ---------------------------------------------------------------- 7: model access without ceremony

@pytest.fixture
def llm_agent(cli, memory_dir, monkeypatch):
    from tests.compact_fixtures import conversation

    for name in ("OPENAI_API_KEY", "MY_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MEMCLI_RETRY_BACKOFF", "0")
    assert cli("ingest", "a", input=conversation(8)).exit_code == 0
    return memory_dir


def test_compact_takes_the_key_from_a_flag_or_a_named_variable(cli, llm_agent, server, monkeypatch):
    from tests.compact_fixtures import faithful_answer

    srv = server(lambda body, i: (200, faithful_answer(body), 0))
    base = srv.api_base.replace("127.0.0.1", "localhost")
    assert cli("compact", "a", "--model", "openai/m", "--api-base", base, "--api-key", "sk-flag").exit_code == 0
    monkeypatch.setenv("MY_KEY", "sk-from-env")
    assert cli("ingest", "a", input=[U(f"more {k}") for k in range(8)]).exit_code == 0
    assert cli("compact", "a", "--model", "openai/m", "--api-base", base, "--api-key-env", "MY_KEY",
               "--tail-turns", "1").exit_code == 0
    assert [r.authorization for r in srv.requests] == ["Bearer sk-flag", "Bearer sk-from-env"]
    unset = cli("compact", "a", "--model", "openai/m", "--api-key-env", "NOT_SET_ANYWHERE")
    assert unset.exit_code == 2 and "--api-key-env NOT_SET_ANYWHERE: that environment variable is not set" in unset.stderr


def test_the_api_compacts_with_a_key_and_a_base(llm_agent, server):
    from memcli import Memory
    from tests.compact_fixtures import faithful_answer

    srv = server(lambda body, i: (200, faithful_answer(body), 0))
    result = Memory(llm_agent).agent("a").compact(model="openai/m", api_base=srv.api_base, api_key="sk-api")
    assert result.turns and [r.authorization for r in srv.requests] == ["Bearer sk-api"]


@pytest.mark.parametrize("case", ["no key", "closed port"])
def test_a_missing_key_or_a_closed_api_base_is_told_before_litellm_loads(llm_agent, case):
    import socket
    import subprocess

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args = ["--model", "openai/m"] + (["--api-base", f"http://127.0.0.1:{port}/v1"] if case == "closed port" else [])
    code = ("import sys; from memcli.cli.app import build_app\n"
            "try:\n    build_app('compact')(['--dir', sys.argv[1], 'compact', 'a', *sys.argv[2:]], prog_name='memcli')\n"
            "except SystemExit as e:\n    print(e.code, 'litellm' in sys.modules)")
    env = proc_env()
    env.pop("OPENAI_API_KEY", None)
    run = subprocess.run([sys.executable, "-c", code, str(llm_agent), *args], capture_output=True, text=True,
                         env=env, timeout=120)
    assert run.stdout.split() == ["1", "False"], run.stderr
    assert ("no API key: set OPENAI_API_KEY" if case == "no key" else "(connection refused)") in run.stderr


# ---------------------------------------------------------------- 10: small truths

def test_counted_nouns_say_one_in_the_singular(cli, memory_dir):
    from memcli.sizes import counted

    assert [counted(n, "turn") for n in (0, 1, 2, 1000)] == ["0 turns", "1 turn", "2 turns", "1,000 turns"]
    assert counted(1, "summary", "summaries") == "1 summary" and counted(3, "summary", "summaries") == "3 summaries"
    assert cli("ingest", "a", input=[U("only one")]).exit_code == 0
    assert "built the search index (1 record);" in cli("search", "a", "one").stderr


def test_snapshot_counts_the_messages_of_the_payload_as_rendered(cli, memory_dir):
    import orjson

    events = [U("hi"), CALL("c1"), CALL("c2"), RES("c1"), RES("c2"), A("done")]
    assert cli("ingest", "a", input=events).exit_code == 0
    for provider, key, noun in (("openai-chat", "messages", "messages"), ("anthropic", "messages", "messages"),
                                ("openai-responses", "input", "input items"), ("gemini", "contents", "messages")):
        result = cli("snapshot", "a", "-p", provider)
        n = len(orjson.loads(result.stdout)[key])
        assert f"1 turn, {n} {noun}, ~" in result.stderr, (provider, result.stderr)


def test_result_objects_have_a_useful_repr(memory_dir):
    from memcli import Memory

    result = Memory(memory_dir).agent("a").ingest([U("hi"), CALL("c1"), RES("c1")])
    assert repr(result) == ("IngestResult(agent_id='a', format='native', appended=3, duplicates=0, invalid=0, "
                            "turns=1, tool_calls=1)")


def test_the_readme_lists_the_tools_the_mcp_server_lists(memory_dir):
    import re

    anyio = pytest.importorskip("anyio")
    pytest.importorskip("mcp")
    from mcp.shared.memory import create_connected_server_and_client_session

    from memcli.mcp.server import build_server

    section = (REPO / "README.md").read_text().split("### `memcli mcp`", 1)[1].split("```", 1)[0]
    in_readme = set(re.findall(r"`(memory\w*)`", section))

    async def listed():
        async with create_connected_server_and_client_session(build_server(memory_dir)._mcp_server) as session:
            return {tool.name for tool in (await session.list_tools()).tools}

    assert in_readme == anyio.run(listed)


def test_a_yaml_cassette_is_named_as_yaml(cli, memory_dir):
    cassette = b"interactions:\n- request:\n    body: '{}'\n    method: POST\n"
    result = cli("ingest", "a", input=cassette)
    assert result.exit_code == 1
    assert result.stderr.startswith("memcli: error: line 1: this is YAML, not JSON: memcli reads JSON and JSONL")
    assert "not valid JSON" not in result.stderr
    real = CORPORA / "openai-responses" / "llm_vcr_responses_round_trips_encrypted_reasoning.yaml"
    if real.exists():
        assert "this is YAML, not JSON" in cli("ingest", "a", str(real)).stderr


def test_shell_completion_installs_from_memcli(cli):
    help_text = cli("--help").stdout
    assert "--install-completion" in help_text and "--show-completion" in help_text
    script = cli("--show-completion", "bash")
    assert script.exit_code == 0 and "_MEMCLI_COMPLETE=complete_bash" in script.stdout


# ---------------------------------------------------------------- 9: readable harness text

def _cc_line(uuid, content, **extra):
    return {"type": "user", "uuid": uuid, "sessionId": "s1", "timestamp": "2026-01-01T00:00:00.000Z",
            "message": {"role": "user", "content": content}, **extra}


def test_a_slash_command_reads_as_name_and_args(cli, memory_dir):
    import orjson

    wrapped = ("<command-message>review is running…</command-message>\n<command-name>/review</command-name>\n"
               "<command-args>src/ --strict</command-args>")
    assert cli("ingest", "a", "--from", "claude-code", input=[_cc_line("u1", wrapped)]).exit_code == 0
    assert [t["ask"] for t in orjson.loads(cli("turns", "a", "--json").stdout)] == ["/review src/ --strict"]
    assert "\n    /review src/ --strict\n" in cli("show", "a").stdout
    assert orjson.loads(cli("show", "a", "--json").stdout)[0]["content"] == wrapped  # stored as it was


@pytest.mark.parametrize("injected", [
    "<task-notification>\n<task-id>b0be39e</task-id>\n<status>completed</status>\n</task-notification>",
    "<system-reminder>The TodoWrite tool hasn't been used recently.</system-reminder>",
    "[Request interrupted by user for tool use]",
    "Stop hook feedback:\n- run the tests",
])
def test_what_the_harness_injects_is_context_never_the_ask(cli, memory_dir, injected):
    import orjson

    lines = [_cc_line("u1", "build the app"), _cc_line("u2", injected)]
    assert cli("ingest", "a", "--from", "claude-code", input=lines).exit_code == 0
    turns = orjson.loads(cli("turns", "a", "--json").stdout)
    assert [t["ask"] for t in turns] == ["build the app"]
    traces = orjson.loads(cli("show", "a", "--json").stdout)
    assert "context" in traces[1]["tags"]


@needs_corpora
def test_a_real_session_lists_no_task_notification_as_an_ask(cli, memory_dir):
    import orjson

    path = CORPORA / "claude-code" / "spotter_258c7280_compacted_by_claude-code.jsonl"
    assert b"<task-notification>" in path.read_bytes()
    assert cli("ingest", "sp", str(path)).exit_code == 0
    asks = [t["ask"] for t in orjson.loads(cli("turns", "sp", "--json").stdout)]
    assert asks and not any((a or "").startswith("<") for a in asks), asks


@needs_corpora
def test_tools_status_error_shows_what_went_wrong_at_80_columns(cli, memory_dir):
    path = CORPORA / "claude-code" / "ccviewer_fe5e1c67_todo-app_438ev.jsonl"
    assert cli("ingest", "cc", str(path)).exit_code == 0
    rows = cli("tools", "cc", "--status", "error", "--width", "80").stdout.splitlines()[1:]
    assert len(rows) == 23 and all(len(row) <= 80 for row in rows)
    assert not any("ERROR: " in row or "<tool_use_error>" in row for row in rows)
    assert sum("  File has not been r" in row for row in rows) >= 10  # the message, not "ERROR: <tool_us…"


# ---------------------------------------------------------------- 6: times people read

def test_fmt_age():
    from memcli.cli.output import fmt_age

    now = 1_795_000_000
    assert [fmt_age(now - s, now) for s in (5, 300, 3 * 3600 + 60, 2 * 86400 + 5, 30 * 86400)] == \
        ["just now", "5m ago", "3h ago", "2d ago", "2026-10-19"]
    assert fmt_age(None) == ""


def test_tables_at_80_columns_show_relative_times_and_leave_room_for_the_ask(cli, memory_dir):
    import time

    ts = time.time() - 3 * 3600 - 120
    ask = "please migrate the billing service to the new queue and keep the old consumer running"
    assert cli("ingest", "a", input=[U(ask, ts=ts), A("on it", ts=ts + 1)]).exit_code == 0
    narrow = cli("turns", "a", "--width", "80").stdout.splitlines()
    assert narrow[1].split()[1:3] == ["3h", "ago"] and len(narrow[1]) <= 80
    assert "please migrate the billing servi" in narrow[1]  # the empty columns gave their room
    wide = cli("turns", "a", "--width", "200").stdout.splitlines()
    assert wide[1].split()[1].endswith("Z")  # the ISO stamp where it fits
    assert cli("agents", "--width", "60").stdout.splitlines()[1].rstrip().endswith("3h ago")


def test_markdown_of_a_turn_compacted_in_two_passes_shows_the_ask_first(cli, memory_dir):
    events = [U("THE ASK: fix the build")]
    for k in range(30):
        events += [A(f"step {k} " + "lorem ipsum " * 40), CALL(f"c{k}", args={"cmd": "x"}), RES(f"c{k}", "out " * 100)]
    assert cli("ingest", "a", input=events).exit_code == 0
    assert cli("compact", "a", "--target-tokens", "6000", "--keep-steps", "20").exit_code == 0
    assert cli("compact", "a", "--target-tokens", "2000", "--keep-steps", "2").exit_code == 0
    lines = cli("export", "a", "-f", "markdown").stdout.splitlines()
    asks = [i for i, line in enumerate(lines) if "THE ASK" in line]
    first_step = next(i for i, line in enumerate(lines) if line.startswith("step 0 "))
    assert len(asks) == 1 and asks[0] < first_step
    assert lines[asks[0]] == "> THE ASK: fix the build"
