"""An interrupted first import leaves no agent behind, and ``doctor`` calls an interrupted ingest
what it is (issue 17).

The first ingest of an agent is killed (SIGKILL, through the store's crash points) after it
appended some or all of its lines but before it was acknowledged: ``agents`` does not list the
agent, ``stats`` says it does not exist, ``doctor`` warns "interrupted ingest: will be rolled
back; --repair rolls it back now" (exit 0: nothing is broken), and both ``--repair`` and the next
ingest roll it back to nothing — the next ingest then gives what a clean one gives.
"""

from __future__ import annotations

import signal

import orjson
import pytest

from tests.helpers import agent_dir, read_jsonl

EVENTS = [{"trace_type": "user" if i % 2 == 0 else "assistant", "content": f"event {i} " + "x" * 200}
          for i in range(400)]
STEPS = ["ingest:marker", "ingest:append", "ingest:appended", "ingest:ids", "ingest:state"]


def _crash_first_import(memcli_proc, step):
    done = memcli_proc("ingest", "fresh", input=EVENTS, env={"MEMCLI_CRASH_AT": step})
    assert done.returncode == -signal.SIGKILL


@pytest.mark.parametrize("step", STEPS)
def test_an_interrupted_first_import_leaves_no_agent(cli, memcli_proc, memory_dir, step):
    _crash_first_import(memcli_proc, step)
    assert (agent_dir(memory_dir, "fresh") / ".ingest.pending").exists()
    listed = cli("agents", "--json")
    assert listed.exit_code == 0 and orjson.loads(listed.stdout) == []
    for command in (("stats", "fresh"), ("turns", "fresh"), ("show", "fresh")):
        result = cli(*command)
        assert result.exit_code == 3 and "no agent 'fresh'" in result.stderr, command
    # the next ingest rolls it back and starts the agent afresh
    assert cli("ingest", "fresh", input=EVENTS[:3]).exit_code == 0
    assert [r["content"] for r in read_jsonl(agent_dir(memory_dir, "fresh") / "raw_traces.jsonl")] == [
        e["content"] for e in EVENTS[:3]]
    assert [r["turn_id"] for r in read_jsonl(agent_dir(memory_dir, "fresh") / "raw_traces.jsonl")] == [
        "turn_0001", "turn_0001", "turn_0002"]
    assert [a["agent"] for a in orjson.loads(cli("agents", "--json").stdout)] == ["fresh"]


def test_doctor_calls_it_an_interrupted_ingest_and_repair_removes_it(cli, memcli_proc, memory_dir):
    _crash_first_import(memcli_proc, "ingest:appended")
    root = agent_dir(memory_dir, "fresh")
    result = cli("doctor", "fresh")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith(
        f"{root / '.ingest.pending'}: warning: interrupted ingest: will be rolled back; --repair rolls it back now ("
    )
    assert "the agent's first import: no agent remains" in result.stdout
    assert (root / ".ingest.pending").exists() and (root / "raw_traces.jsonl").stat().st_size > 0  # only looked
    repaired = cli("doctor", "fresh", "--repair")
    assert repaired.exit_code == 0, repaired.stderr
    assert "rolled back an interrupted ingest of agent 'fresh' (its first: the agent has no data)" in repaired.stderr
    assert "no agent remains" in repaired.stderr
    assert not (root / ".ingest.pending").exists() and not (root / "raw_traces.jsonl").exists()
    assert orjson.loads(cli("agents", "--json").stdout) == []
    assert cli("doctor", "fresh").exit_code == 3


def test_a_reader_rolls_back_a_later_interrupted_ingest_and_doctor_then_finds_nothing(cli, memcli_proc, memory_dir):
    assert memcli_proc("ingest", "a", input=EVENTS[:2]).returncode == 0
    crashed = memcli_proc("ingest", "a", input=EVENTS[2:], env={"MEMCLI_CRASH_AT": "ingest:appended"})
    assert crashed.returncode == -signal.SIGKILL
    before = cli("doctor", "a", "--json")
    assert before.exit_code == 0 and [f["code"] for f in orjson.loads(before.stdout)] == ["interrupted-ingest"]
    assert [a["active"] for a in orjson.loads(cli("agents", "--json").stdout)] == [2]
    assert orjson.loads(cli("stats", "a", "--json").stdout)["traces"]["active"]["total"] == 2
    after = cli("doctor", "a")
    assert after.exit_code == 0 and "no problems" in after.stderr
