"""The compaction circuit breaker: ``.compaction.json`` in the agent directory.

    {"consecutive_failures": 3, "last_error": "…", "last_failure_ts": 1772442091.2,
     "last_success_ts": 1772440000.0, "last_compaction_id": "cmp_…",
     "active_after_commit": [inode, size]}

``active_after_commit`` is the identity of the active file right after the last successful
commit: traces before that byte offset were there when it was compacted, so the
provider-reported ``prompt_tokens`` they carry describe a prompt that no longer exists
(:func:`memcli.compaction.policy.latest_prompt_tokens` ignores them).

A failed compaction (no valid summary after the retries, the provider refusing) adds one to
``consecutive_failures``; a successful one resets it. After ``BREAKER_THRESHOLD`` consecutive
failures, ``compact --if-needed`` stops calling the model until a compaction with a model succeeds
or ``--force`` is given (an explicit ``compact`` without ``--if-needed`` always runs); the offline
summary (or a sliding window) is never held back, and its success leaves the count as it is.

``last_error`` is the failure's message with credentials redacted (memcli.redact), as everything
memcli writes.

This is not in ``.state.json``: that file is a cache rebuilt from the JSONL files and cannot hold
facts that are not in them. The file is written atomically under the agent lock; a missing or
unreadable file means "no failures".
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import orjson

from memcli.store import jsonl, layout
from memcli.store.layout import AgentPaths

BREAKER_THRESHOLD = 3
FILE_NAME = layout.BREAKER


@dataclass
class BreakerState:
    consecutive_failures: int = 0
    last_error: str | None = None
    last_failure_ts: float | None = None
    last_success_ts: float | None = None
    last_compaction_id: str | None = None
    active_after_commit: list | None = None

    @property
    def open(self) -> bool:
        return self.consecutive_failures >= BREAKER_THRESHOLD

    def describe(self) -> str:
        return (f"{self.consecutive_failures} consecutive failed compactions"
                + (f" (last: {self.last_error})" if self.last_error else ""))


def breaker_path(paths: AgentPaths):
    return paths.dir / FILE_NAME


def read_breaker(paths: AgentPaths) -> BreakerState:
    try:
        with jsonl.open_read(breaker_path(paths)) as f:
            data = orjson.loads(f.read())
        known = BreakerState.__dataclass_fields__
        return BreakerState(**{k: v for k, v in data.items() if k in known})
    except FileNotFoundError:
        return BreakerState()
    except (orjson.JSONDecodeError, TypeError, ValueError, AttributeError, OSError):
        return BreakerState()


def _write(paths: AgentPaths, state: BreakerState) -> None:
    jsonl.atomic_write_bytes(breaker_path(paths), orjson.dumps(asdict(state)))


def record_failure(paths: AgentPaths, error: str) -> BreakerState:
    """Caller holds the agent lock. ``error`` is stored with its credentials redacted (a
    provider's error may quote the key it refused; docs/secrets.md: nothing reaches disk
    unredacted), then cut: never half a key."""
    from memcli.redact import redact_string

    state = read_breaker(paths)
    state.consecutive_failures += 1
    state.last_error = redact_string(error)[0][:500]
    state.last_failure_ts = time.time()
    _write(paths, state)
    return state


def record_success(paths: AgentPaths, compaction_id: str | None, *, model: bool = True) -> BreakerState:
    """Caller holds the agent lock (so the active file is as the commit left it). ``model``: the
    summary was a model's — only that closes the breaker a failing model opened (an offline
    compaction, which an open breaker does not hold back, says nothing of the model)."""
    import os

    state = read_breaker(paths)
    if model:
        state.consecutive_failures = 0
    state.last_success_ts = time.time()
    if compaction_id:
        state.last_compaction_id = compaction_id
    try:
        st = os.lstat(paths.active)
        state.active_after_commit = [st.st_ino, st.st_size]
    except FileNotFoundError:
        state.active_after_commit = None
    _write(paths, state)
    return state
