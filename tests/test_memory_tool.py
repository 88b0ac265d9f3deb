"""The memory tool (``memcli memory-tool``, ``memcli.memory_tool``) against the official SDK.

The side-by-side test runs one long scripted sequence of commands — every command kind, the
refusals included — through the SDK's reference implementation
(``BetaLocalFilesystemMemoryTool`` on a temp dir) and through ``memcli memory-tool`` on the
store, and requires the same text and the same success/refusal for every step. Directory sizes
are the only thing allowed to differ (the SDK prints what the file system reports).
"""

from __future__ import annotations

import re

import orjson
import pytest

from memcli.memory_tool import MemoryToolRefused, format_file_size, memory_tool, resolve_path
from memcli.store.agent import AgentStore
from memcli.store.memory_files import MemoryTree, splice
from tests.helpers import agent_dir, read_jsonl, tree_digest

sdk = pytest.importorskip("anthropic.lib.tools._beta_builtin_memory_tool")
ToolError = pytest.importorskip("anthropic.lib.tools._beta_functions").ToolError

M = "/memories"

SCRIPT = [
    {"command": "view", "path": M},
    {"command": "create", "path": f"{M}/notes.md", "file_text": "# Notes\n- likes coffee\n- works on memcli\n"},
    {"command": "create", "path": f"{M}/notes.md", "file_text": "again"},
    {"command": "view", "path": f"{M}/notes.md"},
    {"command": "view", "path": f"{M}/notes.md", "view_range": [2, -1]},
    {"command": "view", "path": f"{M}/notes.md", "view_range": [2, 2]},
    {"command": "view", "path": f"{M}/notes.md", "view_range": [0, 100]},
    {"command": "view", "path": f"{M}/notes.md", "view_range": [3, 1]},
    {"command": "str_replace", "path": f"{M}/notes.md", "old_str": "likes coffee", "new_str": "likes tea"},
    {"command": "str_replace", "path": f"{M}/notes.md", "old_str": "likes juice", "new_str": "x"},
    {"command": "create", "path": f"{M}/project/plan.md", "file_text": "step 1\nstep 2\nstep 1\n"},
    {"command": "str_replace", "path": f"{M}/project/plan.md", "old_str": "step 1", "new_str": "step one"},
    {"command": "insert", "path": f"{M}/project/plan.md", "insert_line": 0, "insert_text": "# Plan"},
    {"command": "insert", "path": f"{M}/project/plan.md", "insert_line": 99, "insert_text": "nope"},
    {"command": "insert", "path": f"{M}/project/plan.md", "insert_line": -1, "insert_text": "nope"},
    {"command": "insert", "path": f"{M}/project/plan.md", "insert_line": 4, "insert_text": "done\n\n"},
    {"command": "insert", "path": f"{M}/project/plan.md", "insert_line": "2", "insert_text": "step 1.5"},
    {"command": "view", "path": f"{M}/project/plan.md"},
    {"command": "str_replace", "path": f"{M}/project/plan.md", "old_str": "step 2\nstep 1\n", "new_str": "step 2\n"},
    {"command": "create", "path": f"{M}/project/deep/er/file.txt", "file_text": "x"},
    {"command": "create", "path": f"{M}/.hidden", "file_text": "not listed"},
    {"command": "view", "path": M},
    {"command": "view", "path": f"{M}/.hidden"},
    {"command": "view", "path": f"{M}/project/"},
    {"command": "view", "path": f"{M}/../../etc/passwd"},
    {"command": "view", "path": "/etc/passwd"},
    {"command": "create", "path": "memories/x.md", "file_text": "relative"},
    {"command": "view", "path": f"{M}/nope.md"},
    {"command": "str_replace", "path": f"{M}/project", "old_str": "a", "new_str": "b"},
    {"command": "insert", "path": f"{M}/ghost.md", "insert_line": 0, "insert_text": "x"},
    {"command": "rename", "old_path": f"{M}/notes.md", "new_path": f"{M}/archive/notes-2025.md"},
    {"command": "rename", "old_path": f"{M}/project/plan.md", "new_path": f"{M}/archive/notes-2025.md"},
    {"command": "rename", "old_path": f"{M}/ghost.md", "new_path": f"{M}/archive/ghost.md"},
    {"command": "rename", "old_path": M, "new_path": f"{M}/elsewhere"},
    {"command": "delete", "path": M},
    {"command": "delete", "path": f"{M}/"},
    {"command": "delete", "path": f"{M}/nope"},
    {"command": "delete", "path": f"{M}/project/deep"},
    {"command": "view", "path": M},
    {"command": "create", "path": f"{M}/unicode.md", "file_text": "héllo — 世界\r\nline2"},
    {"command": "insert", "path": f"{M}/unicode.md", "insert_line": 1, "insert_text": "middle"},
    {"command": "view", "path": f"{M}/unicode.md"},
    {"command": "str_replace", "path": f"{M}/unicode.md", "old_str": "middle\n", "new_str": ""},
    {"command": "view", "path": f"{M}/unicode.md"},
    {"command": "create", "path": f"{M}/x/../y.md", "file_text": "via dot-dot"},
    {"command": "view", "path": f"{M}/y.md"},
    {"command": "create", "path": f"{M}foo.md", "file_text": "no slash after /memories"},
    {"command": "view", "path": f"{M}/foo.md"},
    {"command": "rename", "old_path": f"{M}/project", "new_path": f"{M}/done/project"},
    {"command": "view", "path": M},
    {"command": "view", "path": f"{M}/done/project/plan.md", "view_range": [2, 3]},
    {"command": "delete", "path": f"{M}/archive/notes-2025.md"},
    {"command": "view", "path": f"{M}/archive"},
    {"command": "create", "path": f"{M}/empty.txt", "file_text": ""},
    {"command": "view", "path": f"{M}/empty.txt"},
    {"command": "insert", "path": f"{M}/empty.txt", "insert_line": 1, "insert_text": "x"},
    {"command": "insert", "path": f"{M}/empty.txt", "insert_line": 0, "insert_text": "first"},
    {"command": "str_replace", "path": f"{M}/empty.txt", "old_str": "first", "new_str": "1\n2\n3\n4\n5\n6\n7"},
    {"command": "str_replace", "path": f"{M}/empty.txt", "old_str": "5", "new_str": "five"},
    {"command": "view", "path": f"{M}/empty.txt", "view_range": [4, -1]},
    {"command": "create", "path": f"{M}/big.md", "file_text": "0123456789" * 500},
    {"command": "view", "path": M},
    {"command": "rename", "old_path": f"{M}/big.md", "new_path": f"{M}/done/big.md"},
    {"command": "delete", "path": f"{M}/done"},
    {"command": "view", "path": M},
]

DIR_LINE = re.compile(r"^\S+\t(.*)$")


def _sdk_answer(tool, command) -> tuple[bool, str]:
    try:
        return True, tool.call(command)
    except ToolError as exc:
        return False, str(exc)


def _mask_directory_sizes(text: str, command: dict) -> str:
    """Directory lines (``…/`` and the listed directory itself) get a placeholder size."""
    if not text.startswith("Here're the files and directories"):
        return text
    lines = text.split("\n")
    out = lines[:1]
    for line in lines[1:]:
        match = DIR_LINE.match(line)
        assert match, line
        path = match.group(1)
        out.append(f"<dir>\t{path}" if path.endswith("/") or path == command["path"] else line)
    return "\n".join(out)


def test_side_by_side_with_the_sdk_on_a_long_scripted_sequence(tmp_path, cli, memory_dir):
    tool = sdk.BetaLocalFilesystemMemoryTool(str(tmp_path / "sdk"))
    refusals = successes = 0
    for step, command in enumerate(SCRIPT, 1):
        ok, expected = _sdk_answer(tool, command)
        result = cli("memory-tool", "agent", input=orjson.dumps(command))
        where = f"step {step}: {command}"
        assert result.exit_code == (0 if ok else 1), f"{where}\n{result.stdout}{result.stderr}"
        out = result.stdout_bytes.decode()  # (.stdout turns \r\n into \n)
        assert _mask_directory_sizes(out, command) == _mask_directory_sizes(expected, command), where
        refusals += not ok
        successes += ok
    assert len(SCRIPT) >= 30 and refusals >= 15 and successes >= 30
    # the trees agree file by file
    tree = AgentStore(memory_dir, "agent").memory_tree()
    on_disk = {}
    for path in sorted((tmp_path / "sdk" / "memories").rglob("*")):
        if path.is_file():
            on_disk[M + "/" + str(path.relative_to(tmp_path / "sdk" / "memories"))] = path.read_bytes().decode()
    assert tree.files == on_disk


def test_a_refused_command_writes_nothing(cli, memory_dir):
    assert cli("memory-tool", "a", input=b'{"command":"create","path":"/memories/a.md","file_text":"x"}').exit_code == 0
    before = tree_digest(memory_dir)
    for command in ({"command": "create", "path": "/memories/a.md", "file_text": "y"},
                    {"command": "str_replace", "path": "/memories/a.md", "old_str": "zz", "new_str": ""},
                    {"command": "rename", "old_path": "/memories/none", "new_path": "/memories/new/dir/x"},
                    {"command": "create", "path": "/memories/b.md"},
                    {"command": "create", "path": "/memories/a.md/inside", "file_text": ""},
                    {"command": "frobnicate", "path": "/memories/a.md"}):
        result = cli("memory-tool", "a", input=orjson.dumps(command))
        assert result.exit_code == 1, command
        assert result.stdout and not result.stdout.startswith("memcli:"), result.stdout
    assert tree_digest(memory_dir) == before
    # on a new agent a refusal does not create the agent
    assert cli("memory-tool", "fresh", input=b'{"command":"delete","path":"/memories/x"}').exit_code == 1
    assert not agent_dir(memory_dir, "fresh").exists()


def test_memcli_own_refusals_where_the_sdk_raises_python_errors(cli, memory_dir):
    def answer(command):
        result = cli("memory-tool", "a", input=orjson.dumps(command) if isinstance(command, dict) else command)
        return result.exit_code, result.stdout

    assert answer(b"not json")[0] == 1 and "not valid JSON" in answer(b"not json")[1]
    assert answer(b"[1]") == (1, "The memory tool input must be a JSON object (the tool_use input), got list.")
    assert answer({"command": "nope"}) == (1, "Unknown command: nope")
    assert answer({"command": "view"}) == (1, "Missing or invalid `path` parameter: expected a string, got None.")
    assert answer({"command": "create", "path": "/memories/a"}) == (
        1, "Missing or invalid `file_text` parameter: expected a string, got nothing.")
    cli("memory-tool", "a", input=b'{"command":"create","path":"/memories/d/f","file_text":"1\\n"}')
    assert answer({"command": "create", "path": "/memories/d/f/g", "file_text": ""}) == (
        1, "Cannot create /memories/d/f/g: /memories/d/f is a file, not a directory")
    assert answer({"command": "rename", "old_path": "/memories/d", "new_path": "/memories/d/sub"}) == (
        1, "Cannot move /memories/d into itself (/memories/d/sub)")
    assert answer({"command": "insert", "path": "/memories/d/f", "insert_line": 1.5, "insert_text": "x"}) == (
        1, "Invalid `insert_line` parameter: expected an integer, got 1.5.")
    assert answer(b'{"command":"create","path":"/memories/s","file_text":"\\ud800"}')[0] == 1
    with pytest.raises(MemoryToolRefused, match="not valid UTF-8"):
        memory_tool(AgentStore(memory_dir, "a"), {"command": "create", "path": "/memories/s", "file_text": "\ud800"})


def test_limits_file_size_and_file_count(memory_dir, monkeypatch):
    import memcli.memory_tool as mt

    store = AgentStore(memory_dir, "lim")
    limit = mt.MAX_FILE_BYTES
    assert memory_tool(store, {"command": "create", "path": "/memories/full.md",
                               "file_text": "x" * (limit - 10) + "0123456789"})
    with pytest.raises(MemoryToolRefused, match=r"would be 102,401 bytes; a memory file holds at most 102,400"):
        memory_tool(store, {"command": "str_replace", "path": "/memories/full.md", "old_str": "0123456789", "new_str": "y" * 11})
    with pytest.raises(MemoryToolRefused, match="at most 102,400 bytes"):
        memory_tool(store, {"command": "create", "path": "/memories/big.md", "file_text": "é" * (limit // 2 + 1)})
    monkeypatch.setattr(mt, "MAX_FILES", 3)
    memory_tool(store, {"command": "create", "path": "/memories/a", "file_text": ""})
    memory_tool(store, {"command": "create", "path": "/memories/b", "file_text": ""})
    with pytest.raises(MemoryToolRefused, match=r"already holds 3 files, the most it can hold \(3\)"):
        memory_tool(store, {"command": "create", "path": "/memories/c", "file_text": ""})
    memory_tool(store, {"command": "delete", "path": "/memories/a"})
    memory_tool(store, {"command": "create", "path": "/memories/c", "file_text": ""})


def test_secrets_are_redacted_before_they_are_stored(cli, memory_dir):
    key = "sk-ant-" + "A1b2C3d4" * 5
    command = {"command": "create", "path": "/memories/creds.md", "file_text": f"key: {key}\n"}
    result = cli("memory-tool", "a", input=orjson.dumps(command))
    assert result.exit_code == 0 and "redacted 1 secret in /memories/creds.md" in result.stderr
    edit = {"command": "str_replace", "path": "/memories/creds.md", "old_str": "key:", "new_str": f"old {key} key:"}
    assert cli("memory-tool", "a", input=orjson.dumps(edit)).exit_code == 0
    raw = (agent_dir(memory_dir, "a") / "memory_files.jsonl").read_bytes()
    assert key.encode() not in raw and b"[REDACTED:anthropic_key]" in raw
    view = cli("memory-tool", "a", input=b'{"command":"view","path":"/memories/creds.md"}').stdout
    assert view == ("Here's the content of /memories/creds.md with line numbers:\n"
                    "     1\told [REDACTED:anthropic_key] key: [REDACTED:anthropic_key]\n     2\t")


def test_log_records_are_small_splices_and_get_shows_old_versions(cli, memory_dir):
    store = AgentStore(memory_dir, "h")
    memory_tool(store, {"command": "create", "path": "/memories/p.md", "file_text": "a\n" * 1000})
    memory_tool(store, {"command": "str_replace", "path": "/memories/p.md", "old_str": "a\na\na\n" + "a\n" * 996 + "a\n",
                        "new_str": "b\n" * 1000})
    records = read_jsonl(agent_dir(memory_dir, "h") / "memory_files.jsonl")
    first, second = records
    assert (first["op"], first["path"], first["content"]) == ("create", "/memories/p.md", "a\n" * 1000)
    assert second["op"] == "str_replace" and second["id"].startswith("wm_") and second["id"] > first["id"]
    memory_tool(store, {"command": "insert", "path": "/memories/p.md", "insert_line": 1, "insert_text": "new"})
    third = read_jsonl(agent_dir(memory_dir, "h") / "memory_files.jsonl")[2]
    assert (third["op"], third["at"], third["cut"], third["text"]) == ("insert", 2, 0, "new\n")
    old = cli("get", "h", first["id"], "--json")
    assert old.exit_code == 0, old.stderr
    shown = orjson.loads(old.stdout)
    assert shown["content"] == "a\n" * 1000 and shown["id"] == first["id"]
    assert "memory_files" in old.stderr
    assert orjson.loads(cli("get", "h", second["id"], "--json").stdout)["content"] == "b\n" * 1000


@pytest.mark.parametrize("path,canonical", [
    ("/memories", "/memories"), ("/memories/", "/memories"), ("/memories//a//b/", "/memories/a/b"),
    ("/memories/a/./b/..", "/memories/a"), ("/memories/../memories/x", "/memories/x"), ("/memoriesx", "/memories/x"),
])
def test_paths_resolve_like_the_sdk(path, canonical):
    assert resolve_path(path) == canonical


@pytest.mark.parametrize("path", ["/memories/..", "/memories/a/../../..", "/memories/../other/x"])
def test_paths_that_leave_the_tree_are_refused(path):
    with pytest.raises(MemoryToolRefused, match="would escape /memories directory"):
        resolve_path(path)


def test_format_file_size_matches_the_sdk():
    from anthropic.lib.tools._beta_builtin_memory_tool import _format_file_size

    for size in (0, 1, 512, 1023, 1024, 1536, 4096, 10_000, 102_400, 1 << 20, 3 << 29, 5 << 40):
        assert format_file_size(size) == _format_file_size(size)


@pytest.mark.parametrize("old,new", [("", ""), ("abc", "abc"), ("abc", "abXc"), ("abc", ""), ("", "xyz"),
                                     ("aaaa", "aa"), ("x" * 9000 + "y", "x" * 9000 + "zz"), ("ab" * 5000, "b" + "ab" * 5000)])
def test_splice_rebuilds_the_new_text(old, new):
    at, cut, text = splice(old, new)
    assert old[:at] + text + old[at + cut:] == new
    assert len(text) <= max(len(new) - len(old), 0) + (len(new) if old == "" else len(new))


def test_tree_replay_refuses_a_record_that_does_not_apply(memory_dir):
    from memcli.errors import CorruptStoreError

    path = memory_dir / "log.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b'{"id":"wm_1","ts":1,"op":"create","path":"/memories/a","content":"x"}\n'
                     b'{"id":"wm_2","ts":2,"op":"insert","path":"/memories/a","at":5,"cut":0,"text":"y"}\n')
    with pytest.raises(CorruptStoreError, match=r"log.jsonl:2: working-memory record does not apply"):
        MemoryTree.replay(path)
