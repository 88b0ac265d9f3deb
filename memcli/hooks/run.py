"""``memcli hook HARNESS EVENT``: what a harness's hook entry runs, once per event.

Input: the hook payload, one JSON object on stdin (``session_id``, ``transcript_path``, ``cwd``,
``hook_event_name`` and the event's own fields). Steps:

1. every event imports the transcript (:func:`import_transcript`). For a harness ``memcli sync``
   reads (all three) this is sync's own incremental import of the session
   (:func:`memcli.sync.engine.import_session`): the same agent name, the same per-file offsets
   kept through the store (a session the hook imported is not re-read by the next ``sync``, and
   the reverse), subagent files joined in. With ``--agent NAME`` (a fixed agent), or a harness
   sync does not read, the whole transcript is ingested into the agent (``--agent``, else
   :func:`memcli.sync.naming.session_agent_id` of the payload's ``session_id`` and ``cwd``).
   Either way what the agent has is skipped by id and a line still being written waits for the
   next event;
2. the agent is the one the import filled;
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


def import_transcript(memory_dir: Path, harness, path: Path, data: dict, agent: str | None) -> tuple[str, int, int]:
    """Bring the session's agent up to date with the transcript ``path`` (module docstring):
    (agent, traces appended, traces it already had)."""
    from memcli.sync import SOURCES

    if agent is None and harness.name in SOURCES:
        from memcli.sync import get_source
        from memcli.sync.engine import import_session

        report = import_session(memory_dir, get_source(harness.name).session_of(str(path)))
        if report.status == "failed":
            raise HookFailed(report.error or f"cannot import {path}")
        if report.agent is None:
            raise HookFailed(f"cannot name the agent of {path}")
        return report.agent, report.events, report.duplicates
    from memcli.ingest.api import ingest
    from memcli.ingest.pipeline import NoEvents

    agent_id = agent_of(data, harness.name, agent)
    try:
        result = ingest(memory_dir, agent_id, path, fmt=harness.importer)
    except NoEvents:  # nothing written yet: nothing to do
        return agent_id, 0, 0
    return agent_id, result.appended, result.duplicates


def run_hook(memory_dir: Path, harness: str, event: str, payload: bytes, *, agent: str | None = None,
             max_chars: int = DEFAULT_MAX_CHARS) -> HookResult:
    """Do what ``memcli hook HARNESS EVENT`` does (module docstring); every failure is HookFailed."""
    try:
        return _run(memory_dir, harness, event, payload, agent, max_chars)
    except HookFailed:
        raise
    except MemcliError as exc:
        raise HookFailed(exc.message) from None
    except OSError as exc:  # a file the hook could not read or write (a lock timeout is a MemcliError)
        raise HookFailed(f"{exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else "")) from None


def _run(memory_dir, harness_name, event_name, payload, agent, max_chars) -> HookResult:
    from memcli.store.agent import AgentStore
    from memcli.store.lock import waiting_at_most

    harness = find_harness(harness_name)
    event = harness.event(event_name)
    if max_chars < 200:
        raise HookFailed(f"must be at least 200, got {max_chars}", param="max_chars")
    data = parse_payload(payload)
    path = transcript_of(data)
    if agent is not None:
        agent_of(data, harness.name, agent)  # a bad --agent fails before anything is read
    with waiting_at_most(LOCK_WAIT):
        agent_id, imported, already = import_transcript(memory_dir, harness, path, data, agent)
        result = HookResult(agent_id, event.name, imported, already)
        if event.job == CONTEXT:
            from memcli.hooks.context import session_context

            text = session_context(AgentStore(memory_dir, agent_id), memory_dir, max_chars=max_chars)
            if text:
                import orjson

                result.context_chars = len(text)
                result.output = orjson.dumps({"hookSpecificOutput": {
                    "hookEventName": event.name, "additionalContext": text}}).decode() + "\n"
    return result
