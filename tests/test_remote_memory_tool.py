"""``mcp --remote`` serves the working-memory tool (``memory``, Anthropic's memory tool protocol)
on the shared store: every command answered exactly as the local server answers it (both driven
through the official MCP SDK client), changes kept as rows of the agent's memory_files.jsonl, and
``pull`` restoring them byte for byte. Against a real PostgreSQL (tests/pg_server.py)."""

from __future__ import annotations

import shutil

import anyio
import orjson
import psycopg

import memcli
from tests.helpers import read_jsonl
from tests.test_remote import sample

# every command, refusals included: view of the pushed tree, the edits, a file moved into a new
# directory, a delete, and what the reference implementation refuses
COMMANDS = [
    {"command": "view", "path": "/memories"},
    {"command": "view", "path": "/memories/notes.md"},
    {"command": "create", "path": "/memories/plan.md", "file_text": "step 1\nstep 2\n"},
    {"command": "create", "path": "/memories/plan.md", "file_text": "again"},
    {"command": "str_replace", "path": "/memories/plan.md", "old_str": "step 2", "new_str": "step two"},
    {"command": "str_replace", "path": "/memories/plan.md", "old_str": "step 9", "new_str": "x"},
    {"command": "insert", "path": "/memories/plan.md", "insert_line": 1, "insert_text": "step 1.5"},
    {"command": "view", "path": "/memories/plan.md", "view_range": [2, -1]},
    {"command": "rename", "old_path": "/memories/plan.md", "new_path": "/memories/done/plan.md"},
    {"command": "create", "path": "/memories/key.md", "file_text": "token sk-ant-api03-" + "a" * 93 + "AA\n"},
    {"command": "view", "path": "/memories"},
    {"command": "delete", "path": "/memories/notes.md"},
    {"command": "view", "path": "/memories/notes.md"},
    {"command": "view", "path": "/etc/passwd"},
    {"command": "undo", "path": "/memories"},
]


async def _answers(server, commands):
    from mcp.shared.memory import create_connected_server_and_client_session

    out = []
    async with create_connected_server_and_client_session(server._mcp_server) as session:
        names = {t.name for t in (await session.list_tools()).tools}
        for command in commands:
            result = await session.call_tool("memory", command)
            out.append((result.isError, [c.text for c in result.content]))
    return names, out


def answers(server, commands=COMMANDS):
    box = {}

    async def main():
        box["v"] = await _answers(server, commands)

    anyio.run(main)
    return box["v"]


def test_the_memory_tool_answers_remotely_as_locally_and_pull_restores_its_records(memory_dir, tmp_path, pg_url):
    from memcli.mcp.server import build_server

    sample(memory_dir, "coder")
    memcli.Memory(memory_dir).push(["coder"], to=pg_url)
    twin = tmp_path / "twin"
    shutil.copytree(memory_dir / "agents/coder", twin / "agents/coder")     # the same agent, served locally
    local_names, local = answers(build_server(twin, "coder"))
    names, remote = answers(build_server(tmp_path / "unused", "coder", remote=pg_url))
    assert names == local_names and "memory" in names
    assert remote == local
    assert [err for err, _ in remote] == [False, False, False, True, False, True, False, False, False, False, False,
                                          False, True, True, True]
    assert "sk-ant-api03" not in str(remote)                               # redacted before it is stored
    # the changes are rows after every pushed one; a pull restores them, byte for byte
    with psycopg.connect(pg_url) as conn:
        lines = [line for (line,) in conn.execute(
            "SELECT line FROM memcli_records WHERE file = 'memory_files.jsonl' ORDER BY pos")]
    pushed = (memory_dir / "agents/coder/memory_files.jsonl").read_bytes()
    assert pushed.decode().splitlines() == lines[:1] and len(lines) == 1 + 6
    other = tmp_path / "other"
    memcli.Memory(other).pull("coder", from_=pg_url)
    assert (other / "agents/coder/memory_files.jsonl").read_bytes() == ("\n".join(lines) + "\n").encode()
    pulled = memcli.Memory(other).agent("coder")
    assert pulled.memory_files() == memcli.Memory(twin).agent("coder").memory_files()
    assert set(pulled.memory_files()) == {"/memories/done/plan.md", "/memories/key.md"}
    # the same records as the twin wrote, but for their new ids and times
    strip = lambda records: [{k: v for k, v in r.items() if k not in ("id", "ts")} for r in records]
    assert strip(read_jsonl(other / "agents/coder/memory_files.jsonl")) == strip(
        read_jsonl(twin / "agents/coder/memory_files.jsonl"))
    # and a later push from the agent's machine keeps them
    memcli.Memory(memory_dir).push(["coder"], to=pg_url)
    _, again = answers(build_server(tmp_path / "unused", "coder", remote=pg_url), [COMMANDS[0]])
    _, there = answers(build_server(twin, "coder"), [COMMANDS[0]])
    assert again == there


def test_an_agent_the_store_lacks_is_created_by_its_first_change_and_not_by_a_refusal(memory_dir, tmp_path, pg_url):
    from memcli.mcp.server import build_server

    sample(memory_dir, "coder")
    memcli.Memory(memory_dir).push(["coder"], to=pg_url)
    server = build_server(tmp_path / "unused", None, remote=pg_url)
    local = build_server(tmp_path / "empty", None)                         # no agent there either
    first = [{"agent": "newbie", "command": "view", "path": "/memories"},
             {"agent": "newbie", "command": "str_replace", "path": "/memories/a.md", "old_str": "x", "new_str": "y"}]
    _, out = answers(server, first)
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT count(*) FROM memcli_agents WHERE name = 'newbie'").fetchone() == (0,)
    assert out == answers(local, first)[1] and [err for err, _ in out] == [False, True]
    assert not (tmp_path / "empty/agents/newbie").exists()
    then = [{"agent": "newbie", "command": "create", "path": "/memories/a.md", "file_text": "hi\n"},
            {"agent": "newbie", "command": "view", "path": "/memories/a.md"}]
    _, out = answers(server, then)
    assert out == answers(local, then)[1]
    assert out[0] == (False, ["File created successfully at: /memories/a.md"])
    with psycopg.connect(pg_url) as conn:
        (line,), = conn.execute("""SELECT r.line FROM memcli_records r JOIN memcli_agents a USING (agent_key)
                                   WHERE a.store_id = 'shared' AND a.name = 'newbie'""").fetchall()
    assert orjson.loads(line)["op"] == "create"
