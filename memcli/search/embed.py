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
nearest records by cosine similarity are ranked by brute force: the vectors file is mapped
(numpy ``memmap``) and multiplied by the query in one matrix product. Measured by
tests/bench/bench_retrieval.py (the figures are in docs/memory-as-tools.md): well under the 0.5 s
budget at 100,000 vectors of 768 dimensions — more records than an agent whose every record is
worth embedding has; an approximate index (HNSW: hnswlib, usearch) would be a second copy of the
vectors to keep in step with every rewrite of the files, for no gain at these sizes.

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


def settings(store, embed_model: str | bool | None, embed_api_base: str | None) -> tuple[str | None, str | None]:
    """(model, api base) for a search: the arguments, else the store's config file; ``False``
    (the snapshot's recall: offline and fast, whatever the config) means lexical only."""
    return settings_in(store.paths.memory_dir, embed_model, embed_api_base)


def settings_in(memory_dir, embed_model: str | bool | None, embed_api_base: str | None
                ) -> tuple[str | None, str | None]:
    """:func:`settings` for the store at ``memory_dir`` (also ``search --remote``'s query model)."""
    if embed_model is False:
        return None, None
    if embed_model is not None:
        if not embed_model.strip():
            raise UsageError("{embed_model} must name a LiteLLM embedding model, e.g. openai/text-embedding-3-small", param="embed_model")
        return embed_model.strip(), embed_api_base
    config = read_config(memory_dir)
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


def embedded_text(name: str, record: dict) -> str:
    """What is embedded for a record of index file ``name``: its indexed text, spaces folded,
    clipped to :data:`TEXT_CHARS` (:func:`content_hash` of it names its vector)."""
    return " ".join(search_index.record_text(name, record).split())[:TEXT_CHARS]


def embed_query(model: str, api_base: str | None, text: str):
    """The unit vector (numpy float32) of one text, not cached: the shared store's query
    (memcli.remote.search). Raises :class:`EmbeddingFailed`."""
    import numpy as np

    vectors, _ = _embed(model, api_base, [text])
    return _unit(np, vectors)[0]


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


def _unit(np, vectors):
    m = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (m / norms).astype(np.float32)


def nearest(store, conn, text: str, model: str, api_base: str | None, names, since, until, pool: int,
            notes: list[str]) -> list[int] | None:
    """The rowids of the ``pool`` records nearest the query, nearest first; None (with a note)
    when the model failed."""
    import numpy as np

    paths = store.paths
    try:
        stored_model, dim, _ = search_index.vector_state(conn)
        if stored_model != model:
            if stored_model is not None:
                notes.append(f"embedding model changed from {stored_model} to {model}: the vectors are rebuilt")
            search_index.reset_vectors(conn, paths, model)
            dim = None
        query, tokens = _query_vector(np, conn, paths, model, api_base, text, dim)
        if dim is not None and query.shape[0] != dim:
            notes.append(f"{model} now answers with {query.shape[0]}-dimension vectors, not {dim}: "
                         "the vectors are rebuilt")
            search_index.reset_vectors(conn, paths, model)
        dim = query.shape[0]
        if tokens is not None:     # a new query: cached like any text (the next same search asks nothing)
            _store(conn, paths, model, dim, [], [(content_hash(model, text), query.tobytes())], [], tokens)
        done = catch_up(np, store, conn, model, api_base, names, dim)
        left = search_index.unembedded_count(conn, names)
        if left:
            notes.append(f"embedded {done:,} records with {model}; {left:,} more on later searches "
                         "(ranked by words alone until then)")
    except EmbeddingFailed as exc:
        notes.append(f"embedding model {model} failed ({exc}): lexical results only")
        return None
    rowids, slots = search_index.vector_slots(conn, names, since, until)
    if not rowids:
        return []
    try:
        mapped = np.memmap(search_index.vectors_path(paths), dtype=np.float32, mode="r")
    except (OSError, ValueError):
        return []
    count = mapped.shape[0] // dim
    sims_all = mapped[:count * dim].reshape(count, dim) @ query
    slots_a = np.asarray(slots, dtype=np.int64)
    inside = slots_a < count
    sims = np.where(inside, sims_all[np.minimum(slots_a, max(count - 1, 0))], -np.inf)
    k = min(pool, len(rowids))
    top = np.argpartition(-sims, k - 1)[:k]
    top = top[np.argsort(-sims[top], kind="stable")]
    return [rowids[i] for i in top.tolist() if np.isfinite(sims[i])]


def _store(conn, paths, model, dim, rows, new, covered, tokens) -> None:
    if not search_index.add_vectors(conn, paths, model, dim, rows, new, covered, tokens):
        raise EmbeddingFailed("another search changed the embedding model or its dimensions meanwhile")


def _query_vector(np, conn, paths, model: str, api_base: str | None, text: str, dim: int | None):
    """(the query's unit vector, tokens spent: None when it came from the cache)."""
    h = content_hash(model, text)
    if dim is not None:
        slot = search_index.cached_slots(conn, [h]).get(h)
        data = search_index.read_vector(paths, slot, dim) if slot is not None else None
        if data is not None:
            return np.frombuffer(data, dtype=np.float32), None
    vectors, tokens = _embed(model, api_base, [text])
    return _unit(np, vectors)[0], tokens


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
            text = embedded_text(name, record)
            if text:
                texts[rowid] = (content_hash(model, text), text)
        cached = search_index.cached_slots(conn, {h for h, _ in texts.values()})
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
        _store(conn, store.paths, model, dim, [(r, h) for r, (h, _) in texts.items()], new, marks.values(), tokens)
        done += len(rowids)
    return done
