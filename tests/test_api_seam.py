"""The Python API is the seam: what the CLI, the API and the MCP server say and do is the same
library call, worded for each client (an error's parameter: ``--target-tokens`` on the command
line, ``target_tokens`` in Python and to a model)."""

from __future__ import annotations

import json

import pytest

import memcli
from memcli.errors import MemcliError, UsageError, as_flag
from tests.events import A, U, turns


def test_an_error_carries_its_parameter_as_data_and_each_client_words_it():
    exc = UsageError("must be 1 or more", param="target_tokens")
    assert (exc.param, str(exc), exc.message) == ("target_tokens", "target_tokens must be 1 or more",
                                                 "target_tokens must be 1 or more")
    assert exc.worded(as_flag) == "--target-tokens must be 1 or more"
    two = UsageError("{turn} and {last} cannot be used together", param="turn", also=("last",))
    assert (str(two), two.worded(as_flag)) == ("turn and last cannot be used together",
                                               "--turn and --last cannot be used together")
    assert UsageError(": give a URL", param="to").worded(as_flag) == "--to: give a URL"
    assert as_flag("from_") == "--from" and str(MemcliError("plain")) == "plain"


def test_the_cli_says_the_flag_the_api_the_parameter(cli, memory_dir):
    assert cli("ingest", "a", input=turns(2)).exit_code == 0
    agent = memcli.Memory(memory_dir).agent("a")
    r = cli("compact", "a", "--target-tokens", "0")
    assert r.exit_code == 2 and "memcli: error: --target-tokens must be 1 or more" in r.stderr
    with pytest.raises(UsageError, match=r"^target_tokens must be 1 or more$") as info:
        agent.compact(target_tokens=0)
    assert info.value.param == "target_tokens"
    # a flag spelled unlike its parameter: the command's own option decides (fmt is --format here)
    r = cli("export", "a", "--format", "nope")
    assert r.exit_code == 2 and "--format" in r.stderr
    r = cli("show", "a", "--since", "soon")
    assert r.exit_code == 2 and "memcli: error: --since 'soon': " in r.stderr
    with pytest.raises(UsageError, match=r"^since 'soon': "):
        agent.turns(since="soon")


def test_the_mcp_tools_word_an_error_by_the_parameter(memory_dir):
    pytest.importorskip("mcp")
    from tests.test_mcp import error_text, run_session

    memcli.Memory(memory_dir).agent("a").ingest(turns(2))

    async def body(session):
        return await session.call_tool("memory_search", {"query": "question", "kind": "nope"})

    text = error_text(run_session(memory_dir, "a", body))
    assert text.endswith("kind: expected trace, episodic or semantic, got 'nope'") and "--" not in text


def test_get_answers_a_tool_call_id_as_the_command_does(cli, memory_dir):
    events = [U("q"), {"trace_type": "tool_call", "tool_name": "sh", "tool_call_id": "toolu_01ABC",
                       "tool_args": {"cmd": "ls"}},
              {"trace_type": "tool_result", "tool_call_id": "toolu_01ABC", "tool_result": "a.txt"}, A("done")]
    assert cli("ingest", "a", input=events).exit_code == 0
    got = memcli.Memory(memory_dir).agent("a").get("toolu_01ABC")
    shown = json.loads(cli("get", "a", "toolu_01ABC", "--json").stdout)
    assert got.to_dict() == shown
    assert [i["status"] for i in got.interactions] == ["SUCCESS"]


def test_memory_tier_is_checked_once_for_every_client(cli, memory_dir):
    memcli.Memory(memory_dir).agent("a").ingest(turns(1))
    r = cli("memory", "a", "--tier", "facts")
    assert r.exit_code == 2 and "memcli: error: --tier: expected episodic or semantic, got 'facts'" in r.stderr
    with pytest.raises(UsageError, match=r"^tier: expected episodic or semantic, got 'facts'$"):
        memcli.Memory(memory_dir).agent("a").memory(tier="facts")
