"""Shared fixtures.

* Every test gets its own memory dir: ``MEMCLI_DIR`` points at a temp dir (autouse), and other
  ``MEMCLI_*`` variables are cleared, so no test reads or writes ``./memory``. Provider API keys
  and endpoints (``*_API_KEY``, ``*_API_BASE``/``*_BASE_URL``, AWS credentials) and tiktoken's
  cache settings are cleared too: no test can reach a real provider or depend on the caller's
  cache.
* ``cli(*args, input=...)`` runs the CLI in-process (fast) and returns the click ``Result``
  (``exit_code``, ``stdout``, ``stderr``).
* ``memcli_proc(*args, input=...)`` runs ``python -m memcli`` in a subprocess (for locking,
  crashes, real pipes and start-up behaviour).
* Helpers (``ndjson``, ``read_jsonl``, ``tree_digest``, ``CORPORA``/``needs_corpora``...) live in
  ``tests/helpers.py``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers import CORPORA, ndjson, run_memcli
from tests.pg_server import pg_server, pg_url, pgvector_server, pgvector_url  # noqa: F401  (a real PostgreSQL for tests of memcli.remote; with pgvector)

_TOOL_SETTINGS = {"TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR", "LITELLM_API_KEY", "LITELLM_PROXY_API_BASE",
                  # pytest-xdist workers inherit COLUMNS=80/LINES=24: human views would change width
                  "COLUMNS", "LINES"}


def _is_provider_setting(key: str) -> bool:
    """OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY, ..., OPENAI_BASE_URL, AWS_ACCESS_KEY_ID..."""
    return (key.endswith(("_API_KEY", "_API_BASE", "_BASE_URL", "_API_TOKEN"))
            or key.startswith(("AWS_ACCESS_KEY", "AWS_SECRET", "AWS_SESSION", "AZURE_", "VERTEX")))


_CORPUS_TESTS_NOT_RUN: list[int] = []


def pytest_collection_modifyitems(config, items):
    """Corpus tests (``@needs_corpora``) run only where ../shared/corpora exists; elsewhere they are
    deselected and the summary says so once (see pytest_terminal_summary)."""
    if CORPORA.is_dir():
        return
    kept = [item for item in items if item.get_closest_marker("corpora") is None]
    if len(kept) != len(items):
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        _CORPUS_TESTS_NOT_RUN.append(len(items) - len(kept))
        items[:] = kept


def pytest_terminal_summary(terminalreporter):
    if _CORPUS_TESTS_NOT_RUN:
        terminalreporter.write_line(
            f"{_CORPUS_TESTS_NOT_RUN[0]} corpus tests not run: {CORPORA} is not here "
            "(they read the real transcripts in ../shared/corpora)")


@pytest.fixture(autouse=True)
def memory_dir(tmp_path, monkeypatch) -> Path:
    for key in list(os.environ):
        if key.startswith("MEMCLI_") or _is_provider_setting(key) or key in _TOOL_SETTINGS:
            monkeypatch.delenv(key)
    path = tmp_path / "memory"
    monkeypatch.setenv("MEMCLI_DIR", str(path))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    return path


@pytest.fixture
def cli():
    from typer.testing import CliRunner

    from memcli.cli.app import app

    runner = CliRunner()

    def invoke(*args, input=None, env=None):
        if isinstance(input, (list, tuple)):
            input = ndjson(input)
        return runner.invoke(app, [str(a) for a in args], input=input, env=env, catch_exceptions=False)

    return invoke




@pytest.fixture
def memcli_proc():
    return run_memcli


@pytest.fixture
def llm_env(monkeypatch):
    """A dummy OpenAI key and no backoff between retries, for the tests of ``compact --model``
    against the local server (``pytestmark = pytest.mark.usefixtures("llm_env")``)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-dummy")
    monkeypatch.setenv("MEMCLI_RETRY_BACKOFF", "0")


@pytest.fixture
def server():
    """``server(responder)`` starts a fake OpenAI-compatible model server on 127.0.0.1
    (tests/compact_fixtures.py); every server started is closed after the test."""
    from tests.compact_fixtures import FakeModelServer

    servers = []

    def make(responder):
        s = FakeModelServer(responder)
        servers.append(s)
        return s

    yield make
    for s in servers:
        s.close()
