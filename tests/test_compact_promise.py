"""The promise of ``compact --target-tokens`` on stores a reviewer built to break it: after the
compaction the working snapshot fits the target, or the command exits 1 before writing anything;
and what the plan predicts (``--dry-run``'s ``tokens_after``) is what the snapshot costs afterwards
(the one count, :func:`memcli.snapshot.assemble.working_tokens`)."""

from __future__ import annotations

import orjson
import pytest

import memcli
from memcli.errors import UsageError
from memcli.snapshot.assemble import working_tokens
from memcli.store.agent import AgentStore
from tests.helpers import agent_dir, tree_digest


def _kept_or_refused(cli, memory_dir, agent: str, target: int, *options) -> dict:
    """``compact --target-tokens target``, first with --dry-run: the promise holds either way.
    The real run's result."""
    before = tree_digest(agent_dir(memory_dir, agent))
    dry = cli("compact", agent, "--json", "--dry-run", "--target-tokens", target, *options)
    assert tree_digest(agent_dir(memory_dir, agent)) == before
    real = cli("compact", agent, "--json", "--target-tokens", target, *options)
    assert real.exit_code == dry.exit_code, (dry.stderr, real.stderr)
    if real.exit_code:
        assert "nothing was written" in real.stderr
        assert tree_digest(agent_dir(memory_dir, agent)) == before
        return {}
    done = orjson.loads(real.stdout)
    assert done["compacted"], done
    after = working_tokens(AgentStore(memory_dir, agent))
    assert orjson.loads(dry.stdout)["tokens_after"] == done["tokens_after"] == after
    assert after <= target
    return done


def test_pinned_facts_older_than_the_last_twenty_are_counted_in_the_bundle(cli, memory_dir):
    """The snapshot carries every pinned fact and the last 20 others; the compactor counted the
    last 20 facts alone, so with 3 long pinned facts under 18 plain ones (and the facts the
    compaction adds) it predicted 1,692 tokens and left 2,010 at --target-tokens 1,900, exit 0."""
    events = []
    for t in range(10):
        events += [{"trace_type": "user", "content": f"Task {t}: update module {t}. I prefer tabs over spaces "
                                                     f"number {t} always in file_{t}.py."},
                   {"trace_type": "tool_call", "tool_name": "Bash", "tool_call_id": f"c{t}",
                    "tool_args": {"command": f"cat f{t}"}},
                   {"trace_type": "tool_result", "tool_name": "Bash", "tool_call_id": f"c{t}",
                    "tool_result": "x " * 400},
                   {"trace_type": "assistant", "content": f"ok {t}"}]
    assert cli("ingest", "a", input=events).exit_code == 0
    for i in range(3):
        assert cli("remember", "a", f"PINNED rule {i}: " + "be careful with the database migrations " * 25,
                   "--pin").exit_code == 0
    for i in range(18):
        assert cli("remember", "a", f"plain fact {i}").exit_code == 0
    done = _kept_or_refused(cli, memory_dir, "a", 1900)
    assert done["facts_added"] > 2   # the pinned facts fell out of the last 20
    facts = AgentStore(memory_dir, "a").live_memory()[1]
    assert sum(1 for f in facts if "pinned" in f.tags) == 3 and len(facts) - 3 > 20


def test_an_assistant_trace_tagged_developer_is_no_instruction_and_moves_with_its_step(cli, memory_dir):
    """Only a user trace tagged system/developer is an instruction (the snapshot renders it as
    system text; memcli.models.is_instruction). The planner held an assistant one too as an
    instruction that never moves, yet credited its tokens to the step before it, which moved:
    3,061 tokens left at --target-tokens 600 (predicted 253), exit 0."""
    events = [{"trace_type": "user", "content": "You are careful.", "tags": ["system"]}]
    for t in range(6):
        events += [{"trace_type": "user", "content": f"ask {t} about src/mod_{t}.py and the FooBar{t} class"},
                   {"trace_type": "tool_call", "tool_name": "Bash", "tool_call_id": f"c{t}",
                    "tool_args": {"command": f"pytest tests/test_{t}.py"}},
                   {"trace_type": "tool_result", "tool_name": "Bash", "tool_call_id": f"c{t}",
                    "tool_result": f"{t} passed"}]
        if t == 0:
            events.append({"trace_type": "assistant", "tags": ["developer"],
                           "content": "Developer policy: " + "never push to main without review. " * 400})
        events.append({"trace_type": "assistant", "content": f"done {t}"})
    assert cli("ingest", "a", input=events).exit_code == 0
    store = AgentStore(memory_dir, "a")
    assert [t.is_instruction for t in store.iter_active() if t.tags] == [True, False]
    _kept_or_refused(cli, memory_dir, "a", 600, "--tail-turns", "0", "--keep-steps", "1")
    active = list(store.iter_active())
    assert [t.content for t in active if t.tags] == ["You are careful."]   # the instruction stays
    archived = [t for t in store.iter_traces(archive=True) if t.tier == "archive"]
    assert any(t.trace.content.startswith("Developer policy") for t in archived)


def test_a_context_size_below_one_is_refused_by_every_command_and_the_api(cli, memory_dir):
    """--max-context-tokens 0 meant the default 200,000 on compact (silently), and -100 was taken
    as given (a note that contradicted itself); stats already refused 0."""
    assert cli("ingest", "a", input=[{"trace_type": "user", "content": "hi"},
                                     {"trace_type": "assistant", "content": "hello"}]).exit_code == 0
    before = tree_digest(agent_dir(memory_dir, "a"))
    for value in ("0", "-100"):
        for args in (("compact", "a", "--if-needed"), ("compact", "a", "--if-needed", "--dry-run"), ("stats", "a"),
                     ("view", "a", "-o", str(memory_dir.parent / "a.html"))):
            result = cli(*args, "--max-context-tokens", value)
            assert result.exit_code == 2, (args, value, result.stderr)
            assert f"Invalid value for '--max-context-tokens': {value} is not in the range x>=1" in result.stderr
    assert tree_digest(agent_dir(memory_dir, "a")) == before
    agent = memcli.Memory(memory_dir).agent("a")
    for call in (lambda: agent.compact(if_needed=True, max_context_tokens=0),
                 lambda: agent.stats(max_context_tokens=0), lambda: agent.compact(max_context_tokens=-100)):
        with pytest.raises(UsageError, match="max_context_tokens must be 1 or more") as info:
            call()
        assert info.value.param == "max_context_tokens"
    assert tree_digest(agent_dir(memory_dir, "a")) == before
    assert agent.stats(max_context_tokens=2000).budget["max_context_tokens"] == 2000
    before = tree_digest(agent_dir(memory_dir, "a"))   # (stats saved the counts it took: a cache)
    # a context the reserved output (a quarter of it) and the 1,024-token margin take whole: every
    # prompt was "due" over a threshold of 0, and a compaction toward a target of 0 said it ended
    # "over the target though under the trigger threshold"
    for call in (lambda: agent.compact(if_needed=True, max_context_tokens=1000),
                 lambda: agent.stats(max_context_tokens=1365)):
        with pytest.raises(UsageError, match="leaves no room for a prompt: .* reserved for the output and 1,024 kept"
                                             " as a safety margin") as info:
            call()
        assert info.value.param == "max_context_tokens"
    assert tree_digest(agent_dir(memory_dir, "a")) == before
    result = cli("compact", "a", "--if-needed", "--max-context-tokens", "1000")
    assert result.exit_code == 2 and "--max-context-tokens 1,000 leaves no room for a prompt" in result.stderr


def _talk_with_a_big_newest_ask() -> list:
    events = []
    for t in range(6):
        events += [{"trace_type": "user", "content": f"ask {t} " + "word " * 1500},
                   {"trace_type": "assistant", "content": f"reply {t}"}]
    return events + [{"trace_type": "user", "content": "newest ask " + "lorem ipsum dolor " * 3000}]


@pytest.mark.parametrize("where", ["raw_traces.jsonl", "semantic.jsonl"])
def test_a_record_that_lost_its_newline_stops_a_compaction_before_it_writes(cli, memory_dir, where):
    """Readers do not count a last line without its newline, so neither did the plan; but the
    commit's write adds the newline (memcli.store.jsonl.repair_tail) and the record with it: the
    newest ask's newline cut, 9,093 tokens became 11,541 at --target-tokens 3,000, exit 0. Now
    the compaction (its dry run alike) refuses, nothing written, and says how to repair."""
    assert cli("ingest", "a", input=_talk_with_a_big_newest_ask()).exit_code == 0
    path = agent_dir(memory_dir, "a") / where
    if where == "raw_traces.jsonl":
        path.write_bytes(path.read_bytes()[:-1])   # the newest ask loses its "\n" only
    else:
        path.write_bytes(orjson.dumps({"id": "sem_1", "ts": 1.0, "fact": "the deploy key rotates " * 300}))
    store = AgentStore(memory_dir, "a")
    counted = working_tokens(store)
    before = tree_digest(agent_dir(memory_dir, "a"))
    for dry in ((), ("--dry-run",)):
        result = cli("compact", "a", "--target-tokens", "12000", "--keep-steps", "1", "--tail-turns", "0", *dry)
        assert result.exit_code == 1, result.stderr
        assert f"memcli: error: the last line of {where} of agent 'a' is a record without its newline" in result.stderr
        assert "nothing was written" in result.stderr and "memcli doctor a --repair" in result.stderr
        assert tree_digest(agent_dir(memory_dir, "a")) == before
    assert working_tokens(store) == counted
    # repaired, the record counts, and the compaction keeps its promise
    assert cli("doctor", "a", "--repair").exit_code == 0
    assert working_tokens(store) > counted
    assert _kept_or_refused(cli, memory_dir, "a", 12000, "--keep-steps", "1", "--tail-turns", "0")["compacted"]



def _reused_call_ids() -> list:
    """Two unanswered calls with id ``dup`` in one step, then a later step's ``dup`` call whose
    result answers the oldest (memcli.pairing): the second and third stay unanswered."""
    return [{"trace_type": "tool_call", "tool_name": "Edit", "tool_call_id": "dup", "tool_args": {"command": "x " * 40}},
            {"trace_type": "tool_call", "tool_name": "Read", "tool_call_id": "dup", "tool_args": {"command": "x " * 22}},
            {"trace_type": "user", "content": "ctx ctx ctx ctx ctx ", "tags": ["context"]},
            {"trace_type": "tool_call", "tool_name": "Edit", "tool_call_id": "c11_2", "tool_args": {"command": "x " * 8}},
            {"trace_type": "tool_result", "tool_name": "Bash", "tool_call_id": "c11_2", "tool_result": "r " * 10},
            {"trace_type": "tool_call", "tool_name": "Edit", "tool_call_id": "dup", "tool_args": {"command": "x " * 10}},
            {"trace_type": "tool_result", "tool_name": "Bash", "tool_call_id": "dup", "tool_result": "r " * 3000},
            {"trace_type": "assistant", "content": "note note note note "}]


def _two_unanswered_calls_with_one_id() -> list:
    """A ``d`` call never answered, a step with a large result, then another ``d`` call never
    answered: each placeholder stands for its own call."""
    return [{"trace_type": "user", "content": "fix it " * 20},
            {"trace_type": "tool_call", "tool_name": "Read", "tool_call_id": "d", "tool_args": {"path": "a " * 30}},
            {"trace_type": "assistant", "content": "meanwhile " * 10},
            {"trace_type": "tool_call", "tool_name": "Bash", "tool_call_id": "e", "tool_args": {"command": "ls"}},
            {"trace_type": "tool_result", "tool_name": "Bash", "tool_call_id": "e", "tool_result": "out " * 1500},
            {"trace_type": "tool_call", "tool_name": "Edit", "tool_call_id": "d", "tool_args": {"path": "b " * 5}},
            {"trace_type": "assistant", "content": "done " * 5}]


@pytest.mark.parametrize("events,keep,target", [
    (_reused_call_ids(), 3, 170), (_reused_call_ids(), 3, 200), (_reused_call_ids(), 3, 250),
    (_reused_call_ids(), 3, 330), (_two_unanswered_calls_with_one_id(), 2, 200),
    (_two_unanswered_calls_with_one_id(), 2, 250), (_two_unanswered_calls_with_one_id(), 2, 300)])
def test_a_kept_pending_calls_placeholder_is_credited_to_its_own_step_when_ids_are_reused(cli, memory_dir, events,
                                                                                         keep, target):
    """The planner credited the placeholder of a kept unanswered call to the step of the oldest
    open call with its id — a step that moves: at --target-tokens 170 the dry run predicted 164
    and the snapshot was 194, exit 0 (the first store; the second, 161 and 191 at 200). A
    placeholder belongs to the step of the call it stands for, as the snapshot renders it right
    after that call."""
    assert cli("ingest", "a", input=events).exit_code == 0
    done = _kept_or_refused(cli, memory_dir, "a", target, "--keep-steps", str(keep), "--tail-turns", "0")
    assert done["compacted"] and done["steps"] >= 1


@pytest.mark.parametrize("target", [300, 1_800, 2_000, 2_700])
def test_reasoning_between_two_calls_of_a_step_does_not_split_it(cli, memory_dir, target):
    """Reasoning between two calls made before their results: the working snapshot leaves it out
    and keeps both calls in one message; the plan opened a new step at it, credited that message
    to the older step, and moved it while the newer call stayed — 210 tokens predicted, 382 left
    at --target-tokens 300, exit 0 (--keep-steps 2 --tail-turns 0)."""
    events = [{"trace_type": "user", "content": "fix it " * 20},
              {"trace_type": "tool_call", "tool_name": "Read", "tool_call_id": "a1", "tool_args": {"path": "a " * 30}},
              {"trace_type": "tool_result", "tool_name": "Read", "tool_call_id": "a1", "tool_result": "out " * 1500},
              {"trace_type": "tool_call", "tool_name": "Bash", "tool_call_id": "b1", "tool_args": {"command": "ls " * 40}},
              {"trace_type": "assistant", "content": "thinking " * 300, "tags": ["reasoning"]},
              {"trace_type": "tool_call", "tool_name": "Edit", "tool_call_id": "c1", "tool_args": {"path": "b " * 50}},
              {"trace_type": "tool_result", "tool_name": "Bash", "tool_call_id": "b1", "tool_result": "res " * 1500},
              {"trace_type": "tool_result", "tool_name": "Edit", "tool_call_id": "c1", "tool_result": "ok " * 100},
              {"trace_type": "assistant", "content": "done " * 5}]
    assert cli("ingest", "a", input=events).exit_code == 0
    _kept_or_refused(cli, memory_dir, "a", target, "--keep-steps", "2", "--tail-turns", "0")


def _read(call_id: str, words: int = 30, **kw) -> dict:
    return {"trace_type": "tool_call", "tool_name": "Read", "tool_call_id": call_id, "tool_args": {"path": "a " * words},
            **kw}


def _out(call_id: str, words: int = 1500, **kw) -> dict:
    return {"trace_type": "tool_result", "tool_name": "Read", "tool_call_id": call_id, "tool_result": "out " * words,
            **kw}


def _ask(**kw) -> dict:
    return {"trace_type": "user", "content": "fix it " * 20, **kw}


def _calls_around(*between: dict) -> list:
    """Call a1; ``between``, which ends the snapshot's message; calls b1 and (after a1's result)
    c1, one message; their results; an answer."""
    return [_ask(), _read("a1"), *between, _read("b1", 40), _out("a1"), _read("c1", 50), _out("b1"), _out("c1", 100),
            {"trace_type": "assistant", "content": "done " * 5}]


_DONE = {"trace_type": "assistant", "content": "done " * 5}
# shape -> events, {target: steps moved (0: refused, nothing written)}; predicted / left by the
# old plan at --keep-steps 2 and the first target, exit 0
_SPLIT_MESSAGES = {
    # an orphan result ends a1's message; a1's result then opened a step at c1: 217 / 389 (a1's
    # step, the only one that may move, leaves 1,901)
    "an orphan result": (_calls_around(_out("zz", 200)), {300: 0, 2_000: 1}),
    # so does an instruction: 241 / 413
    "an instruction": (_calls_around({"trace_type": "user", "content": "be brief " * 10, "tags": ["system"]}),
                       {300: 0, 2_000: 1}),
    # so does a trace of another turn: 258 / 430
    "another turn's ask": (
        [{**e, "turn_id": "t1"} for e in (_ask(), _read("a1"))] + [_ask(turn_id="t2")]
        + [{**e, "turn_id": "t1"} for e in (_read("b1", 40), _out("a1"), _read("c1", 50), _out("b1"), _out("c1", 100),
                                            _DONE)], {300: 0, 2_000: 1}),
    # a blank text is dropped: a1 and b1 are one message (one step, which --keep-steps 2 keeps);
    # the plan opened a step at the blank text: 175 / 1,737
    "a blank text": ([_ask(), _read("a1"), {"trace_type": "assistant", "content": "  "}, _read("b1", 40), _out("a1"),
                      _out("b1"), _DONE], {300: 0}),
    # a subagent's call and result are left out: a1 and b1 are one message; the plan counted the
    # result as its step's and opened a step at b1: 199 / 1,761
    "a sidechain result": ([_ask(), _read("a1"), _read("s1", tags=["sidechain"]), _out("s1", 200, tags=["sidechain"]),
                            _read("b1", 40), _out("a1"), _out("b1"), _DONE], {300: 0}),
    # ... and a subagent's call made the plan open a step at the text after it, which joins
    # "plan" in one message: 1,689 / 1,843
    "a sidechain call": ([_ask(), {"trace_type": "assistant", "content": "plan " * 100}, _read("s1", tags=["sidechain"]),
                          {"trace_type": "assistant", "content": "more " * 100}, _read("b1", 40), _out("b1"), _DONE],
                         {1_700: 0}),
}


@pytest.mark.parametrize("shape,target", [(shape, target) for shape in sorted(_SPLIT_MESSAGES)
                                          for target in _SPLIT_MESSAGES[shape][1]])
def test_a_step_ends_where_the_snapshots_assistant_message_ends(cli, memory_dir, shape, target):
    """The plan cut steps by a rule of its own; where the snapshot's message builder did not cut
    there, one message had traces in two steps, was credited to the older one, and half of it
    stayed when that step moved (figures above: predicted / left, exit 0). A step is now one
    assistant message as the builder cuts it."""
    events, steps = _SPLIT_MESSAGES[shape]
    assert cli("ingest", "a", input=events).exit_code == 0
    done = _kept_or_refused(cli, memory_dir, "a", target, "--keep-steps", "2", "--tail-turns", "0")
    assert done.get("steps", 0) == steps[target]


def _random_turns(rng) -> list:
    """Up to four turns of calls (ids reused), results (some for no call), texts (some blank),
    reasoning, instructions, context and harness summaries, some of them a subagent's, some of
    them another turn's."""
    events, ids = [], []
    for t in range(rng.randint(1, 4)):
        turn = f"turn_{t + 1:04d}"
        events.append({"trace_type": "user", "content": f"ask {t}", "turn_id": turn})
        for _ in range(rng.randint(0, 10)):
            k, at = rng.random(), turn if rng.random() < 0.85 else f"turn_{rng.randint(1, t + 1):04d}"
            if k < 0.3:
                ids.append(rng.choice(["a", "b", f"c{len(ids)}"]))
                event = {"trace_type": "tool_call", "tool_name": "sh", "tool_call_id": ids[-1], "tool_args": {}}
            elif k < 0.55:
                event = {"trace_type": "tool_result", "tool_call_id": rng.choice(ids + ["zz"]), "tool_result": "r"}
            elif k < 0.7:
                event = {"trace_type": "assistant", "content": rng.choice(["say", " ", ""])}
            elif k < 0.8:
                event = {"trace_type": "assistant", "content": "think", "tags": ["reasoning"]}
            else:
                event = {"trace_type": "user", "content": "x",
                         "tags": [rng.choice(["system", "context", "compact_summary"])]}
            if rng.random() < 0.15:
                event["tags"] = event.get("tags", []) + ["sidechain"]
            events.append({**event, "turn_id": at})
    return events


def test_every_message_of_the_snapshot_lies_in_one_unit_of_the_plan(cli, memory_dir):
    """The invariant behind the plan's prediction, on random stores: each message the snapshot's
    builder makes has all its traces in one unit (a turn's head or one step), so the unit its
    tokens are credited to moves, or stays, with the whole message. 150 stores; the old step
    rule split a message in 14 of them."""
    import random

    from memcli.compaction.window import _Scan
    from memcli.snapshot.build import build_messages
    from memcli.store import jsonl

    for seed in range(150):
        agent = f"a{seed}"
        assert cli("ingest", agent, input=_random_turns(random.Random(seed))).exit_code == 0
        store = AgentStore(memory_dir, agent)
        scan = _Scan(store)
        traces = list(scan.traces(jsonl.open_read(store.paths.active)))
        unit_of = {trace.id: unit for trace, unit in zip(traces, scan.owners, strict=True)}
        for message in build_messages(traces):
            if message.trace_ids and message.role != "system":   # (placeholders: their call's unit;
                # instructions: owned by no unit, never moved)
                assert len({unit_of[trace_id] for trace_id in message.trace_ids}) == 1, (seed, message)


def test_an_explicit_target_with_nothing_left_to_move_is_refused_not_missed_silently(cli, memory_dir):
    """Earlier summaries may roll up to make room, so what must stay counts them at their smallest
    rollup — but only a compaction that moves something rolls them up. With nothing left to move,
    ``compact --target-tokens`` below the snapshot said "nothing to compact" and exited 0 over the
    target (897 tokens left at --target-tokens 600)."""
    events = []
    for t in range(40):
        events += [{"trace_type": "user", "content": f"Please update src/mod_{t}.py so FooBar{t} handles case {t}, "
                                                     "and explain the change in detail with more words"},
                   {"trace_type": "assistant", "content": f"Updated src/mod_{t}.py: FooBar{t} now handles case {t}. " * 3}]
    assert cli("ingest", "a", input=events).exit_code == 0
    for i in range(3):
        assert cli("remember", "a", f"Pinned fact {i}: always run pytest -q before committing, never push to main",
                   "--pin").exit_code == 0
    assert _kept_or_refused(cli, memory_dir, "a", 900)["compacted"]
    now = working_tokens(AgentStore(memory_dir, "a"))
    assert 600 < now <= 900
    assert _kept_or_refused(cli, memory_dir, "a", 600) == {}   # exit 1, nothing written, the dry run alike
    refused = cli("compact", "a", "--target-tokens", 600)
    assert f"--target-tokens 600 cannot be met for agent 'a': nothing can move (4 turns in the active file and the " \
           f"newest 4 steps stay), so the working snapshot stays {now:,} tokens; nothing was written" in refused.stderr
    assert f"use --target-tokens {now:,} or more, or fewer --keep-steps or --tail-turns" in refused.stderr
    assert _kept_or_refused(cli, memory_dir, "a", 600, "--keep-steps", "0", "--tail-turns", "0")["compacted"]
    done = cli("compact", "a")   # the default target: nothing to do is no failure
    assert done.exit_code == 0 and "nothing to compact in 'a'" in done.stderr
