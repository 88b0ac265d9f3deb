"""``memcli doctor AGENT --secrets [--repair]``: find (and redact) secrets already on disk.

For a store written before redaction covered a format, with ``--no-redact``, or by another tool.
Every data file of the agent is read line by line — the traces (active and archive), episodic
and semantic memory, working-memory files (``memory_files.jsonl``), any other ``*.jsonl`` and the
``*.corrupt-lines`` doctor set aside — and each line is put through :mod:`memcli.redact` as
ingest would (structural fields such as ids are never touched). A finding names ``file:line``
and the kinds found there, never the secret.

``--repair`` rewrites the files that hold findings through the store's rewrite path
(:func:`memcli.store.rewrite.rewrite_agent_files`: under the agent lock, journaled, temp file +
``os.replace``): a line with a secret is written again with its secrets replaced, every other
line stays byte for byte. Working-memory lines keep their length in characters (markers padded
with ``*``), because later edits in that log address the text by character offset. The search
index and the state cache notice the new files (new inodes) and rebuild.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

import orjson

from memcli.redact import STRUCTURAL_FIELDS, candidate_lines, may_hold_a_secret, redact_record, redact_string
from memcli.store import jsonl
from memcli.store.agent import AgentStore
from memcli.store.layout import DATA_FILES, MEMORY_FILES
from memcli.store.repair import QUARANTINE_SUFFIX

_MEMORY_FILE_FIELDS = frozenset({"op", "path", "new_path", "at", "cut", "ts"})
_SKIP = STRUCTURAL_FIELDS | _MEMORY_FILE_FIELDS | {"ts"}
SCAN_LINES = 512   # lines pre-checked for secrets at once


@dataclass
class SecretFinding:
    file: str
    line: int
    kinds: Counter
    fixed: bool = False

    def to_json(self) -> dict:
        return {"file": self.file, "line": self.line, "secrets": sum(self.kinds.values()),
                "kinds": dict(sorted(self.kinds.items())), "fixed": self.fixed}

    def describe(self) -> str:
        kinds = ", ".join(f"{kind} {n}" if n > 1 else kind for kind, n in sorted(self.kinds.items()))
        n = sum(self.kinds.values())
        return f"{n} secret{'s' if n != 1 else ''} ({kinds})"


def data_files(store: AgentStore) -> list[Path]:
    """The agent's files that hold records, the known ones first."""
    paths = store.paths
    known = [paths.dir / name for name in DATA_FILES]
    others = sorted(p for p in paths.dir.iterdir()
                    if p.is_file() and not p.name.startswith(".") and p not in known
                    and (p.name.endswith(".jsonl") or p.name.endswith(QUARANTINE_SUFFIX)))
    return [p for p in known if p.is_file()] + others


def redact_line(path: Path, raw: bytes) -> tuple[bytes, Counter]:
    """(the line with its secrets replaced, what was replaced); the line itself when clean.
    A line that is not a JSON object (set aside by doctor) is redacted as text."""
    if not may_hold_a_secret(raw):
        return raw, Counter()
    return _redact_candidate(path, raw)


def _redact_candidate(path: Path, raw: bytes) -> tuple[bytes, Counter]:
    keep_length = path.name == MEMORY_FILES   # working memory's log: edits address the text by offset
    end = b"\n" if raw.endswith(b"\n") else b""
    try:
        record = orjson.loads(raw)
    except orjson.JSONDecodeError:
        record = None
    if isinstance(record, dict):
        counts = redact_record(record, keep_length=keep_length, skip=_SKIP)
        return (orjson.dumps(record) + end if counts else raw), counts
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw, Counter()
    new, counts = redact_string(text, keep_length=keep_length)
    return (new.encode("utf-8") if counts else raw), counts


def _scan_file(path: Path) -> Iterator[SecretFinding]:
    try:
        f = jsonl.open_read(path)
    except FileNotFoundError:
        return
    with f:
        number = 0
        while True:
            lines = list(islice(f, SCAN_LINES))
            if not lines:
                return
            for i in candidate_lines(lines):   # one pre-check of the whole batch, as ingest does
                _, counts = _redact_candidate(path, lines[i])
                if counts:
                    yield SecretFinding(str(path), number + i + 1, counts)
            number += len(lines)


def scan(store: AgentStore) -> list[SecretFinding]:
    """Every line of the agent's data files that holds a secret. Reads only."""
    store.require()
    return [finding for path in data_files(store) for finding in _scan_file(path)]


def repair(store: AgentStore) -> tuple[list[SecretFinding], list[str], list[SecretFinding]]:
    """Redact in place every file with a finding. Returns (findings before, what was done,
    findings after: none unless the files changed meanwhile)."""
    from memcli.store.rewrite import rewrite_agent_files

    before = scan(store)
    with_findings = {f.file for f in before}
    files = [path for path in data_files(store) if str(path) in with_findings]
    done: Counter = Counter()

    def transform_for(path: Path):
        def transform(number: int, raw: bytes) -> bytes:
            new, counts = redact_line(path, raw)
            if counts:
                done[path.name, "lines"] += 1
                done[path.name, "secrets"] += sum(counts.values())
            return new
        return transform

    notes = rewrite_agent_files(store, {path: transform_for(path) for path in files})
    rewritten = [f"{path.name}: redacted {done[path.name, 'secrets']:,} secret{'s' if done[path.name, 'secrets'] != 1 else ''}"
                 f" on {done[path.name, 'lines']:,} line{'s' if done[path.name, 'lines'] != 1 else ''}"
                 for path in files if done[path.name, "lines"]]
    notes = [n for n in notes if "state cache" not in n] + rewritten + [n for n in notes if "state cache" in n]
    after = scan(store)
    remaining = {(f.file, f.line) for f in after}
    for finding in before:
        finding.fixed = (finding.file, finding.line) not in remaining
    return before, notes, after


@dataclass
class SecretReport:
    """``doctor --secrets`` of one agent, shaped as :class:`memcli.inspect.doctor.DoctorReport`:
    the findings (``fixed`` once redacted), what the repair did, and the secrets left."""
    agent: str
    findings: list
    repaired: bool
    actions: list
    left: list

    def remaining(self, *, strict: bool = False) -> list:
        return self.left


def check(store: AgentStore, *, fix: bool = False) -> SecretReport:
    """:func:`scan` (or with ``fix``, :func:`repair`) as one report."""
    if fix:
        findings, actions, left = repair(store)
        return SecretReport(store.agent_id, findings, True, actions, left)
    findings = scan(store)
    return SecretReport(store.agent_id, findings, False, [], findings)
