"""``--from openhands``: OpenHands trajectories and evaluation / resolver outputs.

Input:

* a trajectory: the JSON array of serialized events (``{"id", "timestamp", "source", "message",
  "action" | "observation", "args" | "content" + "extras", "cause", "tool_call_metadata"}``), as
  ``save_trajectory`` and the UI's export write it; also ``{"history": [...]}`` or
  ``{"trajectory": [...]}``;
* evaluation and resolver outputs: NDJSON, one instance per line with its ``history`` (and
  ``instance_id`` or the resolver's ``issue``) — several instances are several conversations,
  refused unless ``--split``, which names the agents by ``instance_id`` (resolver: ``owner-repo-N``);
* the legacy history of older versions: events without ids, ``cause`` or ``tool_call_metadata``,
  their ``args`` / ``extras`` flattened into the event (also ``[action, observation]`` pairs).

Mapping:

* ``message`` actions: from the user (or with no ``source``: legacy histories hold only the
  user's) → ``user`` trace, ``image_urls`` → ``media.images``; from the agent → ``assistant``
  trace. ``system`` actions → ``user`` trace tagged ``system``;
* every other action is a tool call: its ``thought`` first as an ``assistant`` trace, then a
  ``tool_call`` named by ``tool_call_metadata.function_name`` (else the action: ``run``,
  ``run_ipython``, ``read``, ``edit``, ``browse``...) with the arguments the model gave (its
  ``model_response`` tool call; else the action's ``args`` without OpenHands' bookkeeping) and
  id ``tool_call_metadata.tool_call_id`` (else derived). ``finish`` with no
  ``tool_call_metadata`` (legacy) is the agent's last message, an ``assistant`` trace;
* observations → ``tool_result`` for their call: by ``tool_call_metadata.tool_call_id``, else by
  ``cause`` (the action's event id), else the oldest unanswered call (legacy: each observation
  follows its action). ``error`` and ``user_rejected`` observations and commands whose
  ``exit_code`` is not 0 are ``tool_error``. Observations that answer nothing (state changes,
  ``recall``, ``null``) and actions that call nothing (``change_agent_state``, ``recall``,
  ``condensation``, ``null``) are skipped and counted;
* ``model_response.model`` → ``model``; its ``usage`` → ``usage`` once per response (an action
  and its observation repeat the same response), on the response's first trace.

Ids: ``oh-<key>-<n>`` from a hash chain over the events, seeded with the instance id.
"""

from __future__ import annotations

from collections import deque

import orjson

from memcli.importers._common import (
    Clock,
    KeyChain,
    call_event,
    decoded,
    nonempty,
    not_format,
    numbered,
    openai_usage,
    result_event,
    set_fields,
)
from memcli.importers.conversations import own_id
from memcli.models import TAG_SYSTEM

NOT_CALLS = frozenset({"change_agent_state", "recall", "condensation", "condensation_request", "null",
                       "agent_state_changed"})
SILENT_OBSERVATIONS = frozenset({"agent_state_changed", "null", "recall", "condensation", "delegate_state"})
ERROR_OBSERVATIONS = frozenset({"error", "user_rejected"})
_BOOKKEEPING = frozenset({"thought", "action", "observation", "is_confirmed", "confirmation_state", "action_risk",
                          "security_risk", "impl_source", "keep_prompt", "kernel_init_code", "wait_for_response",
                          "timeout", "hidden", "blocking", "is_input", "translated_ipython_code", "include_extra",
                          "source", "id", "timestamp", "message", "cause", "tool_call_metadata", "llm_metrics", "args"})


def is_event(value) -> bool:
    """An OpenHands event: ``action`` or ``observation`` named, and no chat ``role`` (SWE-agent's
    history messages also carry an ``action``)."""
    return isinstance(value, dict) and "role" not in value and (
        isinstance(value.get("action"), str) or isinstance(value.get("observation"), str))


def _events_of(value):
    if isinstance(value, dict):
        for key in ("history", "trajectory"):
            if isinstance(value.get(key), list):
                return value[key]
    return None


def is_document(value) -> bool:
    events = _events_of(value)
    return events is not None and not isinstance(value.get("role"), str) and (
        not events or any(is_event(e) or _pair(e) for e in events[:16]))


def _pair(value) -> bool:
    return isinstance(value, list) and len(value) == 2 and all(isinstance(v, dict) for v in value)


def instance_key(record: dict) -> str | None:
    key = own_id(record, ("instance_id", "id", "session_id", "conversation_id"))
    if key is None and isinstance(record.get("issue"), dict):
        issue = record["issue"]
        parts = [nonempty(issue.get("owner")), nonempty(issue.get("repo")),
                 str(issue["number"]) if type(issue.get("number")) is int else None]
        if parts[-1] is not None:
            key = "-".join(p for p in parts if p)
    return key


class _Reader:
    def __init__(self, result, seed: str = ""):
        self.skipped = result.skipped
        self.clock = Clock(self.skipped)
        self.chain = KeyChain(seed)
        self.pending: deque = deque()      # (call id, name) in call order
        self.by_event: dict = {}           # action event id -> call id
        self.responses: set = set()        # model responses whose usage is placed

    def _response(self, meta):
        response = meta.get("model_response") if isinstance(meta, dict) else None
        return response if isinstance(response, dict) else None

    def _model_args(self, response, call_id):
        choices = response.get("choices") if response else None
        for choice in choices if isinstance(choices, list) else ():
            message = choice.get("message") if isinstance(choice, dict) else None
            calls = message.get("tool_calls") if isinstance(message, dict) else None
            for call in calls if isinstance(calls, list) else ():
                if isinstance(call, dict) and call.get("id") == call_id and isinstance(call.get("function"), dict):
                    return call["function"].get("arguments")
        return None

    def event(self, line, event, where):
        if _pair(event):
            for part in event:
                yield from self.event(line, part, where)
            return
        if not isinstance(event, dict):
            yield line, not_format(line, f"{where}an OpenHands event (an object with \"action\" or \"observation\")", event)
            return
        key = self.chain.next(event)
        base = f"oh-{key}"
        ts = self.clock.read(event.get("timestamp"))
        args = event.get("args") if isinstance(event.get("args"), dict) else {   # legacy: flattened
            k: v for k, v in event.items() if k not in ("action", "observation", "extras")}
        meta = event.get("tool_call_metadata") if isinstance(event.get("tool_call_metadata"), dict) else None
        response = self._response(meta)
        common = set_fields({}, ts=ts, model=nonempty(response.get("model")) if response else None)
        events: list[dict] = []
        action = nonempty(event.get("action"))
        observation = nonempty(event.get("observation"))
        if action is not None:
            source = nonempty(event.get("source"))
            if action == "message":
                text = args.get("content") if isinstance(args.get("content"), str) else nonempty(event.get("message")) or ""
                images = args.get("image_urls") or args.get("images_urls")
                if source == "agent":
                    events.append({"trace_type": "assistant", "content": text})
                else:
                    images = [u for u in images if isinstance(u, str) and u] if isinstance(images, list) else []
                    events.append(set_fields({"trace_type": "user", "content": text},
                                             media={"images": images} if images else None))
            elif action == "system":
                text = args.get("content") if isinstance(args.get("content"), str) else nonempty(event.get("message")) or ""
                events.append({"trace_type": "user", "content": text, "tags": [TAG_SYSTEM]})
            elif action in NOT_CALLS:
                self.skipped[f"{action} actions"] += 1
                return
            elif action == "finish" and meta is None:
                text = next((args[k] for k in ("final_thought", "thought") if isinstance(args.get(k), str) and args[k]),
                            nonempty(event.get("message")) or "")
                if text:
                    events.append({"trace_type": "assistant", "content": text})
            else:
                thought = args.get("thought")
                if isinstance(thought, str) and thought.strip():
                    events.append({"trace_type": "assistant", "content": thought})
                name = nonempty(meta.get("function_name")) if meta else None
                call_id = nonempty(meta.get("tool_call_id")) if meta else None
                call_id = call_id or f"{base}-call"
                raw = self._model_args(response, call_id) if response else None
                if raw is None:
                    raw = {k: v for k, v in args.items() if k not in _BOOKKEEPING}
                events.append(call_event("", call_id, name or action, raw))
                self.pending.append((call_id, name or action))
                if event.get("id") is not None and isinstance(event.get("id"), (int, str)):
                    self.by_event[event["id"]] = call_id
            if response is not None and events:
                rid = response.get("id") if isinstance(response.get("id"), str) else orjson.dumps(response, option=orjson.OPT_SORT_KEYS)
                if rid not in self.responses:
                    self.responses.add(rid)
                    usage = openai_usage(response.get("usage"))
                    if usage:
                        events[0]["usage"] = usage
        elif observation is not None:
            if observation in SILENT_OBSERVATIONS:
                self.skipped[f"{observation} observations"] += 1
                return
            call_id = nonempty(meta.get("tool_call_id")) if meta else None
            cause = event.get("cause")
            if call_id is None and isinstance(cause, (int, str)) and cause in self.by_event:
                call_id = self.by_event[cause]
            if call_id is None and self.pending:
                call_id = self.pending[0][0]
            name = None
            for i, (pending_id, pending_name) in enumerate(self.pending):
                if pending_id == call_id:
                    name = pending_name
                    del self.pending[i]
                    break
            if call_id is None:
                call_id = f"{base}-orphan"
            content = event.get("content")
            text = content if isinstance(content, str) else "" if content is None else orjson.dumps(content).decode()
            extras = event.get("extras") if isinstance(event.get("extras"), dict) else event
            metadata = extras.get("metadata") if isinstance(extras.get("metadata"), dict) else extras
            exit_code = metadata.get("exit_code")
            error = observation in ERROR_OBSERVATIONS or (type(exit_code) is int and exit_code != 0)
            events.append(set_fields(result_event("", call_id, text, error=error), tool_name=name))
        else:
            self.skipped["events that are neither action nor observation"] += 1
            return
        for event in numbered(events, base, common):
            yield line, event


class OpenHandsImporter:
    name = "openhands"
    source_event = "openhands"

    def sniff(self, values) -> int:
        items = decoded(values)
        if not items:
            return 0
        if is_document(items[0]):
            return 95
        events = [v for v in items[:64] if is_event(v)]
        if events and is_event(items[0]) and len(events) * 2 >= len(items[:64]):
            return 95
        return 0

    def conversations(self, values):
        from memcli.importers.conversations import by_document

        return by_document(values, is_document, instance_key)

    def events(self, values, result):
        reader = None
        for line, value in values:
            if isinstance(value, Exception):
                yield line, value
                continue
            if is_document(value):
                reader = _Reader(result, f"openhands:{instance_key(value) or ''}")
                for i, event in enumerate(_events_of(value)):
                    yield from reader.event(line, event, f"history[{i}]: ")
                reader = None
            elif is_event(value) or _pair(value):
                reader = reader or _Reader(result)
                yield from reader.event(line, value, "")
            else:
                yield line, not_format(line, "an OpenHands event or instance (with \"history\")", value,
                                       guess_from=self.name)
                if reader is None:
                    return


IMPORTER = OpenHandsImporter()
