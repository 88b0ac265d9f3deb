"""Concurrent writers: nothing lost, nothing duplicated, no torn or interleaved line, and every
turn's seq strictly increasing. (The heavier 16-writer run with compaction lives in
test_reliability.py.)"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from collections import defaultdict

import orjson
import pytest

from tests.helpers import agent_dir, ndjson, proc_env, read_jsonl, run_memcli
from tests.test_reliability import _writer_events
from tests.test_reliability import check_store as check_tiers


def check_store(memory_dir, agent, expected_ids):
    raw = (agent_dir(memory_dir, agent) / "raw_traces.jsonl").read_bytes()
    assert raw.endswith(b"\n")
    records = [orjson.loads(line) for line in raw.split(b"\n")[:-1]]  # every line parses
    ids = [r["id"] for r in records]
    assert len(ids) == len(set(ids)), "duplicated"
    assert set(ids) == expected_ids, "lost"
    seqs = defaultdict(list)
    for r in records:
        seqs[r["turn_id"]].append(r["seq"])
    for turn, values in seqs.items():
        assert values == sorted(set(values)), f"seq not strictly increasing in {turn}: {values}"
    return records


def run_writers(memory_dir, writers: int, per_writer: int, env_extra=None, allow_fail=False):
    procs = []
    expected = set()
    for w in range(writers):
        events = _writer_events(w, per_writer, random.Random(w))
        expected |= {e["id"] for e in events}
        if w % 2 == 0:  # one process per event, as shell scripts do
            script = ("import subprocess, sys\n"
                      "for line in sys.stdin.buffer:\n"
                      "    subprocess.run([sys.executable, '-m', 'memcli', 'ingest', 'shared'], input=line, check=True)\n")
            cmd = [sys.executable, "-c", script]
        else:  # a long-lived --stream pipe
            cmd = [sys.executable, "-m", "memcli", "ingest", "shared", "--stream"]
        p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             env=proc_env(env_extra))
        procs.append(p)
        try:
            p.stdin.write(ndjson(events))
            p.stdin.close()
        except BrokenPipeError:   # the writer died before reading all its input
            if not allow_fail:
                raise
            for q in procs:
                q.kill()
                q.wait()
            raise AssertionError("a writer failed before reading its input: "
                                 + p.stderr.read().decode()[-300:]) from None
    for p in procs:
        p.wait(timeout=600)
        if p.returncode != 0 and allow_fail:
            raise AssertionError("a writer failed: " + p.stderr.read().decode()[-300:])
        assert p.returncode == 0, p.stderr.read().decode()
    return expected


@pytest.mark.slow
def test_eight_writer_processes_lose_and_duplicate_nothing(memory_dir):
    expected = run_writers(memory_dir, writers=8, per_writer=12)
    check_store(memory_dir, "shared", expected)


@pytest.mark.skipif(os.environ.get("CI_SKIP_LOCK_BYPASS") == "1", reason="disabled")
def test_without_the_lock_the_same_run_goes_wrong(memory_dir):
    """Shows the test above can fail: with locking bypassed, writers overwrite each other's
    state and sequence numbers collide."""
    failures = 0
    for _attempt in range(3):
        agent_root = agent_dir(memory_dir, "shared")
        if agent_root.exists():
            import shutil

            shutil.rmtree(agent_root)
        try:
            expected = run_writers(memory_dir, writers=8, per_writer=12, env_extra={"MEMCLI_UNSAFE_NO_LOCK": "1"},
                                   allow_fail=True)
            check_store(memory_dir, "shared", expected)
        except AssertionError:
            failures += 1
            break
    assert failures, "bypassing the lock should break the invariants"


@pytest.mark.slow
def test_parallel_harness_hooks_of_two_sessions_hold_every_event_once(memory_dir, tmp_path):
    """Claude Code fires Stop, SubagentStop and PreCompact hooks of parallel sessions at once
    (memcli hook, one process each, the transcript growing under them): the agent lock keeps them
    apart — each session's agent ends with every event of its transcript exactly once."""
    import memcli
    from memcli.sync import get_source
    from memcli.sync.engine import session_agent
    from tests.helpers import CORPORA

    sources = [CORPORA / "claude-code" / "ccviewer_fe5e1c67_todo-app_438ev.jsonl",
               CORPORA / "claude-code" / "fasthooks_sample_main_transcript_compaction.jsonl"]
    if not all(p.is_file() for p in sources):
        pytest.skip("../shared/corpora is not here")
    sessions = []
    for i, source in enumerate(sources):
        lines = source.read_bytes().splitlines(keepends=True)
        transcript = tmp_path / f"s{i}.jsonl"
        transcript.write_bytes(b"".join(lines[: len(lines) // 3]))
        payload = orjson.dumps({"session_id": f"sess-{i}", "transcript_path": str(transcript), "cwd": str(tmp_path)})
        source = get_source("claude-code")  # the agent is the one `memcli sync` names
        sessions.append((lines, transcript, payload, session_agent(source, source.session_of(str(transcript)), {})[0]))

    def fire():
        procs = [subprocess.Popen([sys.executable, "-m", "memcli", "hook", "claude-code", event],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  env=proc_env({"MEMCLI_DIR": str(memory_dir)}))
                 for _lines, _t, _p, _a in sessions for event in ("Stop", "SubagentStop", "PreCompact")]
        for p, (_lines, _t, payload, _a) in zip(procs, [s for s in sessions for _ in range(3)]):
            p.stdin.write(payload)
            p.stdin.close()
        for p in procs:
            p.wait(timeout=300)
            assert p.returncode == 0, p.stderr.read().decode()
            assert p.stdout.read() == b""

    fire()
    for lines, transcript, _payload, _agent in sessions:  # the harness writes on: more lines, one torn
        cut = 2 * len(lines) // 3
        transcript.write_bytes(b"".join(lines[:cut]) + lines[cut][:10])
    fire()
    for lines, transcript, _payload, _agent in sessions:
        transcript.write_bytes(b"".join(lines))
    fire()
    for i, (_lines, transcript, _payload, agent) in enumerate(sessions):
        reference = memcli.Memory(tmp_path / f"ref{i}").agent("r")
        assert reference.ingest(transcript, "claude-code").appended > 0
        expected = {r["id"] for r in read_jsonl(agent_dir(tmp_path / f"ref{i}", "r") / "raw_traces.jsonl")}
        check_store(memory_dir, agent, expected)


UNDO_LOOP = ("import subprocess, sys, os\n"
             "counts = {'compacted': 0, 'undid': 0}\n"
             "while not os.path.exists(sys.argv[1]):\n"
             "    for args in (['compact', 'shared', '--tail-turns', '1'], ['compact', 'shared', '--tail-turns', '1'],\n"
             "                 ['uncompact', 'shared']):\n"
             "        r = subprocess.run([sys.executable, '-m', 'memcli', *args], capture_output=True)\n"
             "        for word in counts:\n"
             "            counts[word] += r.returncode == 0 and word.encode() in r.stderr\n"
             "print(counts['compacted'], counts['undid'])\n")


@pytest.mark.slow
def test_writers_with_compactions_and_uncompactions_running(memory_dir, tmp_path):
    """Ingest from several processes while compactions and their undos run on the same agent:
    every event is in exactly one of active/archive, every turn's seq rises in the active file."""
    stop = tmp_path / "stop"
    loop = subprocess.Popen([sys.executable, "-c", UNDO_LOOP, str(stop)], stdout=subprocess.PIPE, env=proc_env())
    try:
        expected = run_writers(memory_dir, writers=4, per_writer=16)
    finally:
        stop.touch()
        compacted, undid = map(int, loop.communicate(timeout=600)[0].split())
    while run_memcli("uncompact", "shared").returncode == 0:   # undo what stands: back to one file
        pass
    check_tiers(memory_dir, "shared", expected)
    check_store(memory_dir, "shared", expected)                  # all back in the active file
    assert compacted and undid, (compacted, undid)


def _long_results(start: int, turns: int) -> list[dict]:
    """``turns`` turns, each an ask and a command whose 2,000-character log failed."""
    events = []
    for i in range(start, start + turns):
        log = "\n".join(f"tests/test_{i}_{j}.py::test_case PASSED" for j in range(50)) + f"\nFAILED test_{i}\nexit code 1"
        events += [{"id": f"u{i}", "trace_type": "user", "content": f"step {i}"},
                   {"id": f"c{i}", "trace_type": "tool_call", "tool_name": "Bash", "tool_call_id": f"k{i}",
                    "tool_args": {"command": f"pytest {i}"}},
                   {"id": f"r{i}", "trace_type": "tool_result", "tool_name": "Bash", "tool_call_id": f"k{i}",
                    "tool_result": log}]
    return events


@pytest.mark.slow
def test_two_summarize_results_and_an_ingest_at_once_summarize_each_result_exactly_once(memory_dir):
    first = _long_results(0, 60)
    assert run_memcli("ingest", "shared", input=first).returncode == 0
    args = [sys.executable, "-m", "memcli", "summarize-results", "shared", "--min-chars", "1000", "--json"]
    runs = [subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=proc_env()) for _ in range(2)]
    late = _long_results(60, 30)
    ingest = subprocess.Popen([sys.executable, "-m", "memcli", "ingest", "shared", "--stream"], stdin=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=proc_env())
    ingest.communicate(ndjson(late), timeout=300)
    reports = []
    for p in runs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()
        reports.append(orjson.loads(out))
    assert ingest.returncode == 0
    check_store(memory_dir, "shared", {e["id"] for e in first + late})          # the ingest lost nothing
    path = agent_dir(memory_dir, "shared") / "result_summaries.jsonl"
    stored = [r["trace_id"] for r in read_jsonl(path)]
    assert len(stored) == len(set(stored)), "a result summarized twice"
    # each report claims exactly the summaries it stored: together, every one stored, once
    claimed = [s["trace_id"] for r in reports for s in r["summarized"]]
    assert sorted(claimed) == sorted(stored)
    assert {f"r{i}" for i in range(59)} <= set(stored)       # every old result of the first session
    again = run_memcli("summarize-results", "shared", "--min-chars", "1000", "--json")   # the rest: the late ones
    assert again.returncode == 0
    stored = [r["trace_id"] for r in read_jsonl(path)]
    assert len(stored) == len(set(stored)) and set(stored) == {f"r{i}" for i in range(89)}   # the newest turn is 0 old


@pytest.mark.slow
def test_summarize_results_killed_at_any_moment_leaves_whole_summaries_once(memory_dir):
    assert run_memcli("ingest", "shared", input=_long_results(0, 200)).returncode == 0
    path = agent_dir(memory_dir, "shared") / "result_summaries.jsonl"
    rng = random.Random(7)
    args = [sys.executable, "-m", "memcli", "summarize-results", "shared", "--min-chars", "1000"]
    for _ in range(6):
        p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=proc_env())
        try:
            p.wait(timeout=rng.uniform(0.2, 2.5))
        except subprocess.TimeoutExpired:
            p.kill()                      # kill -9, wherever it is
            p.wait()
    assert run_memcli("summarize-results", "shared", "--min-chars", "1000").returncode == 0
    stored = [r["trace_id"] for r in read_jsonl(path)]         # every line whole (read_jsonl parses each)
    assert len(stored) == len(set(stored)) and set(stored) == {f"r{i}" for i in range(199)}
    assert run_memcli("ingest", "shared", input=[{"trace_type": "user", "content": "after"}]).returncode == 0
