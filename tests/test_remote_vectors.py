"""Vectors in the shared store (memcli.remote.vectors): ``push`` sends the embeddings hybrid search
made locally to a server with pgvector (pgserver's PostgreSQL 16 build, tests/pg_server.py), and
``search --remote`` fuses them with the full-text ranking by the local rule; a server without
pgvector (Debian's) still takes the push and answers by words. The embedding model is the local
OpenAI-compatible server of tests/embed_fixtures.py, reached through LiteLLM's real HTTP path."""

from __future__ import annotations

import orjson
import psycopg
import pytest

import memcli
from tests.embed_fixtures import embedder
from tests.test_search_hybrid import MODEL, SYNONYMS, TEXTS, ingest, ok

DIM = 64


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-dummy")


def embedded_agent(cli, srv, agent="h"):
    """An agent whose records all have vectors (a local hybrid search makes them)."""
    ingest(cli, agent)
    ok(cli("search", agent, "car", "--embed-model", MODEL, "--embed-api-base", srv.api_base))


def push(cli, url, *agents):
    res = ok(cli("push", *(agents or ("h",)), "--to", url, "--json"))
    return orjson.loads(res.stdout), res.stderr


def remote_ids(cli, url, query, *args, agent="h"):
    res = ok(cli("search", agent, query, "--remote", url, "--ndjson", *args))
    return [orjson.loads(line)["id"] for line in res.stdout.splitlines()], res.stderr


def vectors(url):
    with psycopg.connect(url) as conn:
        return conn.execute("""SELECT v.id, v.model, v.dim, vector_dims(v.embedding), r.file FROM memcli_vectors v
                               JOIN memcli_records r USING (agent_key, stream, id) ORDER BY v.id""").fetchall()


@pytest.mark.slow      # ~6 s: the first LiteLLM call of the process is in it
def test_vectors_are_pushed_once_and_find_an_answer_that_shares_no_word(cli, server, pgvector_url):
    srv = server(embedder(DIM, SYNONYMS))
    embedded_agent(cli, srv)
    pushed, stderr = push(cli, pgvector_url)
    assert pushed[0]["records"] == len(TEXTS) and pushed[0]["vectors"] == len(TEXTS)
    assert "5 vectors" in stderr and "note" not in stderr
    assert vectors(pgvector_url) == [(f"u{i}", MODEL, DIM, DIM, "raw_traces.jsonl") for i in range(1, 6)]
    # a re-push sends nothing and changes nothing
    pushed, _ = push(cli, pgvector_url)
    assert pushed[0]["records"] == 0 and pushed[0]["vectors"] == 0
    assert len(vectors(pgvector_url)) == len(TEXTS)
    # "automobile purchase" shares no word with "I bought a car yesterday": words alone find nothing,
    # the pushed vectors find it first (the query embedded by the same model)
    found, stderr = remote_ids(cli, pgvector_url, "automobile purchase")
    assert found == [] and "no record matches" in stderr
    requests = len(srv.requests)
    found, stderr = remote_ids(cli, pgvector_url, "automobile purchase", "--embed-model", MODEL,
                               "--embed-api-base", srv.api_base)
    assert found[0] == "u1" and "note" not in stderr
    assert len(srv.requests) == requests + 1                 # the query only: the records' vectors are stored
    # a time range joins the records first (memcli.remote.vectors.nearest): the same answer, and none outside it
    found, _ = remote_ids(cli, pgvector_url, "automobile purchase", "--embed-model", MODEL, "--embed-api-base",
                          srv.api_base, "--since", "1700000000", "--until", "1700000002")
    assert found == ["u1", "u2"]                              # u1..u2 in the range, u1 nearest
    # words and meaning fused: the records with "car" and the one "bought" a car rank above the rest
    found, _ = remote_ids(cli, pgvector_url, "car vehicle", "--embed-model", MODEL, "--embed-api-base", srv.api_base)
    assert set(found[:2]) == {"u1", "u3"}


def test_the_store_config_chooses_the_query_model_and_the_hits_keep_their_shape(cli, server, pgvector_url,
                                                                                 memory_dir):
    srv = server(embedder(DIM, SYNONYMS))
    embedded_agent(cli, srv)
    push(cli, pgvector_url)
    (memory_dir / "config.json").write_text(orjson.dumps({"embed_model": MODEL, "embed_api_base": srv.api_base})
                                            .decode())
    res = ok(cli("search", "--remote", pgvector_url, "--all", "automobile purchase", "--json"))
    hits = orjson.loads(res.stdout)
    assert hits[0]["id"] == "u1" and hits[0]["agent"].endswith("/h") and hits[0]["kind"] == "trace"
    assert set(hits[0]) == {"id", "kind", "tier", "turn", "ts", "trace_type", "tool_name", "score", "snippet",
                            "count", "status", "superseded_by", "agent"}
    assert hits[0]["score"] == pytest.approx(1 / 61, abs=1e-4)   # reciprocal rank 1 in the vector list only
    # mcp --remote's memory_search too (the store the server runs in chooses the model)
    remote = memcli.Memory(memory_dir).remote(pgvector_url)
    try:
        found = remote.search("h", "automobile purchase", limit=3, offset=0, kinds=None)
    finally:
        remote.close()
    assert found.hybrid and found.hits[0].id == "u1"
    # another model than the vectors' -> words alone, said once
    res = ok(cli("search", "h", "car", "--remote", pgvector_url, "--ndjson", "--embed-model", "openai/other",
                 "--embed-api-base", srv.api_base))
    assert res.stderr.count("no vectors of openai/other") == 1 and res.stdout


def test_new_records_send_only_their_vectors_and_a_deleted_record_takes_its_vector(cli, server, pgvector_url):
    srv = server(embedder(DIM, SYNONYMS))
    embedded_agent(cli, srv)
    push(cli, pgvector_url)
    ingest(cli, texts=["a new vehicle arrived"], start=10)
    pushed, _ = push(cli, pgvector_url)
    assert pushed[0]["records"] == 1 and pushed[0]["vectors"] == 0      # no local vector yet: none sent
    fact = orjson.loads(ok(cli("remember", "h", "the car keys are in the drawer", "--json")).stdout)["id"]
    ok(cli("search", "h", "car", "--embed-model", MODEL, "--embed-api-base", srv.api_base))
    pushed, _ = push(cli, pgvector_url)
    assert pushed[0]["records"] == 1 and pushed[0]["vectors"] == 2
    assert sorted(v[0] for v in vectors(pgvector_url)) == sorted(["u1", "u10", "u2", "u3", "u4", "u5", fact])
    ok(cli("clear", "h", "--keep-memory", "--yes"))                       # the traces go, remotely too
    push(cli, pgvector_url)
    assert [(v[0], v[4]) for v in vectors(pgvector_url)] == [(fact, "semantic.jsonl")]


def test_a_server_without_pgvector_takes_the_push_and_answers_by_words(cli, server, pg_url):
    srv = server(embedder(DIM, SYNONYMS))
    embedded_agent(cli, srv, "h")
    embedded_agent(cli, srv, "g")
    pushed, stderr = push(cli, pg_url, "h", "g")
    assert [p["records"] for p in pushed] == [len(TEXTS)] * 2 and [p["vectors"] for p in pushed] == [0, 0]
    assert stderr.count("vectors not pushed: the server has no pgvector extension ('vector')") == 1
    found, stderr = remote_ids(cli, pg_url, "car", "--embed-model", MODEL, "--embed-api-base", srv.api_base)
    assert sorted(found) == ["u1", "u3"] and "the shared store has no vectors" in stderr
    pushed, stderr = push(cli, pg_url, "h")                               # a re-push says it again, once
    assert pushed[0]["records"] == 0 and stderr.count("vectors not pushed") == 1


def test_a_user_who_may_not_create_the_extension_pushes_records_and_later_vectors(cli, server, pgvector_server):
    srv = server(embedder(DIM, SYNONYMS))
    embedded_agent(cli, srv)
    admin = pgvector_server.url()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("CREATE ROLE plain LOGIN")
        conn.execute("CREATE DATABASE owned OWNER plain")
    url = admin.replace("memcli@", "plain@").rsplit("/", 1)[0] + "/owned"
    try:
        pushed, stderr = push(cli, url)
        assert pushed[0]["records"] == len(TEXTS) and pushed[0]["vectors"] == 0
        assert ('note: vectors not pushed: this user may not create the pgvector extension (permission denied to '
                'create extension "vector")') in stderr
        # a superuser installs it: the next push (nothing new to send otherwise) sends the vectors
        with psycopg.connect(admin.rsplit("/", 1)[0] + "/owned", autocommit=True) as conn:
            conn.execute("CREATE EXTENSION vector")
        pushed, stderr = push(cli, url)
        assert pushed[0]["records"] == 0 and pushed[0]["vectors"] == len(TEXTS) and "note" not in stderr
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute("DROP DATABASE owned WITH (FORCE)")
            conn.execute("DROP ROLE plain")


def test_a_compaction_keeps_the_pushed_vectors_with_their_moved_records(cli, server, pgvector_url, memory_dir):
    import shutil

    from tests.helpers import REPO

    srv = server(embedder(DIM, SYNONYMS))
    shutil.copytree(REPO / "sample_memory" / "agents" / "coder", memory_dir / "agents" / "coder")
    ok(cli("search", "coder", "discount", "--embed-model", MODEL, "--embed-api-base", srv.api_base))
    pushed, _ = push(cli, pgvector_url, "coder")
    before = vectors(pgvector_url)
    assert pushed[0]["vectors"] == len(before) == pushed[0]["records"]
    ok(cli("compact", "coder"))
    pushed, _ = push(cli, pgvector_url, "coder")                    # the active file rewritten, traces archived
    after = vectors(pgvector_url)
    assert "raw_traces.jsonl" in pushed[0]["rewritten"] and pushed[0]["vectors"] == 0
    moved = [v for v in after if v[4] == "raw_traces_archive.jsonl"]
    assert moved and {v[0] for v in after} >= {v[0] for v in before}
    # a search catches the index up (the moved texts are in its cache: nothing asked of the model for
    # them); the next push finds every vector where it already is
    requests = len(srv.requests)
    ok(cli("search", "coder", "discount", "--embed-model", MODEL, "--embed-api-base", srv.api_base))
    pushed, _ = push(cli, pgvector_url, "coder")
    assert 0 < pushed[0]["vectors"] == len(vectors(pgvector_url)) - len(after)   # only the new summaries' vectors
    assert len(srv.requests) - requests <= 2
