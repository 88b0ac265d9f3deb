"""Secret redaction at ingest: no synthetic key of any kind reaches a store file."""

from __future__ import annotations

import pytest

from memcli.redact import redact_text
from tests.helpers import agent_dir

SECRETS = {
    "openai_key": "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 2,
    "openai_key_legacy": "sk-" + "Zz09" * 12,
    "anthropic_key": "sk-ant-api03-" + "q" * 40 + "-AAAA",
    "aws_access_key": "AKIA" + "ABCDEFGHIJKLMNOP",
    "github_token": "ghp_" + "a1B2" * 9,
    "github_pat": "github_pat_" + "11ABCDEFG0" * 3 + "_xyz",
    "private_key": "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAx\nabc==\n-----END RSA PRIVATE KEY-----",
    "bearer": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig-part_123",
}


def _events():
    s = SECRETS
    return [
        {"trace_type": "user", "content": f"my key is {s['openai_key']} and {s['openai_key_legacy']}"},
        {"trace_type": "tool_call", "tool_name": "http", "tool_call_id": "c1",
         "tool_args": {"headers": {"Authorization": f"Bearer {s['bearer']}"}, "keys": [s["aws_access_key"]]}},
        {"trace_type": "tool_result", "tool_call_id": "c1",
         "tool_result": {"env": f"ANTHROPIC_API_KEY={s['anthropic_key']}\nGH={s['github_token']}",
                         "nested": [[s["github_pat"]]]}},
        {"trace_type": "tool_result", "tool_call_id": "c1", "tool_error": s["private_key"]},
        {"trace_type": "assistant", "content": "curl -H 'authorization: bearer " + s["bearer"] + "'",
         "extra_field": s["openai_key"]},
    ]


def test_no_secret_of_any_kind_reaches_any_store_file(cli, memory_dir):
    result = cli("ingest", "a", input=_events())
    assert result.exit_code == 0
    assert "10 secrets redacted" in result.stderr
    blob = b"".join(p.read_bytes() for p in memory_dir.rglob("*") if p.is_file())
    for name, secret in SECRETS.items():
        for fragment in {secret[:24], secret[-12:]}:
            assert fragment.encode() not in blob, name
    text = (agent_dir(memory_dir, "a") / "raw_traces.jsonl").read_text()
    for kind in ("openai_key", "anthropic_key", "aws_access_key", "github_token", "private_key", "bearer_token"):
        assert f"[REDACTED:{kind}]" in text
    assert '"Authorization":"Bearer [REDACTED:bearer_token]"' in text


def test_no_redact_keeps_the_input(cli, memory_dir):
    cli("ingest", "a", "--no-redact", input=_events()[:1])
    assert SECRETS["openai_key"] in (agent_dir(memory_dir, "a") / "raw_traces.jsonl").read_text()


@pytest.mark.parametrize("text", [
    "the task-list is long", "ask-anthropic-about-it", "sk-short", "AKIAlower0000000000000",
    "ghp_short", "use a Bearer token from the vault", "BEGIN PUBLIC KEY", "desk-0123456789abcdefghijklmn",
])
def test_ordinary_text_is_left_alone(text):
    assert redact_text(text) == (text, 0)


def test_base64_media_and_signatures_are_never_rewritten(cli, memory_dir):
    image = "data:image/png;base64," + "sk-" + "A" * 40  # base64 that happens to look like a key
    event = {"trace_type": "user", "content": "see image", "media": {"images": [image]},
             "thinking": {"signature": "sk-" + "B" * 40}, "tool_args_note": {"img": image}}
    result = cli("ingest", "a", input=[event])
    assert result.exit_code == 0 and "redacted" not in result.stderr
    text = (agent_dir(memory_dir, "a") / "raw_traces.jsonl").read_text()
    assert image in text and "sk-" + "B" * 40 in text


def test_known_events_are_not_redacted_again(cli, memory_dir):
    event = {"id": "e1", "trace_type": "user", "content": "key " + SECRETS["aws_access_key"]}
    assert "1 secret redacted" in cli("ingest", "a", input=[event]).stderr
    again = cli("ingest", "a", input=[event]).stderr
    assert "1 already present" in again and "redacted" not in again


def test_redaction_in_a_big_batch_keeps_pending_call_offsets_right(cli, memory_dir):
    """Redacting shortens a line; the unanswered calls after it must still be found by offset."""
    events = []
    for i in range(600):
        events.append({"trace_type": "user", "content": f"q{i}"})
        content = f"key {SECRETS['openai_key']}" if i % 50 == 7 else "plain"
        events.append({"trace_type": "tool_call", "tool_name": "t", "tool_call_id": f"c{i}",
                       "tool_args": {"note": content}})
    assert cli("ingest", "a", input=events).exit_code == 0
    result = cli("tools", "a", "--status", "pending", "--json")
    got = [row["tool_call_id"] for row in __import__("orjson").loads(result.stdout)]
    assert got == [f"c{i}" for i in range(600)]
    assert "12 secrets redacted" in cli("ingest", "b", input=events).stderr
