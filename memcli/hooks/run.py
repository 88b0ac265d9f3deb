"""``memcli hook HARNESS EVENT``: what a harness's hook entry runs, once per event.

Input: the hook payload, one JSON object on stdin (``session_id``, ``transcript_path``, ``cwd``,
``hook_event_name`` and the event's own fields). Steps:

1. the agent: ``--agent`` when the entry fixes one, else the name ``memcli sync`` gives the
   session (:func:`memcli.sync.naming.session_agent_id`: ``<harness>.<project>.<session>``), so
   the hooks and ``sync`` fill the same agent;
2. every event imports the transcript (:func:`import_transcript`): what the agent lacks is
   appended, what it has is skipped by id, a line still being written waits for the next event;
3. a ``context`` event (session start after compaction or on resume) then returns the memory to
   give back (:mod:`memcli.hooks.context`) as the one JSON document the harnesses read:
   ``{"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": TEXT}}``.
   Import events return "" (nothing on stdout: Stop and PreCompact output could steer the model).

Failure is never the user's problem: every error here is a :class:`HookFailed` (exit 1, one line
on stderr — a non-blocking error for all three harnesses; exit 2 would block Claude Code's Stop
or compaction, or force a Gemini retry) and nothing is written for a bad payload. No agent lock
is waited for longer than :data:`LOCK_WAIT` seconds.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from memcli.errors import MemcliError
from memcli.hooks.context import DEFAULT_MAX_CHARS
from memcli.hooks.harnesses import CONTEXT
from memcli.hooks.harnesses import harness as find_harness

LOCK_WAIT = 5.0


class HookFailed(MemcliError):
    """A hook that could not do its job: exit 1, never 2 (exit 2 blocks the harness)."""


@dataclass
class HookResult:
    agent: str
    event: str
    imported: int = 0          # traces appended
    already: int = 0           # traces the agent had
    output: str = ""           # what goes to stdout ("" = nothing)
    context_chars: int = 0


def parse_payload(payload: bytes) -> dict:
    import orjson

    if not payload.strip():
        raise HookFailed("the hook payload is empty (expected one JSON object on stdin)")
    try:
        data = orjson.loads(payload)
    except orjson.JSONDecodeError as exc:
        raise HookFailed(f"the hook payload is not JSON ({str(exc).split(':')[0]})") from None
    if not isinstance(data, dict):
        raise HookFailed("the hook payload is not a JSON object")
    return data


def transcript_of(data: dict) -> Path:
    raw = data.get("transcript_path")
    if not isinstance(raw, str) or not raw.strip():
        raise HookFailed("the hook payload has no transcript_path")
    path = Path(os.path.expanduser(raw))
    if not path.is_absolute() and isinstance(data.get("cwd"), str):
        path = Path(data["cwd"]) / path
    if not path.is_file():
        raise HookFailed(f"transcript {raw} not found")
    return path


def agent_of(data: dict, harness: str, agent: str | None) -> str:
    from memcli.store.layout import validate_agent_id
    from memcli.sync.naming import session_agent_id

    if agent:
        return validate_agent_id(agent)
    session = data.get("session_id")
    if not isinstance(session, str) or not session.strip():
        raise HookFailed("the hook payload has no session_id (give --agent NAME to name the agent)")
    cwd = data.get("cwd") if isinstance(data.get("cwd"), str) else None
    return session_agent_id(harness, session, cwd=cwd)


def import_transcript(memory_dir: Path, agent: str, path: Path, fmt: str):
    """Bring ``agent`` up to date with the transcript ``path``: only what it lacks is appended
    (ids make a re-read idempotent), a torn last line is left for the next call. Returns the
    :class:`memcli.ingest.pipeline.IngestResult`."""
    from memcli.ingest.api import ingest

    return ingest(memory_dir, agent, path, fmt=fmt)


def run_hook(memory_dir: Path, harness: str, event: str, payload: bytes, *, agent: str | None = None,
             max_chars: int = DEFAULT_MAX_CHARS) -> HookResult:
    """Do what ``memcli hook HARNESS EVENT`` does (module docstring); every failure is HookFailed."""
    try:
        return _run(memory_dir, harness, event, payload, agent, max_chars)
    except HookFailed:
        raise
    except MemcliError as exc:
        raise HookFailed(exc.message) from None
    except OSError as exc:
        raise HookFailed(f"{exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else "")) from None


def _run(memory_dir, harness_name, event_name, payload, agent, max_chars) -> HookResult:
    from memcli.store.agent import AgentStore
    from memcli.store.lock import waiting_at_most

    harness = find_harness(harness_name)
    event = harness.event(event_name)
    if max_chars < 200:
        raise HookFailed(f"--max-chars must be at least 200, got {max_chars}")
    data = parse_payload(payload)
    path = transcript_of(data)
    agent_id = agent_of(data, harness.name, agent)
    result = HookResult(agent_id, event.name)
    with waiting_at_most(LOCK_WAIT):
        ingested = import_transcript(memory_dir, agent_id, path, harness.importer)
        result.imported, result.already = ingested.appended, ingested.duplicates
        if event.job == CONTEXT:
            from memcli.hooks.context import session_context

            text = session_context(AgentStore(memory_dir, agent_id), memory_dir, max_chars=max_chars)
            if text:
                import orjson

                result.context_chars = len(text)
                result.output = orjson.dumps({"hookSpecificOutput": {
                    "hookEventName": event.name, "additionalContext": text}}).decode() + "\n"
    return result
