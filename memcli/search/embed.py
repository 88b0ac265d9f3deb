"""Embeddings for hybrid search: any LiteLLM embedding model (``openai/text-embedding-3-small``,
``ollama/nomic-embed-text`` ...), chosen by ``search --embed-model M`` (and ``--embed-api-base``)
or per store in ``<memory dir>/config.json``::

    {"embed_model": "ollama/nomic-embed-text", "embed_api_base": "http://localhost:11434"}

Without a model search is lexical and nothing here runs (no numpy, no LiteLLM import).

With one, each search (never ingest) first embeds what the search index holds and the vectors
do not yet (:func:`memcli.store.search_index.unembedded`, oldest first, at most
:data:`PER_SEARCH` texts per search, :data:`BATCH` per request), each record's indexed text
clipped to :data:`TEXT_CHARS`; a text whose content hash (model + text, BLAKE2b) is already in the
cache is not sent again (a compaction that moves a trace to the archive costs nothing). The
vectors are stored unit-length float32 in the search index (``vcache``/``vrows``: the store
writes them) and the tokens the provider reports are summed (``stats`` shows them).

The query is embedded too (cached the same way), and the :data:`memcli.search.engine.POOL`
nearest records by cosine similarity are ranked by brute force: one matrix product over every
stored vector with numpy. Measured (tests/bench/bench_retrieval.py notes): 10,000 vectors of 768
dimensions in a few milliseconds, 100,000 in well under the 0.5 s budget — the sizes an agent
whose every record is embedded reaches; an approximate index (HNSW) would add a second copy of
the vectors to keep in step with every rewrite of the files, for no gain at these sizes.

Failures never fail a search: a model that errs or cannot be reached leaves the lexical ranking
and one note. Another model than the one the vectors were made with, or the same model
answering with another number of dimensions, empties the vectors and embeds again, with a note.
"""

from __future__ import annotations

import os
from hashlib import blake2b

import orjson

from memcli.errors import UsageError
from memcli.store import search_index

CONFIG = "config.json"
BATCH = 64
PER_SEARCH = 2_000
TEXT_CHARS = 2_000
TIMEOUT = 30.0


class EmbeddingFailed(Exception):
    pass


def settings(store, embed_model: str | None, embed_api_base: str | None) -> tuple[str | None, str | None]:
    """(model, api base) for a search: the arguments, else the store's config file."""
    if embed_model is not None:
        if not embed_model.strip():
            raise UsageError("--embed-model must name a LiteLLM embedding model, e.g. openai/text-embedding-3-small")
        return embed_model.strip(), embed_api_base
    config = read_config(store.paths.memory_dir)
    model = config.get("embed_model")
    return (model or None), embed_api_base or config.get("embed_api_base") or None


def read_config(memory_dir) -> dict:
    path = os.path.join(memory_dir, CONFIG)
    try:
        with open(path, "rb") as f:
            data = orjson.loads(f.read())
    except FileNotFoundError:
        return {}
    except (OSError, orjson.JSONDecodeError) as exc:
        raise UsageError(f"{path}: not a readable JSON object ({exc})") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: expected a JSON object, got {type(data).__name__}")
    for key in ("embed_model", "embed_api_base"):
        value = data.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise UsageError(f"{path}: {key!r} must be a non-empty string, got {value!r}")
    return data


def content_hash(model: str, text: str) -> bytes:
    return blake2b(f"{model}\0{text}".encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _embed(model: str, api_base: str | None, texts: list[str]) -> tuple[list[list[float]], int]:
    """Vectors for ``texts`` (in order) and the tokens the provider reported."""
    from memcli.tokens import import_litellm

    litellm = import_litellm()
    kwargs = dict(model=model, input=texts, timeout=TIMEOUT, num_retries=0, max_retries=0)
    if api_base:
        kwargs["api_base"] = api_base
    try:
        response = litellm.embedding(**kwargs)
        data = sorted(response.data, key=lambda d: d["index"] if isinstance(d, dict) else d.index)
        vectors = [d["embedding"] if isinstance(d, dict) else d.embedding for d in data]
    except Exception as exc:  # any provider, any failure: the search goes on lexically
        text = " ".join(str(exc).split())
        raise EmbeddingFailed(f"{type(exc).__name__}: {text[:160]}") from None
    if len(vectors) != len(texts) or not vectors or not all(isinstance(v, list) and v for v in vectors):
        raise EmbeddingFailed(f"expected {len(texts)} vectors, got {len(vectors)}")
    dims = {len(v) for v in vectors}
    if len(dims) != 1:
        raise EmbeddingFailed(f"vectors of different lengths ({sorted(dims)})")
    usage = getattr(response, "usage", None)
    tokens = getattr(usage, "prompt_tokens", None) or getattr(usage, "total_tokens", None) or 0
    return vectors, int(tokens)


def _unit(np, vectors) -> bytes:
    m = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (m / norms).astype(np.float32)


def nearest(store, conn, text: str, model: str, api_base: str | None, names, since, until, pool: int,
            notes: list[str]) -> list[int] | None:
    """The rowids of the ``pool`` records nearest the query, nearest first; None (with a note)
    when the model failed."""
    import numpy as np

    try:
        stored_model, dim, _ = search_index.vector_state(conn)
        if stored_model != model:
            if stored_model is not None:
                notes.append(f"embedding model changed from {stored_model} to {model}: the vectors are rebuilt")
            search_index.reset_vectors(conn, model)
            dim = None
        query = _query_vector(np, conn, model, api_base, text)
        if dim is not None and query.shape[0] != dim:
            notes.append(f"{model} now answers with {query.shape[0]}-dimension vectors, not {dim}: "
                         "the vectors are rebuilt")
            search_index.reset_vectors(conn, model)
            _store(conn, model, query.shape[0], [], [(content_hash(model, text), query.tobytes())], [], 0)
        done = catch_up(np, store, conn, model, api_base, names, query.shape[0])
        left = search_index.unembedded_count(conn, names)
        if left:
            notes.append(f"embedded {done:,} records with {model}; {left:,} more on later searches "
                         "(ranked by words alone until then)")
    except EmbeddingFailed as exc:
        notes.append(f"embedding model {model} failed ({exc}): lexical results only")
        return None
    rowids, blob = search_index.load_vectors(conn, names, since, until)
    if not rowids:
        return []
    matrix = np.frombuffer(blob, dtype=np.float32).reshape(len(rowids), -1)
    sims = matrix @ query
    k = min(pool, len(rowids))
    top = np.argpartition(-sims, k - 1)[:k]
    top = top[np.argsort(-sims[top], kind="stable")]
    return [rowids[i] for i in top.tolist()]


def _store(conn, model, dim, rows, new, covered, tokens) -> None:
    if not search_index.add_vectors(conn, model, dim, rows, new, covered, tokens):
        raise EmbeddingFailed("another search switched the embedding model meanwhile")


def _query_vector(np, conn, model: str, api_base: str | None, text: str):
    h = content_hash(model, text)
    cached = search_index.cached_vectors(conn, [h]).get(h)
    if cached is not None:
        return np.frombuffer(cached, dtype=np.float32)
    vectors, tokens = _embed(model, api_base, [text])
    vec = _unit(np, vectors)[0]
    stored_dim = search_index.vector_state(conn)[1]
    if stored_dim is None or stored_dim == vec.shape[0]:
        _store(conn, model, vec.shape[0], [], [(h, vec.tobytes())], [], tokens)
    return vec


def catch_up(np, store, conn, model: str, api_base: str | None, names, dim: int) -> int:
    """Embed up to :data:`PER_SEARCH` records the vectors do not cover yet; returns how many."""
    done = 0
    expected = search_index.covered_files(conn)
    while done < PER_SEARCH:
        rowids = search_index.unembedded(conn, names, min(BATCH * 4, PER_SEARCH - done))
        if not rowids:
            break
        texts: dict[int, tuple[bytes, str]] = {}
        for rowid, name, _offset, record in search_index.read_records(store.paths, rowids, expected):
            if record is None:
                return done  # the file was rewritten: the next search catches up
            text = " ".join(search_index.record_text(name, record).split())[:TEXT_CHARS]
            if text:
                texts[rowid] = (content_hash(model, text), text)
        cached = search_index.cached_vectors(conn, {h for h, _ in texts.values()})
        todo = list(dict.fromkeys((h, t) for h, t in texts.values() if h not in cached))
        new: list[tuple[bytes, bytes]] = []
        tokens = 0
        for i in range(0, len(todo), BATCH):
            chunk = todo[i:i + BATCH]
            vectors, used = _embed(model, api_base, [t for _, t in chunk])
            tokens += used
            unit = _unit(np, vectors)
            if unit.shape[1] != dim:
                raise EmbeddingFailed(f"{model} answered with {unit.shape[1]}-dimension vectors for the records "
                                      f"and {dim} for the query")
            new += [(h, unit[j].tobytes()) for j, (h, _) in enumerate(chunk)]
        marks: dict[str, int] = {}
        for rowid in rowids:
            marks[search_index.split_rowid(rowid)[0]] = rowid
        _store(conn, model, dim, [(r, h) for r, (h, _) in texts.items()], new, marks.values(), tokens)
        done += len(rowids)
    return done
