"""Secret redaction at ingest: no synthetic key of any kind reaches a store file."""

from __future__ import annotations

from collections import Counter

import orjson
import pytest

from memcli import redact
from memcli.redact import redact_text
from memcli.redact.rules import RULES
from tests.helpers import CORPORA, agent_dir, needs_corpora
from tests.secret_samples import GCP_FILE, LOOK_ALIKES, SAMPLES

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


# ---------------------------------------------------------------------- every format (issue 16)

KINDS = sorted({kind for kind, _, _ in SAMPLES})


@pytest.fixture(params=["hyperscan", "substrings"])
def engine(request, monkeypatch):
    """Run a test with the Hyperscan prefilter and with the plain substring fallback."""
    if request.param == "substrings":
        monkeypatch.setattr(redact, "_engine_for", lambda size: None)
    else:
        pytest.importorskip("hyperscan")
        monkeypatch.setattr(redact, "_engine_for", lambda size: redact._engine())
    return request.param


def test_the_table_covers_the_formats_issue_16_names():
    named = {"google_api_key", "twilio_key", "github_token", "gitlab_token", "slack_token", "slack_webhook",
             "stripe_key", "huggingface_token", "npm_token", "sendgrid_key", "jwt", "url_password",
             "secret_assignment", "azure_storage_key", "bearer_token", "aws_secret_key", "aws_access_key",
             "private_key", "gcp_service_account", "openai_key", "anthropic_key"}
    assert named <= set(KINDS) <= {rule.kind for rule in RULES}
    assert len(KINDS) >= 20


@pytest.mark.parametrize("kind,text,secret", SAMPLES, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(SAMPLES)])
def test_each_format_is_replaced_by_its_marker(kind, text, secret, engine):
    out, counts = redact.redact_string(text)
    assert secret not in out
    assert f"[REDACTED:{kind}]" in out
    assert counts[kind] >= 1
    assert redact.redact_string(out)[0] == out  # a marker never matches again


@pytest.mark.parametrize("kind,text,secret", SAMPLES, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(SAMPLES)])
def test_the_prefilter_never_says_no_to_a_secret(kind, text, secret, engine):
    """Raw, JSON-encoded and JSON-encoded twice (a JSON file in a tool result): the anchors hold."""
    once = orjson.dumps({"content": text})
    twice = orjson.dumps({"tool_result": once.decode()})
    for data in (text.encode(), once, twice, b"x" * 40000 + once):  # small and big inputs
        assert redact.may_hold_a_secret(data), data[:80]
    event = orjson.loads(twice)
    assert redact.redact_event_counts(event)[kind] >= 1
    assert secret not in event["tool_result"] and secret.replace("\n", "\\n") not in event["tool_result"]


@pytest.mark.parametrize("text", LOOK_ALIKES, ids=range(len(LOOK_ALIKES)))
def test_look_alikes_survive(text, engine):
    assert redact.redact_string(text) == (text, {})
    event = {"trace_type": "user", "content": text, "tool_args": {"cmd": [text]}}
    assert redact.redact_event_counts(event) == {} and event["content"] == text


def test_gcp_service_account_file_loses_both_keys():
    out, counts = redact.redact_string(GCP_FILE)
    assert counts == {"private_key": 1, "gcp_service_account": 1}
    assert "BEGIN PRIVATE KEY" not in out and '"client_email": "svc@demo.iam.gserviceaccount.com"' in out


def test_a_field_named_like_a_secret_loses_its_value():
    value, counts = redact.redact_value({"auth": {"password": "hunter22", "api_key": "c0ffee12ab34",
                                                  "token": "short", "secret": False, "max_tokens": 4096,
                                                  "Authorization": "Bearer abc12345", "key_file": "/etc/k.pem"}})
    assert value == {"auth": {"password": "[REDACTED:secret_assignment]", "api_key": "[REDACTED:secret_assignment]",
                              "token": "short", "secret": False, "max_tokens": 4096,
                              "Authorization": "Bearer [REDACTED:bearer_token]", "key_file": "/etc/k.pem"}}
    assert counts == {"secret_assignment": 2, "bearer_token": 1}


def _planted_events():
    """One event per sample, the secret in content, in tool arguments and in tool results (nested)."""
    events = []
    for i, (_, text, _) in enumerate(SAMPLES):
        events.append({"trace_type": "user", "content": text})
        events.append({"trace_type": "tool_call", "tool_name": "run", "tool_call_id": f"c{i}",
                       "tool_args": {"script": {"lines": [text]}, "env": [{"value": text}]}})
        events.append({"trace_type": "tool_result", "tool_call_id": f"c{i}",
                       "tool_result": {"stdout": text, "files": [{"body": {"text": text}}]}})
    events.append({"trace_type": "tool_result", "tool_call_id": "gcp", "tool_result": GCP_FILE})
    return events


def test_no_planted_secret_reaches_any_store_file(cli, memory_dir):
    result = cli("ingest", "a", input=_planted_events())
    assert result.exit_code == 0, result.output
    blob = b"".join(p.read_bytes() for p in memory_dir.rglob("*") if p.is_file())
    for kind, _, secret in SAMPLES:
        for fragment in {secret[:16], secret[-16:]}:
            assert fragment.encode() not in blob, kind
            assert orjson.dumps(fragment)[1:-1] not in blob, kind
    text = (agent_dir(memory_dir, "a") / "raw_traces.jsonl").read_text()
    for kind in KINDS:
        assert f"[REDACTED:{kind}]" in text, kind
    expected = Counter()
    for _, sample, _ in SAMPLES:
        for kind, n in redact.redact_string(sample)[1].items():
            expected[kind] += 5 * n  # content, two argument and two result places
    expected.update(redact.redact_string(GCP_FILE)[1])
    assert sum(expected.values()) == text.count("[REDACTED:")
    assert redact.describe_counts(expected) in result.stderr
    assert "google_api_key 5," in result.stderr and "private_key 46," in result.stderr


def test_look_alikes_reach_the_store_byte_for_byte(cli, memory_dir):
    events = [{"trace_type": "user", "content": text, "tool_args_note": {"nested": [text]}} for text in LOOK_ALIKES]
    result = cli("ingest", "a", input=events)
    assert result.exit_code == 0 and "redacted" not in result.stderr
    stored = [orjson.loads(line) for line in (agent_dir(memory_dir, "a") / "raw_traces.jsonl").read_bytes().splitlines()]
    assert [r["content"] for r in stored] == LOOK_ALIKES
    assert [r["tool_args_note"]["nested"][0] for r in stored] == LOOK_ALIKES


# ---------------------------------------------------------------------- the corpora

# what the redactor finds in each corpus file (text as stored on disk); anything else is a false
# positive or a miss to look at. The 16 are the outputs of a generate_password tool
# ({"password": "..."} observations): real passwords by any reading.
CORPUS_FINDINGS = {
    "sharegpt/llamafactory_glaive_toolcall_zh_demo.json": {"secret_assignment": 16},
}


@needs_corpora
def test_corpora_hold_exactly_the_known_findings(engine):
    files = sorted(p for p in CORPORA.rglob("*") if p.is_file() and p.name != "MANIFEST.md")
    assert len(files) >= 17
    found = {}
    for path in files:
        data = path.read_bytes()
        out, counts = redact.redact_string(data.decode("utf-8"))
        if counts:
            found[str(path.relative_to(CORPORA))] = dict(counts)
            assert redact.may_hold_a_secret(data)
        else:
            assert out == data.decode("utf-8")
    assert found == CORPUS_FINDINGS
