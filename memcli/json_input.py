"""JSON text as agent harnesses write it: strict JSON, save for lone UTF-16 surrogates.

A leaf module (it imports only orjson): every reader of input — ``ingest``'s lines, array
elements and documents, the heads ``sync`` identifies sessions by, Gemini CLI, opencode and
Cursor documents — reads JSON through it, so importing it costs a ``sync`` nothing.

Input JSON written by a JavaScript harness may hold a lone UTF-16 surrogate escape
(``"\\ud83d"`` with no low half: Claude Code before 2.1.132 cut a tool error inside an emoji;
``JSON.stringify`` writes such a string as it is). orjson refuses the whole text;
:func:`well_formed_json` reads it with each lone surrogate escape replaced by ``\\ufffd`` and
orjson reading the text again, so the rest of it reads exactly as before — as Claude Code itself
repairs such a session on load (and as JavaScript's ``String.prototype.toWellFormed`` does) — and
one split emoji does not cost the line, or a whole all-or-nothing import. A text with any other
fault is refused as orjson refuses it. Hot loops call ``orjson.loads`` themselves and
:func:`well_formed_json` only on its error path; the others call :func:`loads`.
"""

from __future__ import annotations

import re
from functools import lru_cache

import orjson


@lru_cache(maxsize=1)
def _surrogate_escapes() -> re.Pattern:
    # an escaped backslash (skipped whole, so what follows it is no escape), a surrogate pair, or a
    # lone surrogate escape: scanned left to right, only the last is replaced (compiled on the
    # rare path that needs it, not at import)
    return re.compile(rb"\\\\|\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|"
                      rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _replacement(match: re.Match) -> bytes:
    escape = match.group()
    return b"\\ufffd" if len(escape) == 6 else escape


def well_formed_json(raw: bytes | str, error: Exception):
    """The value of the JSON text ``raw`` that orjson refused with ``error`` when its only fault
    is a lone UTF-16 surrogate escape: each such escape (in keys too) replaced by ``\\ufffd``
    and the text read by orjson again (module docstring); None when it has another fault (then
    ``error`` is the one to report)."""
    if "surrogate" not in str(error):
        return None
    if isinstance(raw, str):   # (surrogatepass: a str holding a surrogate itself is refused below, not a crash)
        raw = raw.encode("utf-8", "surrogatepass")
    try:
        return orjson.loads(_surrogate_escapes().sub(_replacement, raw))
    except orjson.JSONDecodeError:
        return None


def loads(raw: bytes | str):
    """``orjson.loads(raw)``, a lone surrogate escape replaced (:func:`well_formed_json`); any
    other fault raises orjson's error for ``raw`` as given."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        value = well_formed_json(raw, exc)
        if value is None:
            raise
        return value
