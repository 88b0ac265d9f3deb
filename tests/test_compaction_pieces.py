"""Unit tests of the pieces a compaction is made of: the window planner's scan, protected
steps, minimum, selection and byte runs (:mod:`memcli.compaction.window`), and the compactor's
job, plan figures, memory bundle, summarizing step, commit and finish
(:mod:`memcli.compaction.compactor`). End-to-end tests cover them together; these pin each
one's own contract."""

from __future__ import annotations

import time

import pytest

from memcli.compaction import window as w
from memcli.compaction.compactor import (
    CompactResult,
    _Bundle,
    _commit,
    _Job,
    _record_plan,
    _run,
    _summarize_window,
    build_items,
)
from memcli.compaction.offline import OfflineSummarizer
from memcli.compaction.policy import CompactionPolicy
from memcli.compaction.summarizer import MemoryContext, Summarizer
from memcli.errors import CompactionError
from memcli.ingest.api import ingest
from memcli.store.agent import AgentStore
from tests.events import CALL, A, U, turns


def _store(memory_dir, events) -> AgentStore:
    import orjson

    memory_dir.mkdir(parents=True, exist_ok=True)
    src = memory_dir.parent / f"{memory_dir.name}.ndjson"
    src.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
    ingest(memory_dir, "a", src)
    return AgentStore(memory_dir, "a")


def _steps(turns: w._Turns, turn: int, units: w._Units) -> list[int]:
    """The turn's step units, oldest first: its chain from ``first_step`` through ``next_step``."""
    out, step = [], turns.first_step[turn]
    while step >= 0:
        out.append(step)
        step = units.next_step[step]
    return out


def _scan(store) -> w._Scan:
    from memcli.snapshot.assemble import count_working, working_counter
    from memcli.snapshot.views import TokenMeter
    from memcli.store import jsonl

    scan = w._Scan(store)
    scan.total = count_working(store, TokenMeter(working_counter(None)), scan.traces(jsonl.open_read(store.paths.active)),
                               scan.credit)
    return scan


# ---------------------------------------------------------------- the window planner's pieces

def test_the_scan_splits_turns_into_a_head_and_steps_and_credits_every_token(memory_dir):
    store = _store(memory_dir, turns(3) + [U("be brief", tags=["system"])])
    scan = _scan(store)
    # each turn: its ask (head), the call with its result (a step), the answer (a step); the
    # system line (it joins the open turn) is pinned: owned by no unit, not counted
    listed = scan.turn_list
    assert [(listed.ids[t], len(_steps(listed, t, scan.units)), listed.count[t]) for t in range(len(listed))] == [
        ("turn_0001", 2, 4), ("turn_0002", 2, 4), ("turn_0003", 2, 4)]
    assert len(scan.step_order) == 6 and list(scan.owners)[-1] == -2 - 2
    assert scan.size == store.paths.active.stat().st_size and len(scan.starts) == 13
    credited = sum(scan.units.tokens)
    assert 0 < credited < scan.total and all(tokens > 0 for tokens in scan.units.tokens)


def test_the_scan_opens_units_and_turns_as_their_add_methods_do(memory_dir):
    # the scan opens units and turns through _Units.add, _Turns.add and add_step: replaying them
    # gives the same columns, in the same order — here with a late trace for an older turn and a
    # sidechain
    from tests.events import RES

    events = turns(2) + [CALL("c9", turn_id="turn_0001"), RES("c9", turn_id="turn_0001"),    # a new step, unit 6
                         CALL("c10", turn_id="turn_0001"),                                     # a new step, unit 7
                         A("sub", tags=["sidechain"], turn_id="turn_0002")] + turns(1, start=3)
    scan = _scan(_store(memory_dir, events))
    units, listed = scan.units, scan.turn_list
    units_again, turns_again = w._Units(), w._Turns()
    for unit in range(len(units)):
        turn = units.turn[unit]
        if listed.head[turn] == unit:
            assert turns_again.add(listed.ids[turn], units_again.add(len(turns_again))) == turn
        else:
            turns_again.add_step(turn, units_again.add(turn), units_again)
    for column in ("turn", "next_step"):
        assert getattr(units, column) == getattr(units_again, column)
    assert len(units.tokens) == len(units.calls) == len(units.results) == len(units.moved) == len(units)
    for column in ("ids", "head", "first_step", "last_step", "n_steps"):
        assert getattr(listed, column) == getattr(turns_again, column)
    assert [_steps(listed, t, units) for t in range(len(listed))] == [
        [s for s in scan.step_order if units.turn[s] == t] for t in range(len(listed))]
    assert [_steps(listed, t, units) for t in range(len(listed))] == [[1, 2, 6, 7], [4, 5], [9, 10]]


def _units(spec: list[tuple[int, int, int]]) -> tuple[w._Units, list]:
    """Units and step order from (tokens, calls, results) per step, one turn whose head costs 10."""
    units = w._Units()
    units.add(0, tokens=10)
    for tokens, calls, results in spec:
        units.add(0, tokens=tokens, calls=calls, results=results)
    return units, list(range(1, len(units)))


def test_protected_steps_are_the_newest_and_a_running_call():
    units, order = _units([(5, 1, 1), (5, 1, 1), (5, 1, 0)])
    assert w._protected_steps(units, order, 2) == {2, 3}
    assert w._protected_steps(units, order, 0) == {3}          # the newest step's call may still run
    units.results[3] = 1
    assert w._protected_steps(units, order, 0) == set()


def test_the_minimum_is_the_fixed_part_the_protected_steps_and_the_heads_that_stay():
    units, turns = w._Units(), w._Turns()
    for turn_id, head_tokens, step_tokens in (("t1", 10, 3), ("t2", 20, 7)):
        t = turns.add(turn_id, units.add(len(turns), tokens=head_tokens))
        turns.add_step(t, units.add(t, tokens=step_tokens), units)
        turns.count[t] = 2
    conversation = [0, 1]
    assert w._minimum_tokens(units, turns, conversation, {3}, 100) == 100 + 7 + 20      # the newest turn's head
    assert w._minimum_tokens(units, turns, conversation, {1, 3}, 100) == 100 + 3 + 7 + 10 + 20


def test_the_selection_counts_a_summary_reserve_once_something_moves():
    """Nothing moved: the kept part alone. Once units move, the kept part plus the reserve for the
    summary of what moved must fit the target: 3 turns of 1,000 tokens toward 2,200 move two
    (2,000 kept + a 250-token reserve would be over), not one."""
    units, turn_list = w._Units(), w._Turns()
    for turn_id in ("t1", "t2", "t3"):
        turn_list.add(turn_id, units.add(len(turn_list), tokens=1_000))
    sel = w._Selection(units, 3_000, 2_200)
    assert sel.estimate() == 3_000
    reason = w._choose(sel, turn_list, [0, 1, 2], [], set(), 3)
    assert list(units.moved) == [1, 1, 0] and (sel.kept, sel.moved_tokens) == (1_000, 2_000)
    assert sel.estimate() == 1_000 + w.summary_reserve(2_000) == 1_500
    assert reason == "the rest fits the target (1,500 ≤ 2,200 tokens)"


def test_choose_moves_old_turns_whole_then_steps_to_the_target_and_says_why_it_stopped(memory_dir):
    scan = _scan(_store(memory_dir, turns(4)))
    conversation = scan.conversation()
    sel = w._Selection(scan.units, scan.total, None)
    assert w._choose(sel, scan.turn_list, conversation, scan.step_order, set(), 2) == "the last 2 turns stay"
    assert list(scan.units.moved[:6]) == [1] * 6 and not any(scan.units.moved[6:])
    scan = _scan(_store(memory_dir / "b", turns(4)))
    newest = scan.step_order[-1]
    reason = w._choose(w._Selection(scan.units, scan.total, 1), scan.turn_list, scan.conversation(), scan.step_order,
                       {newest}, 0)
    assert reason == "the newest step stays"
    assert w._choose(w._Selection(w._Units(), 0, None), w._Turns(), [], [], set(), 4) == \
        "the agent has no conversation turns"


def test_moved_lines_merge_adjacent_runs_and_count_per_turn(memory_dir):
    store = _store(memory_dir, turns(3))
    scan = _scan(store)
    listed, units = scan.turn_list, scan.units
    for unit in _steps(listed, 0, units) + [listed.head[0], _steps(listed, 1, units)[0]]:
        units.moved[unit] = 1
    out = w._moved_lines(scan)
    # turn 1 whole, then turn 2's first step: its ask stays between them
    assert out.moved == 6 and len(out.runs) == 2 and out.runs[0][0] == 0
    first, second = (wt for wt in out.window if wt is not None)
    assert (first.whole, first.count, first.steps) == (True, 4, 2)
    assert (second.whole, second.count, second.steps) == (False, 2, 1) and out.steps == 1
    data = store.paths.active.read_bytes()
    assert [data[s:e].count(b"\n") for s, e in out.runs] == [4, 2]
    assert out.moved_bytes == sum(e - s for s, e in out.runs) and b"question 2" not in data[slice(*out.runs[1])]


# ---------------------------------------------------------------- the compactor's pieces

def _job(store, *, summarizer=None, dry_run=False, strategy="summarize", policy=None, notes=None) -> _Job:
    policy = policy or CompactionPolicy(tail_turns=1, keep_steps=0)
    result = CompactResult(store.agent_id, dry_run=dry_run, strategy=strategy, target_tokens=10**6)
    return _Job(store, result, summarizer if summarizer is not None else OfflineSummarizer(), strategy, policy,
                dry_run, None, 1, None, notes.append if notes is not None else None, time.monotonic())


def test_the_job_plans_with_its_policy_and_notes_to_the_result(memory_dir):
    store = _store(memory_dir, turns(3))
    notes = []
    job = _job(store, notes=notes)
    plan_, ahead = job.plan()   # offline: a child may read ahead (fork, 2+ CPUs, no other thread)
    assert plan_.turn_ids == ["turn_0001", "turn_0002"]
    if ahead is not None:
        assert ahead.finish(plan_) is None   # a small store: no child was forked, the window is read after
    assert _job(store, dry_run=True).plan()[1] is None                          # a dry run reads nothing ahead
    job.note("said")
    job.note("kept", say=False)
    assert notes == ["said"] and job.result.notes == ["said", "kept"]
    assert job.done(reason="x").reason == "x" and job.result.seconds >= 0


def test_record_plan_copies_the_plans_figures(memory_dir):
    store = _store(memory_dir, turns(3))
    plan_ = _job(store).plan()[0]
    result = CompactResult("a")
    _record_plan(result, plan_)
    assert (result.turns, result.whole_turns, result.traces, result.turn_range, result.kept_turns) == (
        2, 2, 8, "turn_0001–turn_0002", 1)
    assert (result.tokens_before, result.window_tokens) == (plan_.tokens_before, plan_.window_tokens)


def test_the_bundle_predicts_the_snapshot_with_new_items(memory_dir):
    store = _store(memory_dir, turns(3))
    job = _job(store)
    plan_ = job.plan()[0]
    bundle = _Bundle(job, plan_)
    assert bundle.before == 0 and bundle.without == plan_.kept_tokens and bundle.unchanged()
    from memcli.compaction.summarizer import Summary

    episodic, semantic, _ = build_items(store, plan_, Summary("two turns", []), compaction_id="cmp_x",
                                        trace_ids=[], moved=plan_.moved, model="offline", policy=job.policy,
                                        strategy="summarize")
    assert bundle.tokens_after(episodic, semantic) > bundle.without


class _Failing(Summarizer):
    name = "failing"

    def summarize(self, turns, memory=None):
        raise CompactionError("the model said no")


def test_a_failed_summary_counts_against_the_breaker_except_in_a_dry_run(memory_dir):
    from memcli.compaction.breaker import read_breaker
    from memcli.compaction.compactor import _Collect

    store = _store(memory_dir, turns(3))
    for dry_run, failures in ((True, 0), (False, 1)):
        job = _job(store, summarizer=_Failing(), dry_run=dry_run)
        plan_ = job.plan()[0]
        with pytest.raises(CompactionError, match="said no"):
            _summarize_window(job, _Collect(store, plan_), MemoryContext())
        assert read_breaker(store.paths).consecutive_failures == failures


def test_commit_refuses_a_plan_the_file_no_longer_holds(memory_dir):
    store = _store(memory_dir, turns(3))
    job = _job(store)
    plan_ = job.plan()[0]
    before = store.paths.active.read_bytes()
    copy = store.paths.active.with_name("copy")
    copy.write_bytes(before)
    copy.replace(store.paths.active)            # the same lines, another file: a rewrite happened
    with pytest.raises(CompactionError, match="changed while summarizing"):
        _commit(job, plan_, "cmp_x", _Bundle(job, plan_), ([], [], {}), lambda: ([], [], {}), 0)
    assert not store.paths.archive.exists()


def test_run_commits_and_finish_reports_the_items(memory_dir):
    events = [e for k in range(1, 4) for e in turns(1, start=k) + [A(f"long answer {k} " + "word " * 800)]]
    store = _store(memory_dir, events + [U("q4"), CALL("open")])
    result = _run(_job(store))
    assert result.compacted and result.compaction_id.startswith("cmp_") and result.episodic_id
    assert result.turn_ids == ["turn_0001", "turn_0002", "turn_0003"] and result.tokens_after < result.tokens_before
    assert b"question 1" in store.paths.archive.read_bytes()


class _Echo(Summarizer):
    """The smallest summarizer: only ``name`` and ``summarize``; the base class gives the rest."""

    name = "echo"

    def summarize(self, turns, memory=None):
        from memcli.compaction.summarizer import Summary

        return Summary("asked: " + ", ".join(t.turn_id for t in turns))


def test_a_summarizer_with_only_summarize_compacts_with_the_base_class_defaults(memory_dir):
    from memcli.compaction.compactor import compact

    events = [e for k in range(1, 4) for e in turns(1, start=k) + [A("long answer " + "word " * 800)]]
    _store(memory_dir, events + [U("q4")])
    echo = _Echo()
    assert (echo.context_tokens(), echo.window_summary(), echo.split([1, 2], None)) == (None, None, [[1, 2]])
    result = compact(memory_dir, "a", summarizer=echo, policy=CompactionPolicy(tail_turns=1, keep_steps=0))
    assert result.compacted and result.summary == "asked: turn_0001, turn_0002, turn_0003"
    assert result.summarizer == "echo"


def test_all_moved_answers_as_the_offset_walk():
    """check_feed's one-run shortcut gives what walking every folded offset gives."""
    from array import array

    runs = [[0, 100], [100, 250], [300, 400]]
    cases = [[], [0], [0, 50, 99], [0, 99, 100], [120, 249], [120, 250], [250], [299, 300], [300, 399],
             [399, 400], [10, 310], [50, 260, 310], [400], [5, 120, 305, 399]]
    for offsets in cases:
        for given in (offsets, array("q", offsets)):
            assert w._all_moved(runs, given) is all(w._moved_offsets(runs, given)), offsets
    assert w._all_moved([], [1]) is False and w._all_moved([], []) is True
