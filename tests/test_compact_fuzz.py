"""Randomized differential tests of compaction's fast paths (issue 22), over generated stores of
adversarial shapes: turns whose lines interleave, orphan and late tool results, a tool_call_id
used twice, pinned system/developer lines inside old turns, subagent (sidechain) traces, a
harness's own compaction summary (after a turn, and in the middle of one), giant turns of many steps whose last call still runs, lines
longer than the read block, blank lines, non-ASCII text written as ``\\u`` escapes (surrogate
pairs included), a torn last line; targets from tiny to huge, ``keep_steps``/``tail_turns`` of
every size. For each store:

1. the read-ahead child (forked, with a feed budget small enough to spill) and a read of the
   window in this process give the same result, summary, facts, turn and trace ids, and files;
2. every trace ends in exactly one of the archive and the active file, each in file order, and
   ``uncompact`` gives back the active file byte for byte;
3. the snapshot after compaction fits an explicit target (its count is the one the compaction
   predicted), or the compaction refused before writing anything;
4. the plan is the same with the token count cache cold, warm, or not used at all.

``MEMCLI_FUZZ_EXAMPLES`` raises the number of examples (CI runs a fixed, small set)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from memcli.compaction import compactor, window
from memcli.compaction.compactor import compact
from memcli.compaction.policy import CompactionPolicy
from memcli.compaction.undo import uncompact
from memcli.errors import CompactionError
from memcli.store.agent import AgentStore
from tests.events import CALL, RES, A, U

EXAMPLES = int(os.environ.get("MEMCLI_FUZZ_EXAMPLES", "0")) or None
FILES = ("raw_traces.jsonl", "raw_traces_archive.jsonl")
HUGE = 300_000          # characters: a line longer than jsonl.line_batches' 256 KB block
UNICODE = "naïve café — 数据 🙂 Ω"


def _turn(draw, t: int, call_ids: list) -> list[dict]:
    """One turn's events: its ask, steps of every kind, maybe an answer."""
    tid = f"turn_{t:04d}"
    events = [U(f"ask {t}: fix src/mod_{t}.py {UNICODE if draw(st.booleans()) else ''}", turn_id=tid)]
    giant = draw(st.integers(0, 9)) == 0
    n_steps = draw(st.integers(20, 60)) if giant else draw(st.integers(0, 5))
    for s in range(n_steps):
        kind = draw(st.sampled_from(["ok", "ok", "fail", "edit", "open", "side", "dup", "orphan", "pinned",
                                     "text", "huge", "harness"]))
        cid = f"c{t}_{s}"
        if kind == "dup" and call_ids:   # a tool_call_id used before (a harness that reuses ids)
            cid = draw(st.sampled_from(call_ids))
        call_ids.append(cid)
        side = {"tags": ["sidechain"], "agent_id": f"sub{t}_{s % 2}"} if kind == "side" else {}
        if kind == "pinned":
            events.append(U(f"developer note {t}.{s}: keep the API stable", turn_id=tid,
                            tags=[draw(st.sampled_from(["system", "developer"]))]))
            continue
        if kind == "text":
            events.append(A(f"plan {t}.{s}: next I will edit src/mod_{t}.py", turn_id=tid))
            continue
        if kind == "harness":   # the harness compacted in the middle of the turn (joins the step before)
            events.append(U(f"Summary so far: src/mod_{t}.py step {s}.", turn_id=tid, tags=["compact_summary"],
                            harness_compaction={"harness": "claude-code", "trigger": "auto"}))
            continue
        if kind == "orphan":   # a result whose call is in no trace
            events.append(RES(f"gone_{t}_{s}", f"orphan {t}.{s}", turn_id=tid))
            continue
        events.append(A(f"step {s} of turn {t}", turn_id=tid, **side))
        if kind == "edit":
            events.append(CALL(cid, "Edit", {"file_path": f"src/mod_{t}_{s}.py", "new_string": f"def f_{s}(): ..."},
                               turn_id=tid))
        else:
            events.append(CALL(cid, "Bash", {"command": f"pytest tests/test_{s}.py"}, turn_id=tid, **side))
        if kind == "fail":
            events.append(RES(cid, turn_id=tid, tool_error=f"exit status 1\nFAILED tests/test_{s}.py::t_{s}"))
        elif kind == "huge":
            events.append(RES(cid, ("x" * 99 + "\n") * (HUGE // 100), turn_id=tid))
        elif kind != "open":
            events.append(RES(cid, f"done {t}.{s} {UNICODE}", turn_id=tid, **side))
    if draw(st.booleans()):
        events.append(A(f"answer {t}", turn_id=tid))
    if giant and draw(st.booleans()):   # its last call still runs
        events += [A(f"running {t}", turn_id=tid), CALL(f"run_{t}", "Bash", {"command": "make build"}, turn_id=tid)]
    return events


def _interleave(a: list, b: list) -> list:
    """The lines of two turns alternating (each turn's own order kept, ``a``'s ask first)."""
    out = [a[0]]
    rest_a, rest_b = a[1:], b
    while rest_a or rest_b:
        if rest_b:
            out.append(rest_b.pop(0))
        if rest_a:
            out.append(rest_a.pop(0))
    return out


@st.composite
def sessions(draw) -> dict:
    """A store's events and what is done to its active file after ingest."""
    events: list[dict] = []
    if draw(st.booleans()):
        events.append(U("You are a careful agent.", tags=["system"]))
    call_ids: list = []
    turns = [_turn(draw, t, call_ids) for t in range(1, draw(st.integers(1, 8)) + 1)]
    if len(turns) > 1 and draw(st.booleans()):   # two turns' lines alternate
        i = draw(st.integers(0, len(turns) - 2))
        turns[i:i + 2] = [_interleave(turns[i], turns[i + 1])]
    for n, turn in enumerate(turns):
        events += turn
        if n and draw(st.integers(0, 3)) == 0:   # a late trace: an older call's result, an old turn's line
            kind = draw(st.sampled_from(["result", "note", "pinned"]))
            old = f"turn_{draw(st.integers(1, n)):04d}"
            if kind == "result" and call_ids:
                events.append(RES(draw(st.sampled_from(call_ids)), "late result",
                                  turn_id=draw(st.sampled_from([old, turn[0]["turn_id"]]))))
            elif kind == "note":
                events.append(A(f"late note for {old}", turn_id=old))
            else:
                events.append(U("late instruction", turn_id=old, tags=["developer"]))
        if draw(st.integers(0, 5)) == 0:   # a harness's own compaction (Claude Code's compact_boundary)
            events.append(U(f"Summary of the session so far: src/mod_{n}.py was fixed.", turn_id=turn[0]["turn_id"],
                            tags=["compact_summary"],
                            harness_compaction={"harness": "claude-code", "trigger": "auto", "pre_tokens": 1000}))
    return {
        "events": events,
        "blank": draw(st.lists(st.integers(0, 10_000), max_size=3)),    # blank lines before these lines
        "escaped": draw(st.lists(st.integers(0, 10_000), max_size=3)),  # lines rewritten with \\u escapes
        "torn": draw(st.booleans()),
    }


def _ascii_line(line: bytes) -> bytes:
    """The same record written with every non-ASCII character as a ``\\u`` escape (surrogate
    pairs for characters beyond the BMP), as another JSON writer may have put it."""
    import json

    return json.dumps(orjson.loads(line), ensure_ascii=True, separators=(",", ":")).encode()


def _build(memory_dir: Path, session: dict) -> Path:
    """Ingest the session, then shape the active file; returns it."""
    from memcli.ingest.api import ingest

    src = memory_dir.parent / f"{memory_dir.name}.ndjson"
    src.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in session["events"]))
    ingest(memory_dir, "a", src)
    active = memory_dir / "agents" / "a" / "raw_traces.jsonl"
    lines = active.read_bytes().splitlines()
    for n in session["escaped"]:
        lines[n % len(lines)] = _ascii_line(lines[n % len(lines)])
    for n in sorted({n % len(lines) for n in session["blank"]}, reverse=True):
        lines.insert(n, b"")
    data = b"".join(line + b"\n" for line in lines)
    if session["torn"]:
        data += b'{"id":"tr_torn","trace_type":"assist'
    active.write_bytes(data)
    return active


def _ids(path: Path) -> list:
    if not path.exists():
        return []
    return [orjson.loads(line)["id"] for line in path.read_bytes().split(b"\n")[:-1] if line.strip()]


def _files(memory_dir: Path) -> dict:
    d = memory_dir / "agents" / "a"
    return {p.name: p.read_bytes() for p in sorted(d.iterdir()) if p.is_file() and p.name != ".token-counts"}


def _outcome(memory_dir: Path, policy: CompactionPolicy):
    """What a compaction did: (result fields, items, files), or the refusal."""
    try:
        result = compact(memory_dir, "a", policy=policy)
    except CompactionError as exc:
        return ("refused", str(exc)), None
    episodic, semantic = AgentStore(memory_dir, "a").live_memory()
    d = memory_dir / "agents" / "a"
    fields = (result.compacted, result.never_worse, result.summary, result.facts, result.turn_ids, result.traces,
              result.whole_turns, result.steps, result.abandoned, result.stop_reason, result.tokens_before,
              result.tokens_after, result.window_tokens, result.minimum_tokens, result.pinned_kept)
    items = ([(e.summary, e.turn_ids, sorted(e.trace_ids), e.tags, e.extra) for e in episodic],   # (ids: a set)
             [(s.fact, s.tags, s.source_turn_ids) for s in semantic])
    return (fields, items, {name: (d / name).read_bytes() if (d / name).exists() else b"" for name in FILES}), result


def _plan_figures(memory_dir: Path, policy: CompactionPolicy, target: int | None, memo) -> tuple:
    from memcli.compaction.window import plan_window
    from memcli.tokens import counting_memo

    with counting_memo(memo):
        plan = plan_window(AgentStore(memory_dir, "a"), policy.tail_turns, keep_steps=policy.keep_steps,
                           target_tokens=target)
    return plan.tokens_before, plan.window_tokens, plan.minimum_tokens, plan.runs, plan.turns, plan.stop_reason


def _subsequence(part: list, whole: list) -> bool:
    it = iter(whole)
    return all(x in it for x in part)


@settings(max_examples=EXAMPLES or 12, deadline=None, derandomize=EXAMPLES is None,
          suppress_health_check=list(HealthCheck))
@given(session=sessions(), tail=st.integers(0, 5), keep=st.integers(0, 6),
       target=st.sampled_from([None, 1, 200, 800, 3_000, 20_000, 10 ** 9]), feed=st.sampled_from([1 << 10, 16 << 10, 8 << 20]))
def test_a_compaction_read_ahead_by_a_child_is_the_one_read_in_process(tmp_path_factory, monkeypatch, session, tail,
                                                                       keep, target, feed):
    with monkeypatch.context() as patch:   # undone after each example (the fixture lasts the whole test)
        _check_store(tmp_path_factory, patch, session, tail, keep, target, feed)


def _check_store(tmp_path_factory, patch, session, tail, keep, target, feed) -> None:
    root = tmp_path_factory.mktemp("fuzz")
    base = root / "base"
    active = _build(base, session)
    before_bytes = active.read_bytes()
    before_ids = _ids(active)
    patch.setattr(compactor, "_can_fork", lambda: True)
    patch.setattr(compactor, "READ_AHEAD_MIN_BYTES", 0)
    patch.setattr(window, "WHOLE_TURN_FEED_BYTES", feed)
    policy = CompactionPolicy(tail_turns=tail, keep_steps=keep, target_tokens=target)

    # 4: the plan is the same whatever the count cache holds (cold, warm, none)
    from memcli.store.token_counts import TokenCountCache

    cache_path = base / "agents" / "a" / ".token-counts"
    figures = [_plan_figures(base, policy, target, None)]
    for _ in range(2):   # cold, then warm (the saved cache read back)
        cache = TokenCountCache(cache_path)
        figures.append(_plan_figures(base, policy, target, cache))
        cache.save()
    assert figures[0] == figures[1] == figures[2]

    finished = []   # what each read-ahead child gave back
    finish = compactor._ReadAhead.finish
    patch.setattr(compactor._ReadAhead, "finish",
                        lambda self, plan: finished.append((finish(self, plan), plan.delivered, plan.spilled))
                        or finished[-1][0])
    outcomes, results = [], []
    for forked in (True, False):
        copy = root / f"copy-{forked}"
        shutil.copytree(base, copy)
        if not forked:
            patch.setattr(compactor._ReadAhead, "of", classmethod(lambda cls, *args: None))
        if forked:   # the forked copy compacts cold, the other warm
            (copy / "agents" / "a" / ".token-counts").unlink(missing_ok=True)
        files_before = _files(copy)
        outcome, result = _outcome(copy, policy)
        outcomes.append(outcome)
        results.append(result)
        if result is None or not result.compacted:   # 3: refused, or never worse: nothing written
            assert _files(copy) == files_before
    # 1: the same compaction either way
    assert outcomes[0] == outcomes[1]
    if results[0] is not None and results[0].compacted:
        assert finished and finished[0][0] is not None   # the child's read was used
        event(f"delivered {min(finished[0][1], 3)}, spilled {finished[0][2] is not None}")
    result = results[1]
    if result is None:
        assert target is not None   # only an explicit target is refused
        return
    copy = root / "copy-False"
    if not result.compacted:
        return
    d = copy / "agents" / "a"
    # 2: every trace in exactly one of archive and active, each in file order
    archived, kept = _ids(d / FILES[1]), _ids(d / FILES[0])
    assert sorted(archived + kept) == sorted(before_ids) and len(archived) == result.traces
    assert _subsequence(archived, before_ids) and _subsequence(kept, before_ids)
    # 3: the snapshot fits an explicit target, and is what the compaction predicted
    from memcli.snapshot.assemble import working_tokens
    from memcli.store.ledger import iter_ledger

    now = working_tokens(AgentStore(copy, "a"))
    assert now == result.tokens_after
    (record,) = [r for r in iter_ledger(AgentStore(copy, "a").paths.ledger) if r.get("kind") == "compaction"]
    if target is not None:   # (the prediction may differ from the count by the few tokens of messages
        assert record["tokens_after"] <= target and now <= target   # that merge once a neighbour moves)
    elif now > result.target_tokens:
        assert result.notes   # said, never silent
    # 2: uncompact gives the active file back byte for byte (a torn last line was cut by the commit)
    expected = before_bytes[:before_bytes.rfind(b"\n") + 1] if session["torn"] else before_bytes
    uncompact(copy, "a")
    assert (d / FILES[0]).read_bytes() == expected
    assert _ids(d / FILES[1]) == []


# --------------------------------------------------------------------------- examples found above

@pytest.mark.parametrize("blank", [[0], [1], [1, 2, 3]], ids=["before the first line", "between moved lines",
                                                               "after every moved line"])
def test_uncompact_puts_traces_back_around_blank_lines_of_the_active_file(memory_dir, blank):
    """A blank line in the active file (another writer's, a hand edit) stays where it is, and the
    anchor of a run is the kept line before it, blank lines and moved lines passed over: undone,
    the file is byte for byte what it was (a blank line between two moved lines made the second
    run's anchor the first run's last trace, which is archived, and the undo was refused; one at
    the start put the traces back before it)."""
    events = [U(f"ask {i} " + "lorem ipsum dolor " * 400, turn_id=f"t{i}") for i in range(1, 5)]
    active = _build(memory_dir, {"events": events, "blank": blank, "escaped": [], "torn": False})
    before = active.read_bytes()
    result = compact(memory_dir, "a", policy=CompactionPolicy(tail_turns=1, keep_steps=0))
    assert result.compacted and result.turn_ids == ["t1", "t2", "t3"]
    assert active.read_bytes().count(b"\n\n") + active.read_bytes().startswith(b"\n") >= 1   # the blank lines stay
    uncompact(memory_dir, "a")
    assert active.read_bytes() == before
