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
    assert agent.stats(max_context_tokens=1000).budget["max_context_tokens"] == 1000


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
