"""Crash safety of compaction (docs/design.md §3): a ``memcli compact`` process SIGKILLed at every step
of the journaled commit, at random moments, and during the recovery of an earlier crash. After
the next command, every ingested trace is in exactly one of active/archive, no id is duplicated,
every line of every file parses, and each compaction wrote its episodic item at most once."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from collections import Counter

import orjson
import pytest

from tests.compact_fixtures import conversation, long_turn
from tests.helpers import agent_dir, proc_env, run_memcli

STEPS = ["journal", "archive", "archived", "episodic", "memory", "rewrite", "rewritten", "replaced", "state"]


def _lines(path):
    if not path.exists():
        return []
    raw = path.read_bytes()
    assert raw == b"" or raw.endswith(b"\n"), f"{path.name} ends in a torn line"
    return [orjson.loads(line) for line in raw.split(b"\n")[:-1]]  # every line parses


def check_invariants(memory_dir, agent, expected_ids):
    d = agent_dir(memory_dir, agent)
    assert not (d / ".compaction.journal").exists()
    active = [r["id"] for r in _lines(d / "raw_traces.jsonl")]
    archive = [r["id"] for r in _lines(d / "raw_traces_archive.jsonl")]
    both = active + archive
    duplicated = [i for i, n in Counter(both).items() if n > 1]
    assert not duplicated, f"in more than one place or twice: {duplicated[:5]}"
    assert set(both) == expected_ids
    episodic = _lines(d / "episodic.jsonl")
    semantic = _lines(d / "semantic.jsonl")
    for items in (episodic, semantic):
        assert len({i["id"] for i in items}) == len(items)
    per_compaction = Counter(e["compaction_id"] for e in episodic if "rollup" not in e["tags"] and "restores" not in e)
    assert all(n == 1 for n in per_compaction.values()), per_compaction
    # every compaction that archived something left its summary
    return active, archive, episodic


def _setup(memory_dir, turns=12, agent="a"):
    events = conversation(turns, big=200)
    for e in events[5:9]:  # a preference to produce a fact
        if e["trace_type"] == "user":
            e["content"] += " Always answer in English."
    result = run_memcli("ingest", agent, input=events)
    assert result.returncode == 0, result.stderr
    return {e["id"] for e in events}


def _recover(agent="a", env=None):
    # any command that opens the agent for writing recovers; a one-event ingest is the common case
    return run_memcli("compact", agent, "--dry-run", env=env)


@pytest.mark.parametrize("step", STEPS)
def test_kill_at_every_step_then_recover(memory_dir, step):
    ids = _setup(memory_dir)
    env = {"MEMCLI_CRASH_AT": f"compact:{step}", "MEMCLI_TEST_COPY_BLOCK": "700"}
    crashed = run_memcli("compact", "a", env=env)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    d = agent_dir(memory_dir, "a")
    assert (d / ".compaction.journal").exists()
    recovered = _recover()
    assert recovered.returncode == 0, recovered.stderr
    assert "finished an interrupted compaction" in recovered.stderr.decode() or step == "state"
    active, archive, episodic = check_invariants(memory_dir, "a", ids)
    # roll forward: the journaled summary is in, the window is archived
    assert len(episodic) == 1 and episodic[0]["turn_ids"][0] == "turn_0001"
    assert len(archive) == 8 * 4 and "t-sys" in active
    # and the agent keeps working: ingest, then another compaction
    assert run_memcli("ingest", "a", input=conversation(3, prefix="n", system=False)).returncode == 0
    assert run_memcli("compact", "a", "--tail-turns", "1").returncode == 0
    check_invariants(memory_dir, "a", ids | {e["id"] for e in conversation(3, prefix="n", system=False)})


def _one_long_turn(memory_dir, steps=40, agent="a"):
    """One turn of ``steps`` steps (a note, a call, its result), the open turn: only steps can move."""
    events = long_turn(steps)
    assert run_memcli("ingest", agent, input=events).returncode == 0
    return {e["id"] for e in events}


@pytest.mark.parametrize("step", STEPS)
def test_kill_at_every_step_of_a_step_window(memory_dir, step):
    """Compaction inside a turn (the oldest steps of the open turn move, its ask stays) is
    crash-safe at every step of the commit, like whole turns."""
    ids = _one_long_turn(memory_dir)
    args = ("compact", "a", "--target-tokens", "2000")
    env = {"MEMCLI_CRASH_AT": f"compact:{step}", "MEMCLI_TEST_COPY_BLOCK": "700"}
    crashed = run_memcli(*args, env=env)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    recovered = _recover()
    assert recovered.returncode == 0, recovered.stderr
    active, archive, episodic = check_invariants(memory_dir, "a", ids)
    assert len(episodic) == 1 and "steps 1–" in episodic[0]["summary"]
    assert active[0] == "ask" and active[-1] == "r39" and archive[0] == "n0"
    calls = {i[1:] for i in archive if i.startswith("c")}
    assert calls == {i[1:] for i in archive if i.startswith("r")}  # a step is never split
    # and the turn goes on: more steps, another compaction
    more = [{"id": "late-n", "trace_type": "assistant", "content": "Done."}]
    assert run_memcli("ingest", "a", input=more).returncode == 0
    assert run_memcli(*args).returncode == 0
    check_invariants(memory_dir, "a", ids | {"late-n"})


def test_torn_archive_line_from_a_kill_mid_copy(memory_dir):
    ids = _setup(memory_dir)
    env = {"MEMCLI_CRASH_AT": "compact:archive@3", "MEMCLI_TEST_COPY_BLOCK": "333"}
    assert run_memcli("compact", "a", env=env).returncode == -signal.SIGKILL
    archive = (agent_dir(memory_dir, "a") / "raw_traces_archive.jsonl").read_bytes()
    assert archive and not archive.endswith(b"\n")  # the kill tore a line
    assert _recover().returncode == 0
    check_invariants(memory_dir, "a", ids)


@pytest.mark.parametrize("first,second", [
    ("archive@2", "archive@2"),
    ("archived", "memory"),
    ("episodic", "rewrite@2"),
    ("rewritten", "replaced"),
])
def test_crash_during_recovery_of_an_earlier_crash(memory_dir, first, second):
    ids = _setup(memory_dir)
    block = {"MEMCLI_TEST_COPY_BLOCK": "500"}
    assert run_memcli("compact", "a", env={"MEMCLI_CRASH_AT": f"compact:{first}", **block}).returncode == -signal.SIGKILL
    # the next command dies while finishing it
    again = run_memcli("ingest", "a", input=[{"id": "late-1", "trace_type": "user", "content": "hello?"}],
                       env={"MEMCLI_CRASH_AT": f"compact:{second}", **block})
    assert again.returncode == -signal.SIGKILL
    assert (agent_dir(memory_dir, "a") / ".compaction.journal").exists()
    third = run_memcli("ingest", "a", input=[{"id": "late-1", "trace_type": "user", "content": "hello?"}])
    assert third.returncode == 0, third.stderr
    assert "finished an interrupted compaction" in third.stderr.decode()
    check_invariants(memory_dir, "a", ids | {"late-1"})


@pytest.mark.slow
def test_kill_at_random_moments(memory_dir):
    """Kill a compacting process after a random delay, many times over one agent that keeps
    growing; every round is followed by the checks."""
    rng = random.Random(20240607)
    expected = _setup(memory_dir, turns=60)
    rounds = 12
    kills = 0
    for r in range(rounds):
        more = conversation(15, prefix=f"r{r}", system=False, big=rng.choice([0, 300, 3000]))
        assert run_memcli("ingest", "a", input=more).returncode == 0
        expected |= {e["id"] for e in more}
        proc = subprocess.Popen([sys.executable, "-m", "memcli", "compact", "a", "--tail-turns", "2"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=proc_env(
                                    {"MEMCLI_TEST_COPY_BLOCK": str(rng.choice([256, 4096, 1 << 20]))}))
        time.sleep(rng.uniform(0.15, 0.9))
        if proc.poll() is None:
            proc.kill()
            kills += 1
        proc.wait(timeout=60)
        recovered = _recover()
        assert recovered.returncode == 0, recovered.stderr
        check_invariants(memory_dir, "a", expected)
    assert kills >= 1  # at least some rounds really were interrupted
