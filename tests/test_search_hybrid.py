"""Hybrid search (issue 25): an embedding model served by a local OpenAI-compatible
``/v1/embeddings`` server (tests/embed_fixtures.py) and reached through LiteLLM's real HTTP path;
vectors computed by searches only, incrementally, cached by content hash; fused with BM25 by
reciprocal rank; a failing model leaves lexical results and a note; another model or another
number of dimensions rebuilds the vectors; the spend shows in ``stats``."""

from __future__ import annotations

import socket

import orjson
import pytest

from tests.embed_fixtures import embedder
from tests.helpers import ok

MODEL = "openai/fake-embed"
SYNONYMS = {"automobile": "car", "vehicle": "car", "purchased": "buy", "bought": "buy", "purchase": "buy"}
TEXTS = ["I bought a car yesterday", "the weather is nice today", "car wash on sunday", "lunch at noon",
         "the printer is out of paper"]


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-dummy")


def ingest(cli, agent="h", texts=TEXTS, start=1):
    ok(cli("ingest", agent, input=[{"id": f"u{i}", "trace_type": "user", "content": t, "ts": 1.7e9 + i}
                                   for i, t in enumerate(texts, start)]))


def search(cli, srv, query, *args, agent="h", model=MODEL):
    result = ok(cli("search", agent, query, "--ndjson", "--embed-model", model, "--embed-api-base", srv.api_base,
                    *args))
    return [orjson.loads(line)["id"] for line in result.stdout.splitlines()], result.stderr


def inputs(srv) -> list[list[str]]:
    return [r.body["input"] if isinstance(r.body["input"], list) else [r.body["input"]] for r in srv.requests]


def test_hybrid_finds_what_words_alone_cannot_and_fuses_with_bm25(cli, server):
    srv = server(embedder(256, SYNONYMS))
    ingest(cli)
    assert srv.requests == []                                  # ingest never embeds
    lexical = ok(cli("search", "h", "automobile purchase", "--ndjson")).stdout
    assert lexical == ""                                       # no record has either word
    found, stderr = search(cli, srv, "automobile purchase")
    assert found[0] == "u1"                                    # "bought a car": the same concepts
    assert "embed" not in stderr
    # one request for the query, one batch for the five records: LiteLLM's real HTTP path
    assert sorted(len(i) for i in inputs(srv)) == [1, 5]
    assert all(r.body["model"] == "fake-embed" and r.path == "/v1/embeddings" for r in srv.requests)
    # a word match and a meaning match are fused: the record with both ranks first
    found, _ = search(cli, srv, "car vehicle")
    assert found[:2] in (["u1", "u3"], ["u3", "u1"])


def test_vectors_are_incremental_and_cached_by_content(cli, server):
    srv = server(embedder(256, SYNONYMS))
    ingest(cli)
    search(cli, srv, "automobile")
    first = len(srv.requests)
    search(cli, srv, "automobile")                              # nothing new, the query cached
    assert len(srv.requests) == first
    ingest(cli, texts=["a new vehicle arrived"], start=10)
    ingest(cli, texts=["lunch at noon"], start=11)              # same text as u4: its vector is reused
    assert len(srv.requests) == first
    found, _ = search(cli, srv, "automobile")
    assert inputs(srv)[first:] == [["a new vehicle arrived"]]
    assert "u10" in found[:3]


def test_a_failing_or_unreachable_model_gives_lexical_results_and_a_note(cli, server):
    srv = server(embedder(fail=500))
    ingest(cli)
    found, stderr = search(cli, srv, "car")
    assert found and set(found) <= {"u1", "u3"}
    notes = [line for line in stderr.splitlines() if "embedding model" in line]
    assert len(notes) == 1 and f"embedding model {MODEL} failed" in notes[0] and "lexical results only" in notes[0]
    with socket.socket() as s:                                  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = ok(cli("search", "h", "car", "--embed-model", MODEL, "--embed-api-base", f"http://127.0.0.1:{port}/v1"))
    assert "lexical results only" in result.stderr and result.stdout.strip()


def test_another_model_or_other_dimensions_rebuild_the_vectors(cli, server):
    srv = server(embedder(256, SYNONYMS, dims=lambda i: 256 if i < 2 else 128))
    ingest(cli)
    search(cli, srv, "automobile")
    _, stderr = search(cli, srv, "weather")                       # the server now answers 128 dimensions
    assert "now answers with 128-dimension vectors, not 256: the vectors are rebuilt" in stderr
    stats = orjson.loads(ok(cli("stats", "h", "--json")).stdout)["embeddings"]
    assert stats["model"] == MODEL and stats["dimensions"] == 128
    _, stderr = search(cli, srv, "weather", model="openai/other-embed")
    assert f"embedding model changed from {MODEL} to openai/other-embed: the vectors are rebuilt" in stderr
    assert orjson.loads(ok(cli("stats", "h", "--json")).stdout)["embeddings"]["model"] == "openai/other-embed"


def test_stats_shows_the_tokens_embedded(cli, server):
    srv = server(embedder(256, SYNONYMS))
    ingest(cli)
    assert "embeddings" not in orjson.loads(ok(cli("stats", "h", "--json")).stdout)
    search(cli, srv, "automobile purchase")
    # the fake server reports one token per word: 2 for the query, 24 for the five records
    assert orjson.loads(ok(cli("stats", "h", "--json")).stdout)["embeddings"] == {
        "model": MODEL, "dimensions": 256, "tokens": 2 + sum(len(t.split()) for t in TEXTS)}
    assert f"tokens embedded with {MODEL} (256 dimensions" in ok(cli("stats", "h")).stdout


def test_the_store_config_chooses_the_model_and_a_bad_config_is_exit_2(cli, server, memory_dir):
    srv = server(embedder(256, SYNONYMS))
    ingest(cli)
    config = memory_dir / "config.json"
    config.write_text(orjson.dumps({"embed_model": MODEL, "embed_api_base": srv.api_base}).decode())
    result = ok(cli("search", "h", "automobile purchase", "--ndjson"))
    assert orjson.loads(result.stdout.splitlines()[0])["id"] == "u1" and srv.requests
    config.write_text("{nope")
    result = cli("search", "h", "car")
    assert result.exit_code == 2 and "config.json: not a readable JSON object" in result.stderr


def test_clear_leaves_no_vector_and_no_index_behind(cli, server, memory_dir):
    srv = server(embedder(256, SYNONYMS))
    ingest(cli)
    search(cli, srv, "automobile")
    agent_dir = memory_dir / "agents" / "h"
    assert (agent_dir / ".search.sqlite").exists() and (agent_dir / ".search.vectors").stat().st_mode & 0o777 == 0o600
    ok(cli("remember", "h", "a car fact"))
    ok(cli("clear", "h", "--keep-memory", "--yes"))
    assert not list(agent_dir.glob(".search*"))            # the index and the vectors file
    ingest(cli)
    search(cli, srv, "automobile")
    ok(cli("clear", "h", "--yes"))
    assert not agent_dir.exists()
    assert not [p for p in memory_dir.rglob("*") if "search" in p.name or p.suffix == ".sqlite"]


def test_recall_stays_lexical_when_the_store_configures_a_model(cli, server, memory_dir):
    srv = server(embedder(256, SYNONYMS))
    ingest(cli)
    ok(cli("remember", "h", "The car is parked in level 2"))
    (memory_dir / "config.json").write_text(orjson.dumps({"embed_model": MODEL, "embed_api_base": srv.api_base})
                                             .decode())
    result = ok(cli("snapshot", "h", "-p", "text", "--recall", "car parked"))
    assert "The car is parked in level 2" in result.stdout and srv.requests == []
