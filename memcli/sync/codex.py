"""Codex sessions: ``<home>/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`` and the
archived ones in ``<home>/.codex/archived_sessions/`` (``$CODEX_HOME`` instead of ``~/.codex``
when set). Codex compresses cold rollouts in place to ``rollout-*.jsonl.zst`` (zstd; when it resumes one it writes the ``.jsonl`` back and removes the
``.zst``): a ``.jsonl.zst`` is read decompressed, whole, unless its plain ``.jsonl`` is beside it
(the file Codex itself reads then).

The session id and working directory come from the first line (``session_meta``); a rollout
without one takes its id from the file name. ``~/.codex/history.jsonl`` (the prompt history) is
not a session and is not read.

Resume: ``codex resume <session id>``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Iterator

from memcli.sync import Identity, Session, SessionFile
from memcli.sync._dirs import harness_dir
from memcli.sync._head import ZSTD_SUFFIX, head_values, in_dir, text

FMT = "codex"
_ID_IN_NAME = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl(?:\.zst)?$")


def _rollouts(top: Path) -> list[str]:
    found = []
    for directory, subdirs, names in os.walk(top):
        subdirs.sort()
        present = set(names)
        found.extend(os.path.join(directory, n) for n in sorted(names)
                     if n.startswith("rollout-") and (n.endswith(".jsonl") or (
                         n.endswith(".jsonl" + ZSTD_SUFFIX) and n[:-len(ZSTD_SUFFIX)] not in present)))
    return found


class CodexSource:
    name = "codex"

    def find(self, home: Path) -> Iterator[Session]:
        base = harness_dir(home, ".codex", "CODEX_HOME")
        for top in ("sessions", "archived_sessions"):
            for path in _rollouts(base / top):
                yield self.session_of(path)

    def session_of(self, path: str) -> Session:
        return Session(self.name, [SessionFile(str(path), FMT)])

    def identify(self, session: Session) -> Identity:
        path = session.main.path
        for value in head_values(path):
            payload = value.get("payload") if value.get("type") == "session_meta" else None
            if isinstance(payload, dict) and text(payload.get("id")):
                return Identity(payload["id"], cwd=text(payload.get("cwd")))
            if text(value.get("id")) and "instructions" in value:  # the oldest rollouts
                return Identity(value["id"])
            break
        m = _ID_IN_NAME.search(path)
        return Identity(m.group(1) if m else Path(path).name.split(".")[0])

    def resume_command(self, ident: Identity) -> str | None:
        return in_dir(ident.cwd, f"codex resume {ident.resume_id or ident.session_id}")


SOURCE = CodexSource()
