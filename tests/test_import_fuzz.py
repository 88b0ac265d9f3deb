"""Fuzzed transcripts: whatever shape a field takes, an importer never raises; it yields valid
native events or InputErrors naming a line. Runs ``MEMCLI_FUZZ_EXAMPLES`` cases per format
(default 150)."""

from __future__ import annotations

import os
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memcli.errors import InputError
from memcli.events import validate_event
from memcli.importers import FORMATS, get_importer
from memcli.ingest.pipeline import IngestResult
from tests import (
    chat_export_fixtures,
    sync_more_fixtures,
    test_import_anthropic,
    test_import_claude_code,
    test_import_codex,
    test_import_openai,
)
from tests import import_format_fixtures as fx

EXAMPLES = int(os.environ.get("MEMCLI_FUZZ_EXAMPLES", "150"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

REPLACEMENTS = [None, 0, -1, 1.5, 1e300, True, "", "x", "user", "assistant", "message", "text", "tool_use",
                "tool_result", "function_call", "response_item", "user_message", [], {}, [1], [None], {"a": 1},
                {"type": ["x"]}, [{"type": "text"}], {"type": "image"}]

TRANSCRIPTS = {
    "openai": test_import_openai.conversation(),
    "anthropic": test_import_anthropic.request()["messages"],
    "claude-code": test_import_claude_code.session(),
    "codex": test_import_codex.rollout(),
    "openai-responses": fx.responses_body()["input"] + [fx.responses_body()],
    "gemini": fx.gemini_request()["contents"] + [fx.gemini_request(), fx.gemini_cli_session()],
    "openhands": fx.openhands_trajectory() + [{"instance_id": "i1", "history": fx.openhands_trajectory()}],
    "inspect": [fx.inspect_log()] + fx.inspect_log()["samples"][0]["messages"],
    "sharegpt": fx.sharegpt_records(),
    "cline": fx.cline_history(),
    "copilot-cli": sync_more_fixtures.cp_session("00000000-0000-4000-8000-000000000001", 2),
    "goose": [{"working_dir": "/w", "description": "d"}] + [
        {"role": r, "created": 1, "content": c, "metadata": m} for r, c, m in sync_more_fixtures.goose_turn(0)],
    "opencode": [{"info": {"id": "ses_1", "directory": "/w"}, "messages": [
        {"info": dict(data, id=f"msg_{n}"), "parts": [dict(p, id=f"prt_{n}_{k}") for k, p in enumerate(parts)]}
        for n, (data, parts) in enumerate(sync_more_fixtures.oc_turn(0))]}],
    "cursor": sync_more_fixtures.cu_turn(0) + sync_more_fixtures.cu_turn(1),
    "chatgpt": [chat_export_fixtures.chatgpt_conversation()],
    "claude-ai": [chat_export_fixtures.claude_ai_conversation()],
}
IMPORTERS = [name for name in FORMATS if name != "native"]


def mutate(value, rng: random.Random, p: float):
    if isinstance(value, dict):
        return {k: rng.choice(REPLACEMENTS) if rng.random() < p else mutate(v, rng, p) for k, v in value.items()}
    if isinstance(value, list):
        return [rng.choice(REPLACEMENTS) if rng.random() < p else mutate(v, rng, p) for v in value]
    return value


@pytest.mark.parametrize("fmt", list(TRANSCRIPTS))
@FUZZ
@given(seed=st.integers(0, 2**32), p=st.sampled_from([0.05, 0.15, 0.4]))
def test_importers_never_raise_and_emit_only_valid_events(fmt, seed, p):
    rng = random.Random(seed)
    values = [(i, mutate(v, rng, p) if rng.random() < 0.5 else v) for i, v in enumerate(TRANSCRIPTS[fmt], 1)]
    for name in IMPORTERS:   # the right importer and the wrong ones
        importer = get_importer(name)
        assert 0 <= importer.sniff(values[:64]) <= 100
        inputs = [values]
        if hasattr(importer, "conversations"):   # --split reads each conversation on its own
            inputs += [c.values for c in importer.conversations(iter(values))]
        for items in inputs:
            for line, event in importer.events(iter(items), IngestResult("fuzz")):
                if isinstance(event, InputError):
                    assert event.line == line
                    continue
                validate_event(event, line)   # raises if an importer emitted something invalid
                assert isinstance(event.get("id"), str) and event["id"]
