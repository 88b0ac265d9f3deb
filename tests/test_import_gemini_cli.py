"""Gemini CLI sessions whose history Gemini CLI wrote again (``ChatRecordingService.
updateMessagesFromHistory``: ``{"$set": {"messages": [...]}}`` on resume, rollback, compression
and tool-output masking), and legacy one-document sessions read with auto-detection.

The fixtures are written here from Gemini CLI's source: a re-written message keeps its record
(``toolCalls`` included) with ``content`` set to the model's history parts (text and
``functionCall`` parts); a compression's history is ``[<state_snapshot> summary, "Got it. Thanks
for the additional context!", ...the newest messages kept]``; masking puts a
``<tool_output_masked>`` preview in a call's ``result``."""

from __future__ import annotations

import orjson
import pytest

import memcli
from memcli.importers.gemini_cli import IMPORTER
from tests.helpers import agent_traces
from tests.sync_fixtures import gemini_chats, gm_call, gm_header, gm_model, gm_user, sid, write_lines

SNAPSHOT = "<state_snapshot>\n<overall_goal>ship the readme</overall_goal>\n</state_snapshot>"
MASKED = "<tool_output_masked>\n# App\n\nOutput too large. Full output available at: /tmp/x.txt\n</tool_output_masked>"


def _response(mid: str, call: dict, output=None) -> dict:
    """The user record Gemini CLI writes for a tool response."""
    text = call["result"][0]["functionResponse"]["response"]["output"] if output is None else output
    return {"id": mid, "timestamp": "2026-03-03T08:00:45.000Z", "type": "user",
            "content": [{"functionResponse": {"id": call["id"], "name": call["name"], "response": {"output": text}}}]}


def _history(message: dict, call_id: str | None = None, signature: str | None = None) -> dict:
    """``message`` as updateMessagesFromHistory writes it back: ``content`` = its history parts
    (a model message's text, then its ``functionCall`` parts: with the call's id, or
    ``call_id`` — the ``synth_...`` id a call sent without one gets), ``toolCalls`` kept."""
    content = message["content"]
    parts = list(content) if isinstance(content, list) else [{"text": content}] if content else []
    for call in message.get("toolCalls", ()):
        part = {"functionCall": {"id": call_id or call["id"], "name": call["name"], "args": call["args"]}}
        if signature:
            part["thoughtSignature"] = signature
        parts.append(part)
    return dict(message, content=parts)


def _ack(mid: str, minute: int) -> dict:
    return {"id": mid, "timestamp": f"2026-03-03T08:{minute:02d}:05.000Z", "type": "gemini",
            "content": [{"text": "Got it. Thanks for the additional context!"}]}


def _set(*messages) -> dict:
    return {"$set": {"messages": list(messages), "lastUpdated": "2026-03-03T09:00:00.000Z"}}


def _ids(traces) -> list[str]:
    return [t["id"] for t in traces]


def _one_shot(tmp_path, lines, fmt: str = "auto", name: str = "w"):
    path = write_lines(tmp_path / f"{name}.jsonl", lines)
    result = memcli.Memory(tmp_path / f"mem-{name}").agent(name).ingest(path, fmt=fmt)
    return result, agent_traces(tmp_path / f"mem-{name}", name)


def _synced(tmp_path, session: str, lines, *cuts: int):
    """``memcli sync`` of the session written up to each cut, then whole: its traces."""
    home, mem = tmp_path / "home", tmp_path / "mem-sync"
    path = gemini_chats(home) / f"session-2026-03-03T08-00-{session[:8]}.jsonl"
    start = 0
    for cut in [*cuts, len(lines)]:
        write_lines(path, lines[start:cut], mode="ab" if start else "wb")
        start = cut
        report = memcli.Memory(mem).sync(home=home)
        assert not report.failed, report.failed[0].error
    return agent_traces(mem, f"gemini.app.{session}")


def _conversation():
    """Two asks with a tool call each, their tool response records."""
    c1, c2 = gm_call("c1", output="# App"), gm_call("c2", "run_shell_command", output="2 passed")
    m1, m2 = gm_model("m1", "let me look", 1, calls=[c1]), gm_model("m2", "running them", 2, calls=[c2])
    return (gm_user("u1", "what is in the readme", 0), m1, _response("r1", c1),
            gm_user("u2", "run the tests", 2), m2, _response("r2", c2))


# ------------------------------------------------------------------ compression ($set, bug 1)
def test_a_compression_keeps_what_it_summarized_and_one_import_equals_a_sync_across_it(tmp_path):
    g = sid(40, "gm")
    u1, m1, r1, u2, m2, r2 = _conversation()
    compression = _set(gm_user("s1", SNAPSHOT, 3), _ack("s2", 3), _history(u2), _history(m2), r2)
    lines = [gm_header(g), u1, m1, r1, u2, m2, r2, compression, gm_user("u3", "now commit", 4),
             gm_model("m3", "committed", 4)]
    result, traces = _one_shot(tmp_path, lines)
    assert result.format == "gemini-cli"
    # the history before the compression stays; the summary and its acknowledgement follow it
    assert _ids(traces) == ["gm-u1-u0", "gm-m1-x0", "gm-m1-c0", "gm-m1-r0", "gm-u2-u0", "gm-m2-x0", "gm-m2-c0",
                            "gm-m2-r0", "gm-s1-u0", "gm-s2-x0", "gm-u3-u0", "gm-m3-x0"]
    summary = traces[8]
    assert (summary["tags"], summary["harness_compaction"]) == (["compact_summary"], {"harness": "gemini-cli"})
    # a sync before the compression, then after it, stores the same traces in the same order
    assert _ids(_synced(tmp_path, g, lines, 7)) == _ids(traces)


@pytest.mark.parametrize("case", ["rollback", "compression of everything", "compression after the context",
                                  "a whole conversation"])
def test_what_a_set_of_messages_removes(tmp_path, case):
    u1, m1, r1, u2, m2, _ = _conversation()
    env = gm_user("e0", "This is the Gemini CLI. The project's files: ...", 0)   # a stable id, first in history
    snapshot, ack = gm_user("s1", SNAPSHOT, 3), _ack("s2", 3)
    first = ["gm-u1-u0", "gm-m1-x0", "gm-m1-c0", "gm-m1-r0"]
    lines, expected = {
        # an aborted prompt: the newest messages the history no longer holds are gone
        "rollback": ([u1, m1, r1, u2, gm_model("m2", "a partial answer", 2), _set(u1, _history(m1), r1)], first),
        # a summary never read before, holding none of the messages: a compression of all of them
        "compression of everything": ([u1, m1, r1, _set(snapshot, ack)], [*first, "gm-s1-u0", "gm-s2-x0"]),
        # Gemini CLI puts its environment context first in every history it starts a chat from
        "compression after the context": ([_set(env), u1, m1, r1, _set(env, snapshot, ack)],
                                          ["gm-e0-u0", *first, "gm-s1-u0", "gm-s2-x0"]),
        # no summary, none held: the whole conversation again (as before)
        "a whole conversation": ([u1, m1, r1, _set(u2, m2)], ["gm-u2-u0", "gm-m2-x0", "gm-m2-c0", "gm-m2-r0"]),
    }[case]
    _, traces = _one_shot(tmp_path, [gm_header(sid(41, "gm")), *lines])
    assert _ids(traces) == expected


def test_a_rollback_after_a_compression_read_by_a_later_sync_drops_what_it_drops_in_one_import(tmp_path):
    # the sync that reads on from the compression does not hold the messages the rollback keeps:
    # the summary it carries is known (the carry) so the list is the whole conversation, not a
    # new compression keeping the aborted prompt
    g = sid(42, "gm")
    u1, m1, r1, u2, m2, r2 = _conversation()
    kept = (gm_user("s1", SNAPSHOT, 3), _ack("s2", 3), _history(u2), _history(m2), r2)
    lines = [gm_header(g), u1, m1, r1, u2, m2, r2, _set(*kept),
             gm_user("u3", "an ask I aborted", 4), gm_model("m3", "a partial answer", 4), _set(*kept),
             gm_user("u4", "commit it", 5), gm_model("m4", "committed", 5)]
    _, traces = _one_shot(tmp_path, lines)
    assert _ids(traces) == ["gm-u1-u0", "gm-m1-x0", "gm-m1-c0", "gm-m1-r0", "gm-u2-u0", "gm-m2-x0", "gm-m2-c0",
                            "gm-m2-r0", "gm-s1-u0", "gm-s2-x0", "gm-u4-u0", "gm-m4-x0"]
    assert _ids(_synced(tmp_path, g, lines, 8)) == _ids(traces)


# ------------------------------------------------------------------ re-written tool calls (bug 2)
@pytest.mark.parametrize("part_id", ["c1", "synth_read_file_0a1b2c3d"])
def test_a_rewritten_message_stores_each_tool_call_once(tmp_path, part_id):
    # resume / masking / compression re-write a model message's content as its history parts,
    # functionCall parts included, beside its toolCalls records; a call the model sent without
    # an id has a synth_ id in the history (matched by name and args)
    g = sid(43, "gm")
    u1, m1, r1, *_ = _conversation()
    lines = [gm_header(g), u1, m1, r1, _set(_history(u1), _history(m1, part_id, "sig-1"), r1),
             gm_model("m5", "it is the app's readme", 1)]
    _, traces = _one_shot(tmp_path, lines)
    calls = [t for t in traces if t["trace_type"] == "tool_call"]
    assert [(t["id"], t["tool_call_id"]) for t in calls] == [("gm-m1-c0", "c1")]
    assert calls[0]["signature"] == "sig-1"   # the history part's signature, on the call read from the record
    assert [(t["id"], t["tool_result"]) for t in traces if t["trace_type"] == "tool_result"] == [("gm-m1-r0", "# App")]
    assert _ids(_synced(tmp_path, g, lines, 4)) == _ids(traces)


def test_a_masked_result_does_not_replace_the_output_read_before(tmp_path):
    g = sid(44, "gm")
    u1, m1, r1, *_ = _conversation()
    masked = dict(m1, toolCalls=[dict(m1["toolCalls"][0], result=_response("x", m1["toolCalls"][0], MASKED)["content"])])
    lines = [gm_header(g), u1, m1, r1, _set(_history(u1), _history(masked), _response("r1", m1["toolCalls"][0], MASKED))]
    _, traces = _one_shot(tmp_path, lines)
    assert [t["tool_result"] for t in traces if t["trace_type"] == "tool_result"] == ["# App"]
    synced = _synced(tmp_path, g, lines, 4)   # stored by the sync before the masking: kept
    assert [t["tool_result"] for t in synced if t["trace_type"] == "tool_result"] == ["# App"]
    # a masked result with nothing read before it is what there is
    _, alone = _one_shot(tmp_path, [gm_header(g), u1, _history(masked)], name="alone")
    assert [t["tool_result"] for t in alone if t["trace_type"] == "tool_result"] == [MASKED]


# ------------------------------------------------------------------ legacy documents (bug 3)
def _legacy(session: str) -> dict:
    u1, m1, r1, u2, m2, r2 = _conversation()
    return dict(gm_header(session), messages=[gm_user("s1", SNAPSHOT, 0), _ack("s2", 0), _history(u2), _history(m2),
                                              r2, gm_model("m3", "both pass", 3)])


def test_a_legacy_session_document_is_detected_as_gemini_cli(tmp_path):
    document = _legacy(sid(45, "gm"))
    path = tmp_path / "session.json"
    path.write_bytes(orjson.dumps(document, option=orjson.OPT_INDENT_2))
    auto = memcli.Memory(tmp_path / "auto").agent("a").ingest(path)
    named = memcli.Memory(tmp_path / "named").agent("a").ingest(path, fmt="gemini-cli")
    assert (auto.format, auto.detected) == ("gemini-cli", True)
    traces = agent_traces(tmp_path / "auto", "a")
    assert [{k: v for k, v in t.items() if k != "ingested_at"} for t in traces] == [
        {k: v for k, v in t.items() if k != "ingested_at"} for t in agent_traces(tmp_path / "named", "a")]
    assert named.appended == auto.appended
    assert (traces[0]["tags"], traces[0]["harness_compaction"]) == (["compact_summary"], {"harness": "gemini-cli"})
    # every call once, answered once: no orphan result from the tool response record
    for fmt_traces in (traces, _gemini(tmp_path, path)):
        calls = [t["tool_call_id"] for t in fmt_traces if t["trace_type"] == "tool_call"]
        results = [t["tool_call_id"] for t in fmt_traces if t["trace_type"] == "tool_result"]
        assert calls == results == ["c2"]


def _gemini(tmp_path, path):
    """The document read with --from gemini (hash-chain ids)."""
    memcli.Memory(tmp_path / "gemini").agent("a").ingest(path, fmt="gemini")
    return agent_traces(tmp_path / "gemini", "a")


def test_several_documents_in_one_file_stay_with_gemini_and_odd_types_do_not_raise():
    head = gm_header(sid(46, "gm"))
    two = [(1, dict(head, messages=[])), (2, dict(head, messages=[]))]
    assert IMPORTER.sniff(two) == 0        # --from gemini splits them (--split)
    assert IMPORTER.sniff([(1, dict(head, messages=[gm_user("u", "hi")]))]) == 96
    assert IMPORTER.sniff([(1, head), (2, {"id": "x", "type": ["user"]})]) == 0   # a list where a string belongs


# ------------------------------------------------------------------ a compression's copies (new ids)
def _copy(message: dict, new_id: str, *, output: str | None = None) -> dict:
    """A message kept by a compression as Gemini CLI writes it: ``startChat`` gives each kept history
    turn a new id (``randomUUID``) and ``updateMessagesFromHistory`` a new record of its parts (no
    ``toolCalls``): a model turn's text parts (here split, spaced otherwise, with an HTML comment
    the record's text lost) then its ``functionCall`` parts; a tool response's parts (its output
    maybe truncated)."""
    parts = _history(message)["content"]
    if message["type"] == "gemini":
        text = " ".join(p["text"] for p in parts if "text" in p)
        head, _, rest = text.partition(" ")
        parts = [{"text": f"{head}<!-- ide -->\n"}, {"text": f"  {rest}"}, *(p for p in parts if "text" not in p)]
    if output is not None:
        parts = [{"functionResponse": dict(p["functionResponse"], response={"output": output})} for p in parts]
    return {"id": new_id, "timestamp": "2026-03-03T08:03:00.000Z", "type": message["type"], "content": parts}


def _compressed(session: str):
    """Two asks, a compression keeping the second (copies under new ids), then a third ask."""
    u1, m1, r1, u2, m2, r2 = _conversation()
    env = gm_user("e0", "This is the Gemini CLI. The project's files: ...", 0)
    compression = _set(env, gm_user("s1", SNAPSHOT, 3), _ack("s2", 3), _copy(u2, "k1"), _copy(m2, "k2"),
                       _copy(r2, "k3", output="[truncated] 2 passed"))
    return [gm_header(session), _set(env), u1, m1, r1, u2, m2, r2, compression, gm_user("u3", "now commit", 4),
            gm_model("m3", "committed", 4)]


COMPRESSED = ["gm-e0-u0", "gm-u1-u0", "gm-m1-x0", "gm-m1-c0", "gm-m1-r0", "gm-u2-u0", "gm-m2-x0", "gm-m2-c0",
              "gm-m2-r0", "gm-s1-u0", "gm-s2-x0", "gm-u3-u0", "gm-m3-x0"]


def test_a_compressions_copies_of_the_messages_it_kept_are_not_stored_again(tmp_path):
    g = sid(47, "gm")
    lines = _compressed(g)
    result, traces = _one_shot(tmp_path, lines)
    assert _ids(traces) == COMPRESSED   # no second "run the tests", no second call c2 or result
    assert [t["content"] for t in traces if t["trace_type"] == "user" and not t.get("tags")] == [
        "This is the Gemini CLI. The project's files: ...", "what is in the readme", "run the tests", "now commit"]
    assert [t["tool_result"] for t in traces if t["trace_type"] == "tool_result"] == ["# App", "2 passed"]
    assert result.skipped["copies of messages read before (kept by a compression)"] == 3
    # syncs before and after the compression, and one that reads the $set line alone, store the same
    assert _ids(_synced(tmp_path, g, lines, 8)) == COMPRESSED
    assert _ids(_synced(tmp_path / "alone", g, lines, 8, 9)) == COMPRESSED


def test_later_sets_holding_the_copies_ids_add_nothing_and_a_rewind_to_a_copy_cuts_at_its_message(tmp_path):
    # masking or a resume writes the history again: the copies' ids are the kept messages'
    g = sid(48, "gm")
    lines = _compressed(g)
    again = lines[8]["$set"]["messages"] + [lines[9], lines[10]]
    more = [*lines, _set(*again), gm_user("u4", "and push", 5)]
    _, traces = _one_shot(tmp_path, more)
    assert _ids(traces) == [*COMPRESSED, "gm-u4-u0"]
    assert _ids(_synced(tmp_path, g, more, 8, 11)) == _ids(traces)
    # a rewind to the copy of the second ask removes that ask and all after it
    _, rewound = _one_shot(tmp_path, [*lines, {"$rewindTo": "k1"}, gm_user("u5", "start over", 6)], name="rw")
    assert _ids(rewound) == ["gm-e0-u0", "gm-u1-u0", "gm-m1-x0", "gm-m1-c0", "gm-m1-r0", "gm-u5-u0"]


@pytest.mark.parametrize("case", ["typed twice", "not the suffix", "coalesced"])
def test_copies_are_matched_in_order_as_the_suffix_of_what_was_read(tmp_path, case):
    u1, m1, r1, u2, m2, r2 = _conversation()
    again, ok = gm_user("u3", "run the tests", 3), gm_model("m3", "running them", 3)
    snapshot, ack = gm_user("s1", SNAPSHOT, 4), _ack("s2", 4)
    head = ["gm-u1-u0", "gm-m1-x0", "gm-m1-c0", "gm-m1-r0", "gm-u2-u0", "gm-m2-x0", "gm-m2-c0", "gm-m2-r0"]
    read, kept, expected = {
        # the same ask and answer again later: the copies are of the newest (u3, m3), not of u2, m2
        # (a rewind to the copy of the ask cuts at u3, the message it copies, not at u2)
        "typed twice": ([u1, m1, r1, u2, m2, r2, again, ok], [_copy(again, "k1"), _copy(ok, "k2")], head),
        # messages that copy older ones, not the newest: new messages, stored
        "not the suffix": ([u1, m1, r1, u2, m2, r2, gm_user("u3", "commit", 3), gm_model("m3", "done", 3)],
                           [_copy(u1, "k1")],
                           [*head, "gm-u3-u0", "gm-m3-x0", "gm-s1-u0", "gm-s2-x0", "gm-k1-u0"]),
        # Gemini CLI coalesces consecutive turns of one role (IDE context, then the ask): one copy of both
        "coalesced": ([u1, m1, r1, gm_user("i1", "Here is the user's editor context: app.py", 2), u2, m2, r2],
                      [{"id": "k1", "type": "user", "content": [{"text": "Here is the user's editor context: app.py"},
                                                                {"text": "run the tests"}]},
                       _copy(m2, "k2"), _copy(r2, "k3")],
                      [*head[:4], "gm-i1-u0", *head[4:], "gm-s1-u0", "gm-s2-x0"]),
    }[case]
    rewind = [{"$rewindTo": "k1"}] if case == "typed twice" else []
    _, traces = _one_shot(tmp_path, [gm_header(sid(49, "gm")), *read, _set(snapshot, ack, *kept), *rewind])
    assert _ids(traces) == expected


def test_the_acknowledgement_after_the_summary_is_the_harness_context_not_the_agents_note(tmp_path):
    _, traces = _one_shot(tmp_path, _compressed(sid(50, "gm")))
    ack = next(t for t in traces if t["id"] == "gm-s2-x0")
    assert (ack["trace_type"], ack.get("tags")) == ("assistant", ["context"])
    # the same words the model says elsewhere are its own
    u1, m1, *_ = _conversation()
    said = gm_model("m9", "Got it. Thanks for the additional context!", 1)
    _, own = _one_shot(tmp_path, [gm_header(sid(51, "gm")), u1, said], name="own")
    assert [t.get("tags") for t in own if t["trace_type"] == "assistant"] == [None]


def test_the_sync_carry_keeps_a_bounded_tail_of_signatures():
    from memcli.importers.gemini_cli import SIGNATURES_KEPT
    from memcli.ingest.pipeline import IngestResult
    session = IMPORTER.resume(IngestResult("a"), {"session": sid(52, "gm")})
    lines = [(n, gm_user(f"u{n}", f"ask {n}")) for n in range(SIGNATURES_KEPT + 50)]
    list(session.events(lines))
    carry = session.checkpoint()
    assert len(carry["tail"]) == SIGNATURES_KEPT and carry["tail"][-1][0] == f"u{SIGNATURES_KEPT + 49}"
    assert carry["live"] == [f"u{n}" for n in range(50, SIGNATURES_KEPT + 50)]   # Gemini CLI's order, as bounded
    # a carry of odd values is read as far as it is valid
    odd = IMPORTER.resume(IngestResult("a"), {"session": "s", "tail": [["x", ["user"]], 3, ["y", ["user", "", [], [], [], []]]],
                                              "copies": [["k", 1], ["k2", "y"]]})
    assert (list(odd.tail), odd.aliases) == (["y"], {"k2": "y"})


# ------------------------------------------------------------------ a re-recording (masking, truncation)
def _turn(*messages, output: str | None = None) -> tuple[str, list]:
    """One turn of the history Gemini CLI hands ``setHistory`` with no id (``getHistory()``:
    consecutive turns of one role coalesced): the messages' history parts, a tool response's
    output replaced by ``output`` (masking's preview, a truncation's tail)."""
    parts = []
    for message in messages:
        for part in _history(message)["content"]:
            if output is not None and "functionResponse" in part:
                part = {"functionResponse": dict(part["functionResponse"], response={"output": output})}
            parts.append(part)
    return ("user" if messages[0]["type"] == "user" else "gemini"), parts


def _rerecorded(prefix: str, *turns) -> list:
    """What ``GeminiChat.setHistory`` writes for turns without ids: for each, ``recordSyntheticMessage``
    appends a new record (a new id; a model turn with no thoughts, tokens or model) and
    ``updateMetadata`` a ``lastUpdated``; then ``updateMessagesFromHistory`` the list of those records."""
    lines, records = [], []
    for n, (kind, parts) in enumerate(turns):
        record = {"id": f"{prefix}{n}", "timestamp": f"2026-03-03T08:05:{n:02d}.000Z", "type": kind, "content": parts}
        if kind == "gemini":
            record.update(thoughts=[], tokens=None)
        records.append(record)
        lines += [record, {"$set": {"lastUpdated": f"2026-03-03T08:05:{n:02d}.001Z"}}]
    return [*lines, _set(*records)]


PLAIN = ["gm-e0-u0", "gm-u1-u0", "gm-m1-x0", "gm-m1-c0", "gm-m1-r0", "gm-u2-u0", "gm-m2-x0", "gm-m2-c0", "gm-m2-r0",
         "gm-u3-u0", "gm-m3-x0"]


@pytest.mark.parametrize("output", [MASKED, "[truncated] 2 passed"])
def test_a_history_recorded_again_under_new_ids_is_the_history_read_before(tmp_path, output):
    # tool-output masking and a truncation-only compression hand setHistory the whole history
    # with no ids: every message is recorded again; it is stored once, with the output first read
    g = sid(53, "gm")
    u1, m1, r1, u2, m2, r2 = _conversation()
    env = gm_user("e0", "This is the Gemini CLI. The project's files: ...", 0)
    run = _rerecorded("h", _turn(env, u1), _turn(m1), _turn(r1, u2, output=output), _turn(m2), _turn(r2, output=output))
    lines = [gm_header(g), _set(env), u1, m1, r1, u2, m2, r2, *run, gm_user("u3", "now commit", 4),
             gm_model("m3", "committed", 4)]
    result, traces = _one_shot(tmp_path, lines)
    assert _ids(traces) == PLAIN   # no second ask, answer or call
    assert [t["tool_result"] for t in traces if t["trace_type"] == "tool_result"] == ["# App", "2 passed"]
    assert result.skipped["copies of messages read before (re-recorded by masking or truncation)"] == 5
    # syncs before the run, inside it (read again from its start) and before its list store the same
    end = 8 + len(run)
    for cuts in [(8,), (8, 11), (8, end - 1), (9, end)]:
        assert _ids(_synced(tmp_path / "-".join(map(str, cuts)), g, lines, *cuts)) == PLAIN, cuts


def test_a_history_recorded_again_after_a_compression_follows_gemini_clis_order(tmp_path):
    # the history is [context, summary, "Got it", the kept messages, ...]: memory has the summary
    # after what it summarized, the copies follow Gemini CLI's order
    g = sid(54, "gm")
    lines = _compressed(g)
    env, u3, m3 = lines[8]["$set"]["messages"][0], lines[9], lines[10]
    u1, m1, r1, u2, m2, r2 = _conversation()
    snapshot, ack = lines[8]["$set"]["messages"][1:3]
    run = _rerecorded("h", _turn(env, snapshot), _turn(ack), _turn(u2), _turn(m2), _turn(r2, u3, output=MASKED),
                      _turn(m3))
    more = [*lines, *run, gm_user("u4", "and push", 5)]
    _, traces = _one_shot(tmp_path, more)
    assert _ids(traces) == [*COMPRESSED, "gm-u4-u0"]
    assert [t["id"] for t in traces if "compact_summary" in (t.get("tags") or ())] == ["gm-s1-u0"]
    assert _ids(_synced(tmp_path, g, more, 8, 11)) == _ids(traces)
    assert _ids(_synced(tmp_path / "mid", g, more, 11, 14)) == _ids(traces)


def test_an_ask_typed_again_stays_a_new_ask_around_a_re_recording(tmp_path):
    # the same ask typed again before the run (recorded just before it: a hook stopped the agent)
    # and after it: new messages; the run's copies are of the newest messages, the repeat included
    g = sid(55, "gm")
    u1, m1, r1, u2, m2, r2 = _conversation()
    env = gm_user("e0", "This is the Gemini CLI. The project's files: ...", 0)
    again = gm_user("u4", "run the tests", 3)
    run = _rerecorded("h", _turn(env, u1), _turn(m1), _turn(r1, u2, output=MASKED), _turn(m2),
                      _turn(r2, again, output=MASKED))
    lines = [gm_header(g), _set(env), u1, m1, r1, u2, m2, r2, again, *run, gm_user("u5", "run the tests", 4),
             gm_model("m5", "running them", 4)]
    _, traces = _one_shot(tmp_path, lines)
    assert _ids(traces) == [*PLAIN[:9], "gm-u4-u0", "gm-u5-u0", "gm-m5-x0"]
    assert [t["content"] for t in traces if t["trace_type"] == "user"][-3:] == ["run the tests"] * 3
    assert _ids(_synced(tmp_path, g, lines, 9)) == _ids(traces)
    # records with new ids ended by no list of them are new messages, whatever they say
    _, plain = _one_shot(tmp_path, [gm_header(g), _set(env), u1, m1, r1, *_rerecorded("h", _turn(env, u1))[:-1]],
                         name="plain")
    assert _ids(plain) == ["gm-e0-u0", "gm-u1-u0", "gm-m1-x0", "gm-m1-c0", "gm-m1-r0", "gm-h0-u0"]


def test_a_sync_checkpoint_after_every_line_does_not_sign_every_message_again(monkeypatch):
    # memcli sync takes a checkpoint after each line it reads: each message's signature is
    # computed once (per version), not once per line (a 1,000-turn session took half a minute)
    from memcli.importers import gemini_cli
    from memcli.ingest.pipeline import IngestResult
    signed = []
    real = gemini_cli._message_signature
    monkeypatch.setattr(gemini_cli, "_message_signature", lambda m: signed.append(m["id"]) or real(m))
    built, carry = [], gemini_cli._Session._carry   # nor is its carry (200 signatures) built once per line
    monkeypatch.setattr(gemini_cli._Session, "_carry", lambda self: built.append(1) or carry(self))
    session = IMPORTER.resume(IngestResult("a"), {"session": sid(56, "gm")})
    lines = [gm_header(sid(56, "gm"))]
    for n in range(300):
        call = gm_call(f"c{n}", output="ok")
        lines += [gm_user(f"u{n}", f"ask {n}", 1), {"$set": {"lastUpdated": "2026-03-03T09:00:00.000Z"}},
                  gm_model(f"m{n}", f"answer {n}", 1), gm_model(f"m{n}", f"answer {n}", 1, calls=[call])]

    def values():
        for n, value in enumerate(lines):
            yield n, value
            session.checkpoint()

    assert len([e for _, e in session.events(values()) if e["trace_type"] == "user"]) == 300
    assert len(signed) <= 3 * 300 and len(built) == 1   # at the end of the lines (no run held)
    assert [t[0] for t in session.checkpoint()["tail"]][-2:] == ["u299", "m299"]


def test_the_environment_gemini_cli_puts_first_is_context_not_an_ask(tmp_path):
    """Every Gemini CLI session begins with its environment (``<session_context>`` — the date,
    the OS, the folders —, a user turn of its own making, which it never lists as an ask): it was
    the session's first ask and turn."""
    session = sid(70)
    env = gm_user("env-1", "<session_context>\nThis is the Gemini CLI. Today's date is Tuesday.\n</session_context>")
    lines = [gm_header(session), _set(env), gm_user("u1", "Fix the readme"), gm_model("m1", "Done.", 1)]
    _, traces = _one_shot(tmp_path, lines)
    users = [t for t in traces if t["trace_type"] == "user"]
    assert [(t["content"][:18], t.get("tags")) for t in users] == [("<session_context>\n", ["context"]),
                                                                   ("Fix the readme", None)]
    assert {t["turn_id"] for t in traces} == {"turn_0001"}   # one turn: the ask's


def _long_session(rounds: int) -> list:
    """The environment context, then ``rounds`` asks each answered with a tool call, its response
    and a closing note: 1 + 4 * rounds messages."""
    messages = [gm_user("e0", "This is the Gemini CLI. The project's files: ...", 0)]
    for n in range(rounds):
        call = gm_call(f"c{n}", output=f"file {n}")
        messages += [gm_user(f"u{n}", f"ask {n}", n % 60), gm_model(f"m{n}", f"let me look at {n}", n % 60, calls=[call]),
                     _response(f"r{n}", call), gm_model(f"f{n}", f"done with {n}", n % 60)]
    return messages


def test_a_re_recording_of_a_history_longer_than_the_sync_carry_is_stored_once(tmp_path):
    # a sync reads on with the signatures of the newest SIGNATURES_KEPT messages only: masking's
    # copies of older ones cannot be matched from that carry, so the file is read again whole
    from memcli.importers.gemini_cli import SIGNATURES_KEPT
    g = sid(56, "gm")
    messages = _long_session(65)
    assert len(messages) > SIGNATURES_KEPT
    env, *rest = messages
    turns = [_turn(env, rest[0])]
    for m in rest[1:]:
        turns.append(_turn(m, output=MASKED) if m["id"].startswith("r") else _turn(m))
    run = _rerecorded("h", *turns)
    lines = [gm_header(g), _set(env), *rest, *run, gm_user("u99", "now commit", 5), gm_model("m99", "committed", 5)]
    _, traces = _one_shot(tmp_path, lines)
    assert len(_ids(traces)) == len(set(_ids(traces)))
    assert not any(t["id"].startswith("gm-h") for t in traces)
    before = 2 + len(rest)
    for cuts in [(before,), (before, before + 1), (before + 1, before + 41)]:   # before the run, inside it
        synced = _synced(tmp_path / "-".join(map(str, cuts)), g, lines, *cuts)
        assert _ids(synced) == _ids(traces), cuts
        calls = {t["tool_call_id"] for t in synced if t["trace_type"] == "tool_call"}
        assert calls == {t["tool_call_id"] for t in synced if t["trace_type"] == "tool_result"}   # none pending
        assert [t["tool_result"] for t in synced if t["trace_type"] == "tool_result"] == [f"file {n}" for n in range(65)]


def test_a_compression_keeping_more_than_the_sync_carry_is_stored_once(tmp_path):
    g = sid(57, "gm")
    env, *rest = _long_session(65)
    copies = [dict(_history(m), id=f"k{n}") for n, m in enumerate(rest[-240:])]   # more than SIGNATURES_KEPT
    lines = [gm_header(g), _set(env), *rest, _set(env, gm_user("s1", SNAPSHOT, 3), _ack("s2", 3), *copies),
             gm_user("u99", "go on", 5)]
    _, traces = _one_shot(tmp_path, lines)
    assert not any(t["id"].startswith("gm-k") for t in traces)
    assert _ids(_synced(tmp_path, g, lines, 2 + len(rest))) == _ids(traces)


def test_a_resumed_sessions_thoughts_are_stored_once(tmp_path):
    """On resume Gemini CLI writes each model message again with its thoughts rendered as
    ``thought`` parts of its content (``**Planning** look at the files first``) beside the
    ``thoughts`` records: each thought was stored twice."""
    session = sid(71)
    model = gm_model("m1", "Done.", 1, thoughts=True)
    again = dict(model, content=[{"text": "**Planning** look at the files first", "thought": True},
                                 {"text": "Done."}])
    lines = [gm_header(session), gm_user("u1", "Fix the readme"), model, _set(gm_user("u1", "Fix the readme"), again)]
    _, traces = _one_shot(tmp_path, lines)
    reasoning = [t for t in traces if "reasoning" in (t.get("tags") or ())]
    assert [t["content"] for t in reasoning] == ["Planning: look at the files first"], reasoning


def _eager_carry(session):
    """The carry as it stands, built at once (what checkpoint() gave after every line before)."""
    return None if not session.recognized or session._held() else session._carry()


def _kept_carry(session_id: str, lines: list, final: bool, eager: bool):
    """(line, carry) a sync keeps reading ``lines``: the last checkpoint given (or an eager one)."""
    from memcli.ingest.pipeline import IngestResult
    session = IMPORTER.resume(IngestResult("a"), {"session": session_id})
    session.final = final
    last = None

    def values():
        nonlocal last
        for n, value in enumerate(lines):
            yield n, value
            c = _eager_carry(session) if eager else session.checkpoint()
            last = (n, c) if c is not None else last
    list(session.events(values()))
    return last


def test_a_sync_keeps_the_carry_an_eager_checkpoint_gives_after_the_same_line():
    # a sync asks for a checkpoint after every line and keeps the last one given: the reader hands
    # out one carry and fills it only where it can be the last kept (before a run it holds starts,
    # at the end of the lines) — it must be the carry of the state after that same line, at every
    # cut of logs with re-recordings (held runs), compressions and more messages than the carry holds
    g = sid(58, "gm")
    u1, m1, r1, u2, m2, r2 = _conversation()
    env = gm_user("e0", "This is the Gemini CLI. The project's files: ...", 0)
    run = _rerecorded("h", _turn(env, u1), _turn(m1), _turn(r1, u2, output=MASKED), _turn(m2), _turn(r2, output=MASKED))
    masked = [_set(env), u1, m1, r1, u2, m2, r2, *run, gm_user("u3", "now commit", 4), gm_model("m3", "committed", 4)]
    long_env, *rest = _long_session(55)
    logs = {"masked": masked, "compressed": _compressed(g)[1:], "long": [_set(long_env), *rest, *run[:5]]}
    checked = held = 0
    for name, body in logs.items():
        n = len(body)   # every cut of the short logs; of the long one, its first, every 9th and its last lines
        cuts = range(n + 1) if n < 50 else sorted({*range(12), *range(0, n, 9), *range(n - 14, n + 1)})
        for cut in cuts:
            for final in (True, False):
                kept = {eager: _kept_carry(g, body[:cut], final, eager) for eager in (False, True)}
                assert kept[False] == kept[True], (name, cut, final)
                checked += 1
                held += kept[True] is not None and kept[True][0] < cut - 1
    assert checked > 2 * 60 and held > 0   # some cuts end inside a held run
