"""Reliability, tested the way storage engines test themselves (issue 8).

* concurrent writers of every kind (one process per event, ``--stream`` pipes, batch files) with
  a compaction loop running at the same time;
* ``kill -9`` at every step of ingest and of the compaction commit, over many seeds, at random
  moments, and during the recovery of an earlier crash;
* a hypothesis state machine over ingest / compact / uncompact / crash / torn tail / re-ingest.

CI runs a reduced version of each; ``MEMCLI_SLOW=1`` runs the full sizes of the issue (16 writers
x 500 events, 30 seeds per crash point, longer state-machine runs). After every run the checks are
the same: every acknowledged event is present exactly once across active + archive, an
unacknowledged ingest left nothing (all-or-nothing), every line of every file parses, every turn's
seq rises, and no compaction wrote its episodic item twice.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict

import orjson
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from memcli.store.harness_items import harness_item_id
from tests.helpers import agent_dir, ndjson, proc_env, run_memcli

SLOW = os.environ.get("MEMCLI_SLOW") == "1"
INGEST_POINTS = ["ingest:marker", "ingest:append", "ingest:appended", "ingest:items", "ingest:ids", "ingest:state"]
COMPACT_POINTS = ["journal", "archive", "archived", "episodic", "memory", "rewrite", "rewritten", "replaced",
                  "state"]
UNDO_POINTS = ["journal", "episodic", "memory", "rewrite", "rewritten", "replaced", "truncated", "state"]
SEEDS = 30 if SLOW else 2


# ----------------------------------------------------------------------------- the checks

def read_lines(path):
    """Every complete line parses; an unterminated tail is returned separately."""
    if not path.exists():
        return []
    raw = path.read_bytes()
    complete = raw[: raw.rfind(b"\n") + 1]
    return [orjson.loads(line) for line in complete.split(b"\n")[:-1]]


def check_store(memory_dir, agent, acknowledged: set, maybe: set = frozenset(), batches: list = (),
                torn_tail_ok: bool = False):
    """The invariants of the module docstring. ``maybe`` are ids of unacknowledged work whose
    presence is allowed; each of ``batches`` (sets of ids) must be present whole or not at all.
    ``torn_tail_ok``: the active file may end in a torn line no write has repaired yet."""
    d = agent_dir(memory_dir, agent)
    active = read_lines(d / "raw_traces.jsonl")
    archive = read_lines(d / "raw_traces_archive.jsonl")
    files = [d / "raw_traces_archive.jsonl", d / "episodic.jsonl", d / "semantic.jsonl"]
    if not torn_tail_ok:
        files.append(d / "raw_traces.jsonl")
    for path in files:
        if path.exists():
            assert path.read_bytes().endswith(b"\n") or path.stat().st_size == 0, f"{path.name} torn"
    ids = [r["id"] for r in archive + active]
    dup = [i for i, n in Counter(ids).items() if n > 1]
    assert not dup, f"duplicated: {dup[:5]}"
    present = set(ids)
    assert acknowledged <= present, f"lost: {sorted(acknowledged - present)[:5]}"
    assert present <= acknowledged | set(maybe), f"unexpected: {sorted(present - acknowledged - set(maybe))[:5]}"
    for batch in batches:
        got = batch & present
        assert not got or got == batch, f"a batch is half there: {len(got)} of {len(batch)}"
    seqs = defaultdict(list)
    for r in active:
        seqs[r["turn_id"]].append(r["seq"])
    for turn, values in seqs.items():
        assert all(a < b for a, b in zip(values, values[1:])), f"seq of {turn} does not rise: {values}"
    # the archive is in compaction order: a long turn compacted in two passes (its oldest steps,
    # later its ask and the rest) restarts there, but no (turn, seq) is ever given twice
    places = Counter((r["turn_id"], r["seq"]) for r in archive + active
                     if not set(r.get("tags") or ()) & {"system", "developer"})
    assert all(n == 1 for n in places.values()), [k for k, n in places.items() if n > 1][:5]
    episodic = read_lines(d / "episodic.jsonl")
    assert len({e["id"] for e in episodic}) == len(episodic)
    # a harness compaction's trace and its memory item are there together or not at all
    harness_traces = {harness_item_id(r["id"]) for r in archive + active if "harness_compaction" in r and r["content"]}
    assert harness_traces == {e["id"] for e in episodic if "harness_compaction" in e}
    # (an uncompact's copies of the items it brings back keep their compaction_id and say what they restore)
    per = Counter(e.get("compaction_id") for e in episodic if "rollup" not in (e.get("tags") or []) and "restores" not in e)
    assert all(n == 1 for k, n in per.items() if k), per
    return active, archive


# ----------------------------------------------------------------------------- concurrent writers

def _sized_content(rng: random.Random) -> str:
    size = int(10 ** rng.uniform(1, 4.85))  # 10 B .. 70 KB, log-uniform
    return ("w" * size)[:size]


def _writer_events(w: int, n: int, rng: random.Random):
    events = []
    for i in range(n):
        kind = i % 4
        base = {"id": f"w{w}-{i}", "content": _sized_content(rng)}
        if kind == 0:
            events.append({"trace_type": "user", **base})
        elif kind == 1:
            events.append({"trace_type": "tool_call", "tool_name": "t", "tool_call_id": f"w{w}-c{i}", **base})
        elif kind == 2:
            events.append({"trace_type": "tool_result", "tool_call_id": f"w{w}-c{i - 1}", **base})
        else:
            events.append({"trace_type": "assistant", **base})
    return events


PER_EVENT = ("import subprocess, sys\n"
             "for line in sys.stdin.buffer:\n"
             "    subprocess.run([sys.executable, '-m', 'memcli', 'ingest', 'shared'], input=line, check=True,\n"
             "                   stderr=subprocess.DEVNULL)\n")
BATCHES = ("import subprocess, sys\n"
           "lines = sys.stdin.buffer.readlines()\n"
           "for k in range(0, len(lines), 50):\n"
           "    subprocess.run([sys.executable, '-m', 'memcli', 'ingest', 'shared'], input=b''.join(lines[k:k + 50]),\n"
           "                   check=True, stderr=subprocess.DEVNULL)\n")
COMPACT_LOOP = ("import subprocess, sys, os, time\n"
                "done = 0\n"
                "while not os.path.exists(sys.argv[1]):\n"
                "    r = subprocess.run([sys.executable, '-m', 'memcli', 'compact', 'shared', '--tail-turns', '2'],\n"
                "                       capture_output=True)\n"
                "    done += r.returncode == 0 and b'compacted' in r.stderr\n"
                "    time.sleep(0.05)\n"
                "print(done)\n")


@pytest.mark.slow
def test_sixteen_writers_of_every_kind_with_a_compaction_loop(memory_dir, tmp_path):
    writers, per_writer = (16, 500) if SLOW else (16, 25)
    rng = random.Random(8)
    stop = tmp_path / "stop"
    compactor = subprocess.Popen([sys.executable, "-c", COMPACT_LOOP, str(stop)], stdout=subprocess.PIPE,
                                 env=proc_env())
    procs, expected = [], set()
    for w in range(writers):
        events = _writer_events(w, per_writer, rng)
        expected |= {e["id"] for e in events}
        if w % 3 == 0:
            cmd = [sys.executable, "-c", PER_EVENT]
        elif w % 3 == 1:
            cmd = [sys.executable, "-m", "memcli", "ingest", "shared", "--stream"]
        else:
            cmd = [sys.executable, "-c", BATCHES]
        p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             env=proc_env())
        p.stdin.write(ndjson(events))
        p.stdin.close()
        procs.append(p)
    for p in procs:
        p.wait(timeout=3000)
        assert p.returncode == 0, p.stderr.read().decode()[-500:]
    stop.touch()
    compactions = int(compactor.communicate(timeout=600)[0] or 0)
    assert run_memcli("compact", "shared", "--tail-turns", "2").returncode == 0  # one more, quiet
    active, archive = check_store(memory_dir, "shared", expected)
    assert archive, "the compaction loop archived nothing"
    print(f"{len(expected)} events from {writers} writers; {compactions} compactions ran concurrently")


# ----------------------------------------------------------------------------- crash matrix: ingest

def _batch(seed: int, prefix: str):
    rng = random.Random(seed)
    n = rng.randint(1, 40)
    events = []
    for i in range(n):
        events.append({"id": f"{prefix}-{i}", "trace_type": rng.choice(["user", "assistant"]),
                       "content": "x" * rng.choice([3, 300, 30_000, 400_000])})
    # a harness's own compaction: its memory item is written by the same commit
    events.insert(n // 2, {"id": f"{prefix}-hc", "trace_type": "user", "content": "summary " + "s" * 2000,
                           "tags": ["compact_summary"], "harness_compaction": {"harness": "claude-code"}})
    return events


@pytest.mark.parametrize("point", INGEST_POINTS)
def test_ingest_killed_at_each_step_over_many_seeds(memory_dir, point):
    acknowledged, batches, maybe = set(), [], set()
    for seed in range(SEEDS):
        good = _batch(seed, f"ok{seed}")
        assert run_memcli("ingest", "a", input=good).returncode == 0
        acknowledged |= {e["id"] for e in good}
        doomed = _batch(1000 + seed, f"kill{seed}")
        nth = random.Random(seed).randint(1, 2) if point == "ingest:append" else 1
        crashed = run_memcli("ingest", "a", input=doomed, env={"MEMCLI_CRASH_AT": f"{point}@{nth}"})
        ids = {e["id"] for e in doomed}
        if crashed.returncode == 0:  # the crash point was not reached (a small batch: one block)
            acknowledged |= ids
        else:
            assert crashed.returncode == -signal.SIGKILL
            batches.append(ids)
            maybe |= ids
    # the next writer recovers: re-sending an acknowledged event adds nothing (an empty input
    # no longer opens the store at all, so it cannot be the command that recovers)
    assert run_memcli("ingest", "a", input=good[:1]).returncode == 0
    check_store(memory_dir, "a", acknowledged, maybe, batches)
    # an interrupted ingest is rolled back whole: nothing of a killed batch remains
    present = {r["id"] for r in read_lines(agent_dir(memory_dir, "a") / "raw_traces.jsonl")}
    assert not (present & maybe)


@pytest.mark.parametrize("first", ["ingest:appended", "ingest:state"])
@pytest.mark.parametrize("second", ["ingest-recovery:truncated", "ingest-recovery:state"])
def test_crash_during_the_recovery_of_an_interrupted_ingest(memory_dir, first, second):
    good = _batch(1, "ok")
    assert run_memcli("ingest", "a", input=good).returncode == 0
    doomed = _batch(2, "doomed")
    assert run_memcli("ingest", "a", input=doomed, env={"MEMCLI_CRASH_AT": first}).returncode == -signal.SIGKILL
    # the next writer (re-sending an acknowledged event) is killed while it recovers
    assert run_memcli("ingest", "a", input=good[:1], env={"MEMCLI_CRASH_AT": second}).returncode == -signal.SIGKILL
    after = run_memcli("ingest", "a", input=[{"id": "late", "trace_type": "user", "content": "x"}])
    assert after.returncode == 0
    check_store(memory_dir, "a", {e["id"] for e in good} | {"late"})


# ----------------------------------------------------------------------------- crash matrix: compaction

def _conversation(seed: int, turns: int):
    rng = random.Random(seed)
    events = [{"id": f"s{seed}-sys", "trace_type": "user", "content": "You are terse.", "tags": ["system"]}]
    for t in range(turns):
        events += [
            {"id": f"s{seed}-{t}-u", "trace_type": "user", "content": f"ask {t} " + "q" * rng.randint(1, 3000)},
            {"id": f"s{seed}-{t}-c", "trace_type": "tool_call", "tool_name": "sh", "tool_call_id": f"c{t}",
             "tool_args": {"cmd": f"ls {t}"}},
            {"id": f"s{seed}-{t}-r", "trace_type": "tool_result", "tool_call_id": f"c{t}",
             "tool_result": "r" * rng.randint(1, 5000)},
            {"id": f"s{seed}-{t}-a", "trace_type": "assistant", "content": f"done {t}"},
        ]
    return events


@pytest.mark.slow
@pytest.mark.parametrize("step", COMPACT_POINTS)
def test_compaction_killed_at_each_step_over_many_seeds(memory_dir, step):
    for seed in range(SEEDS):
        agent = f"c{seed}"
        events = _conversation(seed, random.Random(seed).randint(6, 14))
        assert run_memcli("ingest", agent, input=events).returncode == 0
        nth = random.Random(seed).randint(1, 3) if step in ("archive", "rewrite") else 1
        env = {"MEMCLI_CRASH_AT": f"compact:{step}@{nth}", "MEMCLI_TEST_COPY_BLOCK": str(random.Random(seed).choice([97, 500, 4096]))}
        crashed = run_memcli("compact", agent, "--tail-turns", "2", env=env)
        assert crashed.returncode in (-signal.SIGKILL, 0)
        late = {"id": f"late{seed}", "trace_type": "user", "content": "after the crash"}
        assert run_memcli("ingest", agent, input=[late]).returncode == 0  # finishes the compaction
        assert not (agent_dir(memory_dir, agent) / ".compaction.journal").exists()
        check_store(memory_dir, agent, {e["id"] for e in events} | {late["id"]})
        # and compacting again still works
        assert run_memcli("compact", agent, "--tail-turns", "1").returncode == 0
        check_store(memory_dir, agent, {e["id"] for e in events} | {late["id"]})


def test_kill_at_random_moments(memory_dir):
    rng = random.Random(42)
    acknowledged, maybe, batches = set(), set(), []
    runs = 60 if SLOW else 8
    for i in range(runs):
        if rng.random() < 0.5:
            events = _batch(i, f"r{i}")
            proc = subprocess.Popen([sys.executable, "-m", "memcli", "ingest", "a"], stdin=subprocess.PIPE,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=proc_env())
            proc.stdin.write(ndjson(events))
            proc.stdin.close()
            ids = {e["id"] for e in events}
        else:
            proc = subprocess.Popen([sys.executable, "-m", "memcli", "compact", "a", "--tail-turns", "1"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    env=proc_env({"MEMCLI_TEST_COPY_BLOCK": "211"}))
            ids = set()
        time.sleep(rng.uniform(0.05, 0.6))
        proc.send_signal(signal.SIGKILL)
        code = proc.wait()
        if code == 0:
            acknowledged |= ids
        elif ids:
            maybe |= ids
            batches.append(ids)
    # the next writer recovers the store first (an empty input would not open it)
    settle = {"id": "settle", "trace_type": "user", "content": "after the kills"}
    assert run_memcli("ingest", "a", input=[settle]).returncode == 0
    check_store(memory_dir, "a", acknowledged | {"settle"}, maybe, batches)


# ----------------------------------------------------------------------------- state machine

class StoreMachine(RuleBasedStateMachine):
    """Random sequences of ingest (new and re-sent ids), compaction, crashes and torn tails,
    checked after every step against a model of the acknowledged events."""

    def __init__(self):
        super().__init__()
        import tempfile

        self.tmp = tempfile.mkdtemp(prefix="memcli-sm-")
        self.dir = os.path.join(self.tmp, "memory")
        self.acked: set = set()
        self.maybe: set = set()
        self.sent: list = []
        self.n = 0

    def _events(self, count, data_bytes):
        events = []
        for _ in range(count):
            self.n += 1
            kind = ("user", "assistant", "user", "assistant")[self.n % 4]
            events.append({"id": f"e{self.n}", "trace_type": kind, "content": "z" * data_bytes})
        return events

    def _ingest_in_process(self, events):
        from memcli.ingest.pipeline import ingest_events
        from memcli.store.agent import AgentStore

        ingest_events(AgentStore(self.dir, "m"), ((i + 1, dict(e)) for i, e in enumerate(events)))

    @initialize()
    def start(self):
        self._ingest_in_process([{"id": "e0", "trace_type": "user", "content": "first"}])
        self.acked.add("e0")

    @rule(count=st.integers(1, 6), size=st.sampled_from([1, 200, 5000]))
    def ingest(self, count, size):
        events = self._events(count, size)
        self._ingest_in_process(events)
        self.acked |= {e["id"] for e in events}
        self.sent += events

    @rule(count=st.integers(1, 5), size=st.sampled_from([1, 200, 5000]), answered=st.booleans())
    def steps(self, count, size, answered):
        """Steps inside the open turn (no user trace): a note, a call, and usually its result."""
        events = []
        for k in range(count):
            self.n += 1
            events.append({"id": f"e{self.n}", "trace_type": "assistant", "content": "s" * size})
            events.append({"id": f"e{self.n}c", "trace_type": "tool_call", "tool_name": "run",
                           "tool_call_id": f"k{self.n}", "tool_args": {"command": "make"}})
            if answered or k < count - 1:
                events.append({"id": f"e{self.n}r", "trace_type": "tool_result", "tool_call_id": f"k{self.n}",
                               "tool_result": "r" * size})
        self._ingest_in_process(events)
        self.acked |= {e["id"] for e in events}
        self.sent += events

    @rule(data=st.data())
    def reingest(self, data):
        if self.sent:
            again = data.draw(st.lists(st.sampled_from(self.sent), min_size=1, max_size=4))
            self._ingest_in_process(again)

    @rule(tail=st.integers(0, 3), keep=st.integers(0, 3), budget=st.sampled_from([None, 800, 3000]))
    def compact(self, tail, keep, budget):
        from memcli.compaction.compactor import compact
        from memcli.compaction.policy import CompactionPolicy
        from memcli.errors import CompactionError

        try:  # a target under what must stay is refused (nothing written): that is fine here
            compact(self.dir, "m", policy=CompactionPolicy(tail_turns=tail, keep_steps=keep, target_tokens=budget))
        except CompactionError:
            pass

    @rule()
    def uncompact(self):
        from memcli.compaction.undo import uncompact
        from memcli.errors import CompactionError

        try:  # nothing left to undo is refused: fine here
            uncompact(self.dir, "m")
        except CompactionError:
            pass

    @rule(step=st.sampled_from(UNDO_POINTS))
    def crash_uncompact(self, step):
        run_memcli("--dir", self.dir, "uncompact", "m", env={"MEMCLI_CRASH_AT": f"uncompact:{step}"})

    @rule(point=st.sampled_from(INGEST_POINTS), count=st.integers(1, 3))
    def crash_ingest(self, point, count):
        events = self._events(count, 3000)
        r = run_memcli("--dir", self.dir, "ingest", "m", input=events, env={"MEMCLI_CRASH_AT": point})
        if r.returncode == 0:
            self.acked |= {e["id"] for e in events}
        else:
            self.maybe |= {e["id"] for e in events}

    @rule(step=st.sampled_from(COMPACT_POINTS), in_turn=st.booleans())
    def crash_compact(self, step, in_turn):
        # in_turn: a small target and one kept step, so the window takes steps of the open turn
        extra = ["--target-tokens", "1500", "--keep-steps", "1"] if in_turn else []
        run_memcli("--dir", self.dir, "compact", "m", "--tail-turns", "1", *extra,
                   env={"MEMCLI_CRASH_AT": f"compact:{step}"})

    @rule(cut=st.integers(1, 40))
    def torn_tail(self, cut):
        path = os.path.join(self.dir, "agents", "m", "raw_traces.jsonl")
        with open(path, "ab") as f:
            f.write(b'{"id": "torn", "trace_type": "user", "content": "' + b"t" * cut)

    @invariant()
    def consistent(self):
        from pathlib import Path

        from memcli.store.agent import AgentStore

        AgentStore(self.dir, "m").recover_if_needed()  # what the next command would do
        check_store(Path(self.dir), "m", self.acked, self.maybe, torn_tail_ok=True)

    def teardown(self):
        import shutil

        shutil.rmtree(self.tmp, ignore_errors=True)


StoreMachine.TestCase.settings = settings(
    max_examples=40 if SLOW else 6, stateful_step_count=25 if SLOW else 10, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
test_store_state_machine = StoreMachine.TestCase
