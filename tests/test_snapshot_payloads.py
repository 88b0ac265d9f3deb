"""Every rendered payload is one its provider accepts (official SDK request types + ordering rules):
on the committed sample store under every option, and on random transcripts (hypothesis)."""

from __future__ import annotations

import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memcli.models import RawTrace
from memcli.renderers import RENDERERS, get_renderer
from memcli.snapshot import SnapshotOptions, take_snapshot
from memcli.snapshot.build import build_messages
from memcli.snapshot.views import ExpirePolicy, TokenMeter, apply_result_views, fit_budget
from memcli.store.state import TurnState
from memcli.tokens import TokenCounter
from tests.helpers import REPO
from tests.snapshot_validation import check_payload

OPTIONS = [
    {},
    {"tail_turns": 4},
    {"tail_turns": 1},
    {"max_tokens": 8000},
    {"max_tokens": 1200, "max_tool_result_chars": 40},
    {"tail_turns": 6, "max_tokens": 600},
    {"expire": ("*=2:remove", "read_file=0:clip=20")},
    {"model": "gemini-2.0-flash"},
]


@pytest.fixture(scope="module")
def sample_dir(tmp_path_factory):
    target = tmp_path_factory.mktemp("sample") / "memory"
    shutil.copytree(REPO / "sample_memory", target)
    return target


@pytest.mark.parametrize("agent", ["coder", "support"])
@pytest.mark.parametrize("provider", RENDERERS)
def test_sample_store_payloads_are_accepted(sample_dir, agent, provider):
    for options in OPTIONS:
        snap = take_snapshot(sample_dir, agent, SnapshotOptions(provider=provider, **options))
        check_payload(provider, snap.payload)
        if options.get("max_tokens") and not any(s.action == "over" for s in snap.steps):
            assert snap.tokens <= options["max_tokens"]


def test_sample_coder_keeps_parallel_calls_reused_ids_errors_and_the_pending_call(sample_dir):
    payload = take_snapshot(sample_dir, "coder", SnapshotOptions(provider="openai-chat")).payload
    messages = payload["messages"]
    parallel = [m for m in messages if len(m.get("tool_calls") or ()) >= 2]
    assert parallel
    ids = [c["id"] for m in messages for c in m.get("tool_calls") or ()]
    assert "call_reused" in ids and "call_reused_2" in ids and len(ids) == len(set(ids))
    assert messages[-1] == {"role": "tool", "tool_call_id": "call_pending", "content": (
        "[no result yet: this call was still running, or was never answered, when the snapshot was taken]")}
    assert sum("1 failed, 11 passed" in m["content"] for m in messages if m["role"] == "tool") == 4  # the errors


# --------------------------------------------------------------------------- random transcripts

TEXT = st.sampled_from(["", " ", "hi", "line one\nline two", "é ☃ 😀", "{\"json\": true}", "x" * 300])
IDS = st.sampled_from(["c1", "c2", "c1", "fc.9:z", "toolu_" + "q" * 50, "call 7"])
NAMES = st.sampled_from(["read_file", "mcp.server/tool", "9lives", "shell"])
MEDIA = st.sampled_from([
    None, {"images": ["https://example.com/a.png"]}, {"images": ["data:image/png;base64,iVBORw0KGgo="]},
    {"images": ["data:image/bmp;base64,Qk0="]}, {"audio": ["data:audio/wav;base64,UklGRg=="]},
    {"video": ["https://example.com/v.mp4"]}, {"images": ["file:///tmp/x.png"]}])
TAGS = st.sampled_from([[], [], [], ["system"], ["developer"], ["context"], ["compact_summary"], ["reasoning"],
                        ["sidechain"]])


@st.composite
def events(draw):
    kind = draw(st.sampled_from(["user", "user", "assistant", "assistant", "tool_call", "tool_call", "tool_result",
                                 "tool_result"]))
    event = {"trace_type": kind, "content": draw(TEXT)}
    if kind in ("tool_call", "tool_result"):
        event["tool_call_id"] = draw(IDS)
        event["tool_name"] = draw(NAMES)
    if kind == "tool_call":
        event["tool_args"] = draw(st.sampled_from([{}, {"path": "a.py"}, {"n": [1, 2, {"deep": None}]}]))
        event["content"] = ""
    if kind == "tool_result":
        if draw(st.booleans()):
            event["tool_error"] = draw(TEXT) or "error"
        else:
            event["tool_result"] = draw(st.one_of(TEXT, st.just({"rows": [1, 2]}), st.none()))
    if kind in ("user", "assistant"):
        event["tags"] = draw(TAGS)
    media = draw(MEDIA)
    if media and kind != "tool_call":
        event["media"] = media
    return event


def linked(raw_events):
    """Traces as ingest would store them: the real linker assigns turns and seq."""
    state = TurnState()
    traces = []
    for n, event in enumerate(raw_events, 1):
        event = dict(event, id=f"t{n}")
        state.assign(event, lambda turn: 0)
        traces.append(RawTrace(ts=float(n), source_event="test", **event))
    return traces


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(events(), max_size=40), st.integers(min_value=1, max_value=4000), st.sampled_from([None, 50]))
def test_random_transcripts_render_to_accepted_payloads(raw_events, budget, max_chars):
    traces = linked(raw_events)
    meter = TokenMeter(TokenCounter("gpt-4o"))
    for provider in RENDERERS:
        renderer = get_renderer(provider, "gemini-2.5-pro" if budget % 2 else None)
        messages = list(build_messages(traces, include_reasoning=renderer.shows_reasoning))
        messages = [m for m in messages if m.role != "system"]
        check_payload(provider, renderer.render("sys", messages))
        viewed, _ = apply_result_views(messages, agent_id="a", max_chars=max_chars, expire=ExpirePolicy(["*=1"]))
        fitted, _ = fit_budget("sys", viewed, budget, meter, "a")
        check_payload(provider, get_renderer(provider).render("", fitted))
        # in-place system messages (an export that does not hoist them) are accepted too
        in_place = list(build_messages(traces, include_reasoning=renderer.shows_reasoning))
        check_payload(provider, get_renderer(provider).render("", in_place))
