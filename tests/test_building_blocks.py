"""Unit tests of the building blocks a second backend or an index would reuse: the reverse JSONL
reader, torn-tail repair, the id index, window planning, summary validation and the items a
compaction builds. (End-to-end tests cover them too; these pin each one's own contract.)"""

from __future__ import annotations

import os
import time

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memcli.compaction.compactor import build_items
from memcli.compaction.policy import CompactionPolicy
from memcli.compaction.summarizer import Fact, InvalidSummary, Summary, reads_like_error, validate_summary
from memcli.compaction.window import plan_window
from memcli.errors import CorruptStoreError
from memcli.store import jsonl
from memcli.store.agent import AgentStore
from memcli.store.id_index import DIGEST_SIZE, IdIndex, digest
from tests.events import A, U, turns

RECORDS = st.lists(st.dictionaries(st.sampled_from(["id", "text", "n"]),
                                   st.one_of(st.text(max_size=300), st.integers(-(2 ** 63), 2 ** 63 - 1)), min_size=1),
                   max_size=40)
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _write(path, records, tail=b""):
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records) + tail)


# ---------------------------------------------------------------- iter_records_reverse

@SETTINGS
@given(records=RECORDS, block=st.sampled_from([7, 64, 1 << 16]), torn=st.binary(max_size=50).filter(lambda b: b"\n" not in b))
def test_iter_records_reverse_is_the_forward_read_backwards(tmp_path, monkeypatch, records, block, torn):
    monkeypatch.setattr(jsonl, "BLOCK", block)          # small blocks: lines split across reads
    path = tmp_path / "f.jsonl"
    _write(path, records, torn)                        # an unterminated tail is ignored
    forward = [(offset, record) for _, offset, record in jsonl.iter_records(path)]
    assert list(jsonl.iter_records_reverse(path)) == forward[::-1]
    if forward:                                        # ``end`` reads as if the file stopped there
        cut = forward[len(forward) // 2][0]
        assert list(jsonl.iter_records_reverse(path, end=cut)) == [r for r in forward if r[0] < cut][::-1]


def _readline_lines(path, size: int) -> list:
    """(offset, line without its newline) as a ``for line in f`` loop gives them: complete lines
    that start before ``size``."""
    out, offset = [], 0
    with open(path, "rb") as f:
        for raw in f:
            if offset >= size or not raw.endswith(b"\n"):
                break
            out.append((offset, raw[:-1]))
            offset += len(raw)
    return out


@SETTINGS
@given(lines=st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=30),
       tail=st.binary(max_size=20).filter(lambda b: b"\n" not in b), block=st.integers(1, 70), data=st.data())
def test_line_batches_are_the_lines_a_readline_loop_reads(tmp_path, lines, tail, block, data):
    path = tmp_path / "f.jsonl"
    content = b"".join(line + b"\n" for line in lines) + tail
    path.write_bytes(content)
    size = data.draw(st.integers(0, len(content) + 3))   # a limit anywhere, a line's middle too
    got = []
    with open(path, "rb") as f:
        for offset, batch in jsonl.line_batches(f, size, block=block):
            assert batch and (not got or offset == got[-1][0] + len(got[-1][1]) + 1)   # adjacent, not empty
            for line in batch:
                got.append((offset, line))
                offset += len(line) + 1
    assert got == _readline_lines(path, size)


def test_iter_records_reverse_names_a_corrupt_line(tmp_path):
    path = tmp_path / "f.jsonl"
    path.write_bytes(b'{"id": 1}\nnot json\n{"id": 3}\n')
    reader = jsonl.iter_records_reverse(path)
    assert next(reader) == (19, {"id": 3})
    with pytest.raises(CorruptStoreError, match="f.jsonl"):
        next(reader)


def test_iter_records_reverse_of_a_missing_or_empty_file_is_empty(tmp_path):
    assert list(jsonl.iter_records_reverse(tmp_path / "none.jsonl")) == []
    (tmp_path / "empty.jsonl").write_bytes(b"")
    assert list(jsonl.iter_records_reverse(tmp_path / "empty.jsonl")) == []


# ---------------------------------------------------------------- repair_tail

@SETTINGS
@given(records=RECORDS, tail=st.binary(min_size=1, max_size=80).filter(lambda b: b"\n" not in b))
def test_repair_tail_keeps_every_complete_line_and_ends_the_file_with_a_newline(tmp_path, records, tail):
    path = tmp_path / "f.jsonl"
    _write(path, records, tail)
    body = path.read_bytes()[: -len(tail)]
    repair = jsonl.repair_tail(path)
    after = path.read_bytes()
    assert repair is not None and repair.offset == len(body)
    if repair.action == "terminated":                  # a whole record that lost its newline
        assert after == body + tail + b"\n" and isinstance(orjson.loads(tail), dict)
    else:
        assert (repair.action, after, repair.dropped_bytes) == ("truncated", body, len(tail))
    assert jsonl.repair_tail(path) is None             # idempotent: nothing left to repair


def test_repair_tail_of_a_clean_or_missing_file_does_nothing(tmp_path):
    path = tmp_path / "f.jsonl"
    _write(path, [{"id": 1}])
    before = path.read_bytes()
    assert jsonl.repair_tail(path) is None and path.read_bytes() == before
    assert jsonl.repair_tail(tmp_path / "none.jsonl") is None


# ---------------------------------------------------------------- IdIndex

@SETTINGS
@given(ids=st.lists(st.one_of(st.text(min_size=1, max_size=40),
                              st.from_regex(r"rt_[0-9a-f]{32}", fullmatch=True)), unique=True, max_size=60),
       probes=st.lists(st.text(min_size=1, max_size=40), max_size=20))
def test_id_index_answers_membership_like_a_set(tmp_path, ids, probes):
    path = tmp_path / f"ids-{os.urandom(4).hex()}"
    index = IdIndex(path, 0)
    index.append([digest(i) for i in ids])
    assert index.count == len(ids) and jsonl.file_size(path) == len(ids) * DIGEST_SIZE
    fresh = IdIndex(path, len(ids))                    # another process: reads the file
    wanted = [digest(i) for i in ids + probes]
    expected = {digest(i) for i in ids}
    assert fresh.present(wanted) == {d for d in wanted if d in expected}
    assert all(fresh.contains(digest(i)) for i in ids)


def test_id_index_ignores_and_cuts_entries_beyond_its_count(tmp_path):
    path = tmp_path / "ids"
    index = IdIndex(path, 0)
    index.append([digest("a"), digest("b")])
    with open(path, "ab") as f:
        f.write(digest("torn")[:7])                    # an interrupted append
    reopened = IdIndex(path, 2)
    assert reopened.is_consistent() and not reopened.contains(digest("torn"))
    reopened.truncate_to_count()
    assert path.stat().st_size == 2 * DIGEST_SIZE
    assert not IdIndex(path, 3).is_consistent()        # the state claims more than the file holds


def test_digest_of_a_generated_id_is_its_own_value():
    assert digest("rt_" + "ab" * 16) == bytes.fromhex("ab" * 16)
    assert len(digest("any other id")) == DIGEST_SIZE and digest("x") != digest("y")


# ---------------------------------------------------------------- plan_window

def _store(cli, memory_dir, events) -> AgentStore:
    assert cli("ingest", "a", input=events).exit_code == 0
    return AgentStore(memory_dir, "a")


def test_plan_window_moves_old_whole_turns_and_keeps_the_tail(cli, memory_dir):
    store = _store(cli, memory_dir, turns(6))
    plan = plan_window(store, 2, keep_steps=0)
    assert plan.turn_ids == ["turn_0001", "turn_0002", "turn_0003", "turn_0004"]
    assert (plan.moved, plan.kept_turns, plan.conversation_turns, plan.steps) == (16, 2, 6, 0)
    moved = [raw for start, end in plan.runs for raw in [store.paths.active.read_bytes()[start:end]]]
    assert b"".join(moved).count(b"\n") == 16 and b"question 5" not in b"".join(moved)
    assert plan.run_ids[0] == plan.first_id


def test_plan_window_moves_an_abandoned_call_with_its_step(cli, memory_dir):
    # a call that never got a result, followed by later steps, no longer blocks the window
    events = turns(2) + [U("q3"), {"trace_type": "tool_call", "tool_call_id": "open", "tool_name": "sh"}] + turns(3, start=4)
    store = _store(cli, memory_dir, events)
    plan = plan_window(store, 1, keep_steps=0)
    assert plan.turn_ids == ["turn_0001", "turn_0002", "turn_0003", "turn_0004", "turn_0005"]
    assert plan.abandoned == 1


def test_plan_window_keeps_the_newest_steps_of_the_open_turn(cli, memory_dir):
    # one turn of many steps: with a tiny target the oldest steps move, the ask and the newest
    # keep_steps stay
    events = [U("one long task")] + [e for k in range(1, 30) for e in turns(1, start=k)[1:]]
    store = _store(cli, memory_dir, events)
    plan = plan_window(store, 0, keep_steps=4, target_tokens=1)
    moved = b"".join(store.paths.active.read_bytes()[s:e] for s, e in plan.runs)
    # steps: the first call, then each answer with the next call (28), then the last answer
    assert b"one long task" not in moved and plan.steps == 30 - 4
    assert b"result 1\"" in moved and b"result 29" not in moved


def test_plan_window_keeps_pinned_instructions_in_the_active_file(cli, memory_dir):
    store = _store(cli, memory_dir, [U("be brief", tags=["system"]), U("q1"), A("a1")] + turns(3, start=2))
    plan = plan_window(store, 1, keep_steps=0)
    moved = b"".join(store.paths.active.read_bytes()[s:e] for s, e in plan.runs)
    assert b"be brief" not in moved and b"q1" in moved and plan.pinned_kept == 1


@pytest.mark.parametrize("bad, reason", [
    # (a record cut short says so: orjson's "unexpected control character in string", for a
    # string left open before the line's end, named no cause)
    (b'{"id": "x", ', "not valid JSON: the record is cut short after 12 bytes (a write that did not finish?)"),
    (b'{"id": "x", "type": "ass', "not valid JSON: the record is cut short after 24 bytes"),
    (b'{"id": "x"} {', "not valid JSON (unexpected content after document: line 1 column 13 (char 12))"),
    (b"[1, 2]", "expected a JSON object, found list"),
    (b'{"id": "x", "ts": 1, "turn_id": 5, "trace_type": "user"}', "trace without a valid 'turn_id'"),
    (b'{"id": "x", "turn_id": "t", "trace_type": "user"}', "not a RawTrace record"),
])
def test_the_window_scan_refuses_a_corrupt_line_naming_it(cli, memory_dir, bad, reason):
    from memcli.compaction.window import feed_scan

    store = _store(cli, memory_dir, turns(3))
    path = store.paths.active
    lines = path.read_bytes().splitlines(keepends=True)
    lines[5:5] = [b"\n", b"  \t\n", bad + b"\n"]     # blank lines count: the bad one is line 8
    path.write_bytes(b"".join(lines))
    with pytest.raises(CorruptStoreError) as plan_error:
        plan_window(store, 1)
    with pytest.raises(CorruptStoreError) as feed_error:
        feed_scan(store, path.stat().st_size, 1, 1, lambda *_: None)
    for error in (plan_error, feed_error):
        assert str(error.value).startswith(f"{path}:8: {reason}")


def test_an_empty_plan_moves_nothing(cli, memory_dir):
    store = _store(cli, memory_dir, turns(2))
    plan = plan_window(store, 4)
    assert plan.empty and plan.runs == [] and plan.turn_ids == []


# ---------------------------------------------------------------- validate_summary

def test_validate_summary_normalizes_a_good_summary():
    summary = validate_summary({"episodic_summary": "  Fixed the build.  ", "semantic_facts": [
        "uses pytest", {"fact": "Uses  PYTEST", "tags": ["tool"]},           # a duplicate, merged away
        {"fact": "prefers tabs", "confidence": 0.7, "supersedes": ["sem_old", "sem_unknown", 3]}]},
        known_fact_ids=["sem_old"])
    assert summary.episodic_summary.strip() == "Fixed the build."
    assert [f.fact for f in summary.semantic_facts] == ["uses pytest", "prefers tabs"]
    assert summary.semantic_facts[1].supersedes == ["sem_old"] and summary.semantic_facts[1].confidence == 0.7


@pytest.mark.parametrize("raw, reason", [
    ("text", "expected a JSON object"),
    ({}, "no episodic_summary"),
    ({"episodic_summary": "   "}, "empty"),
    ({"episodic_summary": "Error: rate limit exceeded"}, "error or a refusal"),
    ({"episodic_summary": "ok", "semantic_facts": "x"}, "not a list"),
    ({"episodic_summary": "ok", "semantic_facts": [7]}, r"semantic_facts\[0\] is int"),
    ({"episodic_summary": "ok", "semantic_facts": [{"fact": ""}]}, r"semantic_facts\[0\].fact is empty"),
])
def test_validate_summary_rejects_what_must_never_be_committed(raw, reason):
    with pytest.raises(InvalidSummary, match=reason):
        validate_summary(raw)


@pytest.mark.parametrize("text", [
    "Error: upstream model overloaded", "ERROR 500", "Error (HTTP 429)", "Error code: 429 - {'error': 'x'}",
    "Error", "error.", "Exception: boom", "Exception - boom", "Internal server error", "Rate limit exceeded",
    "Rate limit exceeded, try again in 20s", "Rate limit reached for gpt-4o in organization org-x",
    "Rate limited: try again later", "rate_limit_exceeded", "Rate limit!", "Traceback (most recent call last):",
    "I'm sorry, I cannot help with that.", "Sorry, I can't do that", "As an AI, I cannot", "<!DOCTYPE html>",
    '{"error": "x"}', "Error 404 Not Found", "Error 503 Service Unavailable", "Error 429 Too Many Requests",
    "Error 500 Internal Server Error", "HTTP/1.1 502 Bad Gateway", "503 Service Unavailable", "HTTP Error 503: Service Unavailable",
    "Error processing request: context length exceeded", "Error while summarizing: input too long",
    "Error occurred: timeout", "Exception occurred: ValueError", "Sorry.", "Sorry but I can't help",
    "502 Bad Gateway\nnginx/1.18.0", "HTTP/1.1 503 Service Unavailable\nContent-Type: text/plain\n\nupstream overloaded",
    "504 Gateway Time-out", "HTTP/2 503", "Service Unavailable", "An error occurred while processing your request.",
    '{"type":"error","error":{"type":"overloaded_error"}}', "I’m sorry, but I can’t help with that.",
    "I’m unable to summarize this.", "Sorry—I can't do that", "Sorry–I cannot help"])
def test_an_error_message_or_a_refusal_reads_like_an_error(text):
    assert reads_like_error(text)


@pytest.mark.parametrize("text", [
    "Error codes of the payments API are listed in docs/errors.md", "Rate limit of the orders API is 5 requests per second",
    "Rate limit exceeded errors are retried with backoff", "Exception handling must go through handle_exc()",
    "Errors: none since the fix", "Error 404 pages are served by nginx", "Internal server errors are logged to Sentry",
    "Error-prone parsing moved to parse.py", "The user asked about errors.", "Sorry state of the build: tests failing",
    "Error 500 responses are retried twice", "Exception classes live in memcli/errors.py",
    # what a summary of a failing command, or a fact about one, says first (refused for a while)
    "Error when looking up orders older than 90 days: the lookup_order API returns 410; use the archive API.",
    "Error while running `pytest -q`: exit code 1; 1 failed, 300 passed", "Error during startup was caused by a "
    "missing env var", "Exception raised in worker.py is now logged", "Error processing config.yaml at line 12: bad "
    "indent", "Error while loading shared libraries: libssl.so.3: cannot open shared object file",
    # a summary of a failed HTTP call or a failing test may open with the reason phrase, or say where
    # an error occurred (a bare phrase is an error only alone on its line)
    "Not Found: the endpoint /v2/users returned 404 after the rename", "Conflict: two branches edit src/app.py",
    "Gone. The legacy API was retired; use /v3", "Unauthorized (401) from the registry: the token expired",
    "An error occurred in tests/test_x.py: fixed by pinning freezegun"])
def test_a_sentence_that_starts_with_an_error_word_is_not_an_error(text):
    assert not reads_like_error(text)
    fact = {"fact": text, "tags": ["project"], "confidence": 1.0}
    summary = validate_summary({"episodic_summary": text, "semantic_facts": [fact]})
    assert summary.episodic_summary == text and [f.fact for f in summary.semantic_facts] == [text]


@settings(max_examples=100, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=30),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=20), inner, max_size=4),
                    max_leaves=20))
def test_validate_summary_returns_a_summary_or_raises_invalid_summary_for_any_json(raw):
    try:
        summary = validate_summary(raw)
    except InvalidSummary:
        return
    assert summary.episodic_summary.strip()


# ---------------------------------------------------------------- build_items

def test_build_items_writes_one_episodic_item_and_merges_a_known_fact(cli, memory_dir):
    store = _store(cli, memory_dir, turns(4))
    known = {"id": "sem_known", "ts": 1.0, "fact": "Uses pytest", "tags": ["tool"], "confidence": 0.6,
             "salience": 0.5, "source_turn_ids": ["turn_0001"], "compaction_id": "cmp_0"}
    remembered = {"id": "sem_said", "ts": 1.0, "fact": "Deploys go through CI", "tags": [], "confidence": 1.0,
                  "salience": 0.5, "extra": {"source": "remember"}}
    store.paths.semantic.write_bytes(orjson.dumps(known) + b"\n" + orjson.dumps(remembered) + b"\n")
    plan = plan_window(store, 2, keep_steps=0)
    summary = Summary("Two turns of questions.", [Fact("uses  pytest", ["testing"], 0.9), Fact("new fact", [], 0.5),
                                                  Fact("deploys go through CI", [], 0.8)])
    episodic, semantic, counts = build_items(store, plan, summary, compaction_id="cmp_1", trace_ids=["rt_1"],
                                             moved=plan.moved, model="offline", policy=CompactionPolicy(),
                                             strategy="summarize")
    # a compaction's fact said again merges into a new item; a remembered one stays as it is
    assert counts == {"added": 1, "merged": 2}
    [item] = episodic
    assert (item.turn_ids, item.summary, item.compaction_id, item.extra) == (
        ["turn_0001", "turn_0002"], "Two turns of questions.", "cmp_1", {"trace_count": plan.moved})
    merged, new = semantic
    assert (merged.fact, merged.supersedes, merged.confidence, sorted(merged.tags)) == (
        "Uses pytest", ["sem_known"], 0.9, ["testing", "tool"])
    assert (new.fact, new.supersedes, new.source_turn_ids) == ("new fact", [], ["turn_0001", "turn_0002"])


def test_build_items_rolls_up_live_summaries_beyond_the_limit(cli, memory_dir):
    store = _store(cli, memory_dir, turns(4))
    old = [{"id": f"ep_{k}", "ts": float(k), "turn_ids": [f"turn_000{k}"], "summary": f"s{k}", "tags": [],
            "salience": 0.5} for k in (1, 2)]
    store.paths.episodic.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in old))
    plan = plan_window(store, 1, keep_steps=0)
    episodic, _, _ = build_items(store, plan, Summary("new", []), compaction_id="cmp_2", trace_ids=[],
                                 moved=0, model=None, policy=CompactionPolicy(max_episodic_items=2),
                                 strategy="summarize")
    rollup, item = episodic
    assert rollup.supersedes == ["ep_1", "ep_2"] and "rollup" in rollup.tags and item.summary == "new"


def test_build_items_without_a_summary_builds_nothing(cli, memory_dir):
    store = _store(cli, memory_dir, turns(2))
    plan = plan_window(store, 1, keep_steps=0)
    assert build_items(store, plan, None, compaction_id="cmp", trace_ids=[], moved=0, model=None,
                       policy=CompactionPolicy(), strategy="sliding-window") == ([], [], {"added": 0, "merged": 0})


# ---------------------------------------------------------------- the environment

def test_the_library_does_not_write_the_environment(cli, memory_dir, monkeypatch):
    """Counting tokens, snapshots and the API leave os.environ as they found it (tiktoken's
    encodings are built from LiteLLM's bundled files without setting TIKTOKEN_CACHE_DIR)."""
    import memcli
    from memcli.tokens import TokenCounter, _encoding

    _encoding.cache_clear()
    before = dict(os.environ)
    agent = memcli.Memory(memory_dir).agent("env")
    agent.ingest(turns(2))
    agent.snapshot(provider="anthropic", max_tokens=5000)
    counter = TokenCounter("gpt-4o")
    assert counter.count("hello world") == 2 and counter.exact
    assert dict(os.environ) == before


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_the_bundled_encodings_are_tiktokens_own(name):
    """An encoding built from LiteLLM's bundled BPE file (named by the SHA-1 of its download
    URL) has the ranks tiktoken's own loader reads from that file — memcli decodes them its
    own, faster way — so every count is tiktoken's."""
    import hashlib

    from tiktoken.load import load_tiktoken_bpe

    from memcli.tokens import _bundled_fields, _litellm_dir

    fields = _bundled_fields(name)
    url = f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
    path = _litellm_dir() / "litellm_core_utils" / "tokenizers" / hashlib.sha1(url.encode()).hexdigest()
    assert fields is not None and fields["mergeable_ranks"] == load_tiktoken_bpe(str(path))
    assert len(fields["mergeable_ranks"]) > 100_000


# ---------------------------------------------------------------- the whole-turn feed (one read of the window)

def _session(draw) -> list[dict]:
    """A session of turns with steps, failures, edits, abandoned calls, pinned instructions,
    subagent traces and (sometimes) late traces naming an older turn."""
    from tests.events import CALL, RES

    events: list[dict] = [U("You are a careful agent.", tags=["system"])]
    n_turns = draw(st.integers(1, 9))
    for t in range(1, n_turns + 1):
        tid = f"turn_{t:04d}"
        events.append(U(f"ask {t}: fix src/mod_{t}.py; always run the tests.", turn_id=tid))
        for s in range(draw(st.integers(0, 4))):
            cid = f"c{t}_{s}"
            kind = draw(st.sampled_from(["ok", "fail", "edit", "open", "side"]))
            tags = {"tags": ["sidechain"], "agent_id": f"sub{t}"} if kind == "side" else {}
            events.append(A(f"step {s} of turn {t}", turn_id=tid, **tags))
            if kind == "edit":
                events.append(CALL(cid, "Edit", {"file_path": f"src/mod_{t}_{s}.py"}, turn_id=tid))
            else:
                events.append(CALL(cid, "Bash", {"command": f"pytest tests/test_{s}.py"}, turn_id=tid, **tags))
            if kind == "fail":
                events.append(RES(cid, turn_id=tid, tool_error=f"exit status 1\nFAILED tests/test_{s}.py::t"))
            elif kind != "open":
                events.append(RES(cid, f"done {t}.{s}", turn_id=tid, **tags))
        if draw(st.booleans()):
            events.append(A(f"answer {t}", turn_id=tid))
        if t > 1 and draw(st.integers(0, 5)) == 0:   # a late trace naming an older turn
            old = f"turn_{draw(st.integers(1, t - 1)):04d}"
            events.append(A(f"late note for {old}", turn_id=old) if draw(st.booleans()) else
                          U("late instruction", turn_id=old, tags=["developer"]))
    return events


def _fed_plan(store, tail, keep, deliver, *, target=None):
    """The plan, with what a feed (this process) handed ``deliver`` checked against it."""
    from memcli.compaction.window import check_feed, feed_scan

    size = store.paths.active.stat().st_size
    result = feed_scan(store, size, tail, keep, deliver, getattr(deliver, "open_steps", None), target)
    plan = plan_window(store, tail, keep_steps=keep, target_tokens=target)
    plan.delivered, plan.spilled = check_feed(result, plan, store.paths.active)
    return plan


@pytest.fixture(autouse=True)
def _read_ahead_for_small_files(monkeypatch):
    """The read-ahead child of these tests' compactions runs on their small stores too."""
    import memcli.compaction.compactor as compactor

    monkeypatch.setattr(compactor, "READ_AHEAD_MIN_BYTES", 0)


def _fed_and_read(store, tail, keep, target, *, forked: bool = False):
    """(summary fed by the feed, summary of a plain read, the plan with the feed checked, the
    Collects): the feed run in this process before planning, or (``forked``) in a child process
    while this one plans."""
    from memcli.compaction.compactor import _Collect, _EarlyTurns, _ReadAhead
    from memcli.compaction.offline import OfflineSummarizer

    summarizer = OfflineSummarizer()
    early = _EarlyTurns(summarizer)
    if forked:
        ahead = _ReadAhead(early, store, tail, keep, target)
        fed = plan_window(store, tail, keep_steps=keep, target_tokens=target, on_open=ahead.fork)
        early = ahead.finish(fed)
        ahead.cancel()
        assert early is not None
    else:
        fed = _fed_plan(store, tail, keep, early, target=target)
    plain = plan_window(store, tail, keep_steps=keep, target_tokens=target)
    assert (fed.turns, fed.runs, fed.tokens_before, fed.window_tokens) == \
           (plain.turns, plain.runs, plain.tokens_before, plain.window_tokens)
    assert fed.delivered <= len(fed.turns) and all(t.whole for t in fed.turns[:fed.delivered])
    assert fed.spilled is None or not fed.turns[-1].whole
    if plain.empty:
        return None, None, fed, None, None
    once = _Collect(store, fed, early)
    twice = _Collect(store, plain)
    return summarizer.summarize(once), OfflineSummarizer().summarize(list(twice)), fed, once, twice


def _same_summary(a, b, once, twice) -> None:
    assert a.episodic_summary == b.episodic_summary
    assert [(f.fact, f.tags, f.source_turn_ids) for f in a.semantic_facts] == \
           [(f.fact, f.tags, f.source_turn_ids) for f in b.semantic_facts]
    assert set(once.ids) == set(twice.ids) and len(once.ids) == len(twice.ids)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), tail=st.integers(0, 3), keep=st.integers(0, 5), target=st.sampled_from([None, 1, 300, 900]),
       budget=st.sampled_from([8 << 20, 2_000, 500]), forked=st.booleans())
def test_turns_the_feed_hands_over_give_the_summary_a_read_of_the_window_gives(tmp_path_factory, monkeypatch, data,
                                                                              tail, keep, target, budget, forked):
    """The feed hands over the turns certain to move whole as it reads (and, past its budget,
    folds a giant turn's older steps); the summary built from them (plus a read of the rest) is
    the one a full read of the window gives, with the same trace ids, and the plan is the same as
    without the feed — the feed run in this process or in a forked child while the plan reads."""
    import memcli.compaction.window as window
    from memcli.ingest.api import ingest

    monkeypatch.setattr(window, "WHOLE_TURN_FEED_BYTES", budget)
    memory_dir = tmp_path_factory.mktemp("m")
    src = memory_dir / "events.ndjson"
    src.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in _session(data.draw)))
    ingest(memory_dir, "a", src)
    a, b, _, once, twice = _fed_and_read(AgentStore(memory_dir, "a"), tail, keep, target, forked=forked)
    if a is not None:
        _same_summary(a, b, once, twice)


def _giant_turn(steps: int) -> list[dict]:
    from tests.events import CALL, RES

    events = [U("Make the whole suite pass.")]
    for s in range(1, steps + 1):
        events += [A(f"Step {s}: checking src/module_{s % 7}.py next."),
                   CALL(f"c{s}", "Bash", {"command": f"pytest -q tests/test_{s % 5}.py"}),
                   RES(f"c{s}", f"{s} passed" if s % 4 else None, **({"tool_error": "exit status 1"} if not s % 4 else {}))]
    return events


@pytest.mark.parametrize("forked", [False, True])
def test_a_giant_turns_moved_steps_are_read_once(cli, memory_dir, monkeypatch, forked):
    """One open turn far over the feed's budget: its older steps are folded as the feed reads
    (the window's last turn moves in part, its newest steps stay), and the summary is the one a
    second read gives."""
    import memcli.compaction.window as window

    monkeypatch.setattr(window, "WHOLE_TURN_FEED_BYTES", 40_000)   # the turn: ~90 KB, its kept steps ~15 KB
    store = _store(cli, memory_dir, turns(3) + _giant_turn(120))
    a, b, fed, once, twice = _fed_and_read(store, 2, 4, 2_000, forked=forked)
    assert fed.spilled is not None and not fed.turns[-1].whole and fed.turns[-1].steps > 60
    _same_summary(a, b, once, twice)
    assert "steps 1–" in a.episodic_summary


def test_the_spill_holds_back_room_for_the_steps_the_target_keeps():
    from memcli.compaction.window import SPILL_BYTES_PER_TOKEN, SPILL_MIN_BYTES, spill_lag

    budget = 8 << 20
    assert spill_lag(None, budget) == budget // 2
    assert spill_lag(20_000, budget) == 20_000 * SPILL_BYTES_PER_TOKEN
    assert spill_lag(10, budget) == SPILL_MIN_BYTES
    assert spill_lag(10 ** 9, budget) == budget // 2
    assert spill_lag(20_000, 40_000) == 20_000


@pytest.mark.parametrize("per_token, spilled", [(1, False), (10, True)])
def test_a_spill_lag_shorter_than_the_kept_steps_voids_the_spill_not_the_summary(cli, memory_dir, monkeypatch,
                                                                                 per_token, spilled):
    """The lag follows the target; kept steps whose lines outgrow it (2,000 bytes held back
    against ~15 KB kept) make the spill void, and the summary is still the one a read gives."""
    import memcli.compaction.window as window

    monkeypatch.setattr(window, "WHOLE_TURN_FEED_BYTES", 40_000)
    monkeypatch.setattr(window, "SPILL_MIN_BYTES", 0)
    monkeypatch.setattr(window, "SPILL_BYTES_PER_TOKEN", per_token)
    store = _store(cli, memory_dir, turns(3) + _giant_turn(120))
    a, b, fed, once, twice = _fed_and_read(store, 2, 4, 2_000, forked=True)
    assert (fed.spilled is not None) is spilled and not fed.turns[-1].whole and fed.turns[-1].steps > 60
    _same_summary(a, b, once, twice)


def test_a_spilled_turn_that_moves_whole_is_read_again(cli, memory_dir, monkeypatch):
    """A giant turn older than the tail moves whole: what was folded of it is void (its ask must
    come first), and the summary is still the one a plain read gives."""
    import memcli.compaction.window as window

    monkeypatch.setattr(window, "WHOLE_TURN_FEED_BYTES", 6_000)
    store = _store(cli, memory_dir, _giant_turn(60) + turns(4, start=2))
    a, b, fed, once, twice = _fed_and_read(store, 2, 1, None)
    assert fed.turns[0].whole and fed.spilled is None and fed.delivered == 0
    _same_summary(a, b, once, twice)


def test_the_feed_hands_over_old_turns_in_order_and_keeps_the_tail(cli, memory_dir):
    store = _store(cli, memory_dir, turns(8))
    got = []
    plan = _fed_plan(store, 2, 1, lambda tid, traces, steps: got.append((tid, len(traces), steps)))
    assert plan.turn_ids == [f"turn_{i:04d}" for i in range(1, 7)]
    # each turn is handed over once two later turns and a later step exist: all six old ones
    assert got == [(f"turn_{i:04d}", 4, 2) for i in range(1, 7)] and plan.delivered == 6
    # the newest 5 steps reach back into turn_0006 (turns have 2 steps): it moves in part, never handed over
    got.clear()
    plan = _fed_plan(store, 2, 5, lambda tid, traces, steps: got.append((tid, len(traces), steps)))
    assert plan.turn_ids[-1] == "turn_0006" and not plan.turns[-1].whole
    assert got == [(f"turn_{i:04d}", 4, 2) for i in range(1, 6)] and plan.delivered == 5


def test_a_late_trace_for_a_handed_over_turn_voids_the_feed(cli, memory_dir):
    store = _store(cli, memory_dir, turns(6) + [A("a late note", turn_id="turn_0001")] + turns(2, start=7))
    got = []
    plan = _fed_plan(store, 2, 1, lambda tid, traces, steps: got.append(tid))
    assert got[0] == "turn_0001" and plan.delivered == 0   # turn_0001 got a trace after it was handed over
    assert plan.turns[0].count == 5


def test_the_feed_stops_keeping_past_its_budget(cli, memory_dir, monkeypatch):
    import memcli.compaction.window as window

    monkeypatch.setattr(window, "WHOLE_TURN_FEED_BYTES", 3_000)
    big = [U("q1"), A("x" * 4_000)]                         # one turn over the budget
    store = _store(cli, memory_dir, turns(3) + big + turns(4, start=5))
    got = []
    plan = _fed_plan(store, 2, 1, lambda tid, traces, steps: got.append(tid))
    # turn_0003 waits for two later turns; the big one came first and ended the keeping
    assert got == ["turn_0001", "turn_0002"] and plan.delivered == 2
    assert len(plan.turns) == 6


@pytest.mark.parametrize("failure", ["raises", "dies", "hangs"])
def test_a_read_ahead_child_that_fails_changes_nothing(tmp_path, monkeypatch, failure):
    """The forked read-ahead's child raising, dying or never answering (stopped, stuck: given up
    after its patience, then killed) leaves the window to be read in the compacting process: the
    same summary and trace ids as with a working child (which did summarize the turns), and no
    child process left behind."""
    import memcli.compaction.compactor as compactor
    from memcli.compaction.compactor import compact
    from memcli.compaction.offline import OfflineSummarizer
    from memcli.ingest.api import ingest

    monkeypatch.setattr(compactor, "_can_fork", lambda: True)
    events = b"".join(orjson.dumps(e) + b"\n" for e in turns(30) + _giant_turn(40))
    results = {}
    finished = []
    finish = compactor._ReadAhead.finish
    monkeypatch.setattr(compactor._ReadAhead, "finish",
                        lambda self, plan: finished.append((finish(self, plan), plan.delivered)) or finished[-1][0])
    for name in ("working", failure):
        memory_dir = tmp_path / name
        memory_dir.mkdir()
        (memory_dir / "events.ndjson").write_bytes(events)
        ingest(memory_dir, "a", memory_dir / "events.ndjson")
        if name != "working":
            def broken(*args, **kwargs):
                if failure == "dies":
                    os._exit(3)
                if failure == "hangs":
                    time.sleep(600)
                raise RuntimeError("the child fails")
            monkeypatch.setattr(compactor, "READ_AHEAD_MIN_WAIT", 0.5)
            monkeypatch.setattr(compactor, "READ_AHEAD_PATIENCE", 1)
            monkeypatch.setattr(compactor, "feed_scan", broken)
        assert compactor._ReadAhead.of(compactor._EarlyTurns(OfflineSummarizer()), AgentStore(memory_dir, "a"),
                                       CompactionPolicy(), 10_000) is not None
        result = compact(memory_dir, "a", policy=CompactionPolicy(tail_turns=2))
        item = orjson.loads((memory_dir / "agents" / "a" / "episodic.jsonl").read_bytes().splitlines()[-1])
        results[name] = (result.turns, result.summary, len(item["trace_ids"]), item["turn_ids"])
    assert results["working"] == results[failure] and results["working"][:1] == (29,)
    assert finished[0][0] is not None and finished[0][1] == 29   # the working child summarized the 29 turns
    assert finished[1][0] is None
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads /proc")
def test_a_compaction_killed_while_planning_leaves_no_read_ahead_child(tmp_path):
    """kill -9 of a compaction while its read-ahead child reads: the child goes too (it would
    otherwise read on, orphaned), and the store is as before."""
    import signal
    import subprocess
    import sys
    import time

    from memcli.ingest.api import ingest

    memory_dir = tmp_path / "memory"
    memory_dir.mkdir(parents=True)
    (tmp_path / "events.ndjson").write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in turns(40)))
    ingest(memory_dir, "a", tmp_path / "events.ndjson")
    active = memory_dir / "agents" / "a" / "raw_traces.jsonl"
    before = active.read_bytes()
    pid_file = tmp_path / "child.pid"
    script = f"""
import os, sys, time
import memcli.compaction.compactor as compactor
compactor._can_fork = lambda: True
compactor.READ_AHEAD_MIN_BYTES = 0
def slow(*args, **kwargs):
    open({str(pid_file)!r}, "w").write(str(os.getpid()))
    time.sleep(60)
compactor.feed_scan = slow
real_plan = compactor.plan_window
def plan_then_wait(*args, **kwargs):
    plan = real_plan(*args, **kwargs)
    time.sleep(60)
    return plan
compactor.plan_window = plan_then_wait
compactor.compact({str(memory_dir)!r}, "a")
"""
    proc = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + 60
        while not pid_file.exists() or not pid_file.read_text():
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        child = int(pid_file.read_text())
        proc.send_signal(signal.SIGKILL)
        proc.wait()

        def alive() -> bool:
            try:
                stat = open(f"/proc/{child}/stat").read()
            except FileNotFoundError:
                return False
            return stat.rsplit(")", 1)[1].split()[0] != "Z"

        deadline = time.monotonic() + 20
        while alive():
            assert time.monotonic() < deadline, "the read-ahead child outlived its parent"
            time.sleep(0.05)
    finally:
        proc.kill()
    assert active.read_bytes() == before


def test_a_compaction_that_is_not_due_stops_its_read_ahead_at_once(tmp_path, monkeypatch):
    """``--if-needed`` on a store that is not due: the child reading ahead is ended when the
    plan says so, not waited for."""
    import memcli.compaction.compactor as compactor
    from memcli.compaction.compactor import compact
    from memcli.ingest.api import ingest

    monkeypatch.setattr(compactor, "_can_fork", lambda: True)
    (tmp_path / "events.ndjson").write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in turns(6)))
    ingest(tmp_path, "a", tmp_path / "events.ndjson")
    ended = []
    monkeypatch.setattr(compactor, "feed_scan", lambda *a, **k: __import__("time").sleep(30))
    cancel = compactor._ReadAhead.cancel

    def spy(self):
        if self.pid is not None:   # still reading (it sleeps 30 s): not waited for
            ended.append(os.waitpid(self.pid, os.WNOHANG) == (0, 0))
        cancel(self)

    monkeypatch.setattr(compactor._ReadAhead, "cancel", spy)
    result = compact(tmp_path, "a", if_needed=True)
    assert not result.compacted
    assert ended == [True]   # the child was running when it was ended
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


def test_the_read_ahead_child_does_not_hold_the_agent_lock(tmp_path, monkeypatch):
    """The child is forked while the plan holds the agent lock (it shares the lock's open file):
    once the plan is done the lock is free for ingest, while the child still reads."""
    import time

    import memcli.compaction.compactor as compactor
    from memcli.compaction.offline import OfflineSummarizer
    from memcli.ingest.api import ingest
    from memcli.store.lock import agent_lock

    (tmp_path / "events.ndjson").write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in turns(6)))
    ingest(tmp_path, "a", tmp_path / "events.ndjson")
    store = AgentStore(tmp_path, "a")
    monkeypatch.setattr(compactor, "feed_scan", lambda *a, **k: time.sleep(30))
    ahead = compactor._ReadAhead(compactor._EarlyTurns(OfflineSummarizer()), store, 2, 1, None)
    try:
        compactor.plan(store, 2, keep_steps=1, on_open=ahead.fork)
        assert os.waitpid(ahead.pid, os.WNOHANG) == (0, 0)    # still reading
        with agent_lock(store.paths, timeout=2):
            pass
        assert os.waitpid(ahead.pid, os.WNOHANG) == (0, 0)
    finally:
        ahead.cancel()


def test_a_failing_read_ahead_child_says_why_with_memcli_debug(tmp_path):
    """MEMCLI_DEBUG=1: the child's traceback goes to stderr (without it, nothing: the parent
    reads the window itself)."""
    import subprocess
    import sys

    from memcli.ingest.api import ingest

    (tmp_path / "events.ndjson").write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in turns(8)))
    script = """
import memcli.compaction.compactor as compactor
compactor._can_fork = lambda: True
compactor.READ_AHEAD_MIN_BYTES = 0
def broken(*args, **kwargs):
    raise RuntimeError("the feed broke here")
compactor.feed_scan = broken
print(compactor.compact({store!r}, "a").turns)
"""
    for debug, said in (("1", True), ("0", False)):
        store = tmp_path / f"debug-{debug}"
        ingest(store, "a", tmp_path / "events.ndjson")
        proc = subprocess.run([sys.executable, "-c", script.format(store=str(store))], capture_output=True, text=True,
                              env={**os.environ, "MEMCLI_DEBUG": debug})
        assert proc.returncode == 0 and proc.stdout.strip() == "4"   # turns compacted all the same
        assert ("RuntimeError: the feed broke here" in proc.stderr) is said


def test_an_if_needed_compaction_refused_after_planning_leaves_no_read_ahead_child(tmp_path, monkeypatch):
    """--if-needed plans first (forking the child), then may refuse: the circuit breaker is open.
    The child is ended and reaped and its pipe closed all the same."""
    import memcli.compaction.compactor as compactor
    from memcli.compaction import breaker
    from memcli.compaction.compactor import compact
    from memcli.errors import CompactionError
    from memcli.ingest.api import ingest

    monkeypatch.setattr(compactor, "_can_fork", lambda: True)
    (tmp_path / "events.ndjson").write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in turns(30)))
    ingest(tmp_path, "a", tmp_path / "events.ndjson")
    store = AgentStore(tmp_path, "a")
    for _ in range(breaker.BREAKER_THRESHOLD):
        breaker.record_failure(store.paths, "the model failed")
    forked = []
    fork = compactor._ReadAhead.fork
    monkeypatch.setattr(compactor._ReadAhead, "fork", lambda self, size: fork(self, size) or forked.append(self.pid))
    fds = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    from memcli.compaction.offline import OfflineSummarizer

    paid = OfflineSummarizer()
    paid.spent = object()   # a summarizer that is paid: the breaker holds it back (not the offline one)
    with pytest.raises(CompactionError, match="circuit breaker"):
        compact(tmp_path, "a", if_needed=True, max_context_tokens=2_000, summarizer=paid)
    assert forked and forked[0] is not None   # a child was reading
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)
    if fds is not None:
        assert len(os.listdir("/proc/self/fd")) == fds


def test_a_host_that_ignores_sigchld_still_compacts(tmp_path, monkeypatch):
    """A process that ignores SIGCHLD (its children are reaped at once, nothing to wait for):
    the compaction with a read-ahead child still completes."""
    import signal

    import memcli.compaction.compactor as compactor
    from memcli.compaction.compactor import compact
    from memcli.ingest.api import ingest

    monkeypatch.setattr(compactor, "_can_fork", lambda: True)
    (tmp_path / "events.ndjson").write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in turns(12)))
    ingest(tmp_path, "a", tmp_path / "events.ndjson")
    previous = signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    try:
        result = compact(tmp_path, "a", policy=CompactionPolicy(tail_turns=2))
    finally:
        signal.signal(signal.SIGCHLD, previous)
    assert result.compacted and result.turns == 10


def test_turn_ids_named_outside_the_active_file_only_move_the_turn_counter_forward():
    from memcli.store.state import TurnState

    state = TurnState()
    state.turn_counter = 7
    state.observe_turn_ids(["turn_0003", None, 12, "turn_x", "turn_", "turn_0042", "turn_0041", "xturn_9000"])
    assert state.turn_counter == 42
    state.observe_turn_ids(["turn_0005"])
    assert state.turn_counter == 42
    state.observe_archived({"turn_id": "turn_0100"})
    state.observe_archived({"turn_id": ["turn_9999"]})
    assert state.turn_counter == 100


def test_bulk_passes_pause_the_cyclic_collector_and_restore_it(memory_dir, monkeypatch):
    """Inside a snapshot or a token count the collector is off; after it, on again (or still
    off, when the caller had turned it off); nested passes leave it to the outermost."""
    import gc

    import memcli.snapshot.assemble as assemble
    from memcli.bulk import cyclic_gc_paused

    seen = []
    with cyclic_gc_paused():
        with cyclic_gc_paused():
            seen.append(gc.isenabled())
        seen.append(gc.isenabled())
    assert seen == [False, False] and gc.isenabled()
    gc.disable()
    try:
        with cyclic_gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()

    counted = []
    monkeypatch.setattr(assemble, "count_working", lambda *a, **k: counted.append(gc.isenabled()) or 0)
    assemble.working_tokens(AgentStore(memory_dir, "a"))
    assert counted == [False] and gc.isenabled()


def test_no_read_ahead_child_forks_while_another_thread_runs(monkeypatch):
    """A fork copies only the calling thread: with another one running (LiteLLM's logging worker
    after an LLM call, a server's), the window is read after the plan instead."""
    import threading

    import memcli.compaction.compactor as compactor

    monkeypatch.setattr(compactor, "usable_cpus", lambda: 2)
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    assert compactor._can_fork() is hasattr(os, "fork")
    monkeypatch.undo()
    monkeypatch.setattr(compactor, "usable_cpus", lambda: 2)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)
    other.start()
    try:
        assert not compactor._can_fork()
    finally:
        stop.set()
        other.join()
    monkeypatch.setattr(compactor, "usable_cpus", lambda: 1)
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    assert not compactor._can_fork()


def test_a_journal_is_written_as_its_fields_in_order():
    """The journal's bytes are its dataclass fields in order, nested lists and dicts as they are
    (what ``orjson.dumps(asdict(journal))`` gave, without the deep copy)."""
    from dataclasses import asdict

    from memcli.store.journal import Journal, UndoJournal

    journal = Journal("c1", "a", {"ino": 1, "size": 2}, [[0, 10]], ["rt_1"], 1, "rt_1", "rt_1", 0, 0, 0,
                      episodic=[{"id": "ep_1", "turn_ids": ["turn_0001"], "nested": {"k": [1, (2, 3)]}}],
                      ledger=[{"compaction_id": "c1", "tokens_before": 9}])
    undo = UndoJournal("u1", "c1", "a", {"ino": 1, "size": 2}, 0, [[0, 0, 10, "rt_1"]], 1, 0, 0, 0)
    for j in (journal, undo):
        assert j.to_json() == orjson.dumps(asdict(j))
    assert list(orjson.loads(journal.to_json())) == [
        "compaction_id", "agent_id", "active", "runs", "run_ids", "moved", "first_id", "last_id", "archive_size",
        "episodic_size", "semantic_size", "episodic", "semantic", "version", "ledger", "ledger_size"]


def _cgroup_host(tmp_path, monkeypatch, cgroup: str, mountinfo: list[str], files: dict[str, str]):
    """A fake /proc/self/cgroup, /proc/self/mountinfo and cgroup file system under ``tmp_path``
    (mount points in ``mountinfo`` are relative to it), for :mod:`memcli.bulk`'s CPU quota."""
    import memcli.bulk as bulk

    root = tmp_path / "host"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (tmp_path / "cgroup").write_text(cgroup)
    (tmp_path / "mountinfo").write_text("".join(line.replace("@", str(root)) + "\n" for line in mountinfo))
    monkeypatch.setattr(bulk, "CGROUP", str(tmp_path / "cgroup"))
    monkeypatch.setattr(bulk, "MOUNTINFO", str(tmp_path / "mountinfo"))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    return bulk


V2_MOUNT = "30 23 0:26 / @/sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate"
V1_MOUNT = "32 31 0:29 {root} @/sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct"


@pytest.mark.parametrize("files, want_quota, want_cpus", [
    ({}, None, 4),                                                                    # nothing readable
    ({"sys/fs/cgroup/ci/job/cpu.max": "max 100000\n"}, None, 4),                      # no limit
    ({"sys/fs/cgroup/ci/job/cpu.max": "100000 100000\n"}, 1.0, 1),                    # --cpus 1
    ({"sys/fs/cgroup/ci/job/cpu.max": "150000 100000\n"}, 1.5, 2),                    # 1.5 rounds to 2
    ({"sys/fs/cgroup/ci/job/cpu.max": "50000 100000\n"}, 0.5, 1),                     # never below one
    ({"sys/fs/cgroup/ci/job/cpu.max": "max 100000\n",                                 # a parent's limit holds
      "sys/fs/cgroup/ci/cpu.max": "120000 100000\n"}, 1.2, 1),
    ({"sys/fs/cgroup/ci/job/cpu.max": "800000 100000\n"}, 8.0, 4),                    # the affinity is lower
])
def test_usable_cpus_follow_a_cgroup_v2_quota(tmp_path, monkeypatch, files, want_quota, want_cpus):
    """A container or CI job limited to one CPU's worth of time gets no read-ahead child: two
    processes would share that one CPU. The quota is the lowest along the cgroup's path."""
    bulk = _cgroup_host(tmp_path, monkeypatch, "0::/ci/job\n", [V2_MOUNT], files)
    assert bulk.cgroup_cpu_quota() == want_quota
    assert bulk.usable_cpus() == want_cpus


@pytest.mark.parametrize("root, path, files, want", [
    ("/", "/docker/abc", {"sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us": "100000\n",
                          "sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us": "100000\n"}, 1.0),
    ("/", "/docker/abc", {"sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us": "-1\n",
                          "sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us": "100000\n"}, None),
    # inside the container, the mount shows its own cgroup as the root
    ("/docker/abc", "/docker/abc", {"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us": "250000\n",
                                    "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000\n"}, 2.5),
])
def test_usable_cpus_follow_a_cgroup_v1_quota(tmp_path, monkeypatch, root, path, files, want):
    cgroup = f"12:pids:/\n4:cpu,cpuacct:{path}\n1:name=systemd:/\n0::/\n"
    bulk = _cgroup_host(tmp_path, monkeypatch, cgroup, [V1_MOUNT.format(root=root)], files)
    assert bulk.cgroup_cpu_quota() == want


def test_no_read_ahead_child_under_a_one_cpu_quota(tmp_path, monkeypatch, memory_dir):
    """The compaction asks the quota, not only the affinity: under ``--cpus 1`` it does not fork."""
    import threading

    import memcli.compaction.compactor as compactor

    _cgroup_host(tmp_path, monkeypatch, "0::/ci/job\n", [V2_MOUNT], {"sys/fs/cgroup/ci/job/cpu.max": "100000 100000\n"})
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    assert not compactor._can_fork()
    (tmp_path / "host" / "sys/fs/cgroup/ci/job/cpu.max").write_text("max 100000\n")
    assert compactor._can_fork() is hasattr(os, "fork")


def test_a_turn_span_names_one_turn_once():
    """The parts of one long turn, summarized apart, were told "turn_0001–turn_0001"."""
    from memcli.compaction.summarizer import turn_span

    assert turn_span(["turn_0001", "turn_0001"]) == turn_span(["turn_0001"]) == "turn_0001"
    assert turn_span(["turn_0001", "turn_0002", "turn_0004"]) == "turn_0001–turn_0004" and turn_span([]) == ""


def test_a_chunking_summarizer_of_ones_own_is_refused_a_low_target_cleanly(tmp_path):
    """A library user's summarizer with a context limit (no ``named_tokens`` of its own): the
    refusal of a target below what must stay raised AttributeError."""
    from memcli.compaction.compactor import compact
    from memcli.compaction.summarizer import Summarizer
    from memcli.errors import CompactionError
    from memcli.ingest.api import ingest

    class Chunked(Summarizer):
        name = "mine"

        def context_tokens(self):
            return 50_000

    (tmp_path / "events.ndjson").write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in turns(8)))
    ingest(tmp_path, "a", tmp_path / "events.ndjson")
    with pytest.raises(CompactionError, match="is below what agent 'a' must keep"):
        compact(tmp_path, "a", summarizer=Chunked(), policy=CompactionPolicy(target_tokens=5))


def test_build_items_never_lets_a_summary_supersede_a_remembered_or_pinned_fact(cli, memory_dir):
    """The rule held for a model's answer only (its validation); the offline summary's
    ``Command passed`` fact superseded a remembered ``Command failed`` one. It is kept where the
    facts are written, for every summarizer."""
    store = _store(cli, memory_dir, turns(4))
    records = [{"id": "sem_cmp", "ts": 1.0, "fact": "Command failed: `make lint`", "tags": [], "confidence": 0.8,
                "salience": 0.5, "compaction_id": "cmp_0"},
               {"id": "sem_said", "ts": 1.0, "fact": "Command failed: `make lint` — keep it", "tags": [],
                "confidence": 1.0, "salience": 0.5, "extra": {"source": "remember"}},
               {"id": "sem_pin", "ts": 1.0, "fact": "Command failed: `make lint` (pinned)", "tags": ["pinned"],
                "confidence": 1.0, "salience": 1.0, "compaction_id": "cmp_0"}]
    store.paths.semantic.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    plan = plan_window(store, 2, keep_steps=0)
    summary = Summary("Lint passes.", [Fact("Command passed: `make lint`", ["command"], 0.8,
                                            ["sem_cmp", "sem_said", "sem_pin"])])
    _, semantic, _ = build_items(store, plan, summary, compaction_id="cmp_1", trace_ids=[], moved=plan.moved,
                                 model="offline", policy=CompactionPolicy(), strategy="summarize")
    assert [f.supersedes for f in semantic] == [["sem_cmp"]]
