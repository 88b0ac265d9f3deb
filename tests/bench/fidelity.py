"""Compaction fidelity: needed-later identifier recall against a harness's own compaction.

A session that an agent harness compacted itself (Claude Code: a ``compact_boundary`` system line
and the ``isCompactSummary`` user line after it; Codex: a ``compacted`` item) is split at the
boundary. The identifiers that appear before it AND are used again after it (file paths, shell
commands' programs and subcommands are not counted, but paths, CamelCase / snake_case / dotted
names, error names, test names, ids with digits, URLs) are what the agent needed next. We count
how many of them survive:

* in the harness's own summary text (the harness's recall);
* in memcli's working snapshot after ingesting the part before the boundary and running
  ``compact --target-tokens T --keep-steps 0 --tail-turns 0`` with ``T`` = the harness summary's
  token count (memcli's counter) plus what the snapshot carries anyway (system prompt, reply
  priming): memcli's recall at the same budget. The snapshot's real token count is reported too.

The identifier extractor here is deliberately not the summarizer's own (``memcli.compaction.
offline.identifiers``): the benchmark must not grade memcli with its own ruler. Whether the last
user ask before the boundary survives verbatim (whitespace aside) is reported for both.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

import orjson

_IDENT = re.compile(
    r"https?://[^\s\"'<>()\[\]{}`\\]+"                                  # URLs
    r"|(?:~?/|\.{1,2}/)?(?:[\w.@-]+/)+[\w.@-]+"                         # paths with a slash
    r"|[\w-]+\.(?:py|js|ts|tsx|jsx|json|jsonl|md|toml|yaml|yml|go|rs|ex|exs|heex|java|rb|sh|sql|css|html|lock|cfg|ini|txt)\b"
    r"|\b[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+\b"         # dotted names (Module.fun)
    r"|\b[A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+\b"                        # CamelCase
    r"|\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b"                               # snake_case
    r"|\b[a-z]+[A-Z][A-Za-z0-9]*\b"                                     # camelCase
    r"|\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b"                               # ENV_VARS
    r"|\b(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[A-Za-z0-9]+(?:-[A-Za-z0-9]+)+\b"  # ids: spotter-gqc1, abc-123
    r"|\b[0-9a-f]{7,40}\b")                                             # hashes
_DULL = {"e.g", "i.e", "etc.", "self.assert", "os.path"}


def idents(text: str) -> set[str]:
    """The identifiers of ``text`` (module docstring), trailing punctuation stripped."""
    out = set()
    for m in _IDENT.finditer(text):
        value = m.group(0).rstrip(".,;:!?\\/")
        if len(value) >= 4 and value not in _DULL and not value.isdigit():
            out.add(value)
    return out


def _texts(value) -> list[str]:
    """Every string inside a parsed JSON value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _texts(v)]
    if isinstance(value, list):
        return [t for v in value for t in _texts(v)]
    return []


@dataclass
class Compacted:
    """A harness-compacted session split at its boundary."""

    name: str
    fmt: str                 # memcli --from
    before: list             # raw lines before the boundary
    after: list              # raw lines after the summary
    summary: str             # the harness's own summary
    last_ask: str            # the last user ask before the boundary


def _cc_ask(value) -> str | None:
    if value.get("type") != "user" or value.get("isMeta") or value.get("isSidechain") or value.get("isCompactSummary"):
        return None
    content = (value.get("message") or {}).get("content")
    if isinstance(content, str):
        text = content
    elif isinstance(content, list) and content and all(isinstance(b, dict) and b.get("type") == "text" for b in content):
        text = "\n".join(b.get("text", "") for b in content)
    else:
        return None
    return None if text.startswith(("<local-command", "<command-", "[Request interrupted", "Caveat:")) else text


def split_session(path: Path) -> Compacted | None:
    """The session at its FIRST harness compaction, or None when it has none (or no text)."""
    lines = path.read_bytes().splitlines()
    values = []
    for raw in lines:
        try:
            values.append(orjson.loads(raw))
        except orjson.JSONDecodeError:
            values.append(None)
    for i, value in enumerate(values):
        if not isinstance(value, dict):
            continue
        if value.get("type") == "system" and value.get("subtype") == "compact_boundary":
            for j in range(i + 1, min(i + 5, len(values))):
                v = values[j]
                if isinstance(v, dict) and v.get("isCompactSummary"):
                    summary = "\n".join(_texts((v.get("message") or {}).get("content")))
                    asks = [a for a in (_cc_ask(x) for x in values[:i] if isinstance(x, dict)) if a]
                    return Compacted(path.stem, "claude-code", lines[:i], lines[j + 1:], summary,
                                     asks[-1] if asks else "")
        if value.get("type") == "compacted":
            summary = (value.get("payload") or {}).get("message") or ""
            if not summary.strip() or summary.startswith("[REDACTED"):
                return None
            asks = [p.get("message", "") for v in values[:i] if isinstance(v, dict)
                    for p in [v.get("payload") or {}] if v.get("type") == "event_msg" and p.get("type") == "user_message"]
            return Compacted(path.stem, "codex", lines[:i], lines[i + 1:], summary, asks[-1] if asks else "")
    return None


_CALL_ID_KEYS = {"id", "tool_use_id", "call_id"}


def _conversation(value):
    """What the model read and wrote in a transcript line: the message (Claude Code) or the
    payload (Codex), without the harness's bookkeeping (uuids, timestamps, cwd) or call ids."""
    if not isinstance(value, dict):
        return None
    inner = value.get("message") if "message" in value and isinstance(value.get("message"), dict) else value.get("payload")
    if not isinstance(inner, dict):
        return None
    content = inner.get("content", inner)

    def strip(v):
        if isinstance(v, dict):
            return {k: strip(x) for k, x in v.items() if k not in _CALL_ID_KEYS and k != "type"}
        if isinstance(v, list):
            return [strip(x) for x in v]
        return v
    return strip(content)


def needed_later(session: Compacted) -> set[str]:
    """Identifiers present before the boundary and used again after it."""
    def of(lines) -> set:
        out = set()
        for raw in lines:
            try:
                out |= idents("\n".join(_texts(_conversation(orjson.loads(raw)))))
            except orjson.JSONDecodeError:
                continue
        return out
    return of(session.before) & of(session.after)


def _norm(text: str) -> str:
    return " ".join(text.split())


@dataclass
class Fidelity:
    name: str
    needed: int
    harness_recall: float
    memcli_recall: float
    harness_tokens: int
    memcli_tokens: int
    target_tokens: int
    harness_last_ask: bool
    memcli_last_ask: bool


def measure(session: Compacted, work: Path | None = None) -> Fidelity:
    """Ingest ``session.before``, compact it to the harness summary's token count, and compare."""
    from memcli.api import Memory
    from memcli.snapshot.assemble import working_counter
    from memcli.snapshot.views import TokenMeter

    needed = needed_later(session)
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        src = Path(tmp) / f"{session.name}.jsonl"
        src.write_bytes(b"\n".join(session.before) + b"\n")
        agent = Memory(Path(tmp) / "mem").agent("s")
        agent.ingest(src, session.fmt)
        harness_tokens = TokenMeter(working_counter()).text(session.summary)
        empty = Memory(Path(tmp) / "empty").agent("e")   # what a snapshot carries with no trace
        empty.ingest([{"trace_type": "user", "content": "x"}], "native")
        floor = empty.snapshot(full=True).tokens - TokenMeter(working_counter()).text("x")
        target = harness_tokens + max(floor, 0)
        try:
            agent.compact(target_tokens=target, keep_steps=0, tail_turns=0)
        except Exception as exc:   # an unmeetable target: say so in the figures, do not hide it
            raise RuntimeError(f"{session.name}: compact to {target} tokens failed: {exc}") from exc
        snap = agent.snapshot(full=True)
        text = "\n".join(_texts(orjson.loads(orjson.dumps(snap.payload))))
    found_memcli = {i for i in needed if i in text}
    found_harness = {i for i in needed if i in session.summary}
    n = max(len(needed), 1)
    ask = _norm(session.last_ask)
    return Fidelity(session.name, len(needed), len(found_harness) / n, len(found_memcli) / n, harness_tokens,
                    snap.tokens, target, bool(ask) and ask in _norm(session.summary),
                    bool(ask) and ask in _norm(text))
