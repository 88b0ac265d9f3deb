"""Model errors that no retry can cure fail at once and say what to set (issue 17).

A missing or refused key, a model nobody serves and a refused connection are reported after one
attempt, naming ``OPENAI_API_KEY``/``--api-base``/``--model``; only timeouts, HTTP 429 and 5xx
are retried, and hints appear only where they apply. Provider text is quoted by whole words.
Against a local 127.0.0.1 server (tests/compact_fixtures.py) or a closed port: never the network.
"""

from __future__ import annotations

import re
import socket

import pytest

from memcli.compaction.llm import clip_words
from tests.compact_fixtures import conversation, error_body, faithful_answer
from tests.helpers import agent_dir, tree_digest

MODEL = "openai/test-model"


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-dummy")
    monkeypatch.setenv("MEMCLI_RETRY_BACKOFF", "0")


@pytest.fixture(autouse=True)
def attempts(monkeypatch) -> list:
    """Every request the summarizer attempts (also those that never reach a server)."""
    from memcli.compaction.llm import LiteLLMSummarizer

    calls: list = []
    real = LiteLLMSummarizer._call

    def counted(self, *args, **kwargs):
        calls.append(self.model)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(LiteLLMSummarizer, "_call", counted)
    return calls


@pytest.fixture
def agent(cli, memory_dir):
    assert cli("ingest", "a", input=conversation(8)).exit_code == 0
    def data():  # every file but the circuit breaker's count of failures
        digest = tree_digest(agent_dir(memory_dir, "a"))
        digest.pop(".compaction.json", None)
        return digest

    return data


def _compact(cli, *args):
    return cli("compact", "a", *args)


def _error(result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.startswith(("memcli: error:", "  hint:"))]
    return "\n".join(lines)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_no_key_fails_before_any_request_and_names_the_variable(cli, agent, attempts, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    before = agent()
    result = _compact(cli, "--model", MODEL)
    assert result.exit_code == 1 and attempts == []
    assert _error(result) == (
        "memcli: error: openai/test-model: no API key: set OPENAI_API_KEY; nothing was written\n"
        "  hint: export OPENAI_API_KEY=... (or pass --api-key-env NAME) before `memcli compact`, or leave out "
        "--model for the offline summarizer")
    assert agent() == before


def test_a_server_on_this_machine_needs_no_key(cli, agent, attempts, server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    srv = server(lambda body, i: (200, faithful_answer(body), 0))
    result = _compact(cli, "--model", MODEL, "--api-base", srv.api_base)
    assert result.exit_code == 0, result.stderr
    assert len(srv.requests) == 1


def test_no_key_without_a_server_names_the_provider_variable(cli, agent, attempts, monkeypatch):
    for key in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(key, raising=False)
    result = _compact(cli, "--model", "anthropic/claude-3-5-haiku-latest")
    assert result.exit_code == 1 and attempts == []
    assert "no API key: set ANTHROPIC_API_KEY" in result.stderr
    assert "--retries" not in result.stderr and "HTTP 500" not in result.stderr


def test_refused_connection_fails_at_once_and_names_api_base(cli, agent, attempts):
    base = f"http://127.0.0.1:{_closed_port()}/v1"
    result = _compact(cli, "--model", MODEL, "--api-base", base)
    assert result.exit_code == 1 and attempts == []
    assert _error(result) == (
        f"memcli: error: openai/test-model: cannot connect to {base} (connection refused); nothing was written\n"
        f"  hint: is the server at {base} running? --api-base sets where requests go")


def test_rejected_key_fails_at_once(cli, agent, attempts, server):
    body = {"error": {"message": "Incorrect API key provided: sk-test-dummy. You can find your API key at "
                                 "https://platform.openai.com/account/api-keys.",
                      "type": "invalid_request_error", "code": "invalid_api_key"}}
    srv = server(lambda b, i: (401, body, 0))
    result = _compact(cli, "--model", MODEL, "--api-base", srv.api_base)
    assert result.exit_code == 1 and len(srv.requests) == 1 and len(attempts) == 1
    error = _error(result)
    assert "the provider refused the API key (HTTP 401): Incorrect API key provided: sk-test-dummy." in error
    assert "hint: check OPENAI_API_KEY" in error and "--retries" not in error


def test_unknown_model_fails_at_once(cli, agent, attempts, server):
    body = {"error": {"message": "The model `test-model` does not exist or you do not have access to it.",
                      "type": "invalid_request_error", "code": "model_not_found"}}
    srv = server(lambda b, i: (404, body, 0))
    result = _compact(cli, "--model", MODEL, "--api-base", srv.api_base)
    assert result.exit_code == 1 and len(srv.requests) == 1 and len(attempts) == 1
    error = _error(result)
    assert "unknown model (HTTP 404): The model `test-model` does not exist" in error
    assert "hint: check --model and --api-base" in error


def test_a_request_over_the_models_context_fails_at_once_and_names_max_context_tokens(cli, agent, attempts, server):
    """A local server whose model takes 32k tokens (memcli, not knowing the model, took it for
    200,000): the provider's text alone said nothing of the flag that fixes it."""
    body = {"error": {"message": "This model's maximum context length is 32768 tokens. However, you requested "
                                 "41234 tokens. Please reduce the length of the messages.",
                      "type": "invalid_request_error", "code": "context_length_exceeded"}}
    srv = server(lambda b, i: (400, body, 0))
    result = _compact(cli, "--model", MODEL, "--api-base", srv.api_base)
    assert result.exit_code == 1 and len(srv.requests) == 1
    error = _error(result)
    assert f"the request is larger than {MODEL!r} takes: This model's maximum context length is 32768" in error
    assert "hint: --max-context-tokens gives the model's context (memcli took it for 200,000 tokens)" in error


def test_an_answer_that_is_no_chat_completion_says_so_and_is_not_taken_as_free(cli, agent, attempts, server):
    """A 200 whose body is a proxy's HTML page: it read "server error (HTTP 500)" with LiteLLM's
    traceback, and "spent: nothing" for a request that was sent and answered."""
    srv = server(lambda b, i: (200, b"<html><body>502 Bad Gateway</body></html>", 0))
    result = _compact(cli, "--model", MODEL, "--api-base", srv.api_base, "--retries", "1")
    assert result.exit_code == 1 and len(srv.requests) == 2
    error = _error(result)
    assert f"{srv.api_base} answered with something that is not a chat completion LiteLLM can read" in error
    assert "HTTP 500" not in error and "Traceback" not in error
    assert "spent: 2 requests (2 unanswered: their prompts counted)" in error, error
    assert "hint: is --api-base the server's OpenAI-compatible endpoint" in error


def test_litellms_context_window_error_names_max_context_tokens_whatever_its_words():
    """LiteLLM raises ContextWindowExceededError for llama.cpp's "exceeds the available context
    size" and Bedrock's "Input is too long": its class, not only the words, says what it is."""
    from memcli.compaction.llm import LiteLLMSummarizer, classify_failure
    from memcli.tokens import import_litellm

    litellm = import_litellm()
    exc = litellm.exceptions.ContextWindowExceededError(message="Input is too long for requested model.",
                                                        model="test-model", llm_provider="openai")
    failure = classify_failure(exc, LiteLLMSummarizer(MODEL), litellm)
    assert failure.problem.startswith(f"the request is larger than {MODEL!r} takes") and not failure.retry
    assert failure.hint.startswith("--max-context-tokens gives the model's context")


def test_model_with_no_provider_fails_at_once(cli, agent, attempts):
    result = _compact(cli, "--model", "nosuchprovider/foo")
    assert result.exit_code == 1 and len(attempts) == 1
    assert "LiteLLM cannot tell which provider serves 'nosuchprovider/foo'" in result.stderr
    assert "provider/model, e.g. openai/gpt-4o-mini" in result.stderr


def test_server_errors_are_retried_with_the_hint_that_applies(cli, agent, attempts, server, monkeypatch):
    srv = server(lambda b, i: (503, error_body(503, "overloaded, try later"), 0))
    result = _compact(cli, "--model", MODEL, "--api-base", srv.api_base, "--retries", "2")
    assert result.exit_code == 1 and len(srv.requests) == 3 == len(attempts)
    error = _error(result)
    assert "attempt 3: server error (HTTP 503): overloaded, try later" in error
    assert "hint: --retries tries again; the offline summarizer" in error
    assert "--timeout" not in error


def test_provider_text_is_cut_between_words(cli, agent, server):
    words = " ".join(f"word{i}" for i in range(200))
    srv = server(lambda b, i: (401, {"error": {"message": words, "type": "invalid_request_error"}}, 0))
    result = _compact(cli, "--model", MODEL, "--api-base", srv.api_base)
    shown = re.search(r"\(HTTP 401\): (.*); nothing was written", result.stderr).group(1)
    assert shown.endswith(" …") and words.startswith(shown[:-2]) and words[len(shown) - 2] == " "


def test_clip_words():
    assert clip_words("short text", 50) == "short text"
    assert clip_words("alpha beta gamma delta", 12) == "alpha beta …"
