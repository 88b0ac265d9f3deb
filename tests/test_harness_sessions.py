"""Sessions the harness compacted itself, built by rule (tests/harness_fixtures.py), imported as
real ones will be: every compaction of a session — repeated, manual, a subagent's — becomes one
memory item marked as the harness's (never a user ask), with the trigger and pre-compaction tokens
where the producer writes them; importing or syncing again adds nothing, a grown file adds the
rest; and the provider's reported prompt size stops deciding ``--if-needed`` once the harness has
compacted (docs/compaction.md, "Harness compactions")."""

from __future__ import annotations

import orjson
import pytest

from memcli.api import Memory
from memcli.store.agent import AgentStore
from memcli.store.harness_items import harness_item_id, holds_harness_compaction
from tests.harness_fixtures import ClaudeSession, claude_session, codex_rollout
from tests.helpers import agent_dir, read_jsonl, run_memcli, store_digest, synced


def episodic(memory_dir, agent: str) -> list[dict]:
    return read_jsonl(agent_dir(memory_dir, agent) / "episodic.jsonl")


def traces(memory_dir, agent: str) -> list[dict]:
    return read_jsonl(agent_dir(memory_dir, agent) / "raw_traces.jsonl")


def ingest(memory_dir, agent: str, data: bytes, fmt: str, tmp_path):
    path = tmp_path / f"{agent}.jsonl"
    path.write_bytes(data)
    return Memory(memory_dir).agent(agent).ingest(path, fmt)


def marks(memory_dir, agent: str) -> list[tuple]:
    """(trigger, pre_tokens, turn_ids) of each harness item, in file order."""
    return [(e["harness_compaction"].get("trigger"), e["harness_compaction"].get("pre_tokens"), e["turn_ids"])
            for e in episodic(memory_dir, agent)]


def asks(memory_dir, agent: str) -> list[str]:
    return [t.ask for t in Memory(memory_dir).agent(agent).turns()]


# ------------------------------------------------------------------------------- Claude Code

def test_every_compaction_of_a_session_is_one_item_and_no_ask(memory_dir, tmp_path):
    """Three compactions (the second by ``/compact`` with instructions), two subagents writing
    just before each boundary: three items, each with its own trigger and tokens, covering the
    turns since the one before; no summary and no ``/compact`` line is an ask."""
    s = claude_session(3, manual=(1,), subagents=True)
    ingest(memory_dir, "s", s.jsonl(), "claude-code", tmp_path)
    turns = [f"turn_{n:04d}" for n in range(1, 9)]
    assert marks(memory_dir, "s") == [("auto", 150000, turns[0:2]), ("manual", 40001, turns[2:4]),
                                      ("auto", 150002, turns[4:6])]
    summaries = [t for t in traces(memory_dir, "s") if "compact_summary" in (t.get("tags") or [])]
    assert [e["id"] for e in episodic(memory_dir, "s")] == [harness_item_id(t["id"]) for t in summaries]
    assert [e["summary"] for e in episodic(memory_dir, "s")] == [t["content"] for t in summaries]
    assert asks(memory_dir, "s") == [f"Make module_{k} read CONFIG_{k} and keep tests/test_module_{k}.py green"
                                     for k in range(8)]
    # what the producer writes is kept: the instructions given to /compact (compactMetadata.userContext)
    assert [e["harness_compaction"].get("user_context") for e in episodic(memory_dir, "s")] == [
        None, "keep the failing tests of round 1", None]
    command = [t for t in traces(memory_dir, "s") if t["content"].startswith("<command-name>/compact")]
    assert len(command) == 1 and command[0]["tags"] == ["context"]
    assert "<command-args>keep the failing tests of round 1</command-args>" in command[0]["content"]


def test_the_sdk_stream_boundary_gives_its_trigger_and_tokens(memory_dir, tmp_path):
    """``claude -p --output-format stream-json`` writes the boundary's metadata as
    ``compact_metadata: {trigger, pre_tokens}``."""
    s = ClaudeSession()
    s.ask("start the refactor")
    s.work(0)
    s.boundary("manual", 52000, metadata_key="compact_metadata", post_tokens=4100)
    s.summary("Summary: module_0 reads its config.")
    ingest(memory_dir, "s", s.jsonl(), "claude-code", tmp_path)
    assert marks(memory_dir, "s") == [("manual", 52000, ["turn_0001"])]
    assert episodic(memory_dir, "s")[0]["harness_compaction"]["post_tokens"] == 4100


def test_a_boundary_whose_summary_never_came_describes_no_later_summary(memory_dir, tmp_path):
    """A boundary followed by work (its summary line lost), then a summary with no boundary (as
    a resumed file starts): the summary is the harness's, and says nothing it was not told."""
    s = ClaudeSession()
    s.ask("start")
    s.work(0)
    s.boundary("auto", 150000)
    s.ask("go on")
    s.work(1)
    s.summary("Summary: modules 0 and 1.")
    ingest(memory_dir, "s", s.jsonl(), "claude-code", tmp_path)
    assert marks(memory_dir, "s") == [(None, None, ["turn_0001", "turn_0002"])]
    assert episodic(memory_dir, "s")[0]["harness_compaction"]["harness"] == "claude-code"


def test_a_summary_with_its_boundary_split_across_two_syncs_keeps_the_boundary(memory_dir, tmp_path):
    s = claude_session(1)
    data = s.jsonl()
    cut = data.index(b'"isCompactSummary"')
    cut = data.rindex(b"\n", 0, cut) + 1            # the file ends right after the boundary
    home = tmp_path / "home"
    path = home / ".claude/projects/-home-me-proj" / f"{s.session_id}.jsonl"
    path.parent.mkdir(parents=True)
    for part in (data[:cut], data):
        path.write_bytes(part)
        (agent,) = synced(memory_dir, home, "claude-code")
    assert marks(memory_dir, agent) == [("auto", 150000, ["turn_0001", "turn_0002"])]


def test_reimport_and_sync_twice_duplicate_nothing_and_a_grown_file_brings_the_rest(memory_dir, tmp_path):
    """The session read at every point a transcript can be caught at (before the boundary,
    between it and its summary, in the middle of a manual compaction's lines, after each
    compaction) by ``sync``, then twice more: the same store as one import of the whole file."""
    s = claude_session(3, manual=(1, 2), subagents=True)
    data = s.jsonl()
    once = tmp_path / "once"
    ingest(once, "s", data, "claude-code", tmp_path)
    ingest(once, "s", data, "claude-code", tmp_path)
    home = tmp_path / "home"
    path = home / ".claude/projects/-home-me-proj" / f"{s.session_id}.jsonl"
    path.parent.mkdir(parents=True)
    ends = [n + 1 for n, byte in enumerate(data) if byte == ord("\n")]
    for cut in ends[::7] + [len(data), len(data)]:
        path.write_bytes(data[:cut])
        (agent,) = synced(memory_dir, home, "claude-code")
    before = store_digest(memory_dir)
    synced(memory_dir, home, "claude-code")
    assert store_digest(memory_dir) == before
    assert episodic(memory_dir, agent) == episodic(once, "s") and len(episodic(once, "s")) == 3
    assert [t["id"] for t in traces(memory_dir, agent)] == [t["id"] for t in traces(once, "s")]


def test_a_sync_across_a_compaction_in_the_middle_of_a_turn_gives_the_next_item_the_turns_one_import_does(
        memory_dir, tmp_path):
    """Claude Code compacted in the middle of a turn, and the turn went on: one import gives the
    next compaction that turn too (its traces after the first summary are in its span); a sync
    that had stored them before reading the next compaction gave it only the turns after."""
    s = ClaudeSession("mid")
    s.ask("Make module_0 read CONFIG_0 and keep tests/test_module_0.py green")
    s.work(0, 3)
    s.compact("Summary 0: module_0 reads its config; next module_1.")
    s.work(1, 3)   # the turn goes on after the summary
    s.ask("Now make module_2 read CONFIG_2")
    s.work(2, 3)
    s.compact("Summary 1: modules 0..2 read their config.")
    s.ask("Now module_3")
    s.work(3, 2)
    data = s.jsonl()
    once = tmp_path / "once"
    ingest(once, "s", data, "claude-code", tmp_path)
    assert [e["turn_ids"] for e in episodic(once, "s")] == [["turn_0001"], ["turn_0001", "turn_0002"]]
    home = tmp_path / "home"
    path = home / ".claude/projects/-home-me-proj" / f"{s.session_id}.jsonl"
    path.parent.mkdir(parents=True)
    ends = [n + 1 for n, byte in enumerate(data) if byte == ord("\n")]
    for cut in ends[::3] + [len(data)]:
        path.write_bytes(data[:cut])
        (agent,) = synced(memory_dir, home, "claude-code")
    assert episodic(memory_dir, agent) == episodic(once, "s")


def test_a_subagents_own_compaction_is_an_item_of_the_session_marked_as_the_harness(memory_dir, tmp_path):
    """Subagents compact themselves (their file gets its own boundary and summary, sidechain
    lines): one more item, in the session's agent; Claude Code's compaction request file
    (``agent-acompact-*``: the conversation sent again, and the summary the session holds
    already) is not a subagent of the session."""
    s = claude_session(1, name="main")
    home = tmp_path / "home"
    project = home / ".claude/projects/-home-me-proj"
    (project / s.session_id / "subagents").mkdir(parents=True)
    (project / f"{s.session_id}.jsonl").write_bytes(s.jsonl())
    sub = ClaudeSession("sub")
    sub.session_id = s.session_id
    sub.subagent("a77", "search the callers of run_1", steps=3)
    sub.boundary("auto", 160000)
    sub.lines[-1].update(isSidechain=True, agentId="a77")
    sub.summary("Summary: the callers of run_1 are in src/util.")
    sub.lines[-1].update(isSidechain=True, agentId="a77")
    (project / s.session_id / "subagents" / "agent-a77.jsonl").write_bytes(sub.jsonl())
    request = ClaudeSession("acompact")
    request.session_id = s.session_id
    for line in s.lines[:12]:
        request.lines.append(dict(line, isSidechain=True, agentId="acompact-1f2e"))
    request.lines.append(dict(s.lines[-1], uuid="3b1e0000-0000-4000-8000-000000000001", isSidechain=True,
                              agentId="acompact-1f2e", message={"role": "assistant", "content": [
                                  {"type": "text", "text": "<analysis>...</analysis><summary>Summary 0</summary>"}]},
                              type="assistant"))
    (project / s.session_id / "subagents" / "agent-acompact-1f2e.jsonl").write_bytes(request.jsonl())
    (agent,) = synced(memory_dir, home, "claude-code")
    items = episodic(memory_dir, agent)
    assert sorted((e["harness_compaction"]["trigger"], e["harness_compaction"]["pre_tokens"]) for e in items) == [
        ("auto", 150000), ("auto", 160000)]
    side = [t for t in traces(memory_dir, agent) if "sidechain" in (t.get("tags") or [])]
    assert {t["agent_id"] for t in side} == {"a77"}
    assert not any("<analysis>" in t["content"] for t in traces(memory_dir, agent))
    # the subagent's compaction says whose it was; the session's names none
    assert sorted(e["harness_compaction"].get("agent_id", "") for e in items) == ["", "a77"]
    human = run_memcli("--dir", memory_dir, "memory", agent).stdout.decode()
    assert "by the harness: claude-code compaction of subagent a77 (auto, 160,000 tokens before) of trace" in human
    assert "by the harness: claude-code compaction (auto, 150,000 tokens before) of trace" in human


# ------------------------------------------------------------------------------- Codex

def test_codex_compactions_old_new_and_remote(memory_dir, tmp_path):
    """An older ``compacted`` item (``message`` only), a newer one (with ``replacement_history``)
    and a remote one (empty message, encrypted history): two items, marked ``codex``; the remote
    one keeps its trace and makes no item; ``context_compacted`` events make nothing."""
    r = codex_rollout(3, old=(0,), remote=(2,))
    result = ingest(memory_dir, "r", r.jsonl(), "codex", tmp_path)
    assert marks(memory_dir, "r") == [(None, None, ["turn_0001", "turn_0002"]),
                                      (None, None, ["turn_0003", "turn_0004"])]
    assert [e["harness_compaction"]["harness"] for e in episodic(memory_dir, "r")] == ["codex", "codex"]
    assert [e["summary"] for e in episodic(memory_dir, "r")] == [
        "Summary 0: modules 0..1 read their config.", "Summary 1: modules 0..3 read their config."]
    summaries = [t for t in traces(memory_dir, "r") if "compact_summary" in (t.get("tags") or [])]
    assert len(summaries) == 3 and summaries[2]["content"] == "" and summaries[2]["replacement_history"]
    assert asks(memory_dir, "r") == [f"Make module_{k} read CONFIG_{k}" for k in range(8)]
    assert result.appended == len(traces(memory_dir, "r"))
    again = ingest(memory_dir, "r", r.jsonl(), "codex", tmp_path)
    assert again.appended == 0 and len(episodic(memory_dir, "r")) == 2


# ------------------------------------------------------------------------------- the trigger

@pytest.mark.parametrize("fmt", ["claude-code", "codex"])
def test_after_a_harness_compaction_the_snapshot_count_decides_not_the_providers(memory_dir, tmp_path, fmt):
    """The provider reported the prompt the harness sent after its compaction (its summary, not
    the traces before it); the working snapshot still renders those traces, so ``stats`` and
    ``--if-needed`` count the snapshot."""
    data = (claude_session(1, turns_between=3) if fmt == "claude-code" else codex_rollout(1, turns_between=3)).jsonl()
    ingest(memory_dir, "s", data, fmt, tmp_path)
    agent = Memory(memory_dir).agent("s")
    stats = agent.stats(max_context_tokens=200_000)
    assert (stats.budget["source"], stats.budget["prompt_tokens"]) == ("estimate", stats.tokens.estimate)
    # the same session without its compaction: the snapshot's count too, as for every agent that
    # mirrors a harness's session (the provider's figure is that harness's prompt, not memcli's)
    plain = b"\n".join(line for line in data.splitlines()
                       if b"isCompactSummary" not in line and b'"compacted"' not in line) + b"\n"
    ingest(memory_dir, "p", plain, fmt, tmp_path)
    assert Memory(memory_dir).agent("p").stats(max_context_tokens=200_000).budget["source"] == "estimate"
    assert not holds_harness_compaction(AgentStore(memory_dir, "p").paths)


def test_a_line_that_only_mentions_the_field_is_no_harness_compaction(memory_dir, tmp_path):
    s = ClaudeSession()
    s.ask('why does "harness_compaction" appear in my export?')
    s.say('It marks a summary: {"harness_compaction": {"harness": "claude-code"}}')
    ingest(memory_dir, "s", s.jsonl(), "claude-code", tmp_path)
    assert not holds_harness_compaction(AgentStore(memory_dir, "s").paths)
    assert orjson.loads(orjson.dumps(episodic(memory_dir, "s"))) == []


# ------------------------------------------------------------------------------- the window

def test_a_turn_the_harness_compacted_six_times_fits_a_target_below_its_summaries(memory_dir, tmp_path):
    """One ask, hours of steps, six auto-compactions (Claude Code's long autonomous sessions):
    each harness summary moves with the work before it. Kept in the turn's head, the six could
    never move: 18,392 tokens that any target had to keep."""
    s = ClaudeSession()
    s.ask("Refactor every module to read its config; keep all tests green")
    for c in range(6):
        for k in range(6):
            s.work(c * 10 + k)
        s.compact(f"Summary {c}:\n" + "\n".join(f"- src/pkg_{c}_{i}/module.py: handler_{c}_{i} reads CONFIG_{c}_{i}"
                                                 for i in range(120)))
    for k in range(3):
        s.work(900 + k)
    ingest(memory_dir, "s", s.jsonl(), "claude-code", tmp_path)
    result = Memory(memory_dir).agent("s").compact(target_tokens=8000)
    assert result.tokens_after <= 8000 and result.minimum_tokens < 1000
    active = traces(memory_dir, "s")
    kept = [t["content"] for t in active if "compact_summary" in (t.get("tags") or [])]
    assert len(kept) <= 1 and all("Summary 5:" in k for k in kept)   # the newest at most, with its work
    assert active[0]["content"].startswith("Refactor every module")     # the ask stays
    assert len(episodic(memory_dir, "s")) == 7   # the six harness items, and memcli's own summary


@pytest.mark.parametrize("remote", [2, 1])
def test_a_codex_rollout_synced_as_it_grows_gives_each_compaction_once(memory_dir, tmp_path, remote):
    """Codex writes the ``compacted`` line, then its ``context_compacted`` event, then the next
    turn: a sync may stop between any two of them (a remote compaction, which makes no item,
    among them)."""
    r = codex_rollout(3, old=(0,), remote=(remote,))
    data = r.jsonl()
    once = tmp_path / "once"
    ingest(once, "r", data, "codex", tmp_path)
    home = tmp_path / "home"
    path = home / ".codex/sessions/2026/02/01" / f"rollout-2026-02-01T10-00-00-{r.session_id}.jsonl"
    path.parent.mkdir(parents=True)
    ends = [n + 1 for n, byte in enumerate(data) if byte == ord("\n")]
    compacted = [n for n, line in enumerate(data.splitlines()) if b'"type":"compacted"' in line]
    cuts = sorted({ends[n] for c in compacted for n in (c - 1, c, c + 1)} | set(ends[::9]) | {len(data)})
    for cut in cuts + [len(data)]:
        path.write_bytes(data[:cut])
        (agent,) = synced(memory_dir, home, "codex")
    assert episodic(memory_dir, agent) == episodic(once, "r") and len(episodic(once, "r")) == 2
    assert [t["id"] for t in traces(memory_dir, agent)] == [t["id"] for t in traces(once, "r")]


def test_a_session_resumed_into_a_new_file_after_compaction(memory_dir, tmp_path):
    """The new file opens with the summary (and Claude Code's title row), then goes on: an item
    that covers nothing in this agent, no ask for the summary, the asks after it as turns."""
    s = ClaudeSession("resumed")
    s.lines.append({"type": "summary", "summary": "Config refactor", "leafUuid": "0f0e0000-0000-4000-8000-000000000000"})
    s.summary("Summary: modules 0..3 read their config; next module_4.")
    s.ask("go on with module_4")
    s.work(4)
    ingest(memory_dir, "s", s.jsonl(), "claude-code", tmp_path)
    (item,) = episodic(memory_dir, "s")
    assert item["turn_ids"] == [] and item["harness_compaction"] == {
        "harness": "claude-code", "trace_id": item["harness_compaction"]["trace_id"], "turn_id": "turn_0001"}
    assert asks(memory_dir, "s") == ["go on with module_4"]


def test_a_summary_line_without_its_flag_is_still_the_harnesss_and_no_ask(memory_dir, tmp_path):
    """Every summary Claude Code's compaction writes begins "This session is being continued from
    a previous conversation"; a line that lost (or never had) ``isCompactSummary`` is still no
    ask — a 13,000-character "ask" would lead every summary memcli writes."""
    from tests.bench.fidelity import split_session

    s = claude_session(1)
    for line in s.lines:
        line.pop("isCompactSummary", None)
    ingest(memory_dir, "s", s.jsonl(), "claude-code", tmp_path)
    assert marks(memory_dir, "s") == [("auto", 150000, ["turn_0001", "turn_0002"])]
    assert asks(memory_dir, "s") == [f"Make module_{k} read CONFIG_{k} and keep tests/test_module_{k}.py green"
                                     for k in range(4)]
    path = tmp_path / "unflagged.jsonl"
    path.write_bytes(s.jsonl())
    session = split_session(path)
    assert session.summary.startswith("This session is being continued") and session.last_ask.startswith("Make module_1")


def test_older_codex_exec_results_are_read_by_their_output_in_the_summary(memory_dir, tmp_path):
    """An older rollout records each command's result as JSON (``{"output": …, "metadata":
    {"exit_code": 1, "duration_seconds": …}}``): the summary says what the output says, not the
    JSON around it (it said `pytest …`: {"output":"3 passed in 0.1s","metadata":{…}})."""
    from tests.bench.fidelity import needed_later, split_session

    r = codex_rollout(1, turns_between=3, steps=2)
    r.ask("check module_0 again")
    r.work(0)
    ingest(memory_dir, "r", r.jsonl(), "codex", tmp_path)
    result = Memory(memory_dir).agent("r").compact(tail_turns=1, keep_steps=0)
    summary = result.summary
    # (Commands: keeps a family's newest run: pytest's, whichever file it was given)
    assert "Commands (latest outcome): `pytest -q tests/test_module_5.py`: 3 passed in 0.1s" in summary
    assert "(FAILED tests/test_module_2.py::test_run_2) — passed later" in summary
    assert "metadata" not in summary and "duration_seconds" not in summary and '{"output"' not in summary
    # nor does the fidelity benchmark count the JSON's keys as the project's identifiers
    path = tmp_path / "rollout.jsonl"
    path.write_bytes(r.jsonl())
    needed = needed_later(split_session(path))
    assert "tests/test_module_0.py" in needed and not {"exit_code", "duration_seconds"} & needed


def test_in_a_subagents_file_too_a_boundary_lends_nothing_to_a_later_summary(memory_dir, tmp_path):
    s = ClaudeSession("sub")
    s.subagent("a9", "look for the callers", steps=1)
    s.boundary("auto", 170000)
    s.lines[-1].update(isSidechain=True, agentId="a9")
    s.subagent("a9", "go on", steps=1)
    s.summary("Summary: callers found.")
    s.lines[-1].update(isSidechain=True, agentId="a9")
    ingest(memory_dir, "s", s.jsonl(), "claude-code", tmp_path)
    (item,) = episodic(memory_dir, "s")
    assert "trigger" not in item["harness_compaction"] and item["harness_compaction"]["agent_id"] == "a9"
