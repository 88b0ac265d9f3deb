"""Files of many conversations: refused by default, ``--split`` into ``AGENT.<key>`` agents,
all-or-nothing across the file, ``--skip-invalid`` naming what it left out, idempotent."""

from __future__ import annotations

import pytest

from memcli.errors import InputError, UsageError, as_flag
from memcli.importers.conversations import Conversation, agent_names, sanitise
from memcli.ingest.api import ingest
from tests.helpers import tree_digest
from tests.import_helpers import traces, write_input


def _conversation(i: int, ask: str = "hi") -> dict:
    return {"id": f"conv {i}", "messages": [
        {"role": "user", "content": f"{ask} {i}"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{i}", "type": "function", "function": {"name": "look", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": f"call_{i}", "content": "ok"},
        {"role": "assistant", "content": "done"}]}


def _file(tmp_path, records, name="many.jsonl"):
    return write_input(tmp_path / name, records)


def test_many_conversations_are_refused_naming_the_count_and_split(cli, memory_dir, tmp_path):
    path = _file(tmp_path, [_conversation(i) for i in range(1, 4)])
    result = cli("ingest", "bot", path)
    assert result.exit_code == 1
    assert "holds 3 conversations" in result.stderr and "--split" in result.stderr
    assert result.stdout == "" and tree_digest(memory_dir) == {}


def test_split_names_agents_by_their_own_sanitised_ids(cli, memory_dir, tmp_path):
    path = _file(tmp_path, [_conversation(i) for i in range(1, 4)])
    result = cli("ingest", "bot", path, "--split")
    assert result.exit_code == 0, result.stderr
    assert result.stderr.strip().endswith(
        "split 3 conversations into 3 agents (bot.conv-1 … bot.conv-3): 12 events, 3 turns, 3 tool calls, 3 results;"
        " format openai (detected)")
    for i in range(1, 4):
        assert [t.content for t in traces(memory_dir, f"bot.conv-{i}") if t.trace_type == "user"] == [f"hi {i}"]
    again = cli("ingest", "bot", path, "--split")
    assert "0 events" in again.stderr and "12 already present" in again.stderr


def test_split_uses_indexes_unless_every_conversation_has_a_distinct_id(memory_dir, tmp_path):
    records = [_conversation(i) for i in range(1, 4)]
    del records[1]["id"]
    assert ingest(memory_dir, "a", _file(tmp_path, records), split=True).agents == ["a.1", "a.2", "a.3"]
    records = [_conversation(1), _conversation(1, "again")]   # the same id twice
    assert ingest(memory_dir, "b", _file(tmp_path, records, "dup.jsonl"), split=True).agents == ["b.1", "b.2"]


def test_a_failure_on_conversation_37_writes_no_agent(cli, memory_dir, tmp_path):
    records = [_conversation(i) for i in range(1, 41)]
    records[36]["messages"][2] = {"role": "tool", "content": "no id"}   # conversation 37
    path = _file(tmp_path, records)
    before = tree_digest(memory_dir)
    result = cli("ingest", "bot", path, "--split")
    assert result.exit_code == 1
    assert "conversation 37 (conv 37) at line 37 (bot.conv-37)" in result.stderr
    assert "nothing was written to any agent" in result.stderr
    assert tree_digest(memory_dir) == before


def test_skip_invalid_leaves_bad_conversations_out_and_names_them(cli, memory_dir, tmp_path):
    records = [_conversation(i) for i in range(1, 5)]
    records[2]["messages"][0] = "not a message"
    result = cli("ingest", "bot", _file(tmp_path, records), "--split", "--skip-invalid")
    assert result.exit_code == 0
    assert "skipped conversation 3 (conv 3) at line 3 (bot.conv-3): line 3: expected messages[0]: an OpenAI chat message" in result.stderr
    assert "into 3 agents" in result.stderr and "1 invalid conversation skipped" in result.stderr
    assert traces(memory_dir, "bot.conv-3") == [] and len(traces(memory_dir, "bot.conv-4")) == 4


def test_one_conversation_file_with_split_is_one_agent_and_stream_refuses_split(memory_dir, tmp_path):
    path = _file(tmp_path, _conversation(1)["messages"], "one.jsonl")
    assert ingest(memory_dir, "x", path, split=True).agents == ["x.1"]
    # the library names its parameters; the CLI words the same error by its flags
    with pytest.raises(UsageError, match="^split reads a whole file: it cannot be combined with stream$") as refused:
        ingest(memory_dir, "x", path, split=True, stream=True)
    assert refused.value.worded(as_flag) == "--split reads a whole file: it cannot be combined with --stream"


def test_a_file_holding_one_request_body_is_not_refused(memory_dir, tmp_path):
    path = write_input(tmp_path / "one.json", [_conversation(1)], "pretty")
    result = ingest(memory_dir, "solo", path)
    assert result.appended == 4 and result.agent_id == "solo"


def test_sanitise_keeps_the_agent_id_alphabet():
    assert sanitise("django__django-11099", 100) == "django__django-11099"
    assert sanitise("owner/repo#12 (retry)", 100) == "owner-repo-12-retry-"
    assert sanitise("..hidden..name", 100) == "hidden.name"
    assert sanitise("ß", 100) is None
    assert sanitise("a" * 200, 10) == "a" * 10


def test_agent_names_fall_back_to_indexes_and_check_length():
    conversations = [Conversation(1, "x/1", 1, []), Conversation(2, "x 1", 2, [])]   # same after sanitising
    assert agent_names("a", conversations) == ["a.1", "a.2"]
    with pytest.raises(UsageError, match="too long"):
        agent_names("a" * 127, [Conversation(1, None, 1, [])])


def test_split_ids_match_importing_the_conversation_alone(memory_dir, tmp_path):
    records = [_conversation(i) for i in range(1, 3)]
    ingest(memory_dir, "s", _file(tmp_path, records), split=True)
    ingest(memory_dir, "alone", write_input(tmp_path / "alone.json", [records[1]], "pretty"))
    assert [t.id for t in traces(memory_dir, "s.conv-2")] == [t.id for t in traces(memory_dir, "alone")]


def test_refusal_is_an_input_error(memory_dir, tmp_path):
    with pytest.raises(InputError, match="holds 2 conversations"):
        ingest(memory_dir, "r", _file(tmp_path, [_conversation(1), _conversation(2)]))


@pytest.mark.parametrize("point", ["ingest:append@3", "ingest:appended@3", "ingest:state@3"])
def test_a_split_killed_midway_completes_on_the_next_run(memory_dir, tmp_path, point):
    """kill -9 while the third agent is written: the agents before it are complete, the third is
    rolled back by the next command on it, and running the same --split again fills in the rest."""
    import signal

    from tests.helpers import run_memcli
    from tests.test_reliability import check_store

    records = [_conversation(i) for i in range(1, 7)]
    path = _file(tmp_path, records)
    crashed = run_memcli("ingest", "bot", str(path), "--split", env={"MEMCLI_CRASH_AT": point})
    assert crashed.returncode == -signal.SIGKILL
    assert [len(traces(memory_dir, f"bot.conv-{i}")) for i in (1, 2)] == [4, 4]
    again = run_memcli("ingest", "bot", str(path), "--split")
    assert again.returncode == 0, again.stderr
    assert b"8 already present" in again.stderr
    for i in range(1, 7):
        ids = {t.id for t in traces(memory_dir, f"bot.conv-{i}")}
        assert len(ids) == 4
        check_store(memory_dir, f"bot.conv-{i}", ids)


def test_a_message_list_streams_and_a_conversation_document_after_it_is_an_error(memory_dir, tmp_path):
    from memcli.importers import get_importer

    messages = _conversation(1)["messages"]
    values = iter([(i, m) for i, m in enumerate(messages, 1)] + [(5, _conversation(2))])
    (only,) = list(get_importer("openai").conversations(values))
    assert not isinstance(only.values, list)   # read lazily: nothing held in memory
    path = _file(tmp_path, messages + [_conversation(2)], "mixed.jsonl")
    with pytest.raises(InputError, match="line 5: a whole conversation after messages of another one"):
        ingest(memory_dir, "m", path, fmt="openai")
    assert traces(memory_dir, "m") == []


def test_split_says_which_kinds_of_secret_it_redacted_as_one_file_does(cli, memory_dir, tmp_path):
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2
    token = token[:40]
    path = _file(tmp_path, [_conversation(i, ask=f"use {token} for") for i in range(1, 3)])
    result = cli("ingest", "bot", path, "--split")
    assert result.exit_code == 0, result.stderr
    assert "2 secrets redacted (github_token 2)" in result.stderr
