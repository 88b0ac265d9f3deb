"""For every command, the CLI and the Python API on the same store give the same result: the
command's ``--json`` document (or its stdout) is the API's result as JSON. The API is the seam
(issue 21): a difference here is a command that drifted from its library call."""

from __future__ import annotations

import json
import shutil

import orjson
import pytest

import memcli
from memcli.models import to_record
from tests.events import CALL, RES, A, U, turns

EVENTS = [e for k in range(1, 7) for e in turns(1, start=k) + [A(f"notes {k}: " + "details " * 300)]] + [U("why does the build fail?"), CALL("toolu_01XYZ", "sh", {"cmd": "make"}),
                     RES("toolu_01XYZ", "error: missing header"), A("the header is missing")]
VOLATILE = {"seconds"}   # wall-clock time: differs between two runs


def as_json(value):
    """What the CLI's --json makes of a result (a list: of each item): its ``to_dict()`` (or
    ``to_json()``) when it has one, else its record."""
    if isinstance(value, list):
        return [as_json(v) for v in value]
    for method in ("to_dict", "to_json"):
        if hasattr(value, method):
            value = getattr(value, method)()
            break
    else:
        if not isinstance(value, (dict, str, bytes)) and value is not None:
            value = to_record(value)
    return _drop(json.loads(orjson.dumps(value, default=lambda v: to_record(v) if hasattr(v, "__dataclass_fields__")
                                         else list(v))))


def _drop(value):
    if isinstance(value, dict):
        return {k: _drop(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_drop(v) for v in value]
    return value


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """One agent with traces, a compaction, a fact and a working-memory file; copied per test."""
    root = tmp_path_factory.mktemp("equivalence")
    agent = memcli.Memory(root).agent("a")
    agent.ingest(EVENTS)
    agent.compact(tail_turns=2, keep_steps=0)
    agent.remember("the build uses make", tags=["tool"])
    agent.memory_tool({"command": "create", "path": "/memories/plan.md", "file_text": "fix the header"})
    return root


@pytest.fixture
def mem(store, tmp_path):
    copy = tmp_path / "m"
    shutil.copytree(store, copy)
    return copy


# (name, command line after `memcli`, the API call on the Agent)
READS = [
    ("stats", ["stats", "a"], lambda a: a.stats()),
    ("turns", ["turns", "a"], lambda a: a.turns()),
    ("turns --last", ["turns", "a", "--last", "2", "--archive"], lambda a: a.turns(last=2, archive=True)),
    ("show", ["show", "a", "--archive"], lambda a: list(a.show(archive=True))),
    ("show --type --turn", ["show", "a", "--turn", "7", "--type", "tool_call"],
     lambda a: list(a.show(turn="7", type="tool_call"))),
    ("tools", ["tools", "a", "--archive"], lambda a: a.tools(archive=True)),
    ("tools --status", ["tools", "a", "--status", "success"], lambda a: a.tools(status="success")),
    ("turns --since --until", ["turns", "a", "--since", "2026-01-01", "--until", "2099-12-31", "--archive"],
     lambda a: list(a.turns(since="2026-01-01", until="2099-12-31", archive=True, stream=True))),
    ("tools --name --last", ["tools", "a", "--name", "sh", "--last", "1", "--status", "error,success"],
     lambda a: list(a.tools(name="sh", last=1, status=["error", "success"], stream=True))),
    ("get tool call", ["get", "a", "toolu_01XYZ"], lambda a: a.get("toolu_01XYZ")),
    ("memory", ["memory", "a"], lambda a: a.memory()),
    ("memory --tier --all", ["memory", "a", "--tier", "semantic", "--all"],
     lambda a: a.memory(tier="semantic", include_superseded=True)),
    ("memory --files", ["memory", "a", "--files"], lambda a: a.memory(files=True)),
    ("search", ["search", "a", "header"], lambda a: a.search("header").hits),
    ("compactions", ["compactions", "a"], lambda a: a.compactions()),
    ("doctor", ["doctor", "a"], lambda a: a.doctor().findings),
]


@pytest.mark.parametrize("name, args, call", READS, ids=[r[0] for r in READS])
def test_a_read_command_and_its_api_method_agree(cli, mem, name, args, call):
    r = cli("--dir", str(mem), *args, "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout) and _drop(json.loads(r.stdout)) == as_json(call(memcli.Memory(mem).agent("a")))


def test_agents(cli, mem):
    r = cli("--dir", str(mem), "agents", "--json")
    assert json.loads(r.stdout) == as_json(memcli.Memory(mem).agents())


def test_get_a_record(cli, mem):
    agent = memcli.Memory(mem).agent("a")
    trace_id = next(iter(agent.show(turn="7"))).id
    assert json.loads(cli("--dir", str(mem), "get", "a", trace_id, "--json").stdout) == as_json(agent.get(trace_id))


@pytest.mark.parametrize("provider", ["openai-chat", "anthropic", "gemini", "openai-responses"])
def test_snapshot(cli, mem, provider):
    r = cli("--dir", str(mem), "snapshot", "a", "-p", provider, "--max-tokens", "3000", "--compact")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout) == memcli.Memory(mem).agent("a").snapshot(provider, max_tokens=3000)


@pytest.mark.parametrize("fmt", ["jsonl", "json", "markdown", "openai", "anthropic"])
def test_export(cli, mem, fmt):
    r = cli("--dir", str(mem), "export", "a", "--format", fmt, "--with-memory")
    assert r.exit_code == 0 and r.stdout_bytes == memcli.Memory(mem).agent("a").export(fmt, with_memory=True)


def test_compact_dry_run(cli, mem):
    r = cli("--dir", str(mem), "compact", "a", "--dry-run", "--json", "--tail-turns", "1", "--keep-steps", "0")
    api = memcli.Memory(mem).agent("a").compact(dry_run=True, tail_turns=1, keep_steps=0)
    assert r.exit_code == 0 and _drop(json.loads(r.stdout)) == as_json(api)


def test_compact_and_uncompact_on_two_copies(cli, mem, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(mem, other)
    r = cli("--dir", str(mem), "compact", "a", "--json", "--tail-turns", "1", "--keep-steps", "0")
    api = memcli.Memory(other).agent("a").compact(tail_turns=1, keep_steps=0)
    by_cli, by_api = _drop(json.loads(r.stdout)), as_json(api)
    fresh = {"compaction_id", "episodic_id", "rollup_id", "summary", "notes"}   # new ids in each copy
    assert {k: v for k, v in by_cli.items() if k not in fresh} == {k: v for k, v in by_api.items() if k not in fresh}
    assert by_cli["compacted"] and (mem / "agents/a/raw_traces.jsonl").read_bytes() == \
        (other / "agents/a/raw_traces.jsonl").read_bytes()
    r = cli("--dir", str(mem), "uncompact", "a", "--json")
    undone = memcli.Memory(other).agent("a").uncompact()
    assert r.exit_code == 0 and _drop(json.loads(r.stdout)).keys() == as_json(undone).keys()
    assert (mem / "agents/a/raw_traces.jsonl").read_bytes() == (other / "agents/a/raw_traces.jsonl").read_bytes()


def test_ingest(cli, mem, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(mem, other)
    data = b"".join(orjson.dumps(e) + b"\n" for e in [U("one more", id="u_1"), A("ok", id="a_1")])
    assert cli("--dir", str(mem), "ingest", "a", input=data).exit_code == 0
    assert memcli.Memory(other).agent("a").ingest(data).appended == 2
    assert (mem / "agents/a/raw_traces.jsonl").read_bytes().count(b"\n") == \
        (other / "agents/a/raw_traces.jsonl").read_bytes().count(b"\n")


def test_remember_an_existing_fact_and_forget(cli, mem):
    agent = memcli.Memory(mem).agent("a")
    r = cli("--dir", str(mem), "remember", "a", "the build uses make", "--tag", "tool", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["id"] == agent.remember("the build uses make", tags=["tool"])["id"]
    fact_id = json.loads(r.stdout)["id"]
    r = cli("--dir", str(mem), "forget", "a", fact_id, "--json")
    assert r.exit_code == 0 and agent.forget(fact_id) is None     # already forgotten by the command


def test_clear(cli, mem, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(mem, other)
    plan = memcli.Memory(other).agent("a").clear(keep_memory=True, dry_run=True)
    assert "raw_traces.jsonl" in plan.describe() and (other / "agents/a/raw_traces.jsonl").exists()
    assert cli("--dir", str(mem), "clear", "a", "--keep-memory", "--yes").exit_code == 0
    memcli.Memory(other).agent("a").clear(keep_memory=True)
    assert sorted(p.name for p in (mem / "agents/a").iterdir()) == sorted(p.name for p in (other / "agents/a").iterdir())


def test_turns_and_tools_stream_what_they_list(mem):
    """The commands print as they read: ``stream=True`` is an iterator of the same items."""
    agent = memcli.Memory(mem).agent("a")
    for method in (agent.turns, agent.tools):
        rows = method(archive=True, stream=True)
        assert iter(rows) is rows and as_json(list(rows)) == as_json(method(archive=True))
    first = agent.turns(archive=True)[0].started
    assert as_json(agent.turns(since=first, archive=True)) == as_json(agent.turns(since=str(first), archive=True))


def test_doctor_of_every_agent_and_of_secrets(cli, mem):
    memory = memcli.Memory(mem)
    memory.agent("b").ingest([U("my key is sk-ant-api03-" + "A" * 93)], redact=False)
    r = cli("--dir", str(mem), "doctor", "--json")
    assert r.exit_code == 0, r.stderr
    assert [report.agent for report in memory.doctor()] == ["a", "b"]
    assert json.loads(r.stdout) == [{"agent": report.agent, **f} for report in memory.doctor()
                                    for f in as_json(report.findings)]
    r = cli("--dir", str(mem), "doctor", "b", "--secrets", "--json")
    secrets = memory.doctor("b", secrets=True)[0]
    assert r.exit_code == 1 and json.loads(r.stdout) == as_json(secrets.findings) and secrets.findings
    assert "doctor --secrets: agent 'b': 1 secret on 1 line" in r.stderr
    with pytest.raises(memcli.errors.UsageError, match="give an agent or all, not both"):
        memory.doctor("a", all=True)


def test_memory_tool(cli, mem, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(mem, other)
    create = b'{"command": "create", "path": "/memories/notes.md", "file_text": "key sk-ant-api03-' + b"B" * 93 + b'"}'
    r = cli("--dir", str(mem), "memory-tool", "a", input=create)
    api = memcli.Memory(other).agent("a").memory_tool(create, full=True)
    assert r.exit_code == 0 and r.stdout == api.text and api.redacted == 1
    view = {"command": "view", "path": "/memories/notes.md"}
    r = cli("--dir", str(mem), "memory-tool", "a", input=json.dumps(view))
    assert "[REDACTED" in r.stdout and r.stdout == memcli.Memory(other).agent("a").memory_tool(view)
    refused = cli("--dir", str(mem), "memory-tool", "a", input="[1]")
    with pytest.raises(memcli.errors.MemoryToolRefused) as exc:
        memcli.Memory(other).agent("a").memory_tool("[1]")
    assert refused.exit_code == 1 and refused.stdout == exc.value.message


def test_hooks_install_and_status(cli, mem, tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    r = cli("--dir", str(mem), "hooks", "install", "claude-code", "--agent", "a")
    assert r.exit_code == 0, r.stderr
    memory = memcli.Memory(mem)
    harness = memory.hooks_harness("claude-code")
    assert "memcli: installed " in r.stderr
    for lack in harness.missing:   # what install advises comes from the same description
        assert f"memcli: note: {harness.title}: {lack}" in r.stderr
    r = cli("--dir", str(mem), "hooks", "status", "claude-code", "--json")
    rows = json.loads(r.stdout)
    status = memory.hooks_status("claude-code", home=home)
    assert [(row["scope"], row["path"], row["installed"]) for row in rows] == [
        (s.scope, str(s.path), s.installed) for s in status] and status[0].installed
    assert {row["harness"] for row in rows} == {harness.name} and rows[0]["lacks"] == list(harness.missing)


def test_ingest_stream_and_split(cli, mem, tmp_path):
    """``--stream`` and ``--split`` are ``stream=``/``split=``: the same traces (ids aside) land."""
    other = tmp_path / "other"
    shutil.copytree(mem, other)
    events = tmp_path / "events.jsonl"
    events.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in [U("streamed", id="u_s"), A("yes", id="a_s")]))
    r = cli("--dir", str(mem), "ingest", "a", str(events), "--stream")
    assert r.exit_code == 0 and memcli.Memory(other).agent("a").ingest(events, stream=True).appended == 2
    with pytest.raises(memcli.errors.UsageError, match="stream reads a file"):
        memcli.Memory(other).agent("a").ingest(events.read_bytes(), stream=True)
    many = tmp_path / "many.jsonl"
    many.write_bytes(b"".join(orjson.dumps({"id": f"conv {i}", "messages": [
        {"role": "user", "content": f"hi {i}"}, {"role": "assistant", "content": "done"}]}) + b"\n" for i in (1, 2)))
    r = cli("--dir", str(mem), "ingest", "s", str(many), "--split")
    split = memcli.Memory(other).agent("s").ingest(many, split=True)
    assert r.exit_code == 0 and f"memcli: {split.summary()}" in r.stderr
    for memory in (mem, other):   # the same agents, the same texts
        names = [summary.agent for summary in memcli.Memory(memory).agents()]
        assert [n for n in names if n.startswith("s.")] == ["s.conv-1", "s.conv-2"]
    shown = [[(t.trace_type, t.content) for t in memcli.Memory(m).agent(n).show()] for m in (mem, other)
             for n in ("a", "s.conv-1")]
    assert shown[0] == shown[2] and shown[1] == shown[3] and shown[1] == [("user", "hi 1"), ("assistant", "done")]
