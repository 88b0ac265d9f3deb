"""A deterministic embedding model for the hybrid-search tests, served by the local
OpenAI-compatible server of tests/compact_fixtures.py (``FakeModelServer``), which LiteLLM reaches
through its real HTTP path as ``model="openai/<name>", api_base=server.api_base``.

:func:`embedder` answers ``POST /v1/embeddings``: each input is a bag of *concepts* — every word
(lowercased, letters and digits) is mapped through ``synonyms`` to a concept, and each concept
adds 1 to one of ``dim`` dimensions (a CRC32 of the concept). So "automobile" and "car" embed
alike when the synonyms say so, which no lexical index can know. ``encoding_format: "base64"``
(what the OpenAI SDK asks for by default) is answered as base64 float32, like the real API.
"""

from __future__ import annotations

import base64
import re
import struct
import zlib

WORD = re.compile(r"[a-z0-9]+")


def vector(text: str, dim: int, synonyms: dict[str, str]) -> list[float]:
    out = [0.0] * dim
    for word in WORD.findall(text.lower()):
        concept = synonyms.get(word, word)
        out[zlib.crc32(concept.encode()) % dim] += 1.0
    return out


def embedder(dim: int = 64, synonyms: dict[str, str] | None = None, *, fail: int | None = None,
             dims=None):
    """A responder for ``FakeModelServer``: ``fail`` is an HTTP status to answer every request
    with; ``dims`` a callable (request index -> dimensions) to change them between requests."""
    synonyms = synonyms or {}

    def respond(body: dict, index: int):
        if fail is not None:
            return fail, {"error": {"message": "model overloaded", "type": "server_error", "code": fail}}, 0
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        n = dims(index) if dims else dim
        data = []
        for i, text in enumerate(inputs):
            vec = vector(text, n, synonyms)
            if body.get("encoding_format") == "base64":
                vec = base64.b64encode(struct.pack(f"<{n}f", *vec)).decode()
            data.append({"object": "embedding", "index": i, "embedding": vec})
        tokens = sum(len(WORD.findall(t.lower())) for t in inputs)
        return 200, {"object": "list", "data": data, "model": body.get("model"),
                     "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}, 0

    return respond
