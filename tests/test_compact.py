"""``memcli compact`` with the offline summarizer: the window rules, what is written, dry runs,
the trigger, strategies, rollup and fact merging, and ingest running during a compaction."""

from __future__ import annotations

import io
import re
import threading
from collections import Counter

import orjson
import pytest

from memcli.compaction.compactor import compact, compaction_lock
from memcli.compaction.offline import OfflineSummarizer
from memcli.compaction.policy import CompactionPolicy
from memcli.compaction.summarizer import Summary
from memcli.errors import CompactionError
from memcli.store.agent import AgentStore
from tests.compact_fixtures import conversation
from tests.helpers import agent_dir, ndjson, read_jsonl, store_digest, tree_digest


def _tokens(memory_dir, agent="a") -> int:
    from memcli.snapshot.assemble import working_tokens

    return working_tokens(AgentStore(memory_dir, agent))


def _files(memory_dir, agent="a"):
    d = agent_dir(memory_dir, agent)
    return {name: read_jsonl(d / f"{name}.jsonl") for name in ("raw_traces", "raw_traces_archive", "episodic", "semantic")}


def test_window_keeps_the_tail_the_system_prompt_and_moves_whole_turns(cli, memory_dir):
    cli("ingest", "a", input=conversation(8))
    result = cli("compact", "a")
    assert result.exit_code == 0, result.stderr
    f = _files(memory_dir)
    assert [r["id"] for r in f["raw_traces_archive"]] == [f"t-{i}-{k}" for i in range(1, 5) for k in "ucra"]
    assert [r["id"] for r in f["raw_traces"]] == ["t-sys"] + [f"t-{i}-{k}" for i in range(5, 9) for k in "ucra"]
    assert "compacted 4 turns (turn_0001–turn_0004, 16 traces) of 'a'" in result.stderr
    assert "1 system/developer trace of the window stays in the active file" in result.stderr
    assert result.stdout == ""


def test_an_abandoned_call_moves_with_its_step_and_the_summary_says_it_was_never_answered(cli, memory_dir):
    events = conversation(3, system=False, big=1500)
    events.insert(9, {"id": "late-call", "trace_type": "tool_call", "tool_name": "slow", "tool_call_id": "slow1",
                      "tool_args": {"command": "sleep 999"}})
    cli("ingest", "a", input=events)  # turn_0003 has a call that never gets its result
    cli("ingest", "a", input=conversation(6, prefix="n", system=False))
    result = cli("compact", "a", "--tail-turns", "1", "--keep-steps", "2")
    assert result.exit_code == 0, result.stderr
    assert "compacted 8 turns (turn_0001–turn_0008, 33 traces, 1 unanswered call) of 'a'" in result.stderr
    f = _files(memory_dir)
    assert "late-call" in [r["id"] for r in f["raw_traces_archive"]]
    assert {r["turn_id"] for r in f["raw_traces"]} == {"turn_0009"}
    summary = f["episodic"][0]["summary"]
    assert "- turn_0003 · user: \"Where is order A-1003?\" · tools: slow ×1, lookup_order ×1" in summary
    assert "never answered: slow `sleep 999`" in summary
    assert "Never answered: 1 call (slow `sleep 999` in turn_0003)" in summary
    # the tool view still reports the call truthfully, as pending
    tools = cli("tools", "a", "--archive", "--json")
    assert tools.exit_code == 0
    assert '"slow1"' in tools.stdout and "PENDING" in tools.stdout


def test_only_the_newest_step_with_an_unanswered_call_holds_compaction_back(cli, memory_dir):
    events = conversation(3, system=False) + [
        {"id": "ask", "trace_type": "user", "content": "Run the slow export now."},
        {"id": "running", "trace_type": "tool_call", "tool_name": "export", "tool_call_id": "x1", "tool_args": {}},
    ]
    cli("ingest", "a", input=events)
    dry = cli("compact", "a", "--tail-turns", "0", "--keep-steps", "0", "--dry-run")
    assert "would compact 3 turns (turn_0001–turn_0003)" in dry.stdout
    assert "the newest step stays (it has an unanswered tool call)" in dry.stdout
    assert cli("compact", "a", "--tail-turns", "0", "--keep-steps", "0").exit_code == 0
    assert [r["id"] for r in _files(memory_dir)["raw_traces"]] == ["ask", "running"]


def test_offline_summary_is_readable_and_keeps_identifiers(cli, memory_dir):
    events = [
        {"trace_type": "user", "content": "Fix the failing test in tests/test_orders.py. I prefer small commits."},
        {"trace_type": "tool_call", "tool_name": "run_command", "tool_call_id": "c1",
         "tool_args": {"command": "pytest -q tests/test_orders.py"}},
        {"trace_type": "tool_result", "tool_call_id": "c1",
         "tool_error": "exit status 1\n" + "npm warn deprecated inflight@1.0.6: leaks memory\n" * 200
                       + "FAILED tests/test_orders.py::test_total - assert 100.0 == 90.0"},
        {"trace_type": "tool_call", "tool_name": "edit_file", "tool_call_id": "c2",
         "tool_args": {"path": "app/api.py", "old": "a", "new": "b"}},
        {"trace_type": "tool_result", "tool_call_id": "c2", "tool_result": "ok"},
        {"trace_type": "assistant", "content": "Fixed app/api.py; see https://ci.example.com/runs/4711 for the run."},
        {"trace_type": "user", "content": "Never push to main directly."},
        {"trace_type": "tool_call", "tool_name": "run_command", "tool_call_id": "c3", "tool_args": {"command": "make lint"}},
        {"trace_type": "tool_result", "tool_call_id": "c3", "tool_error": "E501 line too long"},
        {"trace_type": "assistant", "content": "Lint fails with E501."},
        {"trace_type": "user", "content": "ok"},
    ]
    cli("ingest", "a", input=events)
    assert cli("compact", "a", "--tail-turns", "1", "--keep-steps", "0").exit_code == 0
    f = _files(memory_dir)
    (episodic,) = f["episodic"]
    summary = episodic["summary"]
    assert summary.startswith("2 turns (turn_0001–turn_0002)")
    for identifier in ("tests/test_orders.py", "app/api.py", "https://ci.example.com/runs/4711",
                       "`pytest -q tests/test_orders.py`", "`make lint`", "E501"):
        assert identifier in summary, identifier
    assert 'user: "Fix the failing test in tests/test_orders.py. I prefer small commits."' in summary
    assert 'assistant: "Fixed app/api.py; see https://ci.example.com/runs/4711 for the run."' in summary
    assert "Files modified: app/api.py" in summary
    # the latest failure first
    assert ("Failed: `make lint` ×1 (E501 line too long) — still failing; `pytest -q tests/test_orders.py` ×1 "
            "(exit status 1 FAILED tests/test_orders.py::test_total - assert 100.0 == 90.0) — still failing") in summary
    facts = {s["fact"]: s for s in f["semantic"]}
    # the preferences; the files and the failures are in the summary, and the snapshot carries them once
    assert list(facts) == ['User preference: "I prefer small commits."', 'User preference: "Never push to main directly."']
    assert facts['User preference: "Never push to main directly."']["source_turn_ids"] == ["turn_0002"]
    assert episodic["model"] == "offline" and episodic["trace_ids"][0] == f["raw_traces_archive"][0]["id"]


def test_offline_summary_of_a_thousand_turns_is_bounded(memory_dir):
    from memcli.compaction.summarizer import Turn
    from memcli.models import RawTrace

    def turns():
        for i in range(1, 1001):
            tid = f"turn_{i:04d}"
            yield Turn(tid, [RawTrace(f"u{i}", 1.0 + i, tid, 1, "user", f"Question {i} about src/mod{i}.py " + "w " * 200, "x"),
                             RawTrace(f"a{i}", 2.0 + i, tid, 2, "assistant", "Answer " * 100, "x")])

    summary = OfflineSummarizer().summarize(turns()).episodic_summary
    assert len(summary) <= 19_000  # every ask is listed while they fit; the rest are counted honestly
    assert summary.startswith("1000 turns (turn_0001–turn_1000)")
    # the first asks and the newest are listed; the turns between are counted on one line, where they were
    gap = re.search(r"\n… (\d+) turns \((turn_\d+)–(turn_\d+)\) left out \(`memcli show", summary)
    assert gap and "\n- turn_0001 ·" in summary and "- turn_1000 ·" in summary
    # each turn on its line, or on the line of its run of turns (conversation said on one line)
    listed = [n for first, last in re.findall(r"^- turn_(\d+)(?:–turn_(\d+))? ·", summary, re.M)
              for n in range(int(first), int(last or first) + 1)]
    left_out = range(int(gap[2][5:]), int(gap[3][5:]) + 1)
    assert len(listed) + int(gap[1]) == 1000 == len(set(listed) | set(left_out))


def test_dry_run_prints_the_plan_and_writes_nothing(cli, memory_dir):
    cli("ingest", "a", input=conversation(8))
    before = tree_digest(memory_dir)
    result = cli("compact", "a", "--dry-run")
    assert result.exit_code == 0
    assert result.stdout.startswith("agent a: would compact 4 turns (turn_0001–turn_0004)\n")
    assert "traces moved   16 (1 system/developer trace stays)" in result.stdout
    assert "turns kept     4 (the last 4 turns stay)" in result.stdout
    assert "target 97,440, trigger at 155,904" in result.stdout
    plan = orjson.loads(cli("compact", "a", "--dry-run", "--json").stdout)
    assert (plan["turns"], plan["traces"], plan["dry_run"], plan["compacted"]) == (4, 16, True, False)
    assert plan["tokens_after"] < plan["tokens_before"]
    assert tree_digest(memory_dir) == before


def test_if_needed_says_why_or_why_not(cli, memory_dir):
    cli("ingest", "a", input=conversation(8, big=2000))
    before = store_digest(memory_dir)
    result = cli("compact", "a", "--if-needed")
    assert result.exit_code == 0
    assert "compaction is not due: working-snapshot tokens" in result.stderr
    # nothing written but the token counts it took (as stats does): the next hook call reuses them
    assert store_digest(memory_dir) == before
    result = cli("compact", "a", "--if-needed", "--max-context-tokens", "5000")
    assert result.exit_code == 0
    # the target (half the input budget) takes more than the old turns: steps of the tail too
    assert "compaction is due" in result.stderr and "compacted 5 turns and 1 step" in result.stderr
    assert AgentStore(memory_dir, "a") and _tokens(memory_dir) <= 2_726 // 2
    cli("ingest", "a", input=[{"trace_type": "assistant", "content": "x", "usage": {"prompt_tokens": 90_000}}])
    result = cli("compact", "a", "--if-needed", "--max-context-tokens", "100000")
    assert "provider-reported prompt_tokens 90,000 >" in result.stderr


def test_if_needed_due_by_the_provider_count_says_the_working_snapshot_fits_when_nothing_moves(cli, memory_dir):
    """A harness's prompt holds more than memcli's working snapshot (its system prompt, its tools):
    the provider's count may make a compaction due while the snapshot already fits the target and
    the turns kept hold nothing to move. It said only "the last 4 turns stay" of a store of one
    turn; it says what memcli's own count found."""
    cli("ingest", "a", input=[{"trace_type": "user", "content": "Fix the build."},
                              {"trace_type": "assistant", "content": "Done.", "usage": {"prompt_tokens": 190_000}}])
    def files() -> dict:   # (the count cache aside, and the empty lock files a due compaction takes)
        return {k: v for k, v in store_digest(memory_dir).items() if not k.startswith(".locks/")}

    before = files()
    result = cli("compact", "a", "--if-needed")
    assert result.exit_code == 0
    assert "compaction is due: provider-reported prompt_tokens 190,000 > 155,904" in result.stderr
    tokens = _tokens(memory_dir)
    assert (f"nothing to compact in 'a': 1 turn in the active file and the last 4 turns stay; the working "
            f"snapshot ({tokens:,} tokens) is within the target (97,440)") in result.stderr
    assert files() == before


def test_if_needed_reads_the_active_file_once_for_the_trigger_and_the_plan(memory_dir, monkeypatch):
    """Without provider usage the trigger needs the working snapshot's count, which the plan
    takes anyway: one pass over the active file decides both (it used to be two)."""
    import memcli.snapshot.assemble as assemble
    from memcli.ingest.api import ingest

    ingest(memory_dir, "a", stdin=io.BytesIO(ndjson(conversation(8, big=2000))))
    passes = []
    real = assemble.count_working
    monkeypatch.setattr(assemble, "count_working", lambda *a, **k: passes.append(1) or real(*a, **k))
    result = compact(memory_dir, "a", if_needed=True, max_context_tokens=5000)
    assert result.compacted and result.budget.due and result.budget.source == "estimate"
    assert result.budget.prompt_tokens == result.tokens_before
    assert len(passes) == 2   # the plan's pass, and the count of the result after the commit
    passes.clear()
    before = tree_digest(memory_dir)
    result = compact(memory_dir, "a", if_needed=True)   # not due: one pass, nothing written, no lock file
    assert not result.compacted and result.reason.startswith("nothing to do: compaction is not due")
    assert len(passes) == 1 and tree_digest(memory_dir) == before


def test_if_needed_plans_again_when_another_compaction_rewrote_the_file_in_between(memory_dir, monkeypatch):
    """--if-needed plans before it takes the compaction lock; a compaction that ran in between
    (it rewrote the active file) makes that plan stale: it is planned again, nothing is lost."""
    import memcli.compaction.compactor as compactor
    from memcli.ingest.api import ingest

    ingest(memory_dir, "a", stdin=io.BytesIO(ndjson(conversation(12, big=2000))))
    ids = Counter(s.trace.id for s in AgentStore(memory_dir, "a").iter_traces(archive=True))
    real_lock = compactor.compaction_lock
    raced = []

    def lock_after_a_rival(store):
        if not raced:
            raced.append(None)   # the rival takes this lock too
            raced[0] = compact(memory_dir, "a", policy=CompactionPolicy(tail_turns=8))
        return real_lock(store)

    monkeypatch.setattr(compactor, "compaction_lock", lock_after_a_rival)
    result = compact(memory_dir, "a", if_needed=True, max_context_tokens=5000)
    assert raced[0].compacted and result.compacted, result.reason
    assert result.turn_ids[0] != raced[0].turn_ids[0]   # the second window starts after the first
    store = AgentStore(memory_dir, "a")
    active = Counter(t.id for t in store.iter_active())
    archived = Counter(s.trace.id for s in store.iter_traces(archive=True, active=False))
    assert active + archived == ids and not set(active) & set(archived)


def test_nothing_to_compact_and_unknown_agent(cli, memory_dir):
    cli("ingest", "a", input=conversation(3))
    result = cli("compact", "a")
    assert result.exit_code == 0 and "nothing to compact in 'a': 3 turns" in result.stderr
    assert not (agent_dir(memory_dir, "a") / "episodic.jsonl").exists()
    assert cli("compact", "nobody").exit_code == 3
    assert cli("compact", "a", "--strategy", "magic").exit_code == 2


def test_sliding_window_archives_without_a_summary(cli, memory_dir):
    cli("ingest", "a", input=conversation(8))
    result = cli("compact", "a", "--strategy", "sliding-window")
    assert result.exit_code == 0 and "without a summary (sliding-window)" in result.stderr
    f = _files(memory_dir)
    assert len(f["raw_traces_archive"]) == 16 and f["episodic"] == [] and f["semantic"] == []


def test_rollup_and_duplicate_facts(cli, memory_dir):
    def round_(prefix):
        events = conversation(5, prefix=prefix, system=False)
        events[0]["content"] += " Always answer in   English."
        cli("ingest", "a", input=events)
        result = cli("compact", "a", "--tail-turns", "1", "--keep-steps", "2")
        assert result.exit_code == 0, result.stderr
        return result

    for prefix in "pqrs":
        round_(prefix)
    store = AgentStore(memory_dir, "a")
    f = _files(memory_dir)
    assert len(f["episodic"]) == 5  # 4 compactions + 1 rollup
    live_episodic, live_facts = store.live_memory()
    assert len(live_episodic) == 2
    rollup, newest = live_episodic
    assert "rollup" in rollup.tags and rollup.supersedes == [e["id"] for e in f["episodic"][:3]]
    assert rollup.summary.startswith("Earlier history (turn_0001–turn_0014), rolled up from 3 summaries:")
    assert newest.turn_ids == ["turn_0015", "turn_0016", "turn_0017", "turn_0018", "turn_0019"]
    # the preference was extracted 4 times; one copy is live, the others are superseded by it
    prefs = [s for s in f["semantic"] if s["fact"].startswith("User preference")]
    assert len(prefs) == 4 and all(p["fact"] == prefs[0]["fact"] for p in prefs)
    live_prefs = [s for s in live_facts if s.fact.startswith("User preference")]
    assert len(live_prefs) == 1 and live_prefs[0].supersedes == [prefs[2]["id"]]
    assert live_prefs[0].source_turn_ids == ["turn_0001", "turn_0006", "turn_0011", "turn_0016"]


def test_compaction_lock_makes_a_second_compaction_wait_its_turn(cli, memory_dir):
    cli("ingest", "a", input=conversation(8))
    store = AgentStore(memory_dir, "a")
    with compaction_lock(store):
        result = cli("compact", "a")
        assert result.exit_code == 1 and "another compaction of agent 'a' is running" in result.stderr
        result = cli("compact", "a", "--if-needed", "--max-context-tokens", "2000")
        assert result.exit_code == 0 and "skipped: another compaction" in result.stderr


class _SlowSummarizer(OfflineSummarizer):
    """Offline summaries, but ingest runs while it works (in the window between plan and commit)."""

    def __init__(self, during):
        super().__init__()
        self.during = during

    def summarize(self, turns, memory=None) -> Summary:
        turns = list(turns)
        self.during()
        return super().summarize(turns, memory)


def test_ingest_during_summarization_is_carried_over(cli, memory_dir):
    cli("ingest", "a", input=conversation(10))
    late = conversation(30, prefix="late", system=False)

    def during():
        from memcli.ingest.api import ingest

        threads = [threading.Thread(target=lambda chunk=late[i::3]: ingest(memory_dir, "a", stdin=io.BytesIO(ndjson(chunk))))
                   for i in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    result = compact(memory_dir, "a", summarizer=_SlowSummarizer(during))
    assert result.compacted and result.turns == 6
    f = _files(memory_dir)
    ids = [r["id"] for r in f["raw_traces"] + f["raw_traces_archive"]]
    expected = {e["id"] for e in conversation(10)} | {e["id"] for e in late}
    assert Counter(ids) == Counter(expected)
    assert {r["id"] for r in f["raw_traces_archive"]} == {f"t-{i}-{k}" for i in range(1, 7) for k in "ucra"}


def test_traces_appended_while_it_compacts_are_said_as_what_passes_the_target(cli, memory_dir):
    """An ingest that lands between the plan and the commit is carried over, so the snapshot can
    end above an explicit target the compaction itself met: the note said "what must stay needs
    N tokens" (the plan's minimum, far below), blaming the plan. It names the appends now, and
    what the compaction itself left, within the target."""
    from memcli.api import Memory

    cli("ingest", "a", input=conversation(10))
    before = Memory(memory_dir).agent("a").stats().tokens.estimate
    late = conversation(12, prefix="late", system=False)

    def during():
        from memcli.ingest.api import ingest

        ingest(memory_dir, "a", stdin=io.BytesIO(ndjson(late)))

    target = before * 3 // 4
    notes: list[str] = []
    result = compact(memory_dir, "a", summarizer=_SlowSummarizer(during), on_note=notes.append,
                     policy=CompactionPolicy(target_tokens=target, keep_steps=0, tail_turns=1))
    assert result.compacted and result.tokens_after > target
    said = [n for n in notes if "over the target" in n]
    assert len(said) == 1 and "what must stay" not in said[0]
    left = int(re.search(r"the compaction left ([\d,]+)", said[0])[1].replace(",", ""))
    added = int(re.search(r"while it ran \(traces appended, memory items\) adds ([\d,]+)", said[0])[1].replace(",", ""))
    assert left <= target and left + added == result.tokens_after


def test_a_torn_last_line_the_compaction_cuts_is_said(cli, memory_dir):
    """A crashed writer's half line at the end of the active file is cut when the compaction's
    commit opens its session, as by any write; it went without a word (and ``uncompact`` cannot
    give back bytes that were never a record)."""
    cli("ingest", "a", input=conversation(10))
    active = agent_dir(memory_dir, "a") / "raw_traces.jsonl"
    size = active.stat().st_size
    with open(active, "ab") as f:
        f.write(b'{"id":"x","trace_typ')
    result = cli("compact", "a", "--tail-turns", "2")
    assert result.exit_code == 0
    assert f"raw_traces.jsonl: cut 20 bytes of a torn last line at byte {size}" in result.stderr


def test_a_failing_summarizer_writes_nothing(cli, memory_dir):
    cli("ingest", "a", input=conversation(8))

    class Broken(OfflineSummarizer):
        def summarize(self, turns, memory=None):
            raise CompactionError("no summary today")

    before = tree_digest(agent_dir(memory_dir, "a"))
    with pytest.raises(CompactionError):
        compact(memory_dir, "a", summarizer=Broken())
    after = tree_digest(agent_dir(memory_dir, "a"))
    assert after.pop(".compaction.json")
    assert after == before


def test_a_thousand_turn_window_commits_one_bounded_item(cli, memory_dir):
    cli("ingest", "a", input=conversation(1000, system=False))
    result = compact(memory_dir, "a", policy=CompactionPolicy(tail_turns=4))
    assert result.turns == 996
    (episodic,) = _files(memory_dir)["episodic"]
    assert len(episodic["summary"]) <= 19_000 and len(episodic["turn_ids"]) == 996
    assert len(episodic["trace_ids"]) == 996 * 4


def test_a_target_the_user_sets_sizes_the_summary_past_its_usual_size(cli, memory_dir):
    """Without a target the summary keeps a harness summary's usual size (19,000 characters at
    most); ``--target-tokens`` leaves the budget alone to size it: the same window, given
    30,000 tokens, lists every ask, and the snapshot still fits."""
    cli("ingest", "a", input=conversation(1000, system=False))
    cli("ingest", "b", input=conversation(1000, system=False))
    usual = compact(memory_dir, "a", policy=CompactionPolicy(tail_turns=4))
    sized = compact(memory_dir, "b", policy=CompactionPolicy(tail_turns=4, target_tokens=30_000))
    assert usual.turns == sized.turns == 996
    assert len(usual.summary) <= 19_000 < len(sized.summary)
    assert sized.tokens_after <= 30_000
    # every ask of the window is in (the usual size counts the middle ones on one line)
    # (the window spans four days: the first line and each whose day is not the line's before say it)
    shown = re.sub(r"^(- turn_\d+) \(\d{4}-\d\d-\d\d\)", r"\1", sized.summary, flags=re.M)
    assert all(f'turn_{t:04d} · user: "Where is order A-{1000 + t}?"' in shown for t in range(1, 997))
    assert len(re.findall(r"^- turn_\d+ \(\d{4}-\d\d-\d\d\) ·", sized.summary, re.M)) == 4
    assert 'turn_0500 · user' not in usual.summary and "turns (turn_" in usual.summary


def test_a_summary_asked_for_less_keeps_the_size_the_user_s_target_allows():
    """``Summary.resize`` (what the compaction asks of a summary over its budget) keeps what the
    target the user set allows: asked for 20,000 tokens, a summary of 1,000 turns given a
    target stays past the usual 19,000 characters."""
    from memcli.compaction.summarizer import MemoryContext, Turn
    from memcli.models import RawTrace

    def turns():
        for i in range(1, 1001):
            tid = f"turn_{i:04d}"
            yield Turn(tid, [RawTrace(f"u{i}", 1.0 + i, tid, 1, "user", f"Where is order A-{i} in src/mod{i}.py?", "x"),
                             RawTrace(f"a{i}", 2.0 + i, tid, 2, "assistant", f"Order A-{i} ships today. " * 4, "x")])

    given = OfflineSummarizer().summarize(turns(), MemoryContext(summary_tokens=40_000, target_given=True))
    assert len(given.resize(20_000).episodic_summary) > 19_000
    usual = OfflineSummarizer().summarize(turns(), MemoryContext(summary_tokens=40_000))
    assert len(usual.resize(20_000).episodic_summary) <= 19_000


def _steps(first: int, count: int) -> list[dict]:
    out = []
    for k in range(first, first + count):
        out += [{"id": f"n{k}", "trace_type": "assistant", "content": f"step {k}"},
                {"id": f"c{k}", "trace_type": "tool_call", "tool_name": "run", "tool_call_id": f"k{k}",
                 "tool_args": {"command": "make"}},
                {"id": f"r{k}", "trace_type": "tool_result", "tool_call_id": f"k{k}",
                 "tool_result": " ".join(f"line {k}.{i}: compiled module_{i}.o" for i in range(200))}]
    return out


def test_a_step_after_a_compaction_inside_the_turn_takes_a_new_seq(memory_dir):
    """Steps compacted out of the open turn keep their seq in the archive: the next step goes on
    after them, not after the ask left in the active file — also when the state is rebuilt from the
    files alone (a lost or stale .state.json). The state machine of test_reliability found it."""
    from memcli.api import Memory

    agent = Memory(memory_dir).agent("a")
    agent.ingest([{"id": "ask", "trace_type": "user", "content": "Make the suite pass."}, *_steps(1, 4)], "native")
    agent.compact(keep_steps=0, tail_turns=0)
    agent.ingest(_steps(5, 1), "native")
    (agent_dir(memory_dir, "a") / ".state.json").unlink()
    agent.ingest(_steps(6, 1), "native")
    d = agent_dir(memory_dir, "a")
    records = read_jsonl(d / "raw_traces_archive.jsonl") + read_jsonl(d / "raw_traces.jsonl")
    assert len(records) == 19
    places = Counter((r["turn_id"], r["seq"]) for r in records)
    assert max(places.values()) == 1, [p for p, n in places.items() if n > 1]
    assert [r["seq"] for r in read_jsonl(d / "raw_traces.jsonl")] == [1, *range(14, 20)]


def test_a_session_compacted_again_and_again_keeps_one_coherent_summary(memory_dir):
    """A hook compacting after every turn: the summaries roll up, and the offline ones merge into
    one (each ask, one files line, each failure's latest state). The rollup had stacked the
    summaries — the files line once per summary, a test "still failing" in an older one that a
    newer one showed passing — and at its size left the oldest out, the request among them."""
    from memcli.ingest.api import ingest

    def turn(n: int) -> list[dict]:
        events = [{"trace_type": "user", "content": f"Round {n}: port src/mod_{n}.py to settings (TICKET-{100 + n})"},
                  {"trace_type": "tool_call", "tool_name": "Edit", "tool_call_id": f"e{n}", "tool_args": {
                      "file_path": f"src/mod_{n}.py", "old_string": "os.environ", "new_string": f"settings.mod_{n}"}},
                  {"trace_type": "tool_result", "tool_name": "Edit", "tool_call_id": f"e{n}", "tool_result": "ok"}]
        # an odd round's test fails; the next round's passes it (its summary says so: its only test run)
        test, result = (n, {"exit_code": 1, "stdout": f"FAILED tests/test_mod_{n}.py::test_settings - Mod{n}Error\n1 failed"}) \
            if n % 2 else (n - 1, {"exit_code": 0, "stdout": "3 passed in 0.1s"})
        return events + [{"trace_type": "tool_call", "tool_name": "Bash", "tool_call_id": f"t{n}",
                          "tool_args": {"command": f"pytest -q tests/test_mod_{test}.py"}},
                         {"trace_type": "tool_result", "tool_name": "Bash", "tool_call_id": f"t{n}", "tool_result": result},
                         {"trace_type": "assistant", "content": f"mod_{n} reads its settings; the lookup it "
                                                                  "made in the environment before is gone."}]

    for n in range(14):
        ingest(memory_dir, "a", stdin=io.BytesIO(ndjson(turn(n))))
        result = compact(memory_dir, "a", policy=CompactionPolicy(tail_turns=1, keep_steps=0))
        assert result.compacted == (n > 0), result.reason
    live = AgentStore(memory_dir, "a").live_memory()[0]
    rollup = next(item for item in live if "rollup" in item.tags)
    text = rollup.summary
    assert "older summaries left out" not in text and text.count("Files modified: ") == 1
    sections = re.findall(r"^\[turn_0001–turn_(\d+)\] \((\d+) summaries\)$", text, re.M)
    assert len(sections) == 1 and int(sections[0][1]) >= 4, text
    rolled = int(sections[0][0])   # the turns it holds
    for n in range(rolled):   # each ask, whole
        assert f'user: "Round {n}: port src/mod_{n}.py to settings (TICKET-{100 + n})"' in text, n
    assert all(f"src/mod_{n}.py" in text.split("Files modified: ")[1].split("\n")[0] for n in range(rolled))
    failed = next(line for line in text.split("\n") if line.startswith("Failed: "))
    # each odd round's test passed in the next round: "still failing" only for one whose next round is not rolled up
    still = re.findall(r"`pytest -q tests/test_mod_(\d+)\.py` ×1 \([^)]*\) — still failing", failed)
    assert all(int(n) + 1 >= rolled for n in still), failed
    assert failed.count(" — passed later") == len([n for n in range(1, rolled, 2) if n + 1 < rolled]), failed


@pytest.mark.parametrize("fix", ["the same file", "the whole suite"])
def test_a_rollup_tells_a_failure_fixed_in_a_later_window_that_ends_failing_another_test(memory_dir, fix):
    """A test failing in one compaction's window and passing in the next, whose window then ends
    with another test of the same runner failing: that window's Commands line showed only the
    family's latest run (none, it failed), so the merged rollup still said the first test was
    "still failing". Now the Commands line says each family's latest passing run (unless that
    command failed in the window: the Failed line says it), and the merge reads a later run
    that covers the failure (the whole suite) as a fix, as a window does its own runs."""
    from memcli.ingest.api import ingest

    def call(n: int, k: int, command: str, result: dict) -> list[dict]:
        return [{"trace_type": "tool_call", "tool_name": "Bash", "tool_call_id": f"t{n}.{k}", "tool_args": {"command": command}},
                {"trace_type": "tool_result", "tool_name": "Bash", "tool_call_id": f"t{n}.{k}", "tool_result": result}]

    def failing(name: str) -> dict:
        return {"exit_code": 1, "stdout": f"FAILED tests/test_{name}.py::test_it - {name.title()}Error\n1 failed"}

    def turn(n: int) -> list[dict]:
        events = [{"trace_type": "user", "content": f"Round {n}: port src/mod_{n}.py (TICKET-{100 + n})"}]
        if n % 2:   # an odd round's test fails
            events += call(n, 0, f"pytest -q tests/test_mod_{n}.py", failing(f"mod_{n}"))
        elif n:   # the next round passes it, then another test fails and stays failing
            fixed_by = f"pytest -q tests/test_mod_{n - 1}.py" if fix == "the same file" else "pytest -q"
            events += call(n, 0, fixed_by, {"exit_code": 0, "stdout": "3 passed in 0.1s"})
            events += call(n, 1, f"pytest -q tests/test_side_{n}.py", failing(f"side_{n}"))
        return events + [{"trace_type": "assistant", "content": f"mod_{n} done."}]

    for n in range(12):
        ingest(memory_dir, "a", stdin=io.BytesIO(ndjson(turn(n))))
        compact(memory_dir, "a", policy=CompactionPolicy(tail_turns=1, keep_steps=0))
    rollup = next(item for item in AgentStore(memory_dir, "a").live_memory()[0] if "rollup" in item.tags).summary
    rolled = int(re.search(r"^\[turn_0001–turn_(\d+)\] \(\d+ summaries\)$", rollup, re.M)[1])
    failed = next(line for line in rollup.split("\n") if line.startswith("Failed: "))
    mods = dict(re.findall(r"`pytest -q tests/test_mod_(\d+)\.py` ×1 \([^)]*\) — (still failing|passed later|fixed later)",
                           failed))
    assert mods and all(int(n) + 1 < rolled for n in mods), failed   # (the next round of each rolled up too)
    assert set(mods.values()) == {"passed later" if fix == "the same file" else "fixed later"}, failed
    if fix == "the whole suite":
        assert " — fixed later (a later `pytest -q` passed)" in failed
    sides = re.findall(r"`pytest -q tests/test_side_(\d+)\.py` ×1 \([^)]*\) — still failing", failed)
    assert sides, failed   # what no later run passed stays failing
