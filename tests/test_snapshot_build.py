"""Canonical messages from traces: pairing in render order, placeholders, orphans, ids, streaming."""

from __future__ import annotations

from memcli.messages import LATE, ORPHAN, PENDING, PENDING_TEXT, Media
from memcli.models import RawTrace
from memcli.snapshot.build import BuildStats, CallIds, MessageBuilder, build_messages, result_text, safe_name


def T(n, trace_type, content="", turn="turn_0001", **kw):
    return RawTrace(id=f"t{n}", ts=float(n), turn_id=turn, seq=n, trace_type=trace_type, content=content,
                    source_event="test", **kw)


def call(n, cid, name="sh", turn="turn_0001", **kw):
    return T(n, "tool_call", turn=turn, tool_call_id=cid, tool_name=name, tool_args={"n": n}, **kw)


def res(n, cid, result="ok", turn="turn_0001", **kw):
    return T(n, "tool_result", turn=turn, tool_call_id=cid, tool_result=result, **kw)


def shape(messages):
    """(role, kind, texts, call ids, result (call id, status, text)) per message."""
    out = []
    for m in messages:
        out.append((m.role, m.kind, m.text() if m.kind not in (ORPHAN, LATE) else m.results[0].text,
                    [c.id for c in m.tool_calls], [(r.call_id, r.status, r.text) for r in m.results]))
    return out


def test_parallel_calls_are_one_message_and_results_follow_in_call_order():
    traces = [T(1, "user", "go"), T(2, "assistant", "reading"), call(3, "a"), call(4, "b"),
              res(5, "b", "B"), res(6, "a", "A"), T(7, "assistant", "done")]
    assert shape(build_messages(traces)) == [
        ("user", "ask", "go", [], []),
        ("assistant", "reply", "reading", ["a", "b"], []),
        ("tool", "results", "", [], [("a", "success", "A"), ("b", "success", "B")]),
        ("assistant", "reply", "done", [], []),
    ]


def test_a_result_stored_after_the_next_user_message_is_rendered_right_after_its_call():
    traces = [T(1, "user", "one"), call(2, "a"), T(3, "user", "two", turn="turn_0002"),
              res(4, "a", "late but mine"), T(5, "assistant", "ok", turn="turn_0002")]
    assert shape(build_messages(traces)) == [
        ("user", "ask", "one", [], []),
        ("assistant", "reply", "", ["a"], []),
        ("tool", "results", "", [], [("a", "success", "late but mine")]),
        ("user", "ask", "two", [], []),
        ("assistant", "reply", "ok", [], []),
    ]


def test_pending_calls_get_a_placeholder_and_orphans_become_notes():
    stats = BuildStats()
    traces = [T(1, "user", "q"), call(2, "a"), call(3, "b"), res(4, "a", "A"), res(5, "ghost", "boo", tool_name="x")]
    messages = list(build_messages(traces, stats=stats))
    assert shape(messages) == [
        ("user", "ask", "q", [], []),
        ("assistant", "reply", "", ["a", "b"], []),
        ("tool", "results", "", [], [("a", "success", "A"), ("b", PENDING, PENDING_TEXT)]),
        ("user", ORPHAN, "boo", [], [("", ORPHAN, "boo")]),
    ]
    assert messages[-1].text().startswith("[tool result without a matching call in this conversation (x, "
                                          "call id ghost, trace t5)]\nboo")
    assert (stats.pending, stats.orphans, stats.calls, stats.results) == (1, 1, 2, 1)


def test_reused_ids_pair_first_in_first_out_and_are_made_unique():
    stats = BuildStats()
    traces = [T(1, "user", "q"), call(2, "x", "a"), res(3, "x", "for a"), T(4, "assistant", "next"),
              call(5, "x", "b"), call(6, "x", "c"), res(7, "x", "for b"), res(8, "x", "for c")]
    messages = list(build_messages(traces, stats=stats))
    assert [(m.text(), [c.id for c in m.tool_calls], [(r.call_id, r.text) for r in m.results])
            for m in messages[1:]] == [
        ("", ["x"], []), ("", [], [("x", "for a")]),
        ("next", ["x_2", "x_3"], []), ("", [], [("x_2", "for b"), ("x_3", "for c")])]
    assert stats.ids_renamed == 2 and stats.id_examples == [("x", "x_2"), ("x", "x_3")]


def test_call_ids_and_names_are_made_acceptable_to_every_provider():
    ids = CallIds()
    assert ids.assign("call_abc") == "call_abc"
    assert ids.assign("fc.1:tool/x") == "fc_1_tool_x"
    long_id = "toolu_" + "z" * 60
    short = ids.assign(long_id)
    assert len(short) == 40 and short.startswith("toolu_zzz") and short == CallIds().assign(long_id)
    assert ids.assign("") .startswith("call_")
    assert ids.assign("fc_1_tool_x") == "fc_1_tool_x_2"  # a clean id that collides with a cleaned one
    assert safe_name("read_file") == "read_file"
    assert safe_name("mcp.server/read") == "mcp_server_read"
    assert safe_name("1password") == "_1password"
    assert safe_name(None) == "unknown_tool"
    assert len(safe_name("n" * 100)) == 64


def test_the_usual_id_and_result_taken_first_follow_the_general_rules():
    ids = CallIds()   # a safe id used before is renamed, and so is the name given to its rename
    assert [ids.assign(i) for i in ("c1", "c1", "c1_2", "c2")] == ["c1", "c1_2", "c1_2_2", "c2"]
    # a result with an empty error is the result alone; an empty result is still the result
    assert result_text(T(1, "tool_result", "content", tool_error="", tool_result={"a": 1})) == '{"a":1}'
    assert result_text(T(1, "tool_result", "content", tool_error="", tool_result="")) == ""
    assert result_text(T(1, "tool_result", "content", tool_error="", tool_result=None)) == "content"


def test_id_capacity_bounds_memory_and_forgets_the_oldest():
    ids = CallIds(capacity=2)
    assert [ids.assign(i) for i in ("a", "b", "a", "c", "a")] == ["a", "b", "a_2", "c", "a"]


def test_lookahead_gives_up_on_a_late_result_which_then_becomes_a_late_note():
    traces = [T(1, "user", "q"), call(2, "a"), T(3, "user", "r", turn="turn_0002"),
              T(4, "assistant", "s", turn="turn_0002"), T(5, "assistant", "t", turn="turn_0002"),
              res(6, "a", "finally")]
    messages = list(build_messages(traces, lookahead=1))
    assert shape(messages) == [
        ("user", "ask", "q", [], []),
        ("assistant", "reply", "", ["a"], []),
        ("tool", "results", "", [], [("a", PENDING, PENDING_TEXT)]),
        ("user", "ask", "r", [], []),
        ("assistant", "reply", "s\n\nt", [], []),
        ("user", LATE, "finally", [], [("", LATE, "finally")]),
    ]
    assert messages[-1].text().startswith("[tool result that arrived after its call was shown as unanswered")
    # unbounded lookahead waits for it
    assert shape(build_messages(traces))[2] == ("tool", "results", "", [], [("a", "success", "finally")])


def test_the_builder_streams_messages_as_soon_as_they_are_final():
    builder = MessageBuilder()
    assert [m.role for m in builder.feed(T(1, "user", "q"))] == ["user"]
    assert builder.feed(T(2, "assistant", "a")) == []     # more text or calls may join it
    assert builder.feed(call(3, "c")) == []
    # the assistant message is final; its results and what follows wait for the unanswered call
    assert [m.role for m in builder.feed(T(4, "user", "r", turn="turn_0002"))] == ["assistant"]
    assert [m.role for m in builder.feed(res(5, "c"))] == ["tool", "user"]
    assert builder.finish() == []


def test_reasoning_sidechain_context_and_instructions():
    stats = BuildStats()
    traces = [T(1, "user", "be brief", tags=["system"]), T(2, "user", "dev note", tags=["developer"]),
              T(3, "user", "env", tags=["context"]), T(4, "user", "summary so far", tags=["compact_summary"]),
              T(5, "user", "ask"), T(6, "assistant", "thinking", tags=["reasoning"]),
              T(7, "assistant", "sub", tags=["sidechain"]), call(8, "s", tags=["sidechain"]),
              res(9, "s", tags=["sidechain"]), T(10, "assistant", "answer")]
    assert [(m.role, m.kind, m.text()) for m in build_messages(traces, stats=stats)] == [
        ("system", "system", "be brief"), ("system", "developer", "dev note"), ("user", "context", "env"),
        ("user", "context", "summary so far"), ("user", "ask", "ask"), ("assistant", "reply", "answer")]
    assert (stats.reasoning_omitted, stats.sidechain_omitted) == (1, 3)
    shown = list(build_messages(traces, include_reasoning=True, include_sidechain=True))
    assert [(m.role, m.kind) for m in shown][5:] == [
        ("assistant", "reasoning"), ("assistant", "reply"), ("tool", "results"), ("assistant", "reply")]


def test_empty_messages_are_dropped_and_assistant_text_after_calls_starts_a_new_message():
    traces = [T(1, "user", "  "), T(2, "user", "q"), T(3, "assistant", ""), call(4, "a"), T(5, "assistant", "x"),
              res(6, "a")]
    assert [(m.role, m.text(), [c.id for c in m.tool_calls]) for m in build_messages(traces)] == [
        ("user", "q", []), ("assistant", "", ["a"]), ("tool", "", []), ("assistant", "x", [])]


def test_result_text_media_and_arguments():
    assert result_text(T(1, "tool_result", tool_result={"a": [1, "é"]})) == '{"a":[1,"é"]}'
    assert result_text(T(1, "tool_result", tool_error="boom", tool_result="partial")) == "boom\npartial"
    assert result_text(T(1, "tool_result", "from content")) == "from content"
    assert result_text(T(1, "tool_result", tool_result_ref="blob://9")) == "[result stored at blob://9]"
    traces = [T(1, "user", "look", media={"images": ["https://x/a.png"], "audio": ["data:audio/wav;base64,AA=="]}),
              T(2, "tool_call", tool_call_id="c", tool_name="t", tool_args=None),
              T(3, "tool_call", tool_call_id="d", tool_name="t", tool_args='{"k": 1}')]
    user, reply, _ = list(build_messages(traces))
    assert user.media() == [Media("image", "https://x/a.png"), Media("audio", "data:audio/wav;base64,AA==")]
    assert [c.arguments for c in reply.tool_calls] == [{}, {"k": 1}]


def test_media_types_and_data():
    png = Media("image", "data:image/png;base64,iVBO")
    assert (png.mime_type, png.base64_data(), png.is_data) == ("image/png", "iVBO", True)
    assert Media("image", "https://x/y.JPG?s=1").mime_type == "image/jpeg"
    assert Media("video", "gs://bucket/clip").mime_type == "video/mp4"
    assert Media("image", "data:image/svg+xml,<svg/>").base64_data() is None


def test_a_placeholder_instead_of_base64_is_no_data_any_api_can_read():
    # Claude Code transcripts shared publicly redact images as "iVBOR…[redacted-base64]"
    assert Media("image", "data:image/png;base64,iVBORw0KGgoAAAA[redacted-base64]").base64_data() is None
    assert Media("image", "data:image/png;base64,iVBORw0KGgo=").base64_data() == "iVBORw0KGgo="


def test_a_call_made_after_a_result_is_the_next_step_not_a_parallel_call():
    traces = [T(1, "user", "q"), call(2, "a"), res(3, "a", "A"), call(4, "b"), res(5, "b", "B"),
              call(6, "c"), call(7, "d"), res(8, "d", "D"), res(9, "c", "C")]
    assert [([c.id for c in m.tool_calls], [r.call_id for r in m.results]) for m in build_messages(traces)][1:] == [
        (["a"], []), ([], ["a"]), (["b"], []), ([], ["b"]), (["c", "d"], []), ([], ["c", "d"])]


def test_with_a_lookahead_a_never_answered_call_holds_back_a_bounded_number_of_messages():
    builder = MessageBuilder(lookahead=50)
    emitted = len(builder.feed(T(0, "user", "q"))) + len(builder.feed(call(1, "never")))
    for n in range(2, 3000):
        kind = "user" if n % 2 else "assistant"
        emitted += len(builder.feed(T(n, kind, f"m{n}", turn=f"turn_{n // 2 + 1:04d}")))
        assert n - emitted <= 55  # what is fed comes out, at most ~lookahead traces later
    rest = builder.finish()
    # one message per trace, plus the tool message holding the placeholder
    assert builder.stats.pending == 1 and emitted + len(rest) == 3001


def test_unordered_build_streams_past_an_unanswered_call_and_gives_the_same_messages():
    """Counting (the one token count, the compaction plan) builds with ordered=False: the
    messages behind a call that is still waiting come at once instead of being held to the end;
    the call's message comes when its result does, or last with its placeholder."""
    traces = [T(1, "user", "ask"), call(2, "never"), call(3, "late", turn="turn_0001")]
    n = 4
    for k in range(2, 40):
        turn = f"turn_{k:04d}"
        traces += [T(n, "user", f"ask {k}", turn=turn), call(n + 1, f"c{k}", turn=turn), res(n + 2, f"c{k}", turn=turn),
                   T(n + 3, "assistant", f"answer {k}", turn=turn)]
        n += 4
    traces.append(res(n, "late", "finally"))     # answers call 3 at the very end
    read = []

    def stream():
        for trace in traces:
            read.append(trace.id)
            yield trace

    unordered = build_messages(stream(), ordered=False)
    first = [next(unordered) for _ in range(4)]
    assert len(read) < 12                       # not held until the end
    assert [m.role for m in first] == ["user", "assistant", "user", "assistant"]
    rest = list(unordered)
    ordered = list(build_messages(traces))

    def key(m):
        return (m.role, m.kind, m.turn_id, tuple(m.trace_ids), m.text(),
                tuple((r.status, r.text) for r in m.results), tuple(c.id for c in m.tool_calls))

    assert sorted(map(key, first + rest)) == sorted(map(key, ordered))
    # the waiting call's message comes when its last result does (after every other turn's
    # messages): one placeholder, one result
    tool = rest[-2]
    assert tool.role == "tool" and [r.status for r in tool.results] == [PENDING, "success"]
    assert rest[-1].text() == "answer 39"   # the last reply, closed by the end of the stream


def test_the_builders_usual_cases_taken_inline_follow_the_general_rules(monkeypatch):
    """The builder keeps a safe new call id, renders a JSON result and remembers tool names
    without calling CallIds.assign, json_text or safe_name each time: the same results."""
    import memcli.snapshot.build as build
    from memcli.messages import ToolResult, json_text

    stored = ["c1", "c1", "a.b", "a_b", "", "z" * 40, "z" * 41, "c1_2", "c2"]
    for capacity in (None, 2):
        traces = [T(0, "user", "q")] + [call(n, cid) for n, cid in enumerate(stored, 1)]
        stats = BuildStats()
        got = [c.id for m in build_messages(traces, id_capacity=capacity, stats=stats) for c in m.tool_calls]
        ids = CallIds(capacity)
        expected = [ids.assign(cid, f"t{n}") for n, cid in enumerate(stored, 1)]
        assert got == expected
        assert stats.ids_renamed == sum(a != b for a, b in zip(got, stored))

    values = [{1: "int key"}, {"big": 2 ** 70}, {"a": [1, "é"]}, ["x"], 5, True, "", "text", None]
    traces = [T(0, "user", "q")]
    for n, value in enumerate(values, 1):
        traces += [call(2 * n, f"r{n}"), res(2 * n + 1, f"r{n}", value, content="said")]
    results = [r for m in build_messages(traces) for r in m.results]
    assert [r.text for r in results] == [result_text(t) for t in traces if t.trace_type == "tool_result"]
    assert results[0].text == json_text({1: "int key"}) == '{"1":"int key"}'
    assert results[1].text == '{"big":1180591620717411303424}'

    monkeypatch.setattr(build, "_NAME_MEMO", 2)   # names beyond the memo are cleaned each time
    names = ["read", "a.b", "9x", "a.b", None, "read"]
    traces = [T(0, "user", "q")] + [call(n, f"n{n}", name) for n, name in enumerate(names, 1)]
    assert [c.name for m in build_messages(traces) for c in m.tool_calls] == [safe_name(n) for n in names]

    # "a result missing" is read as not all(results): a result is always true, whatever it holds
    assert all([ToolResult("", "", "", "")]) and not all([ToolResult("", "", "", ""), None])


def test_reused_ids_pair_by_the_one_rule_with_one_call_or_several_open():
    """An id with one unanswered call is kept bare, with several in a list: either way a result
    takes the call pop_open_call picks (its own turn's oldest, else the oldest)."""
    from memcli.pairing import pop_open_call

    t1, t2 = "turn_0001", "turn_0002"
    traces = [T(1, "user", "q"), call(2, "x", turn=t1), T(3, "user", "r", turn=t2), call(4, "x", turn=t2),
              call(5, "x", turn=t2), res(6, "x", "R6", turn=t2), res(7, "x", "R7", turn=t1),
              res(8, "x", "R8", turn=t1), res(9, "x", "orphan", turn=t2), call(10, "x", turn=t2),
              res(11, "x", "R11", turn=t2)]
    open_calls: dict = {}
    expected = {}
    for t in traces:
        if t.trace_type == "tool_call":
            open_calls.setdefault(t.tool_call_id, []).append((t.id, t.turn_id))
        elif t.trace_type == "tool_result":
            entry = pop_open_call(open_calls, t.tool_call_id, t.turn_id, lambda e: e[1])
            expected[t.tool_result] = entry[0] if entry else None
    got = {}
    messages = list(build_messages(traces))
    calls = {c.id: c.trace_id for m in messages for c in m.tool_calls}
    for m in messages:
        for r in m.results:
            got[r.text] = calls.get(r.call_id)
    assert got == expected == {"R6": "t4", "R7": "t2", "R8": "t5", "orphan": None, "R11": "t10"}


def test_a_left_out_trace_counts_toward_the_lookahead_and_lets_held_messages_go():
    traces = [T(1, "user", "q"), call(2, "a"), T(3, "user", "r", turn="turn_0002"),
              T(4, "assistant", "sub", turn="turn_0002", tags=["sidechain"]),
              T(5, "assistant", "sub", turn="turn_0002", tags=["sidechain"]), res(6, "a", "finally")]
    assert [(m.role, m.kind, [r.status for r in m.results]) for m in build_messages(traces, lookahead=1)] == [
        ("user", "ask", []), ("assistant", "reply", []), ("tool", "results", [PENDING]), ("user", "ask", []),
        ("user", LATE, [LATE])]
    builder = MessageBuilder(lookahead=1)
    fed = [[m.role for m in builder.feed(t)] for t in traces]
    assert fed == [["user"], [], ["assistant"], [], ["tool", "user"], ["user"]]


def test_the_makers_from_every_field_make_what_the_dataclass_makes():
    """The builder makes its messages with new_message & co (no class call, no default checks):
    each takes every field of its dataclass, in order, and gives the object the dataclass gives."""
    import dataclasses
    import inspect

    from memcli.messages import (
        Message,
        Text,
        ToolCall,
        ToolResult,
        new_message,
        new_text,
        new_tool_call,
        new_tool_result,
    )

    for cls, new in ((Message, new_message), (Text, new_text), (ToolCall, new_tool_call),
                     (ToolResult, new_tool_result)):
        names = [f.name for f in dataclasses.fields(cls)]
        assert list(inspect.signature(new).parameters) == names
        values = [[n] if n in ("parts", "tool_calls", "results", "trace_ids", "media") else f"v_{n}" for n in names]
        made, expected = new(*values), cls(*values)
        assert type(made) is cls and made == expected and repr(made) == repr(expected)
        assert all(getattr(made, n) is v for n, v in zip(names, values))


def test_a_message_final_at_once_goes_out_behind_whatever_waits_ahead_of_it():
    """Nothing queued ahead: a closed message goes out with the trace that closed it; behind a call
    still waiting it waits too (ordered) or goes out while the call's message is set aside
    (unordered): that message comes with its result, or at the end before the open message."""
    t2, t3 = "turn_0002", "turn_0003"
    traces = [T(1, "user", "q"), call(2, "a"), T(3, "user", "r", turn=t2), T(4, "assistant", "s", turn=t2),
              T(5, "user", "u", turn=t3), res(6, "a", "A"), call(7, "b", turn=t3), res(8, "b", "B", turn=t3),
              call(9, "never", turn=t3), T(10, "assistant", "end", turn=t3)]
    ordered, unordered = MessageBuilder(), MessageBuilder(ordered=False)
    got = {b: [[(m.role, m.text()) for m in b.feed(t)] for t in traces] + [[(m.role, m.text()) for m in b.finish()]]
           for b in (ordered, unordered)}
    assert got[ordered] == [
        [("user", "q")], [], [("assistant", "")], [], [], [("tool", ""), ("user", "r"), ("assistant", "s"), ("user", "u")],
        [], [("assistant", ""), ("tool", "")], [], [("assistant", "")],
        [("tool", ""), ("assistant", "end")]]
    assert got[unordered] == [
        [("user", "q")], [], [("assistant", ""), ("user", "r")], [], [("assistant", "s"), ("user", "u")], [("tool", "")],
        [], [("assistant", ""), ("tool", "")], [], [("assistant", "")],
        [("tool", ""), ("assistant", "end")]]
