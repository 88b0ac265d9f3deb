"""Budget views: clip, expire, stub, drop turns and restore — lossless, with the way back named."""

from __future__ import annotations

import pytest

from memcli.errors import UsageError
from memcli.messages import Message, Text, ToolResult
from memcli.models import RawTrace
from memcli.snapshot.build import build_messages
from memcli.snapshot.views import (
    ExpirePolicy,
    ExpireRule,
    TokenMeter,
    apply_result_views,
    clip_result,
    fit_budget,
    parse_expire,
    stub_result,
    turn_blocks,
)


class WordCounter:
    """One token per word: budgets easy to reason about."""

    def count(self, text: str) -> int:
        return len(text.split())


def T(n, trace_type, content="", turn="turn_0001", **kw):
    return RawTrace(id=f"t{n}", ts=float(n), turn_id=turn, seq=n, trace_type=trace_type, content=content,
                    source_event="test", **kw)


def turns(n_turns, result_words=100, tool="read_file", ask_words=1):
    """n turns, each: an ask, one call, a result of ``result_words`` words, a reply."""
    traces = []
    for t in range(1, n_turns + 1):
        turn = f"turn_{t:04d}"
        base = 10 * t
        traces += [T(base, "user", f"ask {t}" + " please" * (ask_words - 1), turn=turn),
                   T(base + 1, "tool_call", turn=turn, tool_call_id=f"c{t}", tool_name=tool, tool_args={}),
                   T(base + 2, "tool_result", turn=turn, tool_call_id=f"c{t}", tool_name=tool,
                     tool_result=" ".join(f"w{t}" for _ in range(result_words))),
                   T(base + 3, "assistant", f"reply {t}", turn=turn)]
    return list(build_messages(traces))


def results(messages):
    return [(r.call_id, r.view) for m in messages for r in m.results]


def R(text, trace_id="rt_1", **kw):
    return ToolResult("c1", "read_file", kw.pop("status", "success"), text, trace_id=trace_id,
                      source_call_id="c1", full_chars=len(text), **kw)


# --------------------------------------------------------------------------- parsing

@pytest.mark.parametrize("spec,rule", [
    ("read_file=3", ExpireRule("read_file", 3, None)),
    ("read_file=3:remove", ExpireRule("read_file", 3, None)),
    ("*=10:clip=200", ExpireRule("*", 10, 200)),
    (" web.search=0:clip=0 ", ExpireRule("web.search", 0, 0)),
])
def test_parse_expire(spec, rule):
    assert parse_expire(spec) == rule


@pytest.mark.parametrize("spec", ["read_file", "read_file=x", "=3", "read_file=3:clip", "read_file=3:drop",
                                  "read_file=-1", "read_file=3:clip=-5"])
def test_parse_expire_rejects_malformed_rules_with_a_usage_error(spec):
    with pytest.raises(UsageError) as exc:
        parse_expire(spec)
    assert exc.value.exit_code == 2 and "TOOL=TURNS[:clip=N|:remove|:summary]" in exc.value.message


def test_a_named_tool_beats_star_and_the_last_rule_for_a_tool_wins():
    policy = ExpirePolicy(["*=5", "grep=1:clip=10", "grep=2"])
    assert policy.rule_for("grep") == ExpireRule("grep", 2, None)
    assert policy.rule_for("read_file") == ExpireRule("*", 5, None)
    assert ExpirePolicy(["grep=1"]).rule_for("read_file") is None


# --------------------------------------------------------------------------- result forms

def test_clip_keeps_the_head_and_the_tail_around_a_note_naming_the_trace():
    text = "".join(f"{i % 10}" for i in range(100))
    clipped = clip_result(R(text, "rt_9"), 20, "coder")
    assert clipped.text == (text[:15] + "\n[... 80 of 100 characters clipped; `memcli get coder rt_9` shows the full "
                            "tool result ...]\n" + text[-5:])
    assert clipped.view == "clipped" and clipped.full_chars == 100
    assert clip_result(R(text), 100, "coder") is not None and clip_result(R(text), 100, "coder").view is None


def test_stub_names_the_trace_and_is_not_used_when_it_would_not_be_shorter():
    long = R("x" * 500, "rt_7", error=True)
    assert stub_result(long, "a", reason="expired (4 turns old)", view="expired").text == \
        "[tool error expired (4 turns old): read_file, 500 characters; `memcli get a rt_7` shows it]"
    short = R("ok")
    assert stub_result(short, "a", reason="expired", view="expired") is short
    pending = R("[no result yet]", status="pending")
    assert stub_result(pending, "a", reason="x", view="stubbed") is pending


# --------------------------------------------------------------------------- clip and expire

def test_expire_acts_on_results_older_than_turns_only_and_keeps_the_calls():
    messages = turns(4)
    out, counts = apply_result_views(messages, agent_id="a", max_chars=None, expire=ExpirePolicy(["read_file=1"]))
    assert results(out) == [("c1", "expired"), ("c2", "expired"), ("c3", None), ("c4", None)]
    assert [c.id for m in out for c in m.tool_calls] == ["c1", "c2", "c3", "c4"]
    assert counts.expired_removed == 2
    assert out[2].results[0].text == ("[tool result expired (3 turns old): read_file, 299 characters; "
                                      "`memcli get a t12` shows it]")
    assert messages[2].results[0].view is None  # the input is not changed


def test_expire_clip_and_max_chars_together():
    messages = turns(3, result_words=50)
    out, counts = apply_result_views(messages, agent_id="a", max_chars=120,
                                     expire=ExpirePolicy(["*=0:clip=30", "grep=0"]))
    assert results(out) == [("c1", "expired"), ("c2", "expired"), ("c3", "clipped")]
    assert (counts.expired_clipped, counts.clipped) == (2, 1)
    assert out[-2].results[0].text.count("characters clipped") == 1


def test_turn_blocks_group_consecutive_messages_of_a_turn():
    memory = Message("user", "memory", [Text("[MEMORY:SEMANTIC]\n- x")])
    messages = [memory] + turns(2)
    assert [(b.turn_id, b.start, b.end) for b in turn_blocks(messages)] == [("turn_0001", 1, 5), ("turn_0002", 5, 9)]


# --------------------------------------------------------------------------- budget

def meter():
    return TokenMeter(WordCounter())


def test_a_payload_that_fits_is_not_changed():
    messages = turns(3)
    out, steps = fit_budget("sys", messages, 10_000, meter(), "a")
    assert out == messages and steps == []


def test_older_results_are_stubbed_oldest_first_and_the_newest_turn_is_spared():
    messages = turns(4)
    m = meter()
    full = m.total("sys", messages)
    out, steps = fit_budget("sys", messages, full - 150, m, "a")
    assert results(out) == [("c1", "stubbed"), ("c2", "stubbed"), ("c3", None), ("c4", None)]
    assert [s.action for s in steps] == ["stub"]
    assert steps[0].before == full and steps[0].after == m.total("sys", out) <= full - 150


def test_oldest_turns_are_dropped_whole_then_stubbed_results_that_fit_again_are_restored():
    memory = Message("user", "memory", [Text("[MEMORY:SEMANTIC]\n- the user likes tea")])
    messages = [memory] + turns(5, ask_words=200)
    m = meter()
    full_turn = m.total("", turns(1, ask_words=200)) - 3
    budget = 3 + m.system("sys") + m.message(memory) + 2 * full_turn + 5  # room for two whole turns
    out, steps = fit_budget("sys", messages, budget, m, "a")
    assert [s.action for s in steps] == ["stub", "drop", "restore"]
    assert out[0] is memory
    assert [msg.turn_id for msg in out[1:]] == ["turn_0004"] * 4 + ["turn_0005"] * 4
    assert results(out) == [("c4", None), ("c5", None)]  # turn 4's stub was restored: it fits again
    assert m.total("sys", out) <= budget
    assert (steps[0].count, steps[1].count, steps[2].count) == (4, 3, 1)
    assert steps[0].before == m.total("sys", messages) and steps[-1].after == m.total("sys", out)


def test_dropping_keeps_as_many_turns_as_fit_with_the_oldest_kept_results_stubbed():
    messages = turns(5)
    m = meter()
    budget = m.total("", messages) - 300
    out, _ = fit_budget("", messages, budget, m, "a")
    views = [view for _, view in results(out)]
    assert views[-1] is None and "stubbed" in views
    # the stubbed results are always the oldest ones kept
    assert views == sorted(views, key=lambda v: v is None)


def test_a_budget_the_newest_turn_cannot_meet_stubs_it_and_says_so():
    messages = turns(2, result_words=400)
    out, steps = fit_budget("sys", messages, 30, meter(), "a")
    assert [s.action for s in steps] == ["stub", "drop", "stub-newest", "over"]
    assert [msg.turn_id for msg in out] == ["turn_0002"] * 4
    assert results(out) == [("c2", "stubbed")]
    assert "over the budget of 30" in steps[-1].describe()


def test_calls_and_results_stay_together_whatever_is_dropped():
    messages = turns(6)
    m = meter()
    for budget in range(20, m.total("", messages) + 10, 37):
        out, _ = fit_budget("", messages, budget, m, "a")
        for i, msg in enumerate(out):
            if msg.tool_calls:
                assert out[i + 1].role == "tool"
                assert [r.call_id for r in out[i + 1].results] == [c.id for c in msg.tool_calls]
            if msg.role == "tool":
                assert out[i - 1].tool_calls


def test_expire_matches_the_tool_name_as_stored_even_when_it_is_renamed_for_providers():
    messages = turns(3, tool="mcp.files/read")
    assert messages[1].tool_calls[0].name == "mcp_files_read"
    out, counts = apply_result_views(messages, agent_id="a", max_chars=None, expire=ExpirePolicy(["mcp.files/read=0"]))
    assert results(out) == [("c1", "expired"), ("c2", "expired"), ("c3", None)]
    assert out[2].results[0].text.startswith("[tool result expired (2 turns old): mcp.files/read, ")
