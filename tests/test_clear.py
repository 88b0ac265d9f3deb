"""`memcli clear`: nothing of the agent remains (or exactly its memory files with --keep-memory),
other agents are untouched, and it refuses to act without --yes when it cannot ask."""

from __future__ import annotations

import os

import orjson
import pytest

from memcli.store.clear import clear_agent
from memcli.store.layout import list_agent_ids
from tests.export_fixtures import A, U, archive_turns, copy_sample, write_memory
from tests.helpers import agent_dir, read_jsonl, tree_digest


@pytest.fixture
def store(cli, memory_dir):
    copy_sample(memory_dir)
    archive_turns(memory_dir, "coder", 30)
    write_memory(memory_dir, "coder")
    # caches, a lock file and an in-flight marker exist as in real use
    assert cli("ingest", "coder", input=[U("one more")]).exit_code == 0
    assert cli("ingest", "support", input=[U("hello")]).exit_code == 0
    (agent_dir(memory_dir, "coder") / ".ingest.pending").write_bytes(b"junk")
    return memory_dir


def test_clear_removes_every_file_of_the_agent_and_nothing_else(cli, store):
    support_before = tree_digest(agent_dir(store, "support"))
    lock = store / ".locks" / "coder.lock"
    assert lock.exists()
    result = cli("clear", "coder", "--yes")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    assert "cleared agent 'coder': removed 7 files" in result.stderr
    assert "the agent no longer exists" in result.stderr
    assert not agent_dir(store, "coder").exists()
    assert sorted(os.listdir(store / "agents")) == ["support"]   # no hidden leftovers either
    assert tree_digest(agent_dir(store, "support")) == support_before
    assert lock.exists()  # the lock file is never deleted
    assert cli("export", "coder").exit_code == 3
    # a new ingest starts a fresh agent
    assert cli("ingest", "coder", input=[U("again")]).exit_code == 0
    assert [r["turn_id"] for r in read_jsonl(agent_dir(store, "coder") / "raw_traces.jsonl")] == ["turn_0001"]


def test_keep_memory_keeps_exactly_the_memory_files(cli, store):
    d = agent_dir(store, "coder")
    episodic, semantic = (d / "episodic.jsonl").read_bytes(), (d / "semantic.jsonl").read_bytes()
    support_before = tree_digest(agent_dir(store, "support"))
    result = cli("clear", "coder", "--keep-memory", "--yes")
    assert result.exit_code == 0, result.stderr
    assert sorted(os.listdir(d)) == ["episodic.jsonl", "semantic.jsonl"]
    assert (d / "episodic.jsonl").read_bytes() == episodic and (d / "semantic.jsonl").read_bytes() == semantic
    assert sorted(os.listdir(store / "agents")) == ["coder", "support"]
    assert tree_digest(agent_dir(store, "support")) == support_before
    assert "kept episodic.jsonl, semantic.jsonl; the next turn will be turn_0005" in result.stderr
    # the agent still exists, with its memory and no traces
    assert cli("export", "coder").stdout_bytes == b""
    assert b'"ep_3"' in cli("export", "coder", "--with-memory").stdout_bytes


def test_after_keep_memory_new_turns_do_not_reuse_the_turn_ids_memory_names(cli, memory_dir):
    cli("ingest", "a", input=[U("q1"), A("a1"), U("q2"), A("a2"), U("q3")])
    write_memory(memory_dir, "a", episodic=[{"id": "ep", "ts": 1.0, "turn_ids": ["turn_0001", "turn_0002"],
                                              "summary": "s", "tags": [], "salience": 0.0}],
                 semantic=[{"id": "sem", "ts": 1.0, "fact": "f", "tags": [], "confidence": 1.0, "salience": 0.0,
                            "source_turn_ids": ["turn_0007"]}])
    assert cli("clear", "a", "--keep-memory", "--yes").exit_code == 0
    assert cli("ingest", "a", input=[U("new")]).exit_code == 0
    assert [r["turn_id"] for r in read_jsonl(agent_dir(memory_dir, "a") / "raw_traces.jsonl")] == ["turn_0008"]
    # even after the caches are rebuilt from scratch
    for cache in (".state.json", ".ids"):
        (agent_dir(memory_dir, "a") / cache).unlink()
    assert cli("ingest", "a", input=[U("newer")]).exit_code == 0
    assert [r["turn_id"] for r in read_jsonl(agent_dir(memory_dir, "a") / "raw_traces.jsonl")] == ["turn_0008", "turn_0009"]


def test_keep_memory_lets_cleared_traces_be_ingested_again(cli, memory_dir):
    cli("ingest", "a", input=[U("q1", id="u1"), A("a1", id="a1")])
    write_memory(memory_dir, "a")
    backup = cli("export", "a").stdout_bytes
    assert cli("clear", "a", "--keep-memory", "--yes").exit_code == 0
    result = cli("ingest", "a", input=backup)
    assert result.exit_code == 0 and "ingested 2 events" in result.stderr  # not "already present"
    assert cli("export", "a").stdout_bytes == backup


def test_keep_memory_without_memory_removes_the_agent(cli, memory_dir):
    cli("ingest", "a", input=[U("q1")])
    result = cli("clear", "a", "--keep-memory", "--yes")
    assert result.exit_code == 0
    assert not agent_dir(memory_dir, "a").exists()


def test_refuses_without_yes_when_not_on_a_terminal(cli, store):
    before = tree_digest(store)
    for args in (["clear", "coder"], ["clear", "coder", "--keep-memory"]):
        result = cli(*args)
        assert result.exit_code == 2
        assert "refusing to clear agent 'coder' without confirmation" in result.stderr
        assert "pass --yes" in result.stderr
    assert tree_digest(store) == before


def test_asks_on_a_terminal_and_a_no_deletes_nothing(cli, store, monkeypatch):
    import memcli.cli.clear as clear_cli

    monkeypatch.setattr(clear_cli, "_stdin_is_terminal", lambda: True)
    before = tree_digest(store)
    result = cli("clear", "coder", input="n\n")
    assert result.exit_code == 1
    assert "Delete all memory of agent 'coder'? [y/N]" in result.stderr
    assert "delete raw_traces.jsonl" in result.stderr and "nothing was deleted" in result.stderr
    assert tree_digest(store) == before
    assert cli("clear", "coder", input="\n").exit_code == 1  # the default is No
    result = cli("clear", "coder", input="y\n")
    assert result.exit_code == 0 and not agent_dir(store, "coder").exists()


def test_unknown_agent_is_exit_3_even_without_yes(cli, store):
    before = tree_digest(store)
    for args in (["clear", "nobody"], ["clear", "nobody", "--yes"], ["clear", "nobody", "--keep-memory", "--yes"]):
        result = cli(*args)
        assert result.exit_code == 3, args
        assert "no agent 'nobody'" in result.stderr
    assert cli("clear", "../x", "--yes").exit_code == 2
    assert tree_digest(store) == before


def test_clear_works_on_a_corrupt_agent(cli, memory_dir):
    cli("ingest", "a", input=[U("one"), A("two"), U("three")])
    path = agent_dir(memory_dir, "a") / "raw_traces.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0] + b"garbage\n" + lines[2])
    (agent_dir(memory_dir, "a") / ".state.json").unlink()
    assert cli("export", "a").exit_code == 1
    assert cli("clear", "a", "--yes").exit_code == 0
    assert not agent_dir(memory_dir, "a").exists()


def test_keep_memory_repairs_a_torn_memory_tail(cli, memory_dir):
    cli("ingest", "a", input=[U("one")])
    write_memory(memory_dir, "a")
    with open(agent_dir(memory_dir, "a") / "semantic.jsonl", "ab") as f:
        f.write(b'{"id": "sem_torn", "fa')
    assert cli("clear", "a", "--keep-memory", "--yes").exit_code == 0
    assert [r["id"] for r in read_jsonl(agent_dir(memory_dir, "a") / "semantic.jsonl")] == ["sem_1", "sem_2", "sem_3"]


def test_leftovers_of_an_interrupted_clear_are_removed_by_the_next(cli, memory_dir):
    cli("ingest", "a", input=[U("one")])
    leftover = memory_dir / "agents" / ".a.clearing.123.abcd"
    leftover.mkdir()
    (leftover / "raw_traces.jsonl").write_bytes(orjson.dumps({"x": 1}) + b"\n")
    assert list_agent_ids(memory_dir) == ["a"]  # the hidden directory is no agent
    clear_agent(memory_dir, "a")
    assert os.listdir(memory_dir / "agents") == []


def test_clear_waits_for_the_agent_lock(cli, memory_dir, memcli_proc):
    from memcli.store.layout import agent_paths
    from memcli.store.lock import agent_lock

    cli("ingest", "a", input=[U("one")])
    before = tree_digest(agent_dir(memory_dir, "a"))
    with agent_lock(agent_paths(memory_dir, "a")):  # another writer holds the agent
        result = memcli_proc("clear", "a", "--yes", env={"MEMCLI_LOCK_TIMEOUT": "0.5"})
        assert result.returncode == 1
        assert b"is locked by another memcli process" in result.stderr
        assert tree_digest(agent_dir(memory_dir, "a")) == before
    assert memcli_proc("clear", "a", "--yes").returncode == 0
    assert not agent_dir(memory_dir, "a").exists()


def test_clear_forgets_every_sync_entry_that_led_to_the_agent_and_no_other(cli, memory_dir):
    """A transcript's entry goes; a file of many sessions (a database, an aider history, a chat
    export) loses that session's entry and is read again next time; other agents' entries and
    other sources stay byte for byte."""
    from memcli.store.sync_state import load_files, state_path

    assert all(cli("ingest", agent, input=[U(f"hello from {agent}")]).exit_code == 0 for agent in ("gone", "kept"))
    states = {
        "claude-code": {"/s/gone.jsonl": {"agent": "gone", "size": 1}, "/s/kept.jsonl": {"agent": "kept", "size": 2}},
        "goose": {"/g/sessions.db": {"sig": [[1, 2, 3], None], "sessions": {"a": {"agent": "gone", "mark": [1]},
                                                                            "b": {"agent": "kept", "mark": [2]}}}},
        "aider": {"/p/.aider.chat.history.md": {"sig": [4, 5, 6], "runs": {"r1": {"agent": "gone", "mark": [3]}}}},
        "chatgpt": {"/e/conversations.json": {"size": 9, "conversations": {"c": {"agent": "kept"}}}},
    }
    for source, files in states.items():
        state_path(memory_dir, source).parent.mkdir(parents=True, exist_ok=True)
        state_path(memory_dir, source).write_bytes(orjson.dumps({"version": 1, "files": files}))
    untouched = state_path(memory_dir, "chatgpt").read_bytes()
    result = clear_agent(memory_dir, "gone")
    assert result.agent_removed and result.resynced == 3
    assert load_files(memory_dir, "claude-code") == {"/s/kept.jsonl": {"agent": "kept", "size": 2}}
    assert load_files(memory_dir, "goose") == {"/g/sessions.db": {
        "sig": None, "pending": True, "sessions": {"b": {"agent": "kept", "mark": [2]}}}}
    assert load_files(memory_dir, "aider") == {"/p/.aider.chat.history.md": {"sig": None, "runs": {}, "pending": True}}
    assert state_path(memory_dir, "chatgpt").read_bytes() == untouched
    note = " (`memcli sync` imports its session again)"
    assert result.summary().endswith("; the agent no longer exists" + note)
    assert cli("ingest", "plain", input=[U("not synced")]).exit_code == 0
    plain = clear_agent(memory_dir, "plain")   # an agent no sync made: nothing to forget, nothing said
    assert plain.resynced == 0 and plain.summary().endswith("; the agent no longer exists")



def test_a_clear_whose_deletion_fails_has_already_forgotten_the_sync_state(cli, memory_dir, monkeypatch):
    """The agent is renamed away first; if deleting that directory fails, the agent is gone all
    the same (and cannot be cleared again): what sync remembered of it is forgotten before."""
    import shutil

    from memcli.errors import StoreError
    from memcli.store.sync_state import load_files, state_path

    assert cli("ingest", "gone", input=[U("hello")]).exit_code == 0
    state_path(memory_dir, "codex").parent.mkdir(parents=True, exist_ok=True)
    state_path(memory_dir, "codex").write_bytes(orjson.dumps({"version": 1, "files": {"/r.jsonl": {"agent": "gone"}}}))

    def refuse(path, *a, **k):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(shutil, "rmtree", refuse)
    with pytest.raises(StoreError):
        clear_agent(memory_dir, "gone")
    assert load_files(memory_dir, "codex") == {}
