"""Working memory in the rest of memcli: snapshot, export/ingest, clear, doctor, get, `memory --files`,
and its reliability (concurrent writers, kill -9 mid-write, torn tails at every offset)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import orjson
import pytest

from memcli.memory_tool import memory_tool
from memcli.store.agent import AgentStore
from memcli.store.memory_files import MemoryTree
from tests.helpers import REPO, agent_dir, proc_env, read_jsonl, run_memcli, tree_digest
from tests.snapshot_validation import check_payload


def _tool(memory_dir, agent, **command):
    return memory_tool(AgentStore(memory_dir, agent), command)


def _log(memory_dir, agent):
    return agent_dir(memory_dir, agent) / "memory_files.jsonl"


@pytest.fixture
def agent_with_files(cli, memory_dir):
    cli("ingest", "a", input=[{"trace_type": "user", "content": "plan the release"},
                              {"trace_type": "assistant", "content": "on it"}])
    _tool(memory_dir, "a", command="create", path="/memories/plan.md", file_text="1. tag\n2. publish\n")
    _tool(memory_dir, "a", command="create", path="/memories/prefs/user.md", file_text="likes short answers")
    _tool(memory_dir, "a", command="create", path="/memories/.scratch", file_text="hidden")
    return "a"


# --------------------------------------------------------------------------- snapshot

def test_snapshot_puts_the_files_in_the_system_prompt(cli, agent_with_files):
    result = cli("snapshot", "a", "-p", "anthropic", "--system", "You are a release bot.")
    assert result.exit_code == 0, result.stderr
    payload = orjson.loads(result.stdout)
    assert payload["system"] == (
        "You are a release bot.\n\n# Working memory\n\nYour memory directory /memories, as it is now "
        "(edit it with the memory tool):\n\n## /memories/plan.md\n\n1. tag\n2. publish\n\n"
        "## /memories/prefs/user.md\n\nlikes short answers")
    assert "tools" not in payload
    check_payload("anthropic", payload)


@pytest.mark.parametrize("provider", ["openai-chat", "openai-responses", "anthropic", "gemini", "text"])
def test_every_provider_payload_with_working_memory_still_validates(cli, agent_with_files, provider):
    result = cli("snapshot", "a", "-p", provider, "--json")
    assert result.exit_code == 0, result.stderr
    payload = orjson.loads(result.stdout)
    payload = payload["text"] if provider == "text" else payload
    check_payload(provider, payload)
    assert "## /memories/plan.md" in orjson.dumps(payload).decode()


def test_files_over_the_budget_are_listed_by_path(cli, memory_dir, agent_with_files):
    _tool(memory_dir, "a", command="create", path="/memories/big.md", file_text="word " * 3000)
    result = cli("snapshot", "a", "-p", "anthropic", "--working-memory-tokens", "200")
    system = orjson.loads(result.stdout)["system"]
    assert "## /memories/plan.md" in system and "## /memories/prefs/user.md" in system
    assert "## /memories/big.md" not in system
    assert system.endswith("Not shown here, to stay within 200 tokens (1 file; `view` them with the memory tool): "
                           "/memories/big.md")
    assert "1 file over the 200-token budget listed by path only" in result.stderr
    default = orjson.loads(cli("snapshot", "a", "-p", "anthropic").stdout)["system"]
    assert "## /memories/big.md" in default and "Not shown" not in default  # ~3,000 tokens: within 4,000
    nothing = orjson.loads(cli("snapshot", "a", "-p", "anthropic", "--working-memory-tokens", "0").stdout)["system"]
    assert "/memories/plan.md, /memories/prefs/user.md" in nothing


def test_no_working_memory_leaves_the_prompt_as_without_files(cli, memory_dir, agent_with_files):
    with_files = orjson.loads(cli("snapshot", "a", "-p", "anthropic", "--no-working-memory").stdout)
    cli("ingest", "b", input=[{"trace_type": "user", "content": "plan the release"},
                              {"trace_type": "assistant", "content": "on it"}])
    without = orjson.loads(cli("snapshot", "b", "-p", "anthropic").stdout)
    assert with_files == without and "system" not in without


def test_memory_tool_flag_declares_the_tool(cli, agent_with_files):
    payload = orjson.loads(cli("snapshot", "a", "-p", "anthropic", "--memory-tool").stdout)
    assert payload["tools"] == [{"type": "memory_20250818", "name": "memory"}]
    check_payload("anthropic", payload)
    refused = cli("snapshot", "a", "-p", "openai-chat", "--memory-tool")
    assert refused.exit_code == 2 and "use -p anthropic" in refused.stderr


# --------------------------------------------------------------------------- export, ingest, clear, get

def test_export_with_memory_carries_the_log_and_ingest_restores_it(cli, memory_dir, agent_with_files):
    _tool(memory_dir, "a", command="str_replace", path="/memories/plan.md", old_str="tag", new_str="tag v2")
    _tool(memory_dir, "a", command="rename", old_path="/memories/prefs", new_path="/memories/people")
    exported = cli("export", "a", "--with-memory")
    assert exported.exit_code == 0
    lines = [orjson.loads(line) for line in exported.stdout.splitlines()]
    assert [r["op"] for r in lines if r.get("record_type") == "memory_file"] == [
        "create", "create", "create", "str_replace", "rename"]
    assert cli("export", "a").stdout.count("memory_file") == 0
    restored = cli("ingest", "b", input=exported.stdout_bytes)
    assert restored.exit_code == 0 and "5 working-memory records" in restored.stderr
    assert _log(memory_dir, "b").read_bytes() == _log(memory_dir, "a").read_bytes()
    again = cli("ingest", "b", input=exported.stdout_bytes)
    assert again.exit_code == 0 and _log(memory_dir, "b").read_bytes() == _log(memory_dir, "a").read_bytes()
    json_export = cli("export", "a", "--with-memory", "--format", "json")
    assert cli("ingest", "c", input=json_export.stdout_bytes).exit_code == 0
    assert AgentStore(memory_dir, "c").memory_tree().files == AgentStore(memory_dir, "a").memory_tree().files


def test_markdown_export_with_memory_shows_the_files(cli, memory_dir, agent_with_files):
    _tool(memory_dir, "a", command="create", path="/memories/code.md", file_text="```py\nx = 1\n```\n")
    text = cli("export", "a", "--format", "markdown", "--with-memory").stdout
    section = text[text.index("### Working memory files"):text.index("## turn_0001")]
    assert section.startswith("### Working memory files\n\n`/memories/.scratch`\n\n```\nhidden\n```\n\n"
                              "`/memories/code.md`\n\n````\n```py\nx = 1\n```\n````\n\n`/memories/plan.md`")
    assert "Working memory" not in cli("export", "a", "--format", "markdown").stdout


def test_restoring_into_conflicting_working_memory_appends_none_of_it(cli, memory_dir, agent_with_files):
    exported = cli("export", "a", "--with-memory").stdout_bytes
    _tool(memory_dir, "d", command="create", path="/memories/plan.md", file_text="mine")
    before = _log(memory_dir, "d").read_bytes()
    result = cli("ingest", "d", input=exported)
    assert result.exit_code == 1
    assert "(create /memories/plan.md) does not apply to agent 'd': /memories/plan.md already exists" in result.stderr
    assert _log(memory_dir, "d").read_bytes() == before


def test_clear_keep_memory_keeps_the_files_and_full_clear_removes_them(cli, memory_dir, agent_with_files):
    log = _log(memory_dir, "a").read_bytes()
    assert cli("clear", "a", "--keep-memory", "--yes").exit_code == 0
    assert _log(memory_dir, "a").read_bytes() == log
    assert not (agent_dir(memory_dir, "a") / "raw_traces.jsonl").exists()
    assert "/memories/plan.md" in cli("memory", "a", "--files").stdout
    assert cli("clear", "a", "--yes").exit_code == 0
    assert not agent_dir(memory_dir, "a").exists()


def test_agents_counts_the_working_memory_log_in_size_and_last_activity(cli, memory_dir, agent_with_files):
    """An edit of the /memories files is activity, and its log is part of the agent's size."""
    from memcli.inspect.agents import summarize_agent

    store = AgentStore(memory_dir, "a")
    summary = summarize_agent(store)
    files = [agent_dir(memory_dir, "a") / n for n in ("raw_traces.jsonl", "memory_files.jsonl")]
    assert summary.bytes == sum(f.stat().st_size for f in files)
    assert summary.last_activity == read_jsonl(_log(memory_dir, "a"))[-1]["ts"]


def test_memory_files_lists_the_tree(cli, agent_with_files):
    result = cli("memory", "a", "--files")
    assert result.exit_code == 0
    assert result.stdout.splitlines() == [
        "           /memories/", "      6 B  /memories/.scratch", "     18 B  /memories/plan.md",
        "           /memories/prefs/", "     19 B  /memories/prefs/user.md"]
    rows = orjson.loads(cli("memory", "a", "--files", "--json").stdout)
    assert rows[2] == {"path": "/memories/plan.md", "kind": "file", "bytes": 18, "content": "1. tag\n2. publish\n"}
    assert cli("memory", "nobody", "--files").exit_code == 3


def test_get_of_a_change_shows_the_version_it_made(cli, memory_dir, agent_with_files):
    _tool(memory_dir, "a", command="str_replace", path="/memories/plan.md", old_str="publish", new_str="announce")
    create, *_, edit = read_jsonl(_log(memory_dir, "a"))
    assert orjson.loads(cli("get", "a", create["id"], "--json").stdout)["content"] == "1. tag\n2. publish\n"
    assert orjson.loads(cli("get", "a", edit["id"], "--json").stdout)["content"] == "1. tag\n2. announce\n"
    missing = cli("get", "a", "wm_0000")
    assert missing.exit_code == 3 and "memory_files.jsonl" in missing.stderr


# --------------------------------------------------------------------------- doctor

def test_doctor_reports_a_change_that_does_not_apply(cli, memory_dir, agent_with_files):
    assert cli("doctor", "a").exit_code == 0
    with open(_log(memory_dir, "a"), "ab") as f:
        f.write(orjson.dumps({"id": "wm_bad", "ts": 1.0, "op": "insert", "path": "/memories/gone.md",
                              "at": 0, "cut": 0, "text": "x"}) + b"\n")
    result = cli("doctor", "a", "--json")
    assert result.exit_code == 1
    found = [f for f in orjson.loads(result.stdout) if f["code"] == "memory-file-conflict"]
    assert found and found[0]["line"] == 4 and "/memories/gone.md is not a file" in found[0]["message"]


def test_doctor_repairs_a_torn_tail_of_the_log(cli, memory_dir, agent_with_files):
    log = _log(memory_dir, "a")
    good = log.read_bytes()
    log.write_bytes(good + b'{"id":"wm_torn","op":"cre')
    result = cli("doctor", "a", "--json")
    assert result.exit_code == 1 and "torn-tail" in result.stdout
    assert cli("doctor", "a", "--repair").exit_code == 0
    assert log.read_bytes() == good
    assert (log.parent / "memory_files.jsonl.corrupt-lines").read_bytes() == b'{"id":"wm_torn","op":"cre\n'


# --------------------------------------------------------------------------- reliability

WORKER = textwrap.dedent("""
    import sys
    from memcli.memory_tool import MemoryToolRefused, memory_tool
    from memcli.store.agent import AgentStore

    store = AgentStore(sys.argv[1], "shared")
    worker, rounds = int(sys.argv[2]), int(sys.argv[3])
    retries = 0
    for k in range(rounds):
        memory_tool(store, {"command": "insert", "path": "/memories/log.md", "insert_line": 0,
                            "insert_text": f"w{worker}-{k}"})
        while True:  # read-modify-write: the edit must apply to the latest version, or be refused
            view = memory_tool(store, {"command": "view", "path": "/memories/count.md"})
            n = int(view.rsplit("count: ", 1)[1].split()[0])
            try:
                memory_tool(store, {"command": "str_replace", "path": "/memories/count.md",
                                    "old_str": f"count: {n}\\n", "new_str": f"count: {n + 1}\\n"})
                break
            except MemoryToolRefused:
                retries += 1
    print(retries)
""")


def test_eight_processes_editing_the_same_files_lose_no_edit(memory_dir, tmp_path):
    _tool(memory_dir, "shared", command="create", path="/memories/log.md", file_text="")
    _tool(memory_dir, "shared", command="create", path="/memories/count.md", file_text="count: 0\n")
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    workers, rounds = 8, 12
    procs = [subprocess.Popen([sys.executable, str(script), str(memory_dir), str(w), str(rounds)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=proc_env(), cwd=REPO)
             for w in range(workers)]
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err.decode()
    tree = AgentStore(memory_dir, "shared").memory_tree()
    assert tree.files["/memories/count.md"] == f"count: {workers * rounds}\n"
    lines = tree.files["/memories/log.md"].splitlines()
    assert sorted(lines) == sorted(f"w{w}-{k}" for w in range(workers) for k in range(rounds))
    for w in range(workers):  # each worker's own inserts, newest first
        mine = [line for line in lines if line.startswith(f"w{w}-")]
        assert mine == [f"w{w}-{k}" for k in reversed(range(rounds))]
    assert len(read_jsonl(_log(memory_dir, "shared"))) == 2 + 2 * workers * rounds


def test_concurrent_cli_calls(memory_dir):
    run_memcli("memory-tool", "cli", input=b'{"command":"create","path":"/memories/l.md","file_text":""}', check=True)
    command = b'{"command":"insert","path":"/memories/l.md","insert_line":0,"insert_text":"x"}'
    procs = [subprocess.Popen([sys.executable, "-m", "memcli", "memory-tool", "cli"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=proc_env()) for _ in range(8)]
    for proc in procs:
        out, err = proc.communicate(command, timeout=120)
        assert proc.returncode == 0 and out == b"The file /memories/l.md has been edited.", err
    assert AgentStore(memory_dir, "cli").memory_tree().files["/memories/l.md"] == "x\n" * 8


@pytest.mark.parametrize("point", ["memory-file:before-append", "memory-file:append", "memory-file:appended"])
def test_kill_9_during_a_write_leaves_the_previous_version(memory_dir, point):
    _tool(memory_dir, "k", command="create", path="/memories/f.md", file_text="v1\n")
    before = AgentStore(memory_dir, "k").memory_tree().files
    edit = orjson.dumps({"command": "str_replace", "path": "/memories/f.md", "old_str": "v1", "new_str": "v2"})
    crashed = run_memcli("memory-tool", "k", input=edit, env={"MEMCLI_CRASH_AT": point})
    assert crashed.returncode == -signal.SIGKILL
    after = AgentStore(memory_dir, "k").memory_tree().files
    if point == "memory-file:appended":  # durable before the kill: the new version, whole
        assert after == {"/memories/f.md": "v2\n"}
    else:
        assert after == before
        if point == "memory-file:append":
            assert not _log(memory_dir, "k").read_bytes().endswith(b"\n")  # a torn tail really was left
    # the next write repairs the tail and applies to the version readers saw
    again = run_memcli("memory-tool", "k", input=b'{"command":"insert","path":"/memories/f.md","insert_line":1,'
                                                  b'"insert_text":"more"}')
    assert again.returncode == 0, again.stderr
    assert AgentStore(memory_dir, "k").memory_tree().files["/memories/f.md"] == after["/memories/f.md"] + "more\n"
    assert run_memcli("doctor", "k").returncode == 0


def test_a_torn_tail_at_every_offset_is_ignored_then_repaired(memory_dir):
    _tool(memory_dir, "t", command="create", path="/memories/f.md", file_text="one\n")
    log = _log(memory_dir, "t")
    good = log.read_bytes()
    _tool(memory_dir, "t", command="str_replace", path="/memories/f.md", old_str="one", new_str="two ünïcode")
    last = log.read_bytes()[len(good):]
    for cut in range(1, len(last) - 1):  # (len - 1: the whole record without its newline, below)
        log.write_bytes(good + last[:cut])
        assert MemoryTree.replay(log).files == {"/memories/f.md": "one\n"}, cut
        _tool(memory_dir, "t", command="insert", path="/memories/f.md", insert_line=0, insert_text="x")
        assert MemoryTree.replay(log).files == {"/memories/f.md": "x\none\n"}, cut
        assert log.read_bytes().startswith(good) and log.read_bytes().count(b"\n") == 2
    # the whole line without its newline is a complete record: it gets its newline back
    log.write_bytes(good + last[:-1])
    _tool(memory_dir, "t", command="view", path="/memories")  # a read repairs nothing
    assert log.read_bytes() == good + last[:-1]
    _tool(memory_dir, "t", command="insert", path="/memories/f.md", insert_line=0, insert_text="y")
    assert MemoryTree.replay(log).files == {"/memories/f.md": "y\ntwo ünïcode\n"}


def test_a_rejected_command_leaves_every_file_byte_identical(memory_dir, agent_with_files):
    before = tree_digest(memory_dir)
    for command in ({"command": "str_replace", "path": "/memories/plan.md", "old_str": "\n", "new_str": ""},
                    {"command": "insert", "path": "/memories/plan.md", "insert_line": 9, "insert_text": ""},
                    {"command": "delete", "path": "/memories"}):
        result = run_memcli("memory-tool", "a", input=orjson.dumps(command))
        assert result.returncode == 1 and result.stdout
    assert tree_digest(memory_dir) == before


def test_autobyteus_layout_files_are_untouched_by_working_memory(memory_dir, agent_with_files):
    names = sorted(os.listdir(agent_dir(memory_dir, "a")))
    assert "memory_files.jsonl" in names
    assert all(record["op"] in ("create",) for record in read_jsonl(_log(memory_dir, "a")))


# --------------------------------------------------------------------------- the documented agent loops

def _fake_messages_api(replies: list[dict]):
    """A local stand-in for POST /v1/messages: answers ``replies`` in order, records the requests."""
    import http.server
    import threading

    requests = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = orjson.loads(self.rfile.read(int(self.headers["Content-Length"])))
            requests.append(body)
            content = replies[min(len(requests), len(replies)) - 1]
            data = orjson.dumps({"id": f"msg_{len(requests)}", "type": "message", "role": "assistant",
                                 "model": body["model"], "content": content,
                                 "stop_reason": "tool_use" if content[-1]["type"] == "tool_use" else "end_turn",
                                 "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}})
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, requests


REPLIES = [
    [{"type": "tool_use", "id": "toolu_1", "name": "memory",
      "input": {"command": "create", "path": "/memories/prefs.md", "file_text": "short answers\n"}}],
    [{"type": "tool_use", "id": "toolu_2", "name": "memory",
      "input": {"command": "create", "path": "/memories/prefs.md", "file_text": "again"}}],
    [{"type": "text", "text": "Noted."}],
]


def _readme_block(after: str, path=REPO / "README.md") -> str:
    text = path.read_text()
    start = text.index("```python\n", text.index(after)) + len("```python\n")
    return text[start:text.index("```", start)]


@pytest.mark.parametrize("doc,marker", [("README.md", "An agent loop that lets memcli answer the tool"),
                                        ("docs/working-memory.md", "A plain Messages API loop")])
def test_the_documented_subprocess_loop_works(memory_dir, monkeypatch, doc, marker):
    pytest.importorskip("anthropic")
    server, requests = _fake_messages_api(REPLIES)
    try:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{server.server_port}")
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        monkeypatch.setenv("PATH", f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}")
        monkeypatch.setenv("PYTHONPATH", str(REPO))
        namespace: dict = {}
        exec(compile(_readme_block(marker, REPO / doc), doc, "exec"), namespace)
    finally:
        server.shutdown()
    assert AgentStore(memory_dir, "my-agent").memory_tree().files == {"/memories/prefs.md": "short answers\n"}
    first, second = requests[1]["messages"][-1]["content"], requests[2]["messages"][-1]["content"]
    assert first == [{"type": "tool_result", "tool_use_id": "toolu_1", "is_error": False,
                      "content": "File created successfully at: /memories/prefs.md"}]
    assert second == [{"type": "tool_result", "tool_use_id": "toolu_2", "is_error": True,
                       "content": "File /memories/prefs.md already exists"}]
    assert requests[0]["tools"] == [{"type": "memory_20250818", "name": "memory"}]


def test_the_documented_tool_runner_adapter_works(memory_dir, monkeypatch):
    pytest.importorskip("anthropic")
    import anthropic

    server, requests = _fake_messages_api(REPLIES)
    try:
        code = _readme_block("In Python the library does the same", REPO / "docs" / "working-memory.md")
        client = anthropic.Anthropic(base_url=f"http://127.0.0.1:{server.server_port}", api_key="test-key")
        namespace = {"client": client, "messages": [{"role": "user", "content": "Remember: short answers."}]}
        exec(compile(code.replace('MemcliMemory("memory", "my-agent")', f'MemcliMemory({str(memory_dir)!r}, "my-agent")'),
                     "docs/working-memory.md", "exec"), namespace)
    finally:
        server.shutdown()
    assert namespace["final"].content[0].text == "Noted."
    assert AgentStore(memory_dir, "my-agent").memory_tree().files == {"/memories/prefs.md": "short answers\n"}
    results = [m["content"] for m in requests[2]["messages"] if m["role"] == "user"][-1]
    assert results[0]["tool_use_id"] == "toolu_2" and results[0]["is_error"] is True
    assert "File /memories/prefs.md already exists" in str(results[0]["content"])


def test_the_python_api(memory_dir):
    import memcli
    from memcli.memory_tool import MemoryToolRefused

    agent = memcli.Memory(memory_dir).agent("py")
    assert agent.memory_tool({"command": "create", "path": "/memories/a.md", "file_text": "hi\n"}) == \
        "File created successfully at: /memories/a.md"
    with pytest.raises(MemoryToolRefused) as refused:
        agent.memory_tool({"command": "create", "path": "/memories/a.md", "file_text": "again"})
    assert refused.value.message == "File /memories/a.md already exists" and refused.value.exit_code == 1
    assert agent.memory_files() == {"/memories/a.md": "hi\n"}
    assert memory_tool(agent, {"command": "view", "path": "/memories/a.md"}) == \
        "Here's the content of /memories/a.md with line numbers:\n     1\thi\n     2\t"
    change = read_jsonl(_log(memory_dir, "py"))[0]["id"]
    assert agent.get(change)["content"] == "hi\n"
    assert agent.snapshot("anthropic", memory_tool=True)["tools"] == [{"type": "memory_20250818", "name": "memory"}]
