"""The Python API (memcli.api): its public names, what it loads, and that it does what the
commands do."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import memcli
from tests.helpers import proc_env

PUBLIC = ["Agent", "MemcliError", "Memory", "__version__"]
AGENT_METHODS = ["clear", "compact", "compactions", "doctor", "exists", "export", "forget", "get", "ingest", "locate",
                 "memory", "memory_files", "memory_tool", "remember", "search", "show", "snapshot", "stats", "store",
                 "summarize_results", "tools", "turns", "uncompact", "view"]
MEMORY_METHODS = ["agent", "agents", "doctor", "hook", "hooks_harness", "hooks_install", "hooks_status", "hooks_uninstall", "pull", "push",
                  "remote", "search_all", "search_remote", "sync"]

EVENTS = [
    {"trace_type": "user", "content": "list the files"},
    {"trace_type": "tool_call", "tool_call_id": "c1", "tool_name": "ls", "tool_args": {"path": "."}},
    {"trace_type": "tool_result", "tool_call_id": "c1", "tool_result": "a.txt"},
    {"trace_type": "assistant", "content": "one file: a.txt"},
    {"trace_type": "user", "content": "and now?"},
    {"trace_type": "tool_call", "tool_call_id": "c2", "tool_name": "ls", "tool_args": {"path": "."}},
]


def _public(cls) -> list[str]:
    return sorted(name for name in vars(cls) if not name.startswith("_"))


def test_the_public_names_are_pinned():
    assert sorted(memcli.__all__) == PUBLIC
    assert _public(memcli.Agent) == AGENT_METHODS
    assert _public(memcli.Memory) == MEMORY_METHODS
    assert memcli.Memory is memcli.api.Memory and issubclass(memcli.MemcliError, Exception)
    with pytest.raises(AttributeError):
        memcli.NoSuchThing  # noqa: B018


def test_importing_memcli_loads_neither_the_api_nor_typer_nor_rich(memory_dir):
    code = ("import sys, memcli; loaded = set(sys.modules); "
            "import json; print(json.dumps(sorted(m for m in loaded if m.split('.')[0] in "
            "('typer', 'rich', 'click', 'litellm', 'tiktoken') or m == 'memcli.api')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, env=proc_env(), check=True).stdout
    assert json.loads(out) == []


def test_the_api_works_without_typer_or_rich_being_imported(memory_dir):
    code = f"""
import json, sys
import memcli
agent = memcli.Memory({str(memory_dir)!r}).agent("a")
agent.ingest({EVENTS!r})
payload = agent.snapshot(provider="anthropic")
out = dict(roles=[m["role"] for m in payload["messages"]],
           pending=[t.tool_name for t in agent.tools(status="pending")],
           turns=[t.turn_id for t in agent.turns()],
           agents=[a.agent for a in memcli.Memory({str(memory_dir)!r}).agents()],
           exported=len(agent.export().splitlines()),
           doctor=len(agent.doctor().findings),
           loaded=sorted(m for m in sys.modules if m.split(".")[0] in ("typer", "rich", "click")))
print(json.dumps(out))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, env=proc_env())
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads(done.stdout) == {
        "roles": ["user", "assistant", "user", "assistant", "user", "assistant", "user"],
        "pending": ["ls"], "turns": ["turn_0001", "turn_0002"], "agents": ["a"], "exported": 6,
        "doctor": 0, "loaded": []}


def test_the_api_and_the_cli_write_and_read_the_same_memory(cli, memory_dir):
    agent = memcli.Memory(memory_dir).agent("a")
    result = agent.ingest(EVENTS)
    assert (result.appended, len(result.turns)) == (6, 2)
    assert agent.export() == cli("export", "a").stdout_bytes
    assert agent.ingest(agent.export()).appended == 0          # bytes: the same events, already there
    assert agent.snapshot(provider="openai-chat") == json.loads(cli("snapshot", "a", "--provider", "openai-chat").stdout)
    first = agent.get(agent.tools()[0].call_trace_id)
    assert (first.trace_type, first.tool_name) == ("tool_call", "ls")
    assert agent.compact(dry_run=True).dry_run is True
    assert agent.memory() == []


def test_library_errors_name_the_parameter_not_the_flag(memory_dir):
    agent = memcli.Memory(memory_dir).agent("a")
    agent.ingest(EVENTS[:1])
    with pytest.raises(memcli.MemcliError, match=r"^since 'soon': "):
        agent.tools(since="soon")
    with pytest.raises(memcli.MemcliError, match=r"^status: unknown status 'done'"):
        agent.tools(status="done")
    with pytest.raises(memcli.MemcliError, match=r"^events: expected an iterable of events"):
        agent.ingest({"trace_type": "user"})
    with pytest.raises(memcli.MemcliError, match="invalid agent id"):
        memcli.Memory(memory_dir).agent("../etc")
    with pytest.raises(memcli.MemcliError, match=r"unknown option\(s\) max_token "):
        agent.snapshot(max_token=5)
