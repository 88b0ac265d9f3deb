"""`memcli compact --model` where a reviewer found it paid for nothing or said too much, against a
local OpenAI-compatible server (tests/compact_fixtures.py): a fact about an unresolved failure does
not void a complete answer, a key the provider echoes never reaches the disk, a doomed compaction
sends no further request, ``--timeout`` is checked before any request, a retry says what was wrong
with the latest answer, "asked again" is said only of a request that goes, a rewrite that cannot
name the asks and files is not bought, and a 429's ``Retry-After`` is waited for."""

from __future__ import annotations

import orjson
import pytest

from tests.compact_fixtures import (
    compact_with_model,
    faithful_answer,
    ingest_conversation,
    transcript_items,
)
from tests.helpers import agent_dir, read_jsonl, tree_digest

MODEL = "openai/test-model"


pytestmark = pytest.mark.usefixtures("llm_env")


def _ingest(cli, turns=8, big=0):
    ingest_conversation(cli, turns, big)


_compact = compact_with_model


def test_a_fact_about_an_unresolved_failure_keeps_the_answer_and_a_refusal_fact_is_dropped(cli, memory_dir, server):
    """A complete answer whose first fact read "Error: …" was refused whole ("semantic_facts[0].fact
    reads like an error or a refusal"), asked for twice more and the compaction failed (exit 1)."""
    _ingest(cli)
    facts = [{"fact": "Error: pytest tests/test_calc3.py still fails with AssertionError (unresolved)"},
             {"fact": "Internal Server Error (500) on /api/orders"},
             {"fact": "Rate limited: the carrier API allows 5 requests per second"},
             {"fact": "I'm sorry, I cannot help with that."},
             {"fact": "The project uses pytest"}]
    srv = server(lambda body, i: (200, faithful_answer(body, facts=facts), 0))
    result = _compact(cli, srv)
    assert result.exit_code == 0, result.stderr
    assert len(srv.requests) == 1 and "asked again" not in result.stderr
    stored = [f["fact"] for f in read_jsonl(agent_dir(memory_dir, "a") / "semantic.jsonl")]
    assert stored == [f["fact"] for f in facts if not f["fact"].startswith("I'm sorry")]


KEY = "sk-proj-Abc123XyZ987LmNoPqRsTuVwXyZ0123456789abcdEFGH"


def test_a_key_the_provider_echoes_is_redacted_on_stderr_and_in_the_breaker_file(cli, memory_dir, server):
    """A 401 quoting the refused key: it was printed and written as is to .compaction.json
    (``last_error``), which docs/secrets.md says never happens."""
    _ingest(cli)
    body = {"error": {"message": f"Incorrect API key provided: {KEY}", "type": "invalid_request_error",
                      "code": "invalid_api_key"}}
    srv = server(lambda b, i: (401, body, 0))
    result = _compact(cli, srv)
    assert result.exit_code == 1 and len(srv.requests) == 1
    assert ("the provider refused the API key (HTTP 401): Incorrect API key provided: [REDACTED:openai_key]; "
            "nothing was written") in result.stderr
    raw = (agent_dir(memory_dir, "a") / ".compaction.json").read_bytes()
    state = orjson.loads(raw)
    assert state["consecutive_failures"] == 1 and KEY.encode() not in raw
    assert state["last_error"].endswith("Incorrect API key provided: [REDACTED:openai_key]; nothing was written")
    assert KEY not in "".join(p.read_text(errors="replace") for p in agent_dir(memory_dir, "a").rglob("*")
                              if p.is_file())


def test_the_breaker_redacts_whatever_error_it_is_given(tmp_path):
    """Any failure's text (not only a provider's) goes through memcli's redaction before disk."""
    from memcli.compaction import breaker
    from memcli.store.layout import AgentPaths

    paths = AgentPaths(tmp_path, "a")
    paths.dir.mkdir(parents=True)
    state = breaker.record_failure(paths, f"boom: Authorization: Bearer {KEY} refused")
    assert KEY not in state.last_error and KEY.encode() not in breaker.breaker_path(paths).read_bytes()
    assert breaker.read_breaker(paths).last_error == state.last_error


def _span(body) -> str:
    return body["messages"][-1]["content"].split('<transcript turns="', 1)[1].split('"', 1)[0]


def test_after_a_chunk_failed_for_good_the_next_chunk_sends_nothing(cli, memory_dir, server):
    """--concurrency 1: the first chunk's answers leave its asks out until --retries runs out; the
    next chunk's request still went (a paid prompt for a compaction already failed)."""
    _ingest(cli, turns=40, big=600)
    asks = tuple(f"Where is order A-{1000 + n}?" for n in range(1, 41))

    def model(body, i):
        first = _span(body).startswith("turn_0001")
        return 200, faithful_answer(body, leave_out=asks if first else ()), 0

    srv = server(model)
    before = tree_digest(agent_dir(memory_dir, "a"))
    result = _compact(cli, srv, "--max-context-tokens", "4000", "--concurrency", "1", "--retries", "1")
    assert result.exit_code == 1
    assert [_span(r.body).startswith("turn_0001") for r in srv.requests] == [True, True]
    assert "gave no valid summary for turn_0001–" in result.stderr and "; spent: 2 requests, " in result.stderr
    after = tree_digest(agent_dir(memory_dir, "a"))
    assert {k for k in after if before.get(k) != after[k]} <= {".compaction.json", ".token-counts"}


def test_a_retry_of_another_chunk_is_not_sent_once_a_chunk_failed_for_good(cli, memory_dir, server):
    """--concurrency 2: the first chunk's key is refused (no retry can cure it) while the second
    chunk's answer, which leaves an ask out, is on its way; that chunk's retry still went."""
    _ingest(cli, turns=40, big=600)
    refused = {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}

    def model(body, i):
        if _span(body).startswith("turn_0001"):
            srv.wait_for_requests(2)   # the other chunk's request is in flight
            return 401, refused, 0
        return 200, faithful_answer(body, leave_out=tuple(transcript_items(body)[0][:1])), 0.5

    srv = server(model)
    result = _compact(cli, srv, "--max-context-tokens", "4000", "--concurrency", "2", "--retries", "2")
    assert result.exit_code == 1 and len(srv.requests) == 2, [_span(r.body) for r in srv.requests]
    assert "the provider refused the API key (HTTP 401)" in result.stderr
    # (the 401 is not billed: what was spent is the other chunk's answer)
    assert "; spent: 1 request, 10 input + 10 output tokens, " in result.stderr
    assert "asked again" not in result.stderr, result.stderr


def test_the_retry_after_an_unusable_answer_says_why_and_not_what_an_earlier_one_left_out(cli, memory_dir, server):
    """Attempt 1 left an ask out, attempt 2 was malformed JSON: attempt 3 still carried attempt
    1's <missing> block and never said why attempt 2 could not be used."""
    _ingest(cli)
    answers = [lambda body: faithful_answer(body, leave_out=("Where is order A-1001?",)),
               lambda body: '{"episodic_summary": "oops, unterminated', faithful_answer]
    srv = server(lambda body, i: (200, answers[min(i, 2)](body), 0))
    result = _compact(cli, srv)
    assert result.exit_code == 0, result.stderr
    assert len(srv.requests) == 3
    second, third = srv.requests[1].user, srv.requests[2].user
    assert '<missing>\n- user ask "Where is order A-1001?": name A-1001\n</missing>' in second
    assert "<missing>" not in third
    assert ("Your previous answer for this transcript could not be used (no JSON object in the answer: "
            "'{\"episodic_summary\": \"oops, unterminated'). Answer with exactly one JSON object") in third
    assert ("attempt 2: invalid answer: no JSON object in the answer: '{\"episodic_summary\": \"oops, unterminated'; "
            "asked again (attempt 3 of 3)") in result.stderr


PRICED = "openai/gpt-4o-mini"   # LiteLLM prices it: $0.15 per million input tokens, $0.60 output


def test_a_retry_max_cost_refuses_is_not_said_to_be_asked_again(cli, memory_dir, server):
    """--max-cost with room for the first request's bound only: stderr said "asked again (attempt
    2 of 3)", then the error said that very retry was refused."""
    _ingest(cli)
    srv = server(lambda body, i: (200, faithful_answer(body, leave_out=("Where is order A-1001?",)), 0))
    estimate = orjson.loads(cli("compact", "a", "--model", PRICED, "--api-base", srv.api_base, "--dry-run",
                                "--json").stdout)["estimate"]
    limit = f"{estimate['cost_usd'] + 2e-6:.9f}"
    result = cli("compact", "a", "--model", PRICED, "--api-base", srv.api_base, "--max-cost", limit)
    assert result.exit_code == 1 and len(srv.requests) == 1
    assert "asked again" not in result.stderr, result.stderr
    assert (f"memcli: error: --max-cost {float(limit):g}: retrying turn_0001–turn_0004 (attempt 2, the last answer "
            "left out 1 user ask) would cost up to $") in result.stderr


def test_a_429_is_retried_after_the_providers_retry_after(cli, memory_dir, server):
    """HTTP 429 with ``Retry-After: 1``: the retry went at once (the backoff, 0 here), into the
    same rate limit."""
    _ingest(cli)

    def model(body, i):
        if i == 0:
            return 429, {"error": {"message": "Rate limit reached, retry after 1s", "type": "rate_limit"}}, 0, \
                {"Retry-After": "1"}
        return 200, faithful_answer(body), 0

    srv = server(model)
    result = _compact(cli, srv)
    assert result.exit_code == 0, result.stderr
    assert len(srv.requests) == 2 and srv.requests[1].start - srv.requests[0].end >= 0.95
    assert ("attempt 1: rate limited (HTTP 429): Rate limit reached, retry after 1s; asked again after 1 s (the "
            "provider's Retry-After) (attempt 2 of 3)") in result.stderr


@pytest.mark.parametrize("headers, wait", [({"retry-after": "3"}, 3.0), ({"retry-after": "3600"}, 60.0),
                                           ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5),
                                           ({"retry-after": "soon"}, None), ({}, None),
                                           # a second read: an int raised AttributeError out of the
                                           # compaction; a dict's own spelling was not found; an
                                           # unreadable retry-after-ms hid retry-after
                                           ({"retry-after": 3}, 3.0), ({"Retry-After": "2"}, 2.0),
                                           ({"retry-after-ms": "x", "retry-after": "4"}, 4.0),
                                           ({"retry-after": "Thu, 01 Jan 1970 00:00:00"}, 0.0)])
def test_retry_after_is_read_in_seconds_and_capped(headers, wait):
    from types import SimpleNamespace

    from memcli.compaction.llm import retry_after

    exc = RuntimeError("rate limited")
    exc.response = SimpleNamespace(headers=headers)
    assert retry_after(exc) == wait


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0"])
def test_a_timeout_that_is_no_number_of_seconds_is_a_usage_error_before_any_request(cli, memory_dir, server, value):
    """--timeout nan was taken, then reported as "server error (HTTP 500)" and retried 3 times."""
    _ingest(cli)
    srv = server(lambda body, i: (200, faithful_answer(body), 0))
    before = tree_digest(agent_dir(memory_dir, "a"))
    result = _compact(cli, srv, "--timeout", value)
    assert result.exit_code == 2 and srv.requests == []
    assert result.stderr.startswith("memcli: error: --timeout must be a number of seconds more than 0\n"), result.stderr
    assert tree_digest(agent_dir(memory_dir, "a")) == before


def test_a_rewrite_that_cannot_name_the_asks_and_files_is_not_asked_for(cli, memory_dir, server):
    """A target just above what a model's summary needs, and an answer whose 30 long facts eat the
    room: memcli asked three times for a rewrite within 80 tokens, though it had itself counted
    that naming the window's asks takes more (4 paid requests, exit 1)."""
    import re

    _ingest(cli, turns=40, big=600)
    facts = [{"fact": f"Fact {j}: the rounding policy for region {j} uses banker's rounding with quantize_{j} and "
                      + "details " * 40, "tags": ["env"], "confidence": 0.9} for j in range(30)]
    srv = server(lambda body, i: (200, faithful_answer(body, facts=facts), 0))
    refused = _compact(cli, srv, "--target-tokens", "100")
    assert refused.exit_code == 1 and srv.requests == []
    floor = int(re.search(r"use --target-tokens ([\d,]+) or more", refused.stderr).group(1).replace(",", ""))
    before = tree_digest(agent_dir(memory_dir, "a"))
    result = _compact(cli, srv, "--target-tokens", str(floor + 20))
    assert result.exit_code == 1 and len(srv.requests) == 1, result.stderr
    error = result.stderr.split("memcli: error: ", 1)[1]
    assert re.match(r"openai/test-model: the summary of turn_0001–turn_00\d\d cannot be rewritten within 80 tokens: "
                    r"naming its user asks and modified files takes about [\d,]+ tokens \(its 30 facts and what stays "
                    r"take the rest of the room\); no rewrite was asked for; spent: 1 request, 10 input \+ 10 output "
                    r"tokens, price unknown; nothing was written\n", error), error
    assert "asked to rewrite it" not in result.stderr
    after = tree_digest(agent_dir(memory_dir, "a"))
    assert {k for k in after if before.get(k) != after[k]} <= {".compaction.json", ".token-counts"}
