"""Vectors in the shared store (memcli.remote.vectors; docs/remote.md, docs/scale.md "pgvector").

Against pgserver's PostgreSQL 16 with pgvector (tests/pg_server.py; skipped, saying why, where
it is missing), N traces (``MEMCLI_BENCH_VECTOR_TRACES``, default 100,000) in 10 agents, every
one with a ``MEMCLI_BENCH_VECTOR_DIM`` (768)-dimension embedding in its local search index (the
index built by the store's catch-up, random unit vectors stored through
:func:`memcli.store.search_index.add_vectors`: what hybrid searches leave behind, without
embedding 100,000 texts through a model first):

1. ``memcli push --all`` of the agents, records and vectors, as a fresh process; the note says
   vectors/s. Baseline: the same push into Debian-like conditions is not comparable, so the
   baseline is the push of the same records from copies with no index (no vectors sent).
2. ``search --remote --all`` hybrid (full text + the nearest vectors fused by reciprocal rank,
   the query embedded by a local OpenAI-compatible server through LiteLLM, as in tests): p50 and
   p95 over 40 questions, a fresh connection each. Baseline: the same questions by words alone.
   The vector ranking is exact (no HNSW index: every vector of the model is compared).

    python tests/bench/run_all.py remote_vectors
    MEMCLI_BENCH_VECTOR_TRACES=20000 python tests/bench/run_all.py remote_vectors
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

TRACES = int(os.environ.get("MEMCLI_BENCH_VECTOR_TRACES", "100000"))
DIM = int(os.environ.get("MEMCLI_BENCH_VECTOR_DIM", "768"))
AGENTS = 10
QUERIES = 40
MODEL = "openai/bench-embed"


def _embedded_store(root: Path, text, seed: int = 7) -> None:
    """AGENTS agents of TRACES // AGENTS traces, each with a stored unit vector."""
    import numpy as np

    from memcli.search.embed import content_hash, embedded_text
    from memcli.store import search_index
    from memcli.store.agent import AgentStore
    from tests.bench.bench_remote import _store

    rng = np.random.default_rng(seed)
    _store(root, {f"team{a:02d}": TRACES // AGENTS for a in range(AGENTS)}, text)
    for a in range(AGENTS):
        paths = AgentStore(root, f"team{a:02d}").paths
        conn = search_index.connect(paths)
        search_index.catch_up(paths, conn)
        search_index.reset_vectors(conn, paths, MODEL)
        rowids = [r for (r,) in conn.execute("SELECT rowid FROM rows ORDER BY rowid")]
        rows, new = [], {}
        for rowid, name, _offset, record in search_index.read_records(paths, rowids,
                                                                      search_index.covered_files(conn)):
            h = content_hash(MODEL, embedded_text(name, record))
            rows.append((rowid, h))
            if h not in new:
                v = rng.standard_normal(DIM).astype(np.float32)
                new[h] = (v / np.linalg.norm(v)).tobytes()
        assert search_index.add_vectors(conn, paths, MODEL, DIM, rows, list(new.items()), [rowids[-1]], 0)
        conn.close()


def run() -> list[dict]:
    import psycopg

    from memcli.remote.search import search
    from tests.bench.bench_remote import _memcli
    from tests.bench.bench_search import _Text
    from tests.compact_fixtures import FakeModelServer
    from tests.embed_fixtures import embedder
    from tests.pg_server import PgServer, PgUnavailable, pgvector_bindir

    try:
        server = PgServer(pgvector_bindir()).start()
    except PgUnavailable as exc:
        print(f"    remote vector benchmarks skipped: {exc}")
        return []
    tmp = Path(tempfile.mkdtemp(prefix="memcli-bench-vectors-"))
    model = FakeModelServer(embedder(DIM))
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench-dummy")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        text = _Text()
        root = tmp / "store"
        _embedded_store(root, text)
        bare = tmp / "bare"
        shutil.copytree(root, bare, ignore=shutil.ignore_patterns(".search.*"))
        url, base_url = server.new_database(), server.new_database()
        times = {}
        for name, where, target in (("vectors", root, url), ("bare", bare, base_url)):
            start = time.perf_counter()
            subprocess.run([*_memcli(), "--dir", str(where), "push", "--all", "--to", target], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            times[name] = time.perf_counter() - start
        with psycopg.connect(url, autocommit=True) as conn:
            count, dims = conn.execute("SELECT count(*), min(vector_dims(embedding)) FROM memcli_vectors").fetchone()
            conn.execute("VACUUM ANALYZE")
            size = conn.execute("SELECT pg_total_relation_size('memcli_vectors')").fetchone()[0]
        assert count == TRACES and dims == DIM, (count, dims)
        vocab = text.vocab
        questions = [vocab[5000 + i] if i % 3 == 0 else f"what about {vocab[300 + i]} and {vocab[900 + i]}?"
                     if i % 3 == 1 else vocab[i] for i in range(QUERIES)]

        def timed(**options) -> list[float]:
            out = []
            for q in questions:
                start = time.perf_counter()
                result = search(url, q, all=True, limit=10, **options)
                out.append(time.perf_counter() - start)
                assert result.hybrid == bool(options), result.notes
            return sorted(out)

        search(url, "warm up", all=True, embed_model=MODEL, embed_api_base=model.api_base)   # imports LiteLLM
        hybrid = timed(embed_model=MODEL, embed_api_base=model.api_base)
        words = timed()
        from memcli.search.embed import embed_query

        embeds = []
        for q in questions:
            start = time.perf_counter()
            embed_query(MODEL, model.api_base, q)
            embeds.append(time.perf_counter() - start)
        p = lambda ts, q: ts[int(q * (len(ts) - 1))]
        note = (f"{TRACES:,} traces in {AGENTS} agents, each with a {DIM}-dimension vector ({size / TRACES:,.0f} B a "
                f"vector in the database); exact cosine ranking, no HNSW; the query embedded through LiteLLM "
                f"by a local server (median {statistics.median(embeds) * 1000:.0f} ms of each search)")
        return [
            {"name": f"push {TRACES:,} traces + vectors (vs records alone)", "value": times["vectors"],
             "baseline": times["bare"], "unit": "s", "target": None,
             "note": f"{TRACES / max(times['vectors'] - times['bare'], 1e-9):,.0f} vectors/s on top of the records"},
            {"name": f"search --remote --all hybrid over {TRACES:,}: p50", "value": statistics.median(hybrid),
             "baseline": statistics.median(words), "unit": "s", "target": None,
             "note": note + "; baseline: the same questions by words alone"},
            {"name": f"search --remote --all hybrid over {TRACES:,}: p95", "value": p(hybrid, 0.95),
             "baseline": p(words, 0.95), "unit": "s", "target": None, "note": None},
        ]
    finally:
        model.close()
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
