"""A harness's own compaction, imported from its transcript, is an episodic memory item marked as
the harness's (memcli.store.harness_items; docs/compaction.md, "Harness compactions"): written by
the ingest commit of its trace, once, never an ask, shown by ``memory``/``search``/``view``, left
out of the snapshot's memory bundle while its trace renders in place, untouched by ``uncompact``."""

from __future__ import annotations

import json
import re
import signal

import orjson
import pytest

from memcli.store.harness_items import harness_item_id
from tests.helpers import CORPORA, agent_dir, needs_corpora, read_jsonl, run_memcli, tree_digest
from tests.sync_more_fixtures import cp_session, sid, write_lines

SUMMARY = "Summary of the work so far: fixed parse_config in src/config.py; 12 tests pass."
MARK = {"harness": "claude-code", "trigger": "auto", "pre_tokens": 150000}


def session(words: int = 5) -> list[dict]:
    """Two turns of work, the harness's compaction summary, then a third turn."""
    pad = " lorem" * words
    return [
        {"id": "u1", "ts": 1.0, "trace_type": "user", "content": "fix parse_config" + pad},
        {"id": "a1", "ts": 2.0, "trace_type": "assistant", "content": "fixed it" + pad},
        {"id": "u2", "ts": 3.0, "trace_type": "user", "content": "now run the tests" + pad},
        {"id": "a2", "ts": 4.0, "trace_type": "assistant", "content": "12 passed" + pad},
        {"id": "s1", "ts": 5.0, "trace_type": "user", "content": SUMMARY, "tags": ["compact_summary"],
         "harness_compaction": MARK},
        {"id": "a3", "ts": 6.0, "trace_type": "assistant", "content": "continuing" + pad},
        {"id": "u3", "ts": 7.0, "trace_type": "user", "content": "and the docs" + pad},
        {"id": "a4", "ts": 8.0, "trace_type": "assistant", "content": "done" + pad},
    ]


ITEM = {"id": harness_item_id("s1"), "ts": 5.0, "turn_ids": ["turn_0001", "turn_0002"], "summary": SUMMARY,
        "tags": ["harness_compaction"], "salience": 0.5,
        "harness_compaction": dict(MARK, trace_id="s1", turn_id="turn_0002")}


def episodic(memory_dir, agent="a") -> list[dict]:
    return read_jsonl(agent_dir(memory_dir, agent) / "episodic.jsonl")


def ok(*args, input=None, env=None):
    result = run_memcli(*args, input=input, env=env)
    assert result.returncode == 0, result.stderr.decode()
    return result


def test_ingest_writes_the_item_once_and_it_is_no_ask(memory_dir):
    ok("--dir", memory_dir, "ingest", "a", input=session())
    assert episodic(memory_dir) == [ITEM]
    assert ITEM["id"] == "ep_hc_" + ITEM["id"][6:] and len(ITEM["id"]) == 6 + 32
    ok("--dir", memory_dir, "ingest", "a", input=session())   # again: nothing new
    ok("--dir", memory_dir, "ingest", "a", input=session()[4:5])
    assert episodic(memory_dir) == [ITEM]
    stats = json.loads(ok("--dir", memory_dir, "stats", "a", "--json").stdout)
    assert stats["turns"]["active"] == 3       # the summary opens no turn
    assert stats["last_compaction"] is None    # and is not one of memcli's compactions
    turns = json.loads(ok("--dir", memory_dir, "turns", "a", "--json").stdout)
    assert [t["ask"] for t in turns] == ["fix parse_config lorem lorem lorem lorem lorem",
                                         "now run the tests lorem lorem lorem lorem lorem",
                                         "and the docs lorem lorem lorem lorem lorem"]


def test_memory_shows_the_mark_human_and_json(memory_dir):
    ok("--dir", memory_dir, "ingest", "a", input=session())
    human = ok("--dir", memory_dir, "memory", "a").stdout.decode()
    assert ("by the harness: claude-code compaction (auto, 150,000 tokens before) of trace s1" in human
            and "turn_0001..turn_0002 (2 turns)" in human and SUMMARY in human)
    (record,) = json.loads(ok("--dir", memory_dir, "memory", "a", "--json").stdout)
    assert record == dict({"tier": "episodic", "superseded_by": None}, **ITEM)


def test_search_finds_it_as_an_episodic_hit(memory_dir):
    ok("--dir", memory_dir, "ingest", "a", input=session())
    hits = json.loads(ok("--dir", memory_dir, "search", "a", "parse_config", "--json").stdout)
    assert [(h["id"], h["kind"]) for h in hits if h["kind"] == "episodic"] == [(ITEM["id"], "episodic")]


def test_the_bundle_never_carries_it_twice_and_recall_finds_it_once_archived(memory_dir):
    ok("--dir", memory_dir, "ingest", "a", input=session(words=400))
    for args in ((), ("--recall", "parse_config")):
        text = ok("--dir", memory_dir, "snapshot", "a", *args).stdout.decode()
        assert text.count(SUMMARY) == 1    # the trace, rendered in place; not again in a memory bundle
        assert "[MEMORY:EPISODIC]" not in text
    compacted = ok("--dir", memory_dir, "compact", "a", "--tail-turns", "1", "--keep-steps", "1")
    archived = [r["id"] for r in read_jsonl(agent_dir(memory_dir, "a") / "raw_traces_archive.jsonl")]
    assert "s1" in archived
    # memcli's summary of the window stands for the span; the planner's figure is the snapshot's
    text = ok("--dir", memory_dir, "snapshot", "a").stdout.decode()
    assert SUMMARY not in text and "[MEMORY:EPISODIC]" in text
    after = int(re.search(rb"tokens [\d,]+ \xe2\x86\x92 ([\d,]+)", compacted.stderr).group(1).replace(b",", b""))
    stats = json.loads(ok("--dir", memory_dir, "stats", "a", "--json").stdout)
    assert stats["tokens"]["estimate"] == after
    # asked for by recall, the harness's summary comes back, marked by its place in the bundle
    text = ok("--dir", memory_dir, "snapshot", "a", "--recall", "parse_config").stdout.decode()
    assert text.count(SUMMARY) == 1
    # uncompact takes out memcli's compaction, never the harness's item
    ok("--dir", memory_dir, "uncompact", "a")
    lines = json.loads(ok("--dir", memory_dir, "memory", "a", "--json").stdout)
    assert [r["id"] for r in lines if r["tier"] == "episodic"] == [ITEM["id"]]


def test_a_grown_file_read_again_names_the_turns_since_the_last_harness_item(memory_dir):
    events = session()
    ok("--dir", memory_dir, "ingest", "a", input=events[:3])        # a sync that stopped mid-session
    ok("--dir", memory_dir, "ingest", "a", input=events)            # and the file read again, grown
    assert episodic(memory_dir) == [ITEM]
    later = [{"id": "u4", "trace_type": "user", "content": "more"},
             {"id": "s2", "ts": 9.0, "trace_type": "user", "content": "second summary", "tags": ["compact_summary"],
              "harness_compaction": {"harness": "claude-code", "trigger": "manual"}}]
    ok("--dir", memory_dir, "ingest", "a", input=later)
    second = episodic(memory_dir)[1]
    # turn_0002 went on after the first summary ("continuing"): one import of the whole input
    # gives the second compaction that turn too, and so does a read that stored it before
    assert (second["id"], second["turn_ids"], second["harness_compaction"]) == (
        harness_item_id("s2"), ["turn_0002", "turn_0003", "turn_0004"],
        {"harness": "claude-code", "trigger": "manual", "trace_id": "s2", "turn_id": "turn_0004"})


def test_a_summary_that_opens_the_file_covers_nothing_here(memory_dir):
    ok("--dir", memory_dir, "ingest", "a", input=session()[4:])
    (item,) = episodic(memory_dir)
    assert item["turn_ids"] == [] and item["harness_compaction"]["turn_id"] == "turn_0001"


@pytest.mark.parametrize("point", ["ingest:appended", "ingest:items", "ingest:ids", "ingest:state"])
def test_killed_between_the_trace_and_its_item_leaves_both_or_neither(memory_dir, point):
    ok("--dir", memory_dir, "ingest", "a", input=[{"id": "u0", "trace_type": "user", "content": "hi"}])
    killed = run_memcli("--dir", memory_dir, "ingest", "a", input=session(), env={"MEMCLI_CRASH_AT": point})
    assert killed.returncode == -signal.SIGKILL
    ok("--dir", memory_dir, "ingest", "a", input=[{"id": "u0", "trace_type": "user", "content": "hi"}])  # recovers
    assert episodic(memory_dir) == [] and [r["id"] for r in read_jsonl(agent_dir(memory_dir, "a") / "raw_traces.jsonl")] == ["u0"]
    ok("--dir", memory_dir, "ingest", "a", input=session())
    assert [e["id"] for e in episodic(memory_dir)] == [ITEM["id"]]


def test_a_rolled_back_ingest_leaves_the_agent_directory_as_it_was(memory_dir):
    """The rollback of an ingest that created ``episodic.jsonl`` for its harness items removes the
    file again: the agent's data files are byte for byte, and by name, what they were."""
    ok("--dir", memory_dir, "ingest", "a", input=[{"id": "u0", "trace_type": "user", "content": "hi"}])
    data = agent_dir(memory_dir, "a")

    def files():
        return {p.name: p.read_bytes() for p in data.iterdir() if not p.name.startswith(".")}

    before = files()
    killed = run_memcli("--dir", memory_dir, "ingest", "a", input=session(), env={"MEMCLI_CRASH_AT": "ingest:items"})
    assert killed.returncode == -signal.SIGKILL and (data / "episodic.jsonl").stat().st_size > 0
    ok("--dir", memory_dir, "stats", "a")        # a reader recovers the interrupted ingest
    assert files() == before


def test_a_killed_first_import_leaves_no_agent(memory_dir):
    killed = run_memcli("--dir", memory_dir, "ingest", "a", input=session(), env={"MEMCLI_CRASH_AT": "ingest:items@1"})
    assert killed.returncode == -signal.SIGKILL
    assert json.loads(ok("--dir", memory_dir, "agents", "--json").stdout) == []
    ok("--dir", memory_dir, "ingest", "b", input=[{"trace_type": "user", "content": "x"}])   # a writer recovers all
    ok("--dir", memory_dir, "ingest", "a", input=session())
    assert episodic(memory_dir) == [ITEM]


def test_a_torn_item_line_is_cut_back_with_its_ingest(memory_dir):
    ok("--dir", memory_dir, "ingest", "a", input=[{"id": "u0", "trace_type": "user", "content": "hi"}])
    before = (agent_dir(memory_dir, "a") / "raw_traces.jsonl").read_bytes()
    killed = run_memcli("--dir", memory_dir, "ingest", "a", input=session(), env={"MEMCLI_CRASH_AT": "ingest:items"})
    assert killed.returncode == -signal.SIGKILL
    path = agent_dir(memory_dir, "a") / "episodic.jsonl"
    path.write_bytes(path.read_bytes()[:-40])    # as if killed mid-line
    ok("--dir", memory_dir, "stats", "a")        # a reader recovers the interrupted ingest
    assert not path.exists() and (agent_dir(memory_dir, "a") / "raw_traces.jsonl").read_bytes() == before


@pytest.mark.parametrize("event, message", [
    ({"trace_type": "user", "content": "s", "harness_compaction": MARK},
     "line 2: field 'harness_compaction': a harness compaction's summary must be tagged 'compact_summary'"),
    ({"trace_type": "user", "content": "s", "tags": ["compact_summary"], "harness_compaction": {"trigger": "auto"}},
     'line 2: field \'harness_compaction\': expected an object with a "harness" name'),
    ({"trace_type": "user", "content": "s", "tags": ["compact_summary"], "harness_compaction": "claude"},
     'line 2: field \'harness_compaction\': expected an object with a "harness" name'),
])
def test_a_bad_mark_is_refused_naming_the_line_and_nothing_is_written(memory_dir, event, message):
    ok("--dir", memory_dir, "ingest", "a", input=session())
    before = tree_digest(memory_dir)
    refused = run_memcli("--dir", memory_dir, "ingest", "a", input=[{"trace_type": "user", "content": "x"}, event])
    assert refused.returncode == 1 and message in refused.stderr.decode(), refused.stderr.decode()
    assert tree_digest(memory_dir) == before


def test_export_round_trips_the_item(memory_dir, tmp_path):
    ok("--dir", memory_dir, "ingest", "a", input=session(words=400))
    ok("--dir", memory_dir, "compact", "a", "--tail-turns", "1", "--keep-steps", "1")
    exported = ok("--dir", memory_dir, "export", "a", "--with-memory", "--format", "jsonl").stdout
    ok("--dir", memory_dir, "ingest", "b", input=exported)
    assert (agent_dir(memory_dir, "b") / "episodic.jsonl").read_bytes() == \
        (agent_dir(memory_dir, "a") / "episodic.jsonl").read_bytes()
    # an export without memory: the item is derived again from the trace, with the same id
    bare = ok("--dir", memory_dir, "export", "a", "--format", "jsonl").stdout
    ok("--dir", memory_dir, "ingest", "c", input=bare)
    assert [e["id"] for e in episodic(memory_dir, "c")] == [ITEM["id"]]


def test_copilot_and_opencode_summaries_become_items(memory_dir, tmp_path):
    p1 = sid(1, "cp")
    lines = cp_session(p1, 1) + [
        {"type": "session.compaction_complete", "id": "x3", "timestamp": "2026-02-01T10:00:02Z", "parentId": None,
         "data": {"success": True, "summaryContent": "we ran the tests", "preCompactionTokens": 9000}}]
    ok("--dir", memory_dir, "ingest", "cp", write_lines(tmp_path / "e.jsonl", lines))
    (item,) = episodic(memory_dir, "cp")
    assert (item["summary"], item["turn_ids"], {k: v for k, v in item["harness_compaction"].items() if k != "trace_id"}) == (
        "we ran the tests", ["turn_0001"], {"harness": "copilot-cli", "pre_tokens": 9000, "turn_id": "turn_0001"})
    doc = {"info": {"id": "ses_1", "title": "t"}, "messages": [
        {"info": {"id": "msg_1", "role": "user", "time": {"created": 1700000000000}},
         "parts": [{"id": "prt_1", "type": "text", "text": "build it"}]},
        {"info": {"id": "msg_2", "role": "assistant", "summary": True, "time": {"created": 1700000001000}},
         "parts": [{"id": "prt_2", "type": "text", "text": "opencode's summary: built it"}]}]}
    path = tmp_path / "oc.json"
    path.write_bytes(orjson.dumps(doc))
    ok("--dir", memory_dir, "ingest", "oc", path, "--from", "opencode")
    assert episodic(memory_dir, "oc") == [{
        "id": harness_item_id("oc-prt_2"), "ts": 1700000001.0, "turn_ids": ["turn_0001"],
        "summary": "opencode's summary: built it", "tags": ["harness_compaction"], "salience": 0.5,
        "harness_compaction": {"harness": "opencode", "trace_id": "oc-prt_2", "turn_id": "turn_0001"}}]


# ------------------------------------------------------------------------------------ corpora

CORPUS_ITEMS = {
    "claude-code/spotter_258c7280_compacted_by_claude-code.jsonl": (
        # (its three turns: the ask, and the two messages typed while Claude worked, queue-operation only)
        "cc-58436800-0a29-451b-a8f5-3a0c59957945-0", ["turn_0001", "turn_0002", "turn_0003"],
        {"harness": "claude-code", "trigger": "auto", "pre_tokens": 167094}, 14518),
    "claude-code/fasthooks_sample_main_transcript_compaction.jsonl": (
        "cc-1d483453-e0cd-4ea2-bde6-540216e174a2-0", [f"turn_{n:04d}" for n in range(1, 6)],
        {"harness": "claude-code", "trigger": "manual", "pre_tokens": 21558}, 7627),
    "codex/codex_rollout_localpush_019c8a59_2722ev_sanitized.jsonl": (
        "cx-753c5d4f27a912db1ecd5b40-0", [f"turn_{n:04d}" for n in range(1, 20)], {"harness": "codex"}, 37),
}


@needs_corpora
@pytest.mark.parametrize("name", sorted(CORPUS_ITEMS))
def test_real_sessions_keep_the_harness_compaction_as_an_item(memory_dir, name):
    trace_id, turns, mark, chars = CORPUS_ITEMS[name]
    ok("--dir", memory_dir, "ingest", "a", CORPORA / name)
    (item,) = episodic(memory_dir)
    traces = {r["id"]: r for r in read_jsonl(agent_dir(memory_dir, "a") / "raw_traces.jsonl")}
    assert item["id"] == harness_item_id(trace_id) and item["turn_ids"] == turns
    assert item["harness_compaction"] == dict(mark, trace_id=trace_id, turn_id=traces[trace_id]["turn_id"])
    assert item["summary"] == traces[trace_id]["content"] and len(item["summary"]) == chars
    assert item["ts"] == traces[trace_id]["ts"] and "compaction_id" not in item
    ok("--dir", memory_dir, "ingest", "a", CORPORA / name)
    assert len(episodic(memory_dir)) == 1


# ------------------------------------------------------------------------------------ memcli view

HOSTILE = '</script><script>window.PWNED=1</script><img src=x onerror="document.body.dataset.pwned=1">'


def test_view_model_names_the_harness_compaction(memory_dir):
    from memcli.store.agent import AgentStore
    from memcli.view.data import collect

    ok("--dir", memory_dir, "ingest", "a", input=session())
    data = collect(AgentStore(memory_dir, "a"))
    assert data["harness"] == [{"id": ITEM["id"], "ts": 5.0, "harness": "claude-code", "trigger": "auto",
                                "pre_tokens": 150000, "trace": "s1", "turn": "turn_0002",
                                "first_turn": "turn_0001", "last_turn": "turn_0002"}]
    (summary_item,) = [i for t in data["turns"] for i in t["items"] if i["id"] == "s1"]
    assert (summary_item["k"], summary_item["text"]) == ("ctx", SUMMARY)   # the text once: the trace's


def test_a_browser_draws_the_marked_box_and_chart_line_with_stored_text_as_text(memory_dir, tmp_path):
    from memcli.api import Memory
    from tests.browser import render

    events = session()
    events[4] = dict(events[4], content=HOSTILE + " " + SUMMARY,
                     harness_compaction={"harness": HOSTILE, "trigger": "auto", "pre_tokens": 150000})
    ok("--dir", memory_dir, "ingest", "a", input=events)
    Memory(memory_dir).agent("a").view(tmp_path / "a.html")
    dom, _ = render(tmp_path / "a.html")
    assert 'data-ready="1"' in dom and "data-pwned" not in dom and "<img" not in dom
    assert dom.count('class="item ctx harness"') == 1 and f'data-harness="{ITEM["id"]}"' in dom
    assert ("'s own compaction (auto, 150,000 tokens before) · covered turn_0001–turn_0002 · memory item "
            + ITEM["id"]) in dom
    assert "&lt;/script&gt;&lt;script&gt;window.PWNED=1" in dom and 'class="hcpt"' in dom
    assert "1 harness compaction" in dom and "orange: the harness's own compactions (imported)." in dom


def test_a_trace_named_like_an_object_property_is_not_drawn_as_a_harness_compaction(memory_dir, tmp_path):
    """Trace ids are stored text: ids such as ``constructor`` or ``toString`` name properties every
    plain JavaScript object has, and the page must not take those for harness compactions."""
    from memcli.api import Memory
    from tests.browser import render

    events = session()
    events[0], events[1] = dict(events[0], id="constructor"), dict(events[1], id="toString")
    ok("--dir", memory_dir, "ingest", "a", input=events)
    Memory(memory_dir).agent("a").view(tmp_path / "a.html")
    dom, _ = render(tmp_path / "a.html")
    assert 'data-ready="1"' in dom
    assert dom.count("harness compaction</span>") == 1 and dom.count('class="item ctx harness"') == 1
    assert "memory item undefined" not in dom


def test_a_restored_item_with_a_malformed_harness_mark_is_refused_and_readers_survive_one(memory_dir, tmp_path):
    """An export's memory record carrying ``harness_compaction`` must have the shape memcli writes
    (an object with ``harness`` and ``trace_id`` strings): a list as ``trace_id`` made ``memcli
    view`` and ``snapshot --recall`` fail with a TypeError. Refused naming the line and field,
    nothing written; a store that holds one anyway (hand-edited) is still read."""
    bad = {"record_type": "episodic", "id": "ep_bad1", "ts": 5.0, "turn_ids": [], "summary": "odd words",
           "tags": [], "salience": 0.5, "harness_compaction": {"harness": "h", "trace_id": ["u1"]}}
    ok("--dir", memory_dir, "ingest", "a", input=session()[:4])
    before = tree_digest(memory_dir)
    for mark in ({"harness": "h", "trace_id": ["u1"]}, {"trace_id": "u1"}, ["h"]):
        done = run_memcli("--dir", memory_dir, "ingest", "a", input=session()[4:] + [dict(bad, harness_compaction=mark)])
        assert done.returncode == 1 and ("line 5: field 'harness_compaction': expected an object with \"harness\" and "
                                         "\"trace_id\" strings") in done.stderr.decode(), done.stderr.decode()
        assert tree_digest(memory_dir) == before
    with open(agent_dir(memory_dir, "a") / "episodic.jsonl", "ab") as f:
        f.write(orjson.dumps({k: v for k, v in bad.items() if k != "record_type"}) + b"\n")
    ok("--dir", memory_dir, "view", "a", "-o", tmp_path / "a.html")
    assert "odd words" in ok("--dir", memory_dir, "snapshot", "a", "--recall", "odd words").stdout.decode()


def test_harness_items_stay_out_of_rollups_and_max_episodic_items(memory_dir):
    """They are the harness's record, not memcli's rolling memory: three compactions roll up
    memcli's own summaries only, and the harness item stays live with its mark."""
    ok("--dir", memory_dir, "ingest", "a", input=session(words=400))
    for n in range(4):
        more = [{"id": f"m{n}-u", "trace_type": "user", "content": f"step {n}" + " ipsum" * 400},
                {"id": f"m{n}-a", "trace_type": "assistant", "content": f"did {n}" + " ipsum" * 400}]
        ok("--dir", memory_dir, "ingest", "a", input=more)
        ok("--dir", memory_dir, "compact", "a", "--tail-turns", "1", "--keep-steps", "1")
    records = json.loads(ok("--dir", memory_dir, "memory", "a", "--json", "--all").stdout)
    (mine,) = [r for r in records if r["id"] == ITEM["id"]]
    assert mine == dict({"tier": "episodic", "superseded_by": None}, **ITEM)
    rollups = [r for r in records if "rollup" in r["tags"]]
    assert len(rollups) == 1 and ITEM["id"] not in rollups[0]["supersedes"] and len(rollups[0]["supersedes"]) == 3
    live = [r["id"] for r in records if r["tier"] == "episodic" and r["superseded_by"] is None]
    assert live[0] == ITEM["id"] and len(live) == 3     # the harness item, the rollup, the newest summary


def test_a_compacted_item_without_text_gives_no_memory_item(memory_dir):
    empty = dict(session()[4], id="s0", content="   ")
    ok("--dir", memory_dir, "ingest", "a", input=[empty])
    assert episodic(memory_dir) == []


@needs_corpora
def test_sync_of_a_growing_claude_code_session_gives_the_same_item_once(memory_dir, tmp_path):
    """``memcli sync`` (and the hooks, which run it) reads the transcript as Claude Code writes
    it: the boundary and summary arrive in a later read than the work they compacted."""
    from tests.helpers import synced

    name = "claude-code/spotter_258c7280_compacted_by_claude-code.jsonl"
    trace_id, turns, mark, chars = CORPUS_ITEMS[name]
    lines = (CORPORA / name).read_bytes().splitlines(keepends=True)
    home = tmp_path / "home"
    transcript = home / ".claude/projects/-home-USER-projects-spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl"
    transcript.parent.mkdir(parents=True)
    for n in (1200, 1258, 1300, len(lines), len(lines)):   # before the boundary, just after the summary, ...
        transcript.write_bytes(b"".join(lines[:n]))
        (agent,) = synced(memory_dir, home, "claude-code")
    (item,) = episodic(memory_dir, agent)
    assert (item["id"], item["turn_ids"], len(item["summary"])) == (harness_item_id(trace_id), turns, chars)
    assert {k: v for k, v in item["harness_compaction"].items() if k not in ("trace_id", "turn_id")} == mark


def test_a_store_imported_before_these_items_gets_them_when_the_file_is_ingested_again(memory_dir):
    ok("--dir", memory_dir, "ingest", "a", input=session())
    (agent_dir(memory_dir, "a") / "episodic.jsonl").write_bytes(b"")   # as an earlier memcli left it
    result = ok("--dir", memory_dir, "ingest", "a", input=session())
    assert b"ingested 0 events" in result.stderr
    assert episodic(memory_dir) == [ITEM]
    ok("--dir", memory_dir, "ingest", "a", input=session())
    assert episodic(memory_dir) == [ITEM]


def test_markdown_export_names_the_harness_on_its_summary(memory_dir):
    ok("--dir", memory_dir, "ingest", "a", input=session())
    text = ok("--dir", memory_dir, "export", "a", "--format", "markdown", "--with-memory").stdout.decode()
    assert ("- **turn_0001 – turn_0002** (2 turns) · 1970-01-01 00:00 UTC · by the harness: "
            "`claude-code compaction (auto, 150,000 tokens before)`  \n  " + SUMMARY) in text


def _kept_session(kept_from: str) -> list[dict]:
    """Three turns, a compaction that kept the newest messages as they were (from ``kept_from``),
    the work going on, then a second compaction that kept nothing so."""
    return [
        {"id": "u1", "ts": 1.0, "trace_type": "user", "content": "fix parse_config"},
        {"id": "a1", "ts": 2.0, "trace_type": "assistant", "content": "fixed it"},
        {"id": "u2", "ts": 3.0, "trace_type": "user", "content": "now run the tests"},
        {"id": "a2", "ts": 4.0, "trace_type": "assistant", "content": "12 passed"},
        {"id": "u3", "ts": 5.0, "trace_type": "user", "content": "and the docs"},
        {"id": "a3", "ts": 6.0, "trace_type": "assistant", "content": "reading docs/config.md"},
        {"id": "s1", "ts": 7.0, "trace_type": "user", "content": SUMMARY, "tags": ["compact_summary"],
         "harness_compaction": dict(MARK, kept_from=kept_from)},
        {"id": "a4", "ts": 8.0, "trace_type": "assistant", "content": "docs updated"},
        {"id": "u4", "ts": 9.0, "trace_type": "user", "content": "release it"},
        {"id": "s2", "ts": 10.0, "trace_type": "user", "content": "second summary", "tags": ["compact_summary"],
         "harness_compaction": MARK},
    ]


@pytest.mark.parametrize("kept_from, first, second", [
    ("u3", ["turn_0001", "turn_0002"], ["turn_0003", "turn_0004"]),   # kept from an ask: its turn on
    ("a2", ["turn_0001", "turn_0002"], ["turn_0003", "turn_0004"]),   # from a reply: that turn was summarized
    ("u1", [], ["turn_0001", "turn_0002", "turn_0003", "turn_0004"]),  # everything kept as it was
    ("gone", ["turn_0001", "turn_0002", "turn_0003"], ["turn_0003", "turn_0004"]),   # a line that gave no trace
])
def test_a_compaction_that_kept_the_newest_messages_covers_only_the_turns_before_them(memory_dir, kept_from,
                                                                                       first, second):
    """Claude Code's session-memory and partial compactions keep the newest messages as they were
    (``kept_from``, from its ``preservedSegment``): its item covers the turns before them, the
    session's next compaction those — whether the file is read at once, in two reads (the kept
    ask stored by the first, a sync of a growing file), or its items written by a later ingest
    (a store imported before they existed)."""
    events = _kept_session(kept_from)
    ok("--dir", memory_dir, "ingest", "a", input=events)
    items = episodic(memory_dir)
    assert [i["turn_ids"] for i in items] == [first, second]
    assert items[0]["harness_compaction"]["kept_from"] == kept_from
    for part in (5, 7):   # in two reads: the kept ask in the first, or the summary too
        again = memory_dir / f"split{part}"
        ok("--dir", again, "ingest", "a", input=events[:part])
        ok("--dir", again, "ingest", "a", input=events[part:])
        assert [i["turn_ids"] for i in episodic(again)] == [first, second], part
    (agent_dir(memory_dir, "a") / "episodic.jsonl").write_bytes(b"")   # as an earlier memcli left it
    ok("--dir", memory_dir, "ingest", "a", input=events)
    # (a catch-up starts each item after the last one's turns: turn_0003, which went on after the
    # first summary, is the second's only where the first kept it)
    assert [i["turn_ids"] for i in episodic(memory_dir)] == [first, second if kept_from != "gone" else ["turn_0004"]]


def test_a_claude_code_compaction_that_kept_messages_names_them_and_says_so(memory_dir, tmp_path):
    """The boundary's ``preservedSegment`` (or ``preservedMessages``) names the first message kept
    as it was; the import marks the summary with it, and the memory view says so."""
    from tests.harness_fixtures import ClaudeSession

    for meta in ("segment", "messages"):
        c = ClaudeSession(f"kept-{meta}")
        c.ask("Port OrderQueue to settings in src/orders/queue.py")
        c.tool("Read", {"file_path": "/home/me/proj/src/orders/queue.py"}, "class OrderQueue: ...")
        head = c.ask("Now RefundPolicy in src/billing/refund.py")
        c.tool("Read", {"file_path": "/home/me/proj/src/billing/refund.py"}, "class RefundPolicy: ...")
        kept = ({"preservedSegment": {"headUuid": head["uuid"], "anchorUuid": "x", "tailUuid": c.lines[-1]["uuid"]}}
                if meta == "segment" else
                {"preservedMessages": {"anchorUuid": "x", "uuids": [head["uuid"], c.lines[-1]["uuid"]]}})
        c.boundary(**kept)
        c.summary("Primary request: port OrderQueue to settings.")
        c.ask("Go on")
        path = tmp_path / f"{meta}.jsonl"
        path.write_bytes(c.jsonl())
        ok("--dir", memory_dir, "ingest", meta, str(path), "--from", "claude-code")
        (item,) = episodic(memory_dir, meta)
        assert item["turn_ids"] == ["turn_0001"]
        assert item["harness_compaction"]["kept_from"] == f"cc-{head['uuid']}-0"
    shown = ok("--dir", memory_dir, "memory", "segment").stdout.decode()
    assert "claude-code compaction (auto, 150,000 tokens before, the newest messages kept as they were)" in shown


def test_a_partial_compaction_from_a_message_kept_the_older_ones_and_covers_its_whole_span(memory_dir, tmp_path):
    """``/compact`` "from" a message summarizes the messages after it and keeps the earlier ones;
    its preserved segment is anchored on the boundary itself. Its head is no start of the newest
    messages kept: the item is not marked, and covers its span as a full compaction's does (marked,
    it had covered nothing and left every turn to the next compaction)."""
    from tests.harness_fixtures import ClaudeSession, uid

    c = ClaudeSession("from")
    first = c.ask("Port OrderQueue to settings in src/orders/queue.py")
    c.tool("Read", {"file_path": "/home/me/proj/src/orders/queue.py"}, "class OrderQueue: ...")
    kept_tail = c.lines[-1]["uuid"]
    c.ask("Now RefundPolicy in src/billing/refund.py")
    c.tool("Read", {"file_path": "/home/me/proj/src/billing/refund.py"}, "class RefundPolicy: ...")
    boundary = uid(c.name, c.n + 1)   # (the uuid the boundary's line gets)
    c.boundary(preservedSegment={"headUuid": first["uuid"], "anchorUuid": boundary, "tailUuid": kept_tail})
    assert c.lines[-1]["uuid"] == boundary
    c.summary("Primary request: port RefundPolicy to settings.")
    c.ask("Go on")
    path = tmp_path / "from.jsonl"
    path.write_bytes(c.jsonl())
    ok("--dir", memory_dir, "ingest", "a", str(path), "--from", "claude-code")
    (item,) = episodic(memory_dir)
    assert item["turn_ids"] == ["turn_0001", "turn_0002"] and "kept_from" not in item["harness_compaction"]
