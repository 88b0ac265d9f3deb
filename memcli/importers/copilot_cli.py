"""``--from copilot-cli``: a GitHub Copilot CLI session log,
``~/.copilot/session-state/<session id>/events.jsonl``.

Every line is one event ``{"type", "id", "timestamp", "parentId", "data"}`` (the session event
schema of the Copilot SDK). Read:

* ``session.start`` / ``session.resume``: the session id and ``context.cwd`` (no trace);
  ``session.title_changed``: the session's title (agent metadata);
* ``user.message``: a ``user`` trace whose content is ``data.content`` — what the person typed;
  ``transformedContent`` (the prompt after the CLI added context) is not the ask and is not kept.
  A message the person did not type is tagged ``context`` (never an ask): ``isAutopilotContinuation``
  (autopilot's own continuation), ``source`` ``skill-<name>`` (a hidden skill injection) or
  ``agent-<id>`` (another agent's prompt, also tagged ``inter_agent``, ``name`` = that source);
* ``assistant.reasoning``: ``assistant`` tagged ``reasoning``; ``assistant.message``: its
  ``reasoningText`` (when no ``assistant.reasoning`` event came before it), its ``content`` as
  ``assistant``, and each of its ``toolRequests`` as a ``tool_call`` (``toolCallId``, ``name``,
  ``arguments``). A message with ``parentToolCallId`` was written by a subagent: tagged
  ``sidechain``, with that id (the call that started the subagent) as ``agent_id``, so parallel
  subagents stay apart. Newer CLIs deprecate that field and put the subagent's ``agentId`` on the
  event itself: any event with one is the subagent's, tagged ``sidechain`` with ``agent_id`` = it;
* ``tool.execution_start`` of a call no message requested (a command the user ran) -> its
  ``tool_call``; the start of a requested call adds nothing;
* ``tool.execution_complete``: ``tool_result`` = ``result.content`` (what the model saw), or
  ``tool_error`` = ``error.message`` when ``success`` is false;
* ``session.compaction_complete`` with ``summaryContent``: a ``user`` trace tagged
  ``compact_summary`` (the harness's own compaction).

Streaming deltas, turn markers, usage, permission and hook events and the other ``session.*``
events are passed over and counted by type; a type this importer does not know is counted and
named too, never fatal.

Ids: ``cp-<event id>-<n>``; the event ids are the CLI's own, so a re-read file adds nothing.
``memcli sync`` reads a grown log on from where it stopped (the carry holds the session id, the
calls requested but not yet started, and whether reasoning came before the next message).
"""

from __future__ import annotations

from memcli.importers._common import (
    TAG_INTER_AGENT,
    Clock,
    call_event,
    decoded,
    harness_compaction,
    nonempty,
    not_format,
    numbered,
    result_event,
    set_fields,
    string,
)
from memcli.models import TAG_COMPACT_SUMMARY, TAG_CONTEXT, TAG_REASONING, TAG_SIDECHAIN

# user.message sources that are not the person typing (module docstring)
_AGENT_SOURCE, _SKILL_SOURCE = "agent-", "skill-"

_READ = frozenset({"session.start", "session.resume", "session.title_changed", "user.message", "assistant.message",
                   "assistant.reasoning", "tool.execution_start", "tool.execution_complete",
                   "session.compaction_complete"})
# the SDK's other session event types: passed over (counted by type), not "unknown"
_KNOWN = frozenset({
    "session.remote_steerable_changed", "session.error", "session.idle", "session.schedule_created",
    "session.schedule_cancelled", "session.schedule_rearmed", "session.autopilot_objective_changed", "session.info",
    "session.warning", "session.model_change", "session.mode_changed", "session.session_limits_changed",
    "session.permissions_changed", "session.plan_changed", "session.todos_changed", "session.workspace_file_changed",
    "session.handoff", "session.truncation", "session.snapshot_rewind", "session.shutdown",
    "session.usage_checkpoint", "session.context_changed", "session.usage_info", "session.context_cleared",
    "session.compaction_start", "session.task_complete", "pending_messages.modified", "assistant.turn_start",
    "assistant.turn_retry", "agent.interrupted", "assistant.intent", "assistant.server_tool_progress",
    "assistant.reasoning_delta", "assistant.tool_call_delta", "assistant.streaming_delta", "assistant.message_start",
    "assistant.message_delta", "assistant.turn_end", "assistant.idle", "assistant.usage", "model.call_failure",
    "model.call_start", "tool.user_requested", "tool.execution_partial_result", "tool.execution_progress",
    "tool_search.activated", "skill.invoked", "sandbox.decision", "subagent.started", "subagent.completed",
    "subagent.failed", "subagent.selected", "subagent.deselected", "hook.start", "hook.end", "hook.progress",
    "session.binary_asset", "system.message", "system.notification", "permission.requested",
    "permission.completed", "user_input.requested", "user_input.completed", "elicitation.requested",
    "elicitation.completed", "sampling.requested", "sampling.completed", "mcp.oauth_required",
    "mcp.oauth_completed", "mcp.headers_refresh_required", "mcp.headers_refresh_completed",
})


def is_event(value) -> bool:
    return (isinstance(value, dict) and isinstance(value.get("type"), str) and "." in value["type"]
            and isinstance(value.get("data"), dict) and isinstance(value.get("id"), str))


def session_start(value) -> dict | None:
    """The ``data`` of a ``session.start`` event, else None."""
    return value["data"] if is_event(value) and value["type"] == "session.start" else None


class _Log:
    def __init__(self, result, carry: dict | None = None):
        carry = carry or {}
        self.result = result
        self.skipped = result.skipped
        self.clock = Clock(self.skipped)
        self.session: str | None = carry.get("session")
        self.requested: set = set(carry.get("requested") or ())
        self.reasoned: bool = bool(carry.get("reasoned"))
        self.recognized = bool(carry)

    def checkpoint(self) -> dict | None:
        if not self.recognized:
            return None
        return {"session": self.session, "requested": sorted(self.requested), "reasoned": self.reasoned}

    def events(self, values):
        for line, value in values:
            if isinstance(value, Exception):
                yield line, value
                continue
            if not is_event(value):
                if not self.recognized:
                    yield line, not_format(line, 'a Copilot CLI event (an object with "type", "id" and "data")',
                                           value, guess_from="copilot-cli")
                    return
                self.skipped["lines that are not Copilot CLI events"] += 1
                continue
            self.recognized = True
            kind = value["type"]
            if kind not in _READ:
                self.skipped[f"{kind} events" if kind in _KNOWN else f"unknown event type {kind[:60]!r}"] += 1
                continue
            events = self._event(kind, value["data"])
            agent = nonempty(value.get("agentId"))
            for event in events if agent else ():
                if TAG_SIDECHAIN not in event.get("tags", ()):
                    event["tags"] = [*event.get("tags", ()), TAG_SIDECHAIN]
                    event["agent_id"] = agent
            if events:
                common: dict = {}
                set_fields(common, ts=self.clock.read(value.get("timestamp")), session_id=self.session)
                for event in numbered(events, f"cp-{value['id']}", common):
                    yield line, event

    def _event(self, kind: str, data: dict) -> list[dict]:
        if kind in ("session.start", "session.resume"):
            self.session = self.session or nonempty(data.get("sessionId"))
            return []
        if kind == "session.title_changed":
            if nonempty(data.get("title")):
                self.result.meta["ai_title"] = data["title"]
            return []
        if kind == "user.message":
            self.reasoned = False
            text = string(data.get("content"))
            if text is None:
                self.skipped["user messages without content"] += 1
                return []
            event = {"trace_type": "user", "content": text}
            source = nonempty(data.get("source")) if isinstance(data.get("source"), str) else None
            if source and source.startswith(_AGENT_SOURCE):
                set_fields(event, tags=[TAG_CONTEXT, TAG_INTER_AGENT], name=source)
            elif data.get("isAutopilotContinuation") is True or (source and source.startswith(_SKILL_SOURCE)):
                event["tags"] = [TAG_CONTEXT]
            return [self._side(data, event)]
        if kind == "assistant.reasoning":
            self.reasoned = True
            text = nonempty(data.get("content"))
            return [self._side(data, {"trace_type": "assistant", "content": text, "tags": [TAG_REASONING]})] if text else []
        if kind == "assistant.message":
            out = []
            reasoning = nonempty(data.get("reasoningText"))
            if reasoning and not self.reasoned:
                out.append({"trace_type": "assistant", "content": reasoning, "tags": [TAG_REASONING]})
            self.reasoned = False
            text = nonempty(data.get("content"))
            if text:
                out.append({"trace_type": "assistant", "content": text})
            requests = data.get("toolRequests")
            for request in requests if isinstance(requests, list) else ():
                if not isinstance(request, dict) or not nonempty(request.get("toolCallId")):
                    self.skipped["tool requests without a toolCallId"] += 1
                    continue
                self.requested.add(request["toolCallId"])
                out.append(call_event("", request["toolCallId"], nonempty(request.get("name")) or "tool",
                                      request.get("arguments")))
            for event in out:
                self._side(data, event)
                set_fields(event, model=nonempty(data.get("model")), message_id=nonempty(data.get("messageId")))
            return out
        if kind == "tool.execution_start":
            call_id = nonempty(data.get("toolCallId"))
            if call_id is None:
                self.skipped["tool executions without a toolCallId"] += 1
                return []
            if call_id in self.requested:
                self.requested.discard(call_id)
                return []
            return [self._side(data, call_event("", call_id, nonempty(data.get("toolName")) or "tool",
                                                data.get("arguments")))]
        if kind == "tool.execution_complete":
            call_id = nonempty(data.get("toolCallId"))
            if call_id is None:
                self.skipped["tool executions without a toolCallId"] += 1
                return []
            self.requested.discard(call_id)
            if data.get("success") is False:
                error = data.get("error")
                message = error.get("message") if isinstance(error, dict) else error
                return [self._side(data, result_event("", call_id, message, error=True))]
            res = data.get("result")
            content = res.get("content") if isinstance(res, dict) else res
            return [self._side(data, result_event("", call_id, content if content is not None else ""))]
        if kind == "session.compaction_complete":
            summary = nonempty(data.get("summaryContent"))
            if summary is None:
                self.skipped["compactions without a summary"] += 1
                return []
            meta = {"preTokens": data.get("preCompactionTokens")}
            return [{"trace_type": "user", "content": summary, "tags": [TAG_COMPACT_SUMMARY],
                     "harness_compaction": harness_compaction("copilot-cli", meta)}]
        return []

    @staticmethod
    def _side(data: dict, event: dict) -> dict:
        parent = nonempty(data.get("parentToolCallId"))
        if parent:   # the call that started the subagent tells parallel subagents apart
            event["tags"] = [*event.get("tags", ()), TAG_SIDECHAIN]
            event["agent_id"] = parent
        return event


class CopilotCliImporter:
    name = "copilot-cli"
    source_event = "copilot-cli"

    def sniff(self, values) -> int:
        items = decoded(values)
        if not items:
            return 0
        if session_start(items[0]) is not None:
            return 97
        known = sum(1 for v in items if is_event(v) and (v["type"] in _READ or v["type"] in _KNOWN))
        return 92 if known * 2 > len(items) else 0

    def events(self, values, result):
        return _Log(result).events(values)

    def resume(self, result, carry: dict | None):
        """A reader that goes on from ``carry`` (a checkpoint), for ``memcli sync``."""
        return _Log(result, carry)


IMPORTER = CopilotCliImporter()
