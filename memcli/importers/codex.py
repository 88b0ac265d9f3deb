"""``--from codex``: a Codex CLI rollout (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

Each line is ``{"timestamp", "type", "payload"}`` with ``type`` one of ``session_meta``,
``response_item``, ``event_msg``, ``turn_context``, ``compacted``. Older rollouts (bare
Responses API items, one per line, after a ``{"id", "timestamp", "instructions"}`` line) and a
plain OpenAI Responses API item list import too.

Mapping of ``response_item`` payloads:

* ``message``: ``assistant`` → ``assistant`` trace (``phase`` kept); ``developer`` / ``system``
  → a ``user`` trace tagged ``developer`` / ``system``; ``user`` → see *user turns* below.
  Text parts are joined by newlines, ``input_image`` URLs go to ``media.images``;
* ``reasoning`` → an ``assistant`` trace tagged ``reasoning`` with the summary text (or the raw
  reasoning text when there is no summary); encrypted-only reasoning has nothing to keep;
* ``function_call`` / ``custom_tool_call`` / ``local_shell_call`` / ``tool_search_call`` →
  ``tool_call`` (by ``call_id``); ``function_call_output`` / ``custom_tool_call_output`` /
  ``tool_search_output`` → ``tool_result`` for that ``call_id`` (first-in-first-out when an id
  repeats). Function arguments are parsed from their JSON string; a custom tool's free-form
  ``input`` is kept verbatim as ``tool_args = {"input": ...}`` (``tool_args_verbatim``,
  ``tool_kind: "custom"``). An output is an error only when the source says so
  (``success: false``, or a legacy JSON output whose ``metadata.exit_code`` is not 0);
* ``web_search_call`` (a server-side search: no output item to pair), ``image_generation_call``
  and unknown items are skipped and counted; ``ghost_snapshot``, ``compaction`` and
  ``context_compaction`` (encrypted) are harness state and passed over.

User turns follow the session's real user messages: Codex records each thing the user typed
twice, as a ``response_item`` user message and as an ``event_msg`` ``user_message`` next to it
(before or after). A user message paired with such an event is a user ask (opens a turn); one
without (AGENTS.md, ``<environment_context>``, ``<user_instructions>``... injected by Codex) is
tagged ``context``; an event without a message becomes the ask by itself. Messages that begin
with Codex's injected-context markers are context whatever follows — so is a user message
holding a compaction's summary as Codex hands it to the model ("Another language model started
to solve this problem..."): it never pairs with the next ask's event. A user message at the very
end of the input whose event is not written yet is held back (counted) — the next import of the
grown file places it correctly.

Newer rollouts: ``token_usage_record`` (the usage of one response) closes the response as
``token_count`` does, and from the first one on the ``token_count`` events (cumulative copies)
are not used; ``inter_agent_communication`` (a message between Codex agents) becomes a ``user``
trace tagged ``context`` and ``inter_agent`` (``name`` = its author; so does an ``agent_message``
item); ``additional_tools`` items (tool definitions) are passed over and counted; ``world_state``,
``inter_agent_communication_metadata``, ``security_risk_score``, ``retained_context``,
``realtime_item``, ``rollout_reference`` are harness state, passed over and counted; a
``compacted`` item keeps its ``replacement_history`` (the items Codex carried on with) on its
``compact_summary`` trace. ``memcli sync`` reads a grown rollout on from where it stopped
(``resume``/``checkpoint``: the hash chain's key and what the reader holds).

Usage: ``event_msg`` ``token_count`` closes the model's response: its ``last_token_usage`` goes
on the first assistant trace of that response as ``usage`` (``prompt_tokens`` = its
``input_tokens``, which include the cached ones; ``completion_tokens`` = ``output_tokens``, which
include reasoning). ``turn_context.model`` becomes ``model`` on the model's traces;
``session_meta`` gives ``session_id`` and its base instructions a ``system`` trace; an ``event_msg``
``thread_name_updated`` (the user named the thread) gives the session's title (``custom_title``). A
``compacted`` item with a summary text becomes a ``user`` trace tagged ``compact_summary``, with
``harness_compaction: {"harness": "codex"}`` (the harness's own compaction, not a user ask). Other
events (``agent_message``, ``agent_reasoning``... copies of the items above) are passed over.

Ids: ``cx-<key>-<n>`` with ``<key>`` from a hash chain over the conversation items, seeded with
the session id (:mod:`memcli.importers._common`); the system prompt's id is a hash of its text,
so a resumed session does not store it twice. A half-written last line is skipped and counted.
"""

from __future__ import annotations

import orjson

from memcli.importers._common import (
    TAG_INTER_AGENT,
    CallNames,
    Clock,
    KeyChain,
    Media,
    call_event,
    harness_compaction,
    hold_torn_tail,
    item_key,
    join_texts,
    nonempty,
    not_format,
    openai_usage,
    result_event,
    set_fields,
    string,
)
from memcli.models import TAG_COMPACT_SUMMARY, TAG_CONTEXT, TAG_DEVELOPER, TAG_REASONING, TAG_SYSTEM

LINE_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted",
                        "token_usage_record", "inter_agent_communication"})
# harness state with nothing for memory: passed over, each counted by its type
_PASSED_LINES = frozenset({"world_state", "inter_agent_communication_metadata", "security_risk_score",
                           "retained_context", "realtime_item", "rollout_reference"})
_SILENT_LINES = frozenset({"turn_context"}) | _PASSED_LINES
ITEM_TYPES = frozenset({
    "message", "reasoning", "function_call", "function_call_output", "custom_tool_call",
    "custom_tool_call_output", "local_shell_call", "web_search_call", "tool_search_call",
    "tool_search_output", "ghost_snapshot", "compaction", "compaction_summary", "image_generation_call",
    "agent_message", "additional_tools", "context_compaction",
})
_SILENT_ITEMS = frozenset({"ghost_snapshot", "compaction", "compaction_summary", "context_compaction"})
_CALLS = {"function_call": None, "custom_tool_call": "custom", "local_shell_call": "local_shell",
          "tool_search_call": "tool_search"}
_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output", "tool_search_output"})
# how Codex's compaction hands its summary to the model (templates/compact/summary_prefix.md): a
# copy of the compacted summary written as a user message is the harness's, never an ask
SUMMARY_PREFIX = "Another language model started to solve this problem"
# how Codex's injected user-role context begins (AGENTS.md, environment, instructions, ...)
CONTEXT_PREFIXES = (
    "<environment_context", "<user_instructions", "# AGENTS.md instructions", "<INSTRUCTIONS>",
    "<turn_aborted", "<user_shell_command", "<skill", "<permissions instructions", SUMMARY_PREFIX,
)
_CONTEXT_KINDS = frozenset({"user_instructions", "environment_context"})
HELD_BACK = "messages held back until Codex writes the user_message event (imported next time)"
HELD_STEP = "model output held back until Codex writes its token usage (imported next time)"


def _legacy_item(value: dict) -> bool:
    return string(value.get("type")) in ITEM_TYPES and "payload" not in value


def looks_like_line(value) -> bool:
    if not isinstance(value, dict):
        return False
    if string(value.get("type")) in LINE_TYPES and isinstance(value.get("payload"), dict):
        return True
    return _legacy_item(value) and ("call_id" in value or "role" in value or "summary" in value)


class _Rollout:
    def __init__(self, result):
        self.skipped = result.skipped
        self.meta = result.meta
        self.clock = Clock(self.skipped)
        self.chain: KeyChain | None = None
        self.session_id: str | None = None
        self.model: str | None = None
        self.call_names = CallNames()
        self.held_user: tuple | None = None   # (line, key, ts, text, media) awaiting its event
        self.held_event: tuple | None = None  # (line, key, ts, payload) awaiting its message
        self.after_held: list[tuple[int, dict]] = []  # context that came after a held message
        self.step: list[tuple[int, dict]] = []  # model output awaiting its token_count
        self.recognized = False
        self.system_prompts: set[str] = set()
        self.failed = False  # the input does not start like a rollout: one error is enough
        self.usage_records = False  # token_usage_record lines seen: they, not token_count, give usage

    # ------------------------------------------------------------------ helpers
    def _key(self, item) -> str:
        if self.chain is None:
            self.chain = KeyChain()
        return self.chain.next(item)

    def _common(self, event: dict, ts, *, model: bool = False) -> dict:
        return set_fields(event, ts=ts, model=self.model if model else None, session_id=self.session_id)

    def _content(self, content):
        texts: list[str] = []
        media = Media()
        if isinstance(content, str):
            return content, media
        if isinstance(content, dict):
            content = [content]
        if not isinstance(content, list):
            return "", media
        for part in content:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind in ("input_text", "output_text", "text", "summary_text", "reasoning_text"):
                if isinstance(part.get("text"), str):
                    texts.append(part["text"])
            elif kind == "input_image":
                url = part.get("image_url")
                if isinstance(url, str) and url:
                    media.images.append(url)
                else:
                    self.skipped["image parts without a URL"] += 1
            else:
                self.skipped[f"{kind or 'untyped'} content parts"] += 1
        return join_texts(texts), media

    def _close_step(self, usage=None):
        step, self.step = self.step, []
        if usage and step:
            target = next((e for _, e in step if e["trace_type"] == "assistant"), step[0][1])
            target["usage"] = usage
        return step

    def _resolve_held(self):
        """Model output (or another user message) follows: what was held is settled now."""
        out = []
        if self.held_user is not None:
            out.append(self._user_event(self.held_user, context=True))
            self.held_user = None
        if self.held_event is not None:
            out.append(self._event_ask(self.held_event))
            self.held_event = None
        return out + self._release()

    def _release(self):
        out, self.after_held = self.after_held, []
        return out

    def _in_order(self, item):
        """Context that is not a user ask: out now, or after the message being held (file order)."""
        if self.held_user is not None or self.held_event is not None:
            self.after_held.append(item)
            return []
        return [item]

    def _user_event(self, held, *, context: bool, event_payload=None):
        line, key, ts, text, media = held
        if event_payload is not None:
            if not text and isinstance(event_payload.get("message"), str):
                text = event_payload["message"]
            if not media:
                media = self._event_media(event_payload)
        event = {"id": f"cx-{key}-0", "trace_type": "user", "content": text}
        if context:
            event["tags"] = [TAG_CONTEXT]
        set_fields(event, media=media.as_field())
        return line, self._common(event, ts)

    def _event_media(self, payload) -> Media:
        media = Media()
        images = payload.get("images")
        if isinstance(images, list):
            media.images.extend(u for u in images if isinstance(u, str) and u)
        return media

    def _event_ask(self, held):
        line, key, ts, payload = held
        text = payload.get("message") if isinstance(payload.get("message"), str) else ""
        event = {"id": f"cx-{key}-0", "trace_type": "user", "content": text}
        if string(payload.get("kind")) in _CONTEXT_KINDS:
            event["tags"] = [TAG_CONTEXT]
        local = payload.get("local_images")
        set_fields(event, media=self._event_media(payload).as_field(),
                   local_images=[p for p in local if isinstance(p, str)] if isinstance(local, list) else None)
        return line, self._common(event, ts)

    # ------------------------------------------------------------------ lines
    def line(self, line, value):
        if not isinstance(value, dict):
            if not self.recognized:
                yield line, not_format(line, "a Codex rollout line (an object with \"type\" and \"payload\")", value,
                                       guess_from="codex")
                self.failed = True
            else:
                self.skipped["lines that are not objects"] += 1
            return
        kind = string(value.get("type"))
        if "payload" in value and kind is not None:
            payload = value["payload"]
            ts_raw = value.get("timestamp")
            wrapped = True
        elif _legacy_item(value):
            kind, payload, ts_raw, wrapped = "response_item", value, value.get("timestamp"), False
        elif not self.recognized and isinstance(value.get("id"), str) and "instructions" in value:
            kind, payload, ts_raw, wrapped = "session_meta", value, value.get("timestamp"), False
        elif self.recognized and (value.get("record_type") == "state" or kind in _SILENT_LINES):
            if kind in _PASSED_LINES:
                self.skipped[f"{kind} lines (harness state, passed over)"] += 1
            return
        elif not self.recognized:
            yield line, not_format(line, "a Codex rollout line (an object with \"type\" and \"payload\")", value,
                                   guess_from="codex")
            self.failed = True
            return
        else:
            self.skipped["lines without a payload"] += 1
            return
        if not isinstance(payload, dict):
            if not self.recognized:
                yield line, not_format(line, "a Codex rollout line whose payload is an object", value)
                self.failed = True
            else:
                self.skipped["lines whose payload is not an object"] += 1
            return
        self.recognized = True
        if kind == "response_item":
            yield from self._item(line, payload, self.clock.read(ts_raw), wrapped)
        elif kind == "event_msg":
            yield from self._event(line, payload, ts_raw)
        elif kind == "session_meta":
            yield from self._session_meta(line, payload, ts_raw)
        elif kind == "turn_context":
            if isinstance(payload.get("model"), str) and payload["model"]:
                self.model = payload["model"]
        elif kind == "compacted":
            key = self._key(payload)
            ts = self.clock.read(ts_raw)
            yield from self._resolve_held()
            yield from self._close_step()
            text = payload.get("message")
            replacement = payload.get("replacement_history")
            replacement = replacement if isinstance(replacement, list) and replacement else None
            if (isinstance(text, str) and text.strip()) or replacement:
                event = {"id": f"cx-{key}-0", "trace_type": "user", "content": text if isinstance(text, str) else "",
                         "tags": [TAG_COMPACT_SUMMARY], "harness_compaction": harness_compaction("codex", None)}
                set_fields(event, replacement_history=replacement)
                yield line, self._common(event, ts)
            else:
                self.skipped["compactions without a summary text"] += 1
        elif kind == "token_usage_record":
            # the usage of one model response (newer rollouts); token_count events are then copies
            self.usage_records = True
            usage = payload.get("usage")
            if self.step and isinstance(usage, dict):
                yield from self._close_step(openai_usage(usage))
        elif kind == "inter_agent_communication":
            yield from self._inter_agent(line, payload, ts_raw)
        elif kind in _PASSED_LINES:
            self.skipped[f"{kind} lines (harness state, passed over)"] += 1
        elif kind not in _SILENT_LINES:
            self.skipped[f"{kind[:40]!r} lines"] += 1

    def _inter_agent(self, line, payload, ts_raw, *, read: bool = True):
        """A message between Codex agents (a spawned agent's task, a follow-up): model input that
        is not the user's ask — a ``user`` trace tagged ``context`` and ``inter_agent``."""
        key = self._key(payload) if read else self.chain.key
        ts = self.clock.read(ts_raw) if read else ts_raw
        content = payload.get("content")
        text = content if isinstance(content, str) else self._content(content)[0]
        yield from self._close_step()
        event = {"id": f"cx-{key}-0", "trace_type": "user", "content": text, "tags": [TAG_CONTEXT, TAG_INTER_AGENT]}
        set_fields(event, name=string(payload.get("author")), recipient=string(payload.get("recipient")))
        yield from self._in_order((line, self._common(event, ts)))

    # ------------------------------------------------------------------ resuming (memcli sync)
    def checkpoint(self) -> dict | None:
        """The state to go on from after the last line read, or None while something is held
        (a user message awaiting its event, model output awaiting its usage)."""
        if self.held_user is not None or self.held_event is not None or self.after_held or self.step or self.failed:
            return None
        return {"chain": self.chain.key if self.chain is not None else None, "session": self.session_id,
                "model": self.model, "ts": self.clock.last, "recognized": self.recognized,
                "system": sorted(self.system_prompts), "usage_records": self.usage_records,
                "calls": self.call_names.to_json()}

    def restore(self, carry: dict) -> None:
        if carry.get("chain") is not None:
            self.chain = KeyChain(carry["chain"])
        self.session_id, self.model = carry.get("session"), carry.get("model")
        self.clock.last = carry.get("ts")
        self.recognized = bool(carry.get("recognized"))
        self.system_prompts = set(carry.get("system") or ())
        self.usage_records = bool(carry.get("usage_records"))
        self.call_names = CallNames.from_json(carry.get("calls"))

    def _session_meta(self, line, payload, ts_raw):
        session_id = nonempty(payload.get("id"))
        if self.chain is None:
            self.chain = KeyChain(f"codex:{session_id}" if session_id else "")
        if session_id and self.session_id is None:
            self.session_id = session_id
        instructions = payload.get("base_instructions", payload.get("instructions"))
        if isinstance(instructions, dict):
            instructions = instructions.get("text")
        if isinstance(instructions, str) and instructions.strip():
            trace_id = f"cx-sys-{item_key('', instructions)}"
            if trace_id in self.system_prompts:  # the same prompt again (a resumed session)
                return
            self.system_prompts.add(trace_id)
            yield from self._close_step()
            event = {"id": trace_id, "trace_type": "user",
                     "content": instructions, "tags": [TAG_SYSTEM]}
            yield from self._in_order((line, self._common(event, self.clock.read(ts_raw))))

    def _event(self, line, payload, ts_raw):
        kind = payload.get("type")
        if kind == "user_message":
            key = self._key(payload)
            ts = self.clock.read(ts_raw)
            yield from self._close_step()
            if self.held_user is not None:
                held, self.held_user = self.held_user, None
                yield self._user_event(held, context=string(payload.get("kind")) in _CONTEXT_KINDS, event_payload=payload)
                yield from self._release()
            else:
                if self.held_event is not None:
                    yield self._event_ask(self.held_event)
                    self.held_event = None
                    yield from self._release()
                self.held_event = (line, key, ts, payload)
        elif kind == "thread_name_updated":  # the user named the thread (/rename): the session's title
            if isinstance(payload.get("thread_name"), str) and payload["thread_name"].strip():
                self.meta["custom_title"] = payload["thread_name"].strip()
        elif kind == "token_count" and not self.usage_records:
            info = payload.get("info")
            last = info.get("last_token_usage") if isinstance(info, dict) else None
            if self.step and isinstance(last, dict):
                yield from self._close_step(openai_usage(last))

    def _item(self, line, item, ts, wrapped):
        kind = string(item.get("type"))
        key = self._key(item)
        base = f"cx-{key}"
        if kind == "message":
            role = item.get("role")
            text, media = self._content(item.get("content"))
            if role == "user":
                yield from self._close_step()
                held = (line, key, ts, text, media)
                if text.lstrip().startswith(CONTEXT_PREFIXES):
                    yield from self._in_order(self._user_event(held, context=True))
                elif not wrapped:  # older rollouts have no user_message events: the text decides
                    yield self._user_event(held, context=False)
                elif self.held_event is not None:
                    event, self.held_event = self.held_event, None
                    yield self._user_event(held, context=string(event[3].get("kind")) in _CONTEXT_KINDS,
                                           event_payload=event[3])
                    yield from self._release()
                else:
                    if self.held_user is not None:
                        yield self._user_event(self.held_user, context=True)
                        self.held_user = None
                        yield from self._release()
                    self.held_user = held
                return
            if role in ("developer", "system"):
                event = {"id": f"{base}-0", "trace_type": "user", "content": text,
                         "tags": [TAG_DEVELOPER if role == "developer" else TAG_SYSTEM]}
                yield from self._in_order((line, self._common(set_fields(event, media=media.as_field()), ts)))
                return
            if role != "assistant":
                self.skipped[f"messages with role {str(role)[:40]!r}"] += 1
                return
            yield from self._resolve_held()
            if not text and not media:
                self.skipped["empty assistant messages"] += 1
                return
            event = {"id": f"{base}-0", "trace_type": "assistant", "content": text}
            set_fields(event, media=media.as_field(), phase=item.get("phase") if isinstance(item.get("phase"), str) else None)
            self.step.append((line, self._common(event, ts, model=True)))
            return
        if kind == "reasoning":
            yield from self._resolve_held()
            text, _ = self._content(item.get("summary"))
            if not text:
                text, _ = self._content(item.get("content"))
            if text:
                event = {"id": f"{base}-0", "trace_type": "assistant", "content": text, "tags": [TAG_REASONING]}
                self.step.append((line, self._common(event, ts, model=True)))
            return
        if kind in _CALLS:
            yield from self._resolve_held()
            call_id = item.get("call_id") or item.get("id")
            if not isinstance(call_id, str) or not call_id:
                self.skipped[f"{kind} items without a call_id"] += 1
                return
            tool_kind = _CALLS[kind]
            if kind == "function_call":
                name, raw = item.get("name"), item.get("arguments")
            elif kind == "custom_tool_call":
                name, raw = item.get("name"), item.get("input")
            elif kind == "local_shell_call":
                name, raw = "local_shell", item.get("action")
            else:
                name, raw = "tool_search", item.get("arguments")
            if not isinstance(name, str) or not name:
                name = kind
            self.call_names.add(call_id, name)
            event = call_event(f"{base}-0", call_id, name, raw)
            if tool_kind is not None:
                event["tool_kind"] = tool_kind
            if kind == "custom_tool_call" and isinstance(raw, str) and not event.get("tool_args_verbatim"):
                event["tool_args"], event["tool_args_verbatim"] = {"input": raw}, True
            self.step.append((line, self._common(event, ts, model=True)))
            return
        if kind in _OUTPUTS:
            yield from self._resolve_held()
            yield from self._close_step()
            call_id = item.get("call_id")
            if not isinstance(call_id, str) or not call_id:
                self.skipped[f"{kind} items without a call_id"] += 1
                return
            raw = item.get("output") if kind != "tool_search_output" else item.get("tools", item.get("output"))
            value, media, error = self._output(raw)
            event = result_event(f"{base}-0", call_id, value, error=error)
            set_fields(event, tool_name=self.call_names.take(call_id), media=media.as_field())
            yield line, self._common(event, ts)
            return
        if kind in _SILENT_ITEMS:
            return
        if kind == "agent_message":  # a message between agents, as an item: the same as the line type
            yield from self._inter_agent(line, item, ts, read=False)
            return
        yield from self._resolve_held()
        if kind == "additional_tools":
            self.skipped["additional_tools items (tool definitions, passed over)"] += 1
        elif kind == "web_search_call":
            self.skipped["web_search_call items (server-side searches, no output to pair)"] += 1
        else:
            self.skipped[f"{kind[:40]} items" if kind else "items without a type"] += 1


    def _output(self, raw):
        """(tool_result value, Media, is_error) of a call output as Codex records it."""
        media = Media()
        if raw is None:
            return "", media, False
        if isinstance(raw, str):
            error = False
            if raw.startswith('{"output"'):
                try:
                    parsed = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    parsed = None
                meta = parsed.get("metadata") if isinstance(parsed, dict) else None
                code = meta.get("exit_code") if isinstance(meta, dict) else None
                error = type(code) is int and code != 0
            return raw, media, error
        if isinstance(raw, dict) and "content" in raw and ("success" in raw or len(raw) == 1):
            value, media, _ = self._output(raw["content"])
            return value, media, raw.get("success") is False
        if isinstance(raw, dict) and raw.get("type") in ("input_text", "input_image", "output_text"):
            raw = [raw]
        if isinstance(raw, list) and all(isinstance(p, dict) and p.get("type") in ("input_text", "input_image", "output_text") for p in raw):
            text, media = self._content(raw)
            return text, media, False
        return raw, media, False

    def finish(self, final: bool = True):
        """End of the input. Not ``final`` (``memcli sync`` of a rollout still being written):
        model output still waiting for its usage is left for the next read, which goes on from
        the last checkpoint, before it."""
        if not final and self.step:
            self.skipped[HELD_STEP] += 1
            return
        yield from self._close_step()
        if self.held_user is not None or self.held_event is not None:
            # the next import of the grown file places them; emitting them now could misplace them
            self.skipped[HELD_BACK] += 1 + len(self.after_held)


class CodexImporter:
    name = "codex"
    source_event = "codex"

    def sniff(self, values) -> int:
        objects = [v for _, v in values if isinstance(v, dict)]
        if not objects:
            return 0
        first = objects[0]
        if isinstance(first.get("payload"), dict) and string(first.get("type")) in LINE_TYPES:
            return 96
        good = sum(1 for v in objects if looks_like_line(v))
        legacy_meta = isinstance(first.get("id"), str) and "instructions" in first and "role" not in first
        if (legacy_meta or looks_like_line(first)) and good * 2 >= len(objects) - legacy_meta:
            return 80
        return 0

    def events(self, values, result):
        return _Reader(result).events(values)

    def resume(self, result, carry: dict | None):
        """A reader that goes on from ``carry`` (a checkpoint), for ``memcli sync``."""
        return _Reader(result, carry, hold_tail=False)


class _Reader:
    def __init__(self, result, carry: dict | None = None, *, hold_tail: bool = True):
        self.result = result
        self.rollout = _Rollout(result)
        self.hold_tail = hold_tail
        self.final = True  # memcli sync: False while the rollout may still be written (see finish)
        if carry:
            self.rollout.restore(carry)

    def checkpoint(self) -> dict | None:
        return self.rollout.checkpoint()

    def events(self, values):
        rollout = self.rollout
        for line, value in hold_torn_tail(values, self.result.skipped) if self.hold_tail else values:
            if isinstance(value, Exception):
                yield line, value
                continue
            yield from rollout.line(line, value)
            if rollout.failed:
                return
        yield from rollout.finish(self.final)


IMPORTER = CodexImporter()
