"""``memcli hooks install|uninstall|status`` and ``memcli hook`` (memcli/hooks/, docs/hooks.md).

The installed entries are run exactly as the harness runs them: the command string from the
settings file through ``sh -c``, in the project directory, the payload on stdin, against a copy
of a real transcript (../shared/corpora) that grows between calls.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import orjson
import pytest

import memcli
from memcli.sync.naming import session_agent_id
from tests.helpers import CORPORA, agent_dir, needs_corpora, proc_env, read_jsonl, run_memcli, tree_digest

SPOTTER = CORPORA / "claude-code" / "spotter_258c7280_compacted_by_claude-code.jsonl"
CODEX = CORPORA / "codex" / "codex_rollout_localpush_019c8a59_2722ev_sanitized.jsonl"

USER_CLAUDE = {
    "model": "opus",
    "permissions": {"allow": ["Bash(git status)"]},
    "hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send 'done'"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./check.sh", "timeout": 5}]}],
        "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "cat NOTES.md"}]}],
    },
    "env": {"FOO": "bär"},
}


@pytest.fixture
def home(tmp_path):
    (tmp_path / "home").mkdir()
    (tmp_path / "project").mkdir()
    return tmp_path


def _env(root: Path, **extra) -> dict:
    env = {"HOME": str(root / "home"), "CODEX_HOME": "", "CLAUDE_CONFIG_DIR": ""}
    env.update(extra)
    return env


def _cli(root: Path, *args, **kw):
    """memcli run from the project directory with HOME in the temp dir."""
    return subprocess.run([*_python_memcli(), "--dir", str(root / "memory"), *args], cwd=root / "project",
                          capture_output=True, env=proc_env(_env(root)), timeout=120, **kw)


def _python_memcli():
    import sys

    return [sys.executable, "-m", "memcli"]


def _write(path: Path, data) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = (json.dumps(data, indent=4, ensure_ascii=False) + "\n").encode()
    path.write_bytes(raw)
    return raw


def _commands(settings: dict) -> dict[str, str]:
    """event -> memcli's command in a settings object."""
    out = {}
    for event, groups in settings.get("hooks", {}).items():
        for group in groups if isinstance(groups, list) else ():
            for handler in group["hooks"] if isinstance(group, dict) else ():
                if " hook " in handler["command"]:
                    out[event] = handler["command"]
    return out


def _run_entry(command: str, payload: dict | bytes, cwd: Path, env_home: Path) -> subprocess.CompletedProcess:
    """As a harness does: the command string through a shell, in the working directory, the
    payload on stdin (the harness's environment: no MEMCLI_DIR, no PYTHONPATH)."""
    data = payload if isinstance(payload, bytes) else orjson.dumps(payload)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(env_home)}
    return subprocess.run(["sh", "-c", command], input=data, cwd=cwd, capture_output=True, env=env, timeout=120)


# ---------------------------------------------------------------------------------------- install
@pytest.mark.parametrize("scope, rel", [("user", "home/.claude/settings.json"),
                                        ("project", "project/.claude/settings.json"),
                                        ("local", "project/.claude/settings.local.json")])
def test_claude_code_install_merges_and_uninstall_restores(home, scope, rel):
    path = home / rel
    original = _write(path, USER_CLAUDE)
    result = _cli(home, "hooks", "install", "claude-code", "--scope", scope)
    assert result.returncode == 0, result.stderr
    settings = json.loads(path.read_text())
    # the user's keys, events and handlers are all still there, unchanged and in order
    assert settings["model"] == "opus" and settings["env"] == {"FOO": "bär"}
    assert settings["permissions"] == USER_CLAUDE["permissions"]
    assert settings["hooks"]["Stop"][0] == USER_CLAUDE["hooks"]["Stop"][0]
    assert settings["hooks"]["PreToolUse"] == USER_CLAUDE["hooks"]["PreToolUse"]
    assert settings["hooks"]["SessionStart"][0] == USER_CLAUDE["hooks"]["SessionStart"][0]
    # memcli's own groups: absolute memcli, the store's absolute --dir, a timeout
    memory = str((home / "memory").absolute())
    groups = {e: [g for g in settings["hooks"][e] if " hook claude-code " in g["hooks"][0]["command"]]
              for e in ("Stop", "SubagentStop", "PreCompact", "SessionStart")}
    for event, found in groups.items():
        assert len(found) == 1, event
        handler = found[0]["hooks"][0]
        words = handler["command"].split()
        assert Path(words[0]).is_absolute() and words[0].endswith("memcli")
        assert words[1:] == ["--dir", memory, "hook", "claude-code", event]
        assert handler["type"] == "command" and handler["timeout"] == 30
    assert groups["SessionStart"][0]["matcher"] == "compact|resume"
    assert "matcher" not in groups["Stop"][0]
    assert (path.parent / (path.name + ".memcli-backup")).read_bytes() == original

    # installing again changes nothing (no second set)
    again = _cli(home, "hooks", "install", "claude-code", "--scope", scope)
    assert again.returncode == 0 and "nothing changed" in again.stderr.decode()
    assert json.loads(path.read_text()) == settings

    status = _cli(home, "hooks", "status", "claude-code", "--scope", scope, "--json")
    assert status.returncode == 0, status.stderr
    [row] = json.loads(status.stdout)
    assert row["path"] == str(path) and row["not_installed"] == []
    assert set(row["installed"]) == {"Stop", "SubagentStop", "PreCompact", "SessionStart"}

    out = _cli(home, "hooks", "uninstall", "claude-code", "--scope", scope)
    assert out.returncode == 0, out.stderr
    assert json.loads(path.read_text()) == USER_CLAUDE           # JSON-equal to the user's file
    assert json.loads((path.parent / (path.name + ".memcli-backup")).read_text()) == settings


def test_install_into_a_missing_file_and_uninstall_leaves_an_empty_object(home):
    path = home / "home/.claude/settings.json"
    assert _cli(home, "hooks", "install", "claude-code").returncode == 0
    assert set(_commands(json.loads(path.read_text()))) == {"Stop", "SubagentStop", "PreCompact", "SessionStart"}
    assert not (path.parent / "settings.json.memcli-backup").exists()   # nothing to back up
    assert _cli(home, "hooks", "uninstall", "claude-code").returncode == 0
    assert json.loads(path.read_text()) == {}
    again = _cli(home, "hooks", "uninstall", "claude-code")
    assert again.returncode == 0 and "nothing changed" in again.stderr.decode()


def test_settings_that_are_not_json_are_refused_untouched(home):
    path = home / "home/.claude/settings.json"
    path.parent.mkdir(parents=True)
    raw = b'{\n  "model": "opus",\n  "hooks": {,}\n}\n'
    path.write_bytes(raw)
    for action in ("install", "uninstall"):
        result = _cli(home, "hooks", action, "claude-code")
        assert result.returncode == 1
        err = result.stderr.decode()
        assert str(path) in err and "line 3" in err, err
        assert path.read_bytes() == raw
    assert sorted(p.name for p in path.parent.iterdir()) == ["settings.json"]


def test_settings_with_hooks_of_the_wrong_shape_are_refused(home):
    path = home / "home/.claude/settings.json"
    path.parent.mkdir(parents=True)
    for bad in (b"[1, 2]", b'{"hooks": []}', b'{"hooks": {"Stop": {"command": "x"}}}'):
        path.write_bytes(bad)
        result = _cli(home, "hooks", "install", "claude-code")
        assert result.returncode == 1 and str(path) in result.stderr.decode()
        assert path.read_bytes() == bad


def test_other_keys_under_hooks_are_left_alone(home):
    path = home / "home/.gemini/settings.json"
    user = {"hooks": {"enabled": True, "disabled": ["lint"]}, "hooksConfig": {"notifications": False}}
    _write(path, user)
    assert _cli(home, "hooks", "install", "gemini").returncode == 0
    data = json.loads(path.read_text())
    assert data["hooks"]["enabled"] is True and data["hooks"]["disabled"] == ["lint"]
    assert set(_commands(data)) == {"AfterAgent", "PreCompress", "SessionStart"}
    assert _cli(home, "hooks", "uninstall", "gemini").returncode == 0
    assert json.loads(path.read_text()) == user


def test_codex_and_gemini_install_where_their_docs_say(home):
    codex = home / "home/.codex/hooks.json"
    gemini = home / "home/.gemini/settings.json"
    gemini_user = {"theme": "GitHub", "hooks": {"BeforeTool": [{"matcher": "write_file", "hooks": [
        {"name": "guard", "type": "command", "command": "guard.sh", "timeout": 5000}]}]}}
    codex_original = _write(codex, {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}})
    _write(gemini, gemini_user)
    assert _cli(home, "hooks", "install", "codex").returncode == 0
    result = _cli(home, "hooks", "install", "gemini")
    assert result.returncode == 0
    assert "no session start after compression" in result.stderr.decode()   # said at install
    c = json.loads(codex.read_text())
    assert set(_commands(c)) == {"Stop", "SubagentStop", "PreCompact", "SessionStart"}
    assert c["hooks"]["SessionStart"][-1]["hooks"][0]["timeout"] == 30      # seconds
    g = json.loads(gemini.read_text())
    assert set(_commands(g)) == {"AfterAgent", "PreCompress", "SessionStart"}
    assert g["hooks"]["SessionStart"][-1]["matcher"] == "resume"
    assert g["hooks"]["AfterAgent"][-1]["hooks"][0]["timeout"] == 30_000     # milliseconds
    assert g["hooks"]["AfterAgent"][-1]["hooks"][0]["name"] == "memcli-AfterAgent"

    status = _cli(home, "hooks", "status", "gemini")
    text = status.stdout.decode()
    assert status.returncode == 0 and "no session start after compression" in text
    assert "AfterAgent" in text and "installed" in text
    codex_status = _cli(home, "hooks", "status", "codex").stdout.decode()
    assert "/hooks" in codex_status                                          # trust them in Codex
    bad_scope = _cli(home, "hooks", "install", "codex", "--scope", "local")
    assert bad_scope.returncode == 2 and "local" in bad_scope.stderr.decode()

    assert _cli(home, "hooks", "uninstall", "codex").returncode == 0
    assert _cli(home, "hooks", "uninstall", "gemini").returncode == 0
    assert codex.read_bytes() != codex_original           # re-written, JSON-equal
    assert json.loads(codex.read_text()) == json.loads(codex_original)
    assert json.loads(gemini.read_text()) == gemini_user


def test_codex_home_is_honoured(home, tmp_path):
    codex_home = tmp_path / "codexhome"
    result = subprocess.run([*_python_memcli(), "--dir", str(home / "memory"), "hooks", "install", "codex"],
                            capture_output=True, env=proc_env(_env(home, CODEX_HOME=str(codex_home))), timeout=60)
    assert result.returncode == 0, result.stderr
    assert (codex_home / "hooks.json").is_file() and not (home / "home/.codex").exists()


def test_claude_config_dir_is_honoured(home, tmp_path):
    """CLAUDE_CONFIG_DIR moves Claude Code's ~/.claude, user settings included: the hooks go
    where Claude Code reads them, as sync reads its sessions there."""
    config = tmp_path / "claudeconfig"
    result = subprocess.run([*_python_memcli(), "--dir", str(home / "memory"), "hooks", "install", "claude-code"],
                            capture_output=True, env=proc_env(_env(home, CLAUDE_CONFIG_DIR=str(config))), timeout=60)
    assert result.returncode == 0, result.stderr
    assert (config / "settings.json").is_file() and not (home / "home/.claude/settings.json").exists()


def test_install_with_a_fixed_agent_and_through_the_api(home):
    mem = memcli.Memory(home / "memory")
    change = mem.hooks_install("claude-code", scope="project", agent="team", project_dir=home / "project",
                               home=home / "home")
    assert change.changed and change.path == home / "project/.claude/settings.json"
    assert all(c.endswith(f"hook claude-code {e} --agent team") for e, c in
               _commands(json.loads(change.path.read_text())).items())
    [status] = mem.hooks_status("claude-code", scope="project", project_dir=home / "project", home=home / "home")
    assert len(status.installed) == 4
    assert mem.hooks_uninstall("claude-code", scope="project", project_dir=home / "project",
                               home=home / "home").changed
    assert json.loads(change.path.read_text()) == {}
    with pytest.raises(memcli.errors.UsageError, match="harness"):
        mem.hooks_install("cursor")


# ---------------------------------------------------------------------------------------- hook runs
def _reference_count(tmp: Path, lines: list[bytes], fmt: str = "claude-code") -> int:
    """How many traces a one-shot import of ``lines`` gives."""
    ref = tmp / "ref"
    shutil.rmtree(ref, ignore_errors=True)
    part = tmp / "part.jsonl"
    part.write_bytes(b"".join(lines))
    result = memcli.Memory(ref).agent("r").ingest(part, fmt)
    return result.appended


@needs_corpora
def test_claude_code_hooks_import_a_growing_transcript_once_and_give_memory_back(home, tmp_path):
    settings_path = home / "project/.claude/settings.json"
    _write(settings_path, USER_CLAUDE)
    assert _cli(home, "hooks", "install", "claude-code", "--scope", "project").returncode == 0
    commands = _commands(json.loads(settings_path.read_text()))

    lines = SPOTTER.read_bytes().splitlines(keepends=True)
    session = "258c7280-ae70-4798-800f-63464d01a85d"
    transcript = home / "home/.claude/projects/-home-USER-projects-spotter-worktrees-spotter-gqc" / f"{session}.jsonl"
    transcript.parent.mkdir(parents=True)
    cwd = home / "project"
    # the name `memcli sync` gives the session: its id and the working directory its lines record
    agent = session_agent_id("claude-code", session, cwd="/home/USER/projects/spotter-worktrees/spotter-gqc")
    memory = home / "memory"
    base = {"session_id": session, "transcript_path": str(transcript), "cwd": str(cwd)}

    def grow(n: int, torn: bool = False):
        data = b"".join(lines[:n])
        if torn:  # the harness is writing line n+1 right now
            data += lines[n][: len(lines[n]) // 2]
        transcript.write_bytes(data)

    steps = [(400, "Stop", True), (900, "SubagentStop", False), (1255, "PreCompact", True),
             (1255, "Stop", False), (len(lines), "Stop", False)]
    for n, event, torn in steps:
        grow(n, torn)
        result = _run_entry(commands[event], {**base, "hook_event_name": event}, cwd, home / "home")
        assert result.returncode == 0, result.stderr
        assert result.stdout == b""                      # Stop / PreCompact say nothing to the model
        traces = read_jsonl(agent_dir(memory, agent) / "raw_traces.jsonl")
        ids = [t["id"] for t in traces]
        assert len(ids) == len(set(ids))                 # every event held once
        assert len(ids) == _reference_count(tmp_path, lines[:n]), (n, event)

    memcli.Memory(memory).agent(agent).remember("The deploy target is fly.io app spotter-prod", pin=True)
    result = _run_entry(commands["SessionStart"], {**base, "hook_event_name": "SessionStart", "source": "compact"},
                        cwd, home / "home")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert list(doc) == ["hookSpecificOutput"]
    assert doc["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    context = doc["hookSpecificOutput"]["additionalContext"]
    assert 0 < len(context) <= 10_000
    assert "## Latest ask\ndid you push?\n" in context
    assert "The deploy target is fly.io app spotter-prod" in context
    assert agent in context
    # nothing new was imported twice by the session start
    assert len(read_jsonl(agent_dir(memory, agent) / "raw_traces.jsonl")) == _reference_count(tmp_path, lines)

    # `memcli sync` finds the same session, in the same agent, with nothing left to import
    synced = _cli(home, "sync", "--home", str(home / "home"), "--json")
    assert synced.returncode == 0, synced.stderr
    [row] = json.loads(synced.stdout)["sessions"]
    assert row["agent"] == agent and row["events_added"] == 0
    assert len(read_jsonl(agent_dir(memory, agent) / "raw_traces.jsonl")) == _reference_count(tmp_path, lines)

    # a smaller budget is kept too (the CLI's --max-chars)
    small = _run_entry(commands["SessionStart"] + " --max-chars 600", {**base, "source": "resume"}, cwd, home / "home")
    assert small.returncode == 0, small.stderr
    text = json.loads(small.stdout)["hookSpecificOutput"]["additionalContext"]
    assert len(text) <= 600 and "did you push?" in text and "spotter-prod" in text


@needs_corpora
def test_codex_stop_hook_imports_the_rollout(home, tmp_path):
    assert _cli(home, "hooks", "install", "codex").returncode == 0
    commands = _commands(json.loads((home / "home/.codex/hooks.json").read_text()))
    lines = CODEX.read_bytes().splitlines(keepends=True)
    rollout = tmp_path / "rollout-2026-02-23T11-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl"
    session = "019c8a59-e9dd-71f0-9ae3-4079fe9726a9"
    payload = {"session_id": session, "turn_id": "t1", "transcript_path": str(rollout), "cwd": str(home / "project"),
               "hook_event_name": "Stop", "model": "gpt-5", "permission_mode": "default",
               "stop_hook_active": False, "last_assistant_message": None}
    for n in (1000, len(lines)):
        rollout.write_bytes(b"".join(lines[:n]))
        result = _run_entry(commands["Stop"], payload, home / "project", home / "home")
        assert result.returncode == 0 and result.stdout == b"", result.stderr
        agent = session_agent_id("codex", session, cwd="/redacted/path/59b923df4d")  # from session_meta
        traces = read_jsonl(agent_dir(home / "memory", agent) / "raw_traces.jsonl")
        ids = [t["id"] for t in traces]
        expected = _reference_count(tmp_path, lines[:n], "codex")
        assert len(ids) == len(set(ids)) > 0
        if n == len(lines):
            assert len(ids) == expected
        else:  # a prompt whose second copy is not written yet waits for it (the importer's hold-back)
            assert expected - 5 <= len(ids) <= expected


def test_gemini_after_agent_hook_imports_a_cli_session(home, tmp_path):
    """A Gemini CLI session file (``~/.gemini/tmp/<project>/chats/session-*.json``, rewritten
    whole by the CLI), written here from the format its importer documents."""
    assert _cli(home, "hooks", "install", "gemini").returncode == 0
    commands = _commands(json.loads((home / "home/.gemini/settings.json").read_text()))
    session = home / "home/.gemini/tmp/5f1d2c/chats/session-2026-01-01T00-00-g1abcdef.json"
    session.parent.mkdir(parents=True)
    head = {"sessionId": "g1abcdef-0000", "projectHash": "5f1d2c", "startTime": "2026-01-01T00:00:00Z",
            "lastUpdated": "2026-01-01T00:01:00Z"}
    messages = [{"id": "m1", "timestamp": "2026-01-01T00:00:01Z", "type": "user", "content": "list the files"},
                {"id": "m2", "timestamp": "2026-01-01T00:00:05Z", "type": "gemini", "content": "There are two files."}]
    payload = {"session_id": "g1abcdef-0000", "transcript_path": str(session), "cwd": str(home / "project"),
               "hook_event_name": "AfterAgent", "timestamp": "2026-01-01T00:00:00Z",
               "prompt": "list the files", "prompt_response": "There are two files.", "stop_hook_active": False}
    for upto in (1, 2):
        session.write_text(json.dumps({**head, "messages": messages[:upto]}))
        result = _run_entry(commands["AfterAgent"], payload, home / "project", home / "home")
        assert result.returncode == 0 and result.stdout == b"", result.stderr
        [agent] = [p.name for p in (home / "memory/agents").iterdir()]
        assert agent.startswith("gemini.") and agent.endswith(".g1abcdef-0000")
        assert len(read_jsonl(agent_dir(home / "memory", agent) / "raw_traces.jsonl")) == upto
    start = _run_entry(commands["SessionStart"], {**payload, "hook_event_name": "SessionStart", "source": "resume"},
                       home / "project", home / "home")
    assert start.returncode == 0, start.stderr
    assert "list the files" in json.loads(start.stdout)["hookSpecificOutput"]["additionalContext"]
    synced = _cli(home, "sync", "--home", str(home / "home"), "--source", "gemini", "--json")
    [row] = json.loads(synced.stdout)["sessions"]
    assert row["agent"] == agent and row["events_added"] == 0


# ---------------------------------------------------------------------------------------- failures
def _hook(root: Path, *args, payload: bytes = b"", env: dict | None = None):
    return subprocess.run([*_python_memcli(), "--dir", str(root / "memory"), *args], input=payload,
                          capture_output=True, env=proc_env(env), timeout=60, cwd=root)


@pytest.mark.parametrize("args, payload, message", [
    (("hook", "claude-code", "Stop"), b"{not json", "not JSON"),
    (("hook", "claude-code", "Stop"), b"", "empty"),
    (("hook", "claude-code", "Stop"), b"[1]", "not a JSON object"),
    (("hook", "claude-code", "Stop"), b'{"session_id": "s1", "cwd": "/x"}', "no transcript_path"),
    (("hook", "claude-code", "Stop"), b'{"session_id": "s1", "transcript_path": "/nowhere/t.jsonl"}',
     "/nowhere/t.jsonl not found"),
    (("hook", "claude-code", "Nope"), b"{}", "no hook event 'Nope'"),
    (("hook", "cursor", "Stop"), b"{}", "unknown harness"),
    (("hook",), b"{}", "usage"),
    (("hook", "claude-code"), b"{}", "usage"),
    (("hook", "claude-code", "Stop", "--bogus"), b"{}", "unknown option --bogus"),
    (("hook", "claude-code", "SessionStart", "--max-chars", "lots"), b"{}", "--max-chars"),
])
def test_a_failing_hook_exits_1_with_one_line_and_writes_nothing(tmp_path, args, payload, message):
    result = _hook(tmp_path, *args, payload=payload)
    assert result.returncode == 1, (result.returncode, result.stderr)
    err = result.stderr.decode()
    assert err.count("\n") == 1 and err.startswith("memcli hook: ") and message in err, err
    assert result.stdout == b""
    assert tree_digest(tmp_path / "memory") == {}


def test_a_hook_never_waits_long_for_a_busy_agent(tmp_path):
    import filelock

    transcript = tmp_path / "s1.jsonl"
    transcript.write_text(json.dumps({"type": "user", "uuid": "u1", "sessionId": "s1", "cwd": str(tmp_path),
                                      "message": {"role": "user", "content": "hello"}}) + "\n")
    agent = session_agent_id("claude-code", "s1", cwd=str(tmp_path))
    lock_dir = tmp_path / "memory" / ".locks"
    lock_dir.mkdir(parents=True)
    payload = orjson.dumps({"session_id": "s1", "transcript_path": str(transcript), "cwd": str(tmp_path)})
    with filelock.FileLock(str(lock_dir / f"{agent}.lock")):
        result = _hook(tmp_path, "hook", "claude-code", "Stop", payload=payload, env={"MEMCLI_LOCK_TIMEOUT": "0.3"})
    assert result.returncode == 1
    assert "locked by another memcli process" in result.stderr.decode()
    assert result.stderr.decode().count("\n") == 1
    # the library caps any longer wait at a few seconds
    from memcli.hooks.run import LOCK_WAIT

    assert LOCK_WAIT <= 5


def test_hook_help_is_the_framework_help(tmp_path):
    result = run_memcli("hook", "--help")
    assert result.returncode == 0 and b"SessionStart" in result.stdout


def test_a_fixed_agent_collects_every_session_and_pinned_facts_come_back(tmp_path):
    """``hooks install --agent NAME``: every session's transcript goes into that one agent."""
    mem = memcli.Memory(tmp_path / "memory")
    for n, ask in ((1, "rename the config loader"), (2, "now add tests for the config loader")):
        transcript = tmp_path / f"s{n}.jsonl"
        transcript.write_text(json.dumps({"type": "user", "uuid": f"u{n}", "sessionId": f"s{n}",
                                          "message": {"role": "user", "content": ask}}) + "\n")
        result = mem.hook("claude-code", "Stop", {"session_id": f"s{n}", "transcript_path": str(transcript)},
                          agent="team")
        assert (result.agent, result.imported, result.output) == ("team", 1, "")
        again = mem.hook("claude-code", "Stop", {"session_id": f"s{n}", "transcript_path": str(transcript)},
                         agent="team")
        assert (again.imported, again.already) == (0, 1)
    mem.agent("team").remember("Config lives in conf/app.toml", pin=True)
    start = mem.hook("claude-code", "SessionStart", {"session_id": "s2", "transcript_path": str(transcript),
                                                      "source": "resume"}, agent="team")
    context = json.loads(start.output)["hookSpecificOutput"]["additionalContext"]
    assert "## Latest ask\nnow add tests for the config loader\n" in context
    assert "Config lives in conf/app.toml" in context
    assert "## Pinned facts\n- Config lives in conf/app.toml (" in context   # its own section (PINNED_TAG)
    assert "## Related history\n- turn_0001 user cc-u1-0: rename" in context   # the other session
    assert [p.name for p in (tmp_path / "memory/agents").iterdir()] == ["team"]
    with pytest.raises(memcli.errors.MemcliError, match="agent id"):
        mem.hook("claude-code", "Stop", {"session_id": "s1", "transcript_path": str(transcript)}, agent="../x")


def test_the_hook_caps_a_longer_lock_timeout(tmp_path, monkeypatch):
    """MEMCLI_LOCK_TIMEOUT=120 (a user's setting for long compactions) does not make a hook wait:
    the hook's own cap (memcli.hooks.run.LOCK_WAIT) wins."""
    import time

    import filelock

    import memcli.hooks.run as hook_run
    from memcli.hooks.run import HookFailed

    monkeypatch.setenv("MEMCLI_LOCK_TIMEOUT", "120")
    monkeypatch.setattr(hook_run, "LOCK_WAIT", 0.2)
    transcript = tmp_path / "s1.jsonl"
    transcript.write_text(json.dumps({"type": "user", "uuid": "u1", "sessionId": "s1",
                                      "message": {"role": "user", "content": "hello"}}) + "\n")
    (tmp_path / "memory" / ".locks").mkdir(parents=True)
    payload = {"session_id": "s1", "transcript_path": str(transcript)}
    with filelock.FileLock(str(tmp_path / "memory" / ".locks" / "team.lock")):
        started = time.monotonic()
        with pytest.raises(HookFailed, match="locked"):
            memcli.Memory(tmp_path / "memory").hook("claude-code", "Stop", payload, agent="team")
        assert time.monotonic() - started < 10
    assert memcli.Memory(tmp_path / "memory").hook("claude-code", "Stop", payload, agent="team").imported == 1


def test_a_hook_loads_no_cli_framework(tmp_path):
    """A harness runs ``memcli hook`` on every event: the real entry point (``python -m memcli``)
    must not import typer, click or rich for it (memcli.cli.main, memcli.cli.hook_main)."""
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes(
        b'{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s1","cwd":"/p",'
        b'"timestamp":"2025-01-01T00:00:00Z","message":{"role":"user","content":"hi"}}\n')
    payload = orjson.dumps({"session_id": "s1", "transcript_path": str(transcript), "cwd": "/p",
                            "hook_event_name": "Stop"})
    import sys

    result = subprocess.run([sys.executable, "-X", "importtime", "-m", "memcli", "--dir", str(tmp_path / "memory"),
                             "hook", "claude-code", "Stop"], input=payload, capture_output=True,
                            env=proc_env(None), timeout=60, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    loaded = {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in result.stderr.decode().splitlines()
              if line.startswith("import time:")}
    assert "memcli" in loaded and not loaded & {"typer", "click", "rich"}, sorted(loaded)
    [agent] = (tmp_path / "memory" / "agents").iterdir()
    assert len(read_jsonl(agent / "raw_traces.jsonl")) == 1


def test_a_hook_on_a_transcript_with_no_event_yet_imports_nothing_and_succeeds(tmp_path):
    """The ingest path (``--agent``): an empty transcript is "nothing yet", not a failure
    (memcli.ingest.pipeline.NoEvents)."""
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes(b"\n")
    payload = orjson.dumps({"session_id": "s1", "transcript_path": str(transcript), "cwd": "/p",
                            "hook_event_name": "Stop"})
    result = _hook(tmp_path, "hook", "claude-code", "Stop", "--agent", "mine", payload=payload)
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    assert [p for p in tree_digest(tmp_path / "memory") if not p.startswith(".locks/")] == []
