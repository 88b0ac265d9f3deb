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


def _turn(draw, t: int, call_ids: list, giant: bool = False) -> list[dict]:
    """One turn's events: its ask, steps of every kind, maybe an answer; ``giant``: many steps."""
    tid = f"turn_{t:04d}"
    events = [U(f"ask {t}: fix src/mod_{t}.py {UNICODE if draw(st.booleans()) else ''}", turn_id=tid)]
    giant = giant or draw(st.integers(0, 9)) == 0
    n_steps = draw(st.integers(20, 120)) if giant else draw(st.integers(0, 5))
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
            events.append(RES(cid, f"done {t}.{s} {UNICODE}\n" * draw(st.sampled_from([1, 30])), turn_id=tid, **side))
    if draw(st.booleans()):   # (with the provider's usage, --if-needed decides without a plan)
        usage = {"usage": {"prompt_tokens": draw(st.sampled_from([100, 3_500, 90_000])), "completion_tokens": 9}}
        events.append(A(f"answer {t}", turn_id=tid, **(usage if draw(st.booleans()) else {})))
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
    n_turns = draw(st.integers(1, 8))
    giant_last = draw(st.integers(0, 2)) == 0   # the newest turn a long one (the feed spills it)
    turns = [_turn(draw, t, call_ids, giant_last and t == n_turns) for t in range(1, n_turns + 1)]
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
        "reordered": draw(st.lists(st.integers(0, 10_000), max_size=3)),  # ... keys last first, spaced, indented
        "spaces": draw(st.booleans()),                                     # blank lines of spaces and tabs
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
    for n in session.get("reordered", ()):
        record = orjson.loads(lines[n % len(lines)])
        lines[n % len(lines)] = b"  " + orjson.dumps(dict(reversed(record.items())), option=orjson.OPT_INDENT_2
                                                      ).replace(b"\n", b" ")
    for n in sorted({n % len(lines) for n in session["blank"]}, reverse=True):
        lines.insert(n, b" \t " if session.get("spaces") else b"")
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


def _outcome(memory_dir: Path, policy: CompactionPolicy, **options):
    """What a compaction did: (result fields, items, files), or the refusal."""
    try:
        result = compact(memory_dir, "a", policy=policy, **options)
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


def _never_moved(data: bytes) -> list:
    """Ids the window never moves (design §4): system/developer traces, the newest turn's asks
    and context, and the newest trace when it is a call still unanswered (it may be running)."""
    records = [orjson.loads(line) for line in data.split(b"\n")[:-1] if line.strip()]
    pinned = [r["id"] for r in records if {"system", "developer"} & set(r.get("tags") or ())]
    talk = [r for r in records if r["id"] not in set(pinned)]
    out = list(pinned)
    if talk:
        newest = list(dict.fromkeys(r["turn_id"] for r in talk))[-1]
        out += [r["id"] for r in talk if r["turn_id"] == newest and r["trace_type"] == "user"
                and "compact_summary" not in (r.get("tags") or ())]   # (a harness summary moves with its step)
        last = talk[-1]
        if last["trace_type"] == "tool_call" and not any(r.get("tool_call_id") == last["tool_call_id"]
                                                         for r in talk if r["trace_type"] == "tool_result"):
            out.append(last["id"])
    return out


def _subsequence(part: list, whole: list) -> bool:
    it = iter(whole)
    return all(x in it for x in part)


@settings(max_examples=EXAMPLES or 12, deadline=None, derandomize=EXAMPLES is None,
          suppress_health_check=list(HealthCheck))
@given(session=sessions(), tail=st.integers(0, 5), keep=st.integers(0, 6),
       target=st.sampled_from([None, 1, 200, 800, 3_000, 20_000, 10 ** 9]), feed=st.sampled_from([1 << 10, 16 << 10, 8 << 20]),
       appends=st.booleans(), cache_limit=st.sampled_from([None, 3, 40]))
def test_a_compaction_read_ahead_by_a_child_is_the_one_read_in_process(tmp_path_factory, monkeypatch, session, tail,
                                                                       keep, target, feed, appends, cache_limit):
    """Checks 1-4 on native sessions; ``appends``: an ingest appends a turn while the window is
    summarized (after the plan, before the commit); ``cache_limit``: the count cache keeps this
    few counts (and a compaction this few new ones), so its trims run mid-compaction."""
    import memcli.store.token_counts as token_counts

    with monkeypatch.context() as patch:   # undone after each example (the fixture lasts the whole test)
        if cache_limit is not None:
            patch.setattr(token_counts, "MAX_ENTRIES", cache_limit)
            patch.setattr(compactor, "NEW_COUNTS_KEPT", cache_limit // 2)
        _check_store(tmp_path_factory, patch, lambda base: _build(base, session), session["torn"], tail, keep, target,
                     feed, appends)


APPENDED = [{**e, "id": f"rt_appended_{k}", "ts": 1_900_000_000 + k} for k, e in
            enumerate([U("an ask sent while compacting", turn_id="turn_9000"), A("its answer", turn_id="turn_9000")])]


def _check_store(tmp_path_factory, patch, build, torn: bool, tail, keep, target, feed, appends: bool = False) -> None:
    """Checks 1-4 of the module docstring on the store ``build(memory_dir)`` makes (agent "a";
    ``torn``: its active file ends in a torn line; ``appends``: APPENDED are ingested while the
    window is summarized)."""
    root = tmp_path_factory.mktemp("fuzz")
    base = root / "base"
    active = build(base)
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
    if appends:   # once the plan is made, in either mode (the memory bundle is read next)
        from memcli.ingest.api import ingest

        src = root / "appended.ndjson"
        src.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in APPENDED))

        class Bundle(compactor._Bundle):
            def __init__(self, job, plan_):
                ingest(job.store.paths.memory_dir, "a", src)
                super().__init__(job, plan_)

        patch.setattr(compactor, "_Bundle", Bundle)
        before_ids += [e["id"] for e in APPENDED]
    outcomes, results = [], []
    for forked in (True, False):
        copy = root / f"copy-{forked}"
        shutil.copytree(base, copy)
        if not forked:
            patch.setattr(compactor._ReadAhead, "of", classmethod(lambda cls, *args: None))
        if forked:   # the forked copy compacts cold, the other warm
            (copy / "agents" / "a" / ".token-counts").unlink(missing_ok=True)
        files_before = _files(copy)
        if not forked and not appends:   # --dry-run first: it writes nothing, and says what the compaction does
            cache_before = (copy / "agents" / "a" / ".token-counts").read_bytes()
            try:
                dry = compact(copy, "a", policy=policy, dry_run=True)
            except CompactionError as exc:
                dry = str(exc)
            assert _files(copy) == files_before
            assert (copy / "agents" / "a" / ".token-counts").read_bytes() == cache_before
        outcome, result = _outcome(copy, policy)
        outcomes.append(outcome)
        results.append(result)
        if not forked and not appends:
            if result is None:
                assert dry == outcome[1]
            else:
                assert (dry.summary, dry.facts, dry.turn_ids, dry.traces, dry.never_worse) == \
                    (result.summary, result.facts, result.turn_ids, result.traces, result.never_worse)
                dry_after = dry.tokens_after
        if (result is None or not result.compacted) and not appends:   # 3: refused, or never worse: nothing written
            assert _files(copy) == files_before
    # 1: the same compaction either way
    assert outcomes[0] == outcomes[1]
    event("refused" if results[0] is None else "compacted" if results[0].compacted else
          "never worse" if results[0].never_worse else "nothing to compact")
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
    for trace_id in _never_moved(before_bytes):
        assert trace_id in kept
    (item,) = [e for e in AgentStore(copy, "a").live_memory()[0] if "rollup" not in e.tags]
    assert sorted(item.trace_ids) == sorted(archived)   # the summary read every trace that moved
    # 3: the snapshot fits an explicit target, and is what the compaction predicted
    from memcli.snapshot.assemble import working_tokens
    from memcli.store.ledger import iter_ledger

    now = working_tokens(AgentStore(copy, "a"))
    assert now == result.tokens_after
    with AgentStore(copy, "a").counting_cache(save=False):   # 4: what the compaction left in the cache
        assert working_tokens(AgentStore(copy, "a")) == now
    (record,) = [r for r in iter_ledger(AgentStore(copy, "a").paths.ledger) if r.get("kind") == "compaction"]
    assert appends or record["tokens_after"] == dry_after   # --dry-run predicted what the compaction did
    event("predicted " + ("exactly" if record["tokens_after"] == now else
                          "high" if record["tokens_after"] > now else "LOW"))
    if target is not None:   # (the prediction may differ from the count by the few tokens of messages
        assert record["tokens_after"] <= target   # that merge once a neighbour moves; a turn appended
        assert now <= target or appends           # meanwhile adds its own)
    elif now > result.target_tokens:
        assert result.notes   # said, never silent
    # 2: uncompact gives the active file back byte for byte (a torn last line was cut by the commit)
    expected = before_bytes[:before_bytes.rfind(b"\n") + 1] if torn else before_bytes
    uncompact(copy, "a")
    if appends:
        assert _ids(d / FILES[0])[-len(APPENDED):] == [e["id"] for e in APPENDED]
        assert (d / FILES[0]).read_bytes().startswith(expected)
    else:
        assert (d / FILES[0]).read_bytes() == expected
    assert _ids(d / FILES[1]) == []


def _more_turns(draw, first: int) -> list[dict]:
    """Turns appended after a compaction, with their ids and times (the same bytes in each copy)."""
    events = []
    for t in range(first, first + draw(st.integers(1, 3))):
        events += _turn(draw, t, [])
    return [{**e, "id": f"rt_more_{first}_{k}", "ts": 1_800_000_000 + k} for k, e in enumerate(events)]


@settings(max_examples=EXAMPLES or 6, deadline=None, derandomize=EXAMPLES is None,
          suppress_health_check=list(HealthCheck))
@given(data=st.data(), session=sessions(), feed=st.sampled_from([1 << 10, 16 << 10]))
def test_compactions_in_a_row_with_appends_between_are_the_same_read_ahead_or_not(tmp_path_factory, monkeypatch,
                                                                                   data, session, feed):
    """Two or three compactions (``--if-needed`` or not, rollups as they come) with turns appended
    between them: the forked read-ahead and the in-process read end with the same files and
    items; undone newest first, the active file is the first one (torn tail cut) with the
    appended lines after it."""
    from memcli.ingest.api import ingest

    with monkeypatch.context() as patch:
        root = tmp_path_factory.mktemp("rounds")
        base = root / "base"
        before = _build(base, session).read_bytes()
        expected = before[:before.rfind(b"\n") + 1]
        patch.setattr(compactor, "READ_AHEAD_MIN_BYTES", 0)
        patch.setattr(window, "WHOLE_TURN_FEED_BYTES", feed)
        copies = {forked: root / f"copy-{forked}" for forked in (True, False)}
        for copy in copies.values():
            shutil.copytree(base, copy)
        done, appended = 0, []
        for n in range(data.draw(st.integers(2, 3))):
            if n:
                more = _more_turns(data.draw, 100 * n)
                appended += [e["id"] for e in more]
                src = root / f"more-{n}.ndjson"
                src.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in more))
                for copy in copies.values():
                    ingest(copy, "a", src)
            policy = CompactionPolicy(tail_turns=data.draw(st.integers(0, 3)), keep_steps=data.draw(st.integers(0, 4)),
                                      target_tokens=data.draw(st.sampled_from([None, 500, 5_000])))
            options = data.draw(st.sampled_from([{}, {"if_needed": True, "max_context_tokens": 4_000},
                                                 {"if_needed": True, "max_context_tokens": 40_000}]))
            outcomes = []
            for forked, copy in copies.items():
                patch.setattr(compactor, "_can_fork", lambda forked=forked: forked)
                outcome, result = _outcome(copy, policy, **options)
                outcomes.append(outcome)
            assert outcomes[0] == outcomes[1]
            if result is not None and result.compacted:   # within the target, or said why not
                assert result.tokens_after <= result.target_tokens or (
                    policy.target_tokens is None and result.notes), (result.tokens_after, result.target_tokens)
            done += result is not None and result.compacted
        event(f"{done} compactions")
        copy = copies[False]
        active = copy / "agents" / "a" / FILES[0]
        for _ in range(done):
            uncompact(copy, "a")
        assert _ids(copy / "agents" / "a" / FILES[1]) == []
        now = active.read_bytes()
        assert now.startswith(expected) and _ids(active)[len(_ids(base / "agents" / "a" / FILES[0])):] == appended


@st.composite
def claude_sessions(draw) -> list[dict]:
    """A Claude Code session file, built by its rules: prompts, assistant messages split over
    lines that share ``message.id``, tool results in user lines (some after the next prompt: an
    interrupted call), parallel Task subagents (``isSidechain``, ``agentId``) whose lines
    interleave and whose results come back out of order, ``isMeta`` lines, a ``compact_boundary``
    with Claude's own summary (``isCompactSummary``), a huge tool output."""
    lines: list[dict] = []
    n = [0]

    def line(kind: str, content, **kw) -> dict:
        n[0] += 1
        out = {"parentUuid": lines[-1]["uuid"] if lines else None, "isSidechain": False, "type": kind,
               "sessionId": "fuzz-session", "uuid": f"u{n[0]:05d}",
               "timestamp": f"2026-01-01T{n[0] // 3600 % 24:02d}:{n[0] // 60 % 60:02d}:{n[0] % 60:02d}.000Z"}
        out.update(kw)
        if kind == "assistant":
            out["message"] = {"id": kw.pop("msg", f"msg_{n[0]}"), "type": "message", "role": "assistant",
                              "model": "claude-sonnet-4", "content": content, "stop_reason": None}
            out.pop("msg", None)
        else:
            out["message"] = {"role": "user", "content": content}
        lines.append(out)
        return out

    def result(call: str, text, **kw) -> None:
        line("user", [{"type": "tool_result", "tool_use_id": call, "content": text,
                       "is_error": draw(st.integers(0, 4)) == 0}], **kw)

    late: list = []
    for t in range(draw(st.integers(1, 6))):
        line("user", f"prompt {t}: fix src/app_{t}.ts {UNICODE}")
        for call in late:   # results of calls the user interrupted, written after the new prompt
            result(call, "finished after the interruption")
        late = []
        if draw(st.booleans()):
            line("user", [{"type": "text", "text": "expanded command prompt"}], isMeta=True)
        for s in range(draw(st.sampled_from([0, 1, 2, 3, 6, 30]))):
            kind = draw(st.sampled_from(["tool", "tool", "text", "parallel", "interrupted", "huge"]))
            msg = f"msg_{t}_{s}"
            line("assistant", [{"type": "text", "text": f"step {s}: next I run the tests"}], msg=msg)
            if kind == "text":
                continue
            if kind == "parallel":   # two Task calls, their subagents' lines interleaved
                calls = [f"toolu_T{t}_{s}_{k}" for k in range(2)]
                for call in calls:
                    line("assistant", [{"type": "tool_use", "id": call, "name": "Task", "input": {"prompt": call}}],
                         msg=msg)
                for step in range(draw(st.integers(1, 3))):
                    for k in range(2):
                        side = {"isSidechain": True, "agentId": f"ag-{t}-{s}-{k}"}
                        sub = f"toolu_S{t}_{s}_{k}_{step}"
                        line("assistant", [{"type": "tool_use", "id": sub, "name": "Bash",
                                            "input": {"command": f"npm test -- part{k}"}}], **side)
                        result(sub, f"part {k} passed", **side)
                for call in reversed(calls):
                    result(call, [{"type": "text", "text": f"{call} done"}])
                continue
            call = f"toolu_{t}_{s}"
            line("assistant", [{"type": "tool_use", "id": call, "name": "Bash", "input": {"command": "npm run build"}}],
                 msg=msg)
            if kind == "interrupted":
                late.append(call)
            else:
                result(call, ("y" * 99 + "\n") * (HUGE // 100) if kind == "huge" else f"built {t}.{s}")
        if draw(st.integers(0, 4)) == 0:
            lines.append({"type": "system", "subtype": "compact_boundary", "uuid": f"b{t}",
                          "content": "Conversation compacted", "compactMetadata": {"trigger": "auto", "preTokens": 9000}})
            summary = line("user", f"This session is being continued: src/app_{t}.ts was fixed.", isCompactSummary=True)
            summary.update(parentUuid=None, logicalParentUuid=lines[-3]["uuid"])   # the chain restarts there
    return lines


def _importer(session: list[dict], fmt: str):
    """A store builder for :func:`_check_store`: ``session``'s lines imported as ``fmt``."""
    def build(memory_dir: Path) -> Path:
        from memcli.ingest.api import ingest

        src = memory_dir.parent / f"{memory_dir.name}.jsonl"
        src.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in session))
        ingest(memory_dir, "a", src, fmt=fmt)
        return memory_dir / "agents" / "a" / FILES[0]

    return build


@st.composite
def codex_sessions(draw) -> list[dict]:
    """A Codex rollout, built by its rules: base instructions, developer and context messages
    (some in the middle of the session), turns of reasoning, commentary, function and custom
    tool calls whose outputs come after other calls (or, aborted, in the next turn), token
    counts, Codex's own ``compacted`` items."""
    lines: list[dict] = []
    clock = iter(range(100_000))

    def line(kind: str, payload: dict) -> None:
        k = next(clock)
        lines.append({"timestamp": f"2026-02-23T{k // 3600 % 24:02d}:{k // 60 % 60:02d}:{k % 60:02d}.000Z",
                      "type": kind, "payload": payload})

    def message(role: str, text: str, kind: str = "input_text") -> None:
        line("response_item", {"type": "message", "role": role, "content": [{"type": kind, "text": text}]})

    line("session_meta", {"id": "fuzz-rollout", "cwd": "/repo", "base_instructions": {"text": "You are Codex."}})
    message("developer", "<permissions instructions>sandboxed</permissions instructions>")
    late: list = []
    for t in range(draw(st.integers(1, 6))):
        line("event_msg", {"type": "task_started", "turn_id": f"t{t}"})
        message("user", f"fix src/lib_{t}.rs {UNICODE}")
        line("event_msg", {"type": "user_message", "message": f"fix src/lib_{t}.rs {UNICODE}", "images": []})
        line("turn_context", {"turn_id": f"t{t}", "model": "gpt-5-codex"})
        for call in late:   # an aborted turn's calls, answered now
            line("response_item", {"type": "function_call_output", "call_id": call, "output": "late output"})
        late = []
        if draw(st.integers(0, 4)) == 0:
            message("developer", f"<collaboration_mode>{t}</collaboration_mode>")
        for s in range(draw(st.sampled_from([0, 1, 2, 4, 25]))):
            line("response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": f"thinking {s}"}],
                                   "encrypted_content": "gAAA"})
            message("assistant", f"Running step {s}.", "output_text")
            calls = [f"call_{t}_{s}_{k}" for k in range(draw(st.integers(1, 3)))]
            for k, call in enumerate(calls):
                if k % 2:
                    line("response_item", {"type": "custom_tool_call", "name": "apply_patch", "call_id": call,
                                           "input": f"*** Begin Patch\n*** Update File: src/lib_{t}.rs\n*** End Patch",
                                           "status": "completed"})
                else:
                    line("response_item", {"type": "function_call", "name": "exec_command", "call_id": call,
                                           "arguments": orjson.dumps({"cmd": f"cargo test {s}"}).decode()})
            if draw(st.integers(0, 5)) == 0:
                late += calls
                line("event_msg", {"type": "turn_aborted", "reason": "interrupted"})
                break
            for call in draw(st.permutations(calls)):
                output = "y" * HUGE if draw(st.integers(0, 30)) == 0 else f"ok {t}.{s}"
                line("response_item", {"type": "custom_tool_call_output" if calls.index(call) % 2 else
                                       "function_call_output", "call_id": call, "output": output})
            last = {"input_tokens": 1000 * (t + 1), "cached_input_tokens": 0, "output_tokens": 50,
                    "reasoning_output_tokens": 1, "total_tokens": 1000 * (t + 1) + 50}
            line("event_msg", {"type": "token_count", "info": {"total_token_usage": last, "last_token_usage": last}})
        message("assistant", f"Done with {t}.", "output_text")
        if draw(st.integers(0, 4)) == 0:
            line("compacted", {"message": f"Summary so far: src/lib_{t}.rs fixed.", "replacement_history": []})
    return lines


@pytest.mark.parametrize("fmt, sessions", [("claude-code", claude_sessions), ("codex", codex_sessions)])
@settings(max_examples=EXAMPLES or 6, deadline=None, derandomize=EXAMPLES is None,
          suppress_health_check=list(HealthCheck))
@given(data=st.data(), tail=st.integers(0, 3), keep=st.integers(0, 5),
       target=st.sampled_from([None, 300, 3_000, 10 ** 9]), feed=st.sampled_from([1 << 10, 16 << 10]))
def test_a_harness_session_compacts_the_same_read_ahead_or_not(tmp_path_factory, monkeypatch, fmt, sessions, data, tail,
                                                                keep, target, feed):
    """Checks 1-4 on Claude Code sessions and Codex rollouts built by their rules, imported by
    their importers."""
    session = data.draw(sessions())
    with monkeypatch.context() as patch:
        _check_store(tmp_path_factory, patch, _importer(session, fmt), False, tail, keep, target, feed)


@settings(max_examples=EXAMPLES or 6, deadline=None, derandomize=EXAMPLES is None,
          suppress_health_check=list(HealthCheck))
@given(data=st.data(), keep=st.integers(0, 6), target=st.sampled_from([300, 1_500, 5_000, 20_000]),
       feed=st.sampled_from([1 << 10, 4 << 10, 16 << 10, 64 << 10]))
def test_a_giant_newest_turn_spilled_by_the_feed_is_summarized_as_read_in_process(tmp_path_factory, monkeypatch, data,
                                                                                 keep, target, feed):
    """The feed's StepSpill: a newest turn of many steps (every kind of step in it: failures,
    edits, sidechains, orphans, pinned lines, a huge output, a running last call) whose older
    steps move toward the target, folded by the child as it reads: checks 1-4."""
    call_ids: list = []
    events = [e for t in range(1, data.draw(st.integers(1, 3))) for e in _turn(data.draw, t, call_ids)]
    events += _turn(data.draw, 50, call_ids, giant=True)
    session = {"events": events, "blank": [], "escaped": [], "torn": data.draw(st.booleans())}
    with monkeypatch.context() as patch:
        _check_store(tmp_path_factory, patch, lambda base: _build(base, session), session["torn"],
                     data.draw(st.integers(0, 1)), keep, target, feed)


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


CORRUPT = [b'{"id": "rt_x", "trace_type": "user", "content": "\\ud800 alone", "turn_id": "turn_0001"}',  # lone surrogate
           b'{"id": "rt_y", "trace_type": "assist', b'["not", "an", "object"]', b'\x00\xff garbage',
           b'{"id": "rt_z", "trace_type": "no such type", "turn_id": "turn_0001"}',
           b'{"id": 7, "ts": 1.0, "turn_id": "turn_0001", "seq": 1, "trace_type": "user", "content": "x"}',
           b'{"id": "rt_w", "ts": 1.0, "turn_id": null, "seq": 1, "trace_type": "user", "content": "x"}']


@settings(max_examples=EXAMPLES or 8, deadline=None, derandomize=EXAMPLES is None,
          suppress_health_check=list(HealthCheck))
@given(session=sessions(), at=st.integers(0, 10_000), bad=st.sampled_from(CORRUPT), forked=st.booleans(),
       if_needed=st.booleans(), target=st.sampled_from([None, 200, 10 ** 9]))
def test_a_corrupt_line_is_refused_naming_its_line_and_nothing_is_written(tmp_path_factory, monkeypatch, session, at,
                                                                          bad, forked, if_needed, target):
    from memcli.errors import CorruptStoreError

    with monkeypatch.context() as patch:
        memory_dir = tmp_path_factory.mktemp("corrupt")
        active = _build(memory_dir, session)
        lines = active.read_bytes().split(b"\n")   # (the last piece: b"" or a torn line)
        at %= len(lines)
        lines.insert(at, bad)
        active.write_bytes(b"\n".join(lines))
        patch.setattr(compactor, "_can_fork", lambda: forked)
        patch.setattr(compactor, "READ_AHEAD_MIN_BYTES", 0)
        files = _files(memory_dir)
        with pytest.raises(CorruptStoreError) as caught:
            compact(memory_dir, "a", policy=CompactionPolicy(tail_turns=0, keep_steps=0, target_tokens=target),
                    if_needed=if_needed, max_context_tokens=2_000 if if_needed else None)
        assert (caught.value.path, caught.value.line) == (str(active), at + 1)
        assert _files(memory_dir) == files


# --------------------------------------------------------------------------- the pieces under the scan

def _reference_lines(data: bytes, size: int) -> list:
    """(offset, line) of every complete line starting before ``size``, read the slow way."""
    out, offset = [], 0
    while offset < size:
        end = data.find(b"\n", offset)
        if end < 0:
            break
        out.append((offset, data[offset:end]))
        offset = end + 1
    return out


@settings(max_examples=EXAMPLES or 200, deadline=None, derandomize=EXAMPLES is None)
@given(lines=st.lists(st.one_of(st.just(b""), st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"x")),
                                st.integers(1, 600).map(lambda n: b"y" * n)), max_size=30),
       torn=st.binary(max_size=50).map(lambda b: b.replace(b"\n", b"")), block=st.integers(1, 300),
       size_cut=st.integers(0, 2_000), start_line=st.integers(0, 5))
def test_line_batches_read_the_lines_a_line_by_line_read_gives(tmp_path_factory, lines, torn, block, size_cut,
                                                               start_line):
    """jsonl.line_batches: blocks of any size, lines longer than a block, blank lines, a torn
    tail, a size limit anywhere: the lines (offsets adjacent) a plain read gives."""
    from memcli.store import jsonl

    data = b"".join(line + b"\n" for line in lines) + torn
    path = tmp_path_factory.mktemp("lines") / "f.jsonl"
    path.write_bytes(data)
    size = min(size_cut, len(data))
    start = sum(len(line) + 1 for line in lines[:start_line]) if start_line <= len(lines) else 0
    expected = [(o, line) for o, line in _reference_lines(data, size) if o >= start]
    got = []
    with path.open("rb") as f:
        f.seek(start)
        for offset, batch in jsonl.line_batches(f, size, start, block):
            for line in batch:
                got.append((offset, line))
                offset += len(line) + 1
    assert got == expected


@settings(max_examples=EXAMPLES or 100, deadline=None, derandomize=EXAMPLES is None,
          suppress_health_check=list(HealthCheck))
@given(ops=st.lists(st.tuples(st.sampled_from(["learn", "known", "save", "reload", "key"]),
                              st.sampled_from(["o200k_base", "cl100k_base"]), st.integers(0, 40)), max_size=120),
       limit=st.integers(2, 12), keep_new=st.sampled_from([None, 1, 3, 8]))
def test_a_count_read_from_the_cache_is_the_count_it_was_given(tmp_path_factory, monkeypatch, ops, limit, keep_new):
    """The token count cache, its limits made small so every trim runs (by key, by text, the
    newest kept), saved and read back: whatever it answers is the count learned for that text
    with that encoding — never another text's, never another encoding's."""
    import memcli.store.token_counts as token_counts
    from memcli.tokens import text_key

    def count(encoding: str, text: str) -> int:   # a count that tells texts and encodings apart
        return len(text) * 7 + (1 if encoding == "o200k_base" else 2)

    with monkeypatch.context() as patch:
        patch.setattr(token_counts, "MAX_ENTRIES", limit)
        path = tmp_path_factory.mktemp("cache") / ".token-counts"
        cache = token_counts.TokenCountCache(path, keep_new)
        for op, encoding, n in ops:
            text = f"text {n} " + "é" * (n % 3)
            if op == "learn":
                cache.learn(encoding, text, count(encoding, text))
            elif op == "known":
                found = cache.known(encoding, text)
                assert found is None or found == count(encoding, text)
            elif op == "key":
                found = cache.lookup(text_key(encoding, text))
                assert found is None or found == count(encoding, text)
            elif op == "save":
                cache.save()
                assert cache.held <= token_counts._past(limit) + 1
            else:
                cache.save()
                cache = token_counts.TokenCountCache(path, keep_new)
                assert len(cache.counts) <= limit


def test_a_result_given_in_a_later_turn_is_summarized_with_the_call_it_answers(memory_dir):
    """A tool result written in the next turn (a long call answered after the user spoke again)
    moves with its call's step; the summary reads it there. It was archived but never read back
    (the read looked it up by its own turn, which stays): the summary said 3 traces and the call
    unanswered, and the item listed no trace id."""
    big = "lorem ipsum " * 300
    events = [U("ask 1 " + big, turn_id="t1"), A("calling", turn_id="t1"),
              CALL("c1", "Bash", {"command": "make build"}, turn_id="t1"),
              U("ask 2 " + big, turn_id="t2"), RES("c1", tool_error="TypeError: generate is not a function", turn_id="t2"),
              A("a2 " + big, turn_id="t2"), U("ask 3 " + big, turn_id="t3"), A("a3", turn_id="t3")]
    _build(memory_dir, {"events": events, "blank": [], "escaped": [], "torn": False})
    result = compact(memory_dir, "a", policy=CompactionPolicy(tail_turns=2, keep_steps=0))
    assert result.turn_ids == ["t1"] and result.traces == 4
    assert "4 traces, 1 tool call, 1 failed" in result.summary and "TypeError: generate is not a function" in result.summary
    assert "Never answered" not in result.summary
    (item,) = AgentStore(memory_dir, "a").live_memory()[0]
    assert sorted(item.trace_ids) == sorted(_ids(memory_dir / "agents" / "a" / FILES[1])) and len(item.trace_ids) == 4


def test_the_read_ahead_hands_over_a_result_from_a_later_turn_with_its_call(memory_dir, monkeypatch):
    """The feed keeps a trace with its unit's turn, as the plan does: turns whose results came in
    the next turn, before they were certain to move, are handed over whole (they were kept with
    the turn the result was written in, and the hand-over was void), and the summary is the one
    read in this process."""
    from memcli.compaction.compactor import _Collect, _EarlyTurns
    from memcli.compaction.offline import OfflineSummarizer
    from memcli.compaction.window import check_feed, feed_scan, plan_window

    events = []
    for t in range(1, 6):
        events += [U(f"ask {t}", turn_id=f"t{t}"), A("calling", turn_id=f"t{t}"),
                   CALL(f"c{t}", "Bash", {"command": f"make t{t}"}, turn_id=f"t{t}")]
        if t > 1:
            events.append(RES(f"c{t - 1}", f"result {t - 1}", turn_id=f"t{t}"))
    _build(memory_dir, {"events": events, "blank": [], "escaped": [], "torn": False})
    store = AgentStore(memory_dir, "a")
    summarizer = OfflineSummarizer()
    early = _EarlyTurns(summarizer)
    fed = feed_scan(store, store.paths.active.stat().st_size, 2, 1, early, early.open_steps)
    plan = plan_window(store, 2, keep_steps=1)
    plan.delivered, plan.spilled = check_feed(fed, plan, store.paths.active)
    assert plan.turn_ids == ["t1", "t2", "t3"] and plan.delivered == 3
    once = summarizer.summarize(_Collect(store, plan, early))
    assert once.episodic_summary == OfflineSummarizer().summarize(list(_Collect(store, plan))).episodic_summary
