"""``--from chatgpt``: a ChatGPT data export, ``conversations.json`` (Settings -> Data controls ->
Export data; the file inside the zip).

The file is a JSON array of conversations ``{"id" / "conversation_id", "title", "create_time",
"update_time", "current_node", "mapping"}``. ``mapping`` is the message *tree*: node id ->
``{"id", "message", "parent", "children"}`` (an edited prompt or a regenerated answer starts a
new branch). The conversation as the user last saw it is the branch that ends at
``current_node``: it is followed from that leaf up through ``parent`` to the root, and only it is
imported (other branches are counted as passed over). Without a usable ``current_node`` the most
recent leaf is taken.

A message is ``{"id", "author": {"role", "name"}, "create_time", "content": {"content_type",
...}, "recipient", "metadata"}``. By role:

* ``user`` -> a ``user`` trace (``user_editable_context``, the custom instructions, is tagged
  ``context``); ``system`` -> ``user`` tagged ``system`` when it has text; a message with
  ``metadata.is_visually_hidden_from_conversation`` is passed over and counted;
* ``assistant`` to ``recipient`` ``all`` -> ``assistant`` (``thoughts`` -> ``assistant`` tagged
  ``reasoning``); to any other recipient (``python``, ``web``, ``dalle.text2im``...) -> a
  ``tool_call`` of that tool, its text (``code`` content or JSON) the arguments;
* ``tool`` (``author.name`` names the tool) -> the ``tool_result`` of the oldest unanswered call
  of that tool (``system_error`` content -> ``tool_error``).

Content types read for text: ``text`` and ``multimodal_text`` (``parts``; image parts'
``asset_pointer`` kept as ``media.images``), ``code`` / ``execution_output`` (``text``),
``thoughts``, ``tether_quote`` / ``tether_browsing_display``, ``user_editable_context``,
``system_error``. Others (``reasoning_recap``...) are passed over and counted by name.

Ids: ``cg-<message id>-<n>`` (the export's own message ids), so a later export of the same
conversation, longer or re-branched, adds only what is new. ``model`` from
``metadata.model_slug``; ``session_id`` is the conversation id.
"""

from __future__ import annotations

from collections import deque

from memcli.importers._common import (
    Clock,
    ExportImporter,
    Media,
    call_event,
    join_texts,
    nonempty,
    numbered,
    result_event,
    set_fields,
    take_named,
)
from memcli.models import TAG_CONTEXT, TAG_REASONING, TAG_SYSTEM

_TEXT_KEY_TYPES = ("code", "execution_output", "tether_browsing_display")


def is_conversation(value) -> bool:
    return isinstance(value, dict) and isinstance(value.get("mapping"), dict)


def conversation_id(conv: dict) -> str | None:
    return nonempty(conv.get("conversation_id")) or nonempty(conv.get("id"))


def current_branch(mapping: dict, current) -> list[dict]:
    """The nodes from the root to ``current`` (else to the most recent leaf), root first."""
    if not (isinstance(current, str) and isinstance(mapping.get(current), dict)):
        leaves = [n for n in mapping.values() if isinstance(n, dict) and not n.get("children")]
        current = None
        best = float("-inf")
        for node in leaves:
            message = node.get("message") if isinstance(node.get("message"), dict) else {}
            t = message.get("create_time")
            t = t if isinstance(t, (int, float)) and not isinstance(t, bool) else float("-inf")
            if current is None or t >= best:
                current, best = node.get("id"), t
    branch, seen = [], set()
    node_id = current
    while isinstance(node_id, str) and node_id not in seen and isinstance(mapping.get(node_id), dict):
        seen.add(node_id)
        node = mapping[node_id]
        branch.append(node)
        node_id = node.get("parent")
    branch.reverse()
    return branch


def _parts_text(parts, media: Media, skipped) -> str:
    texts = []
    for part in parts if isinstance(parts, list) else ():
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict):
            kind = part.get("content_type")
            if kind == "image_asset_pointer" and nonempty(part.get("asset_pointer")):
                media.images.append(part["asset_pointer"])
            elif kind == "audio_transcription" and isinstance(part.get("text"), str):
                texts.append(part["text"])
            else:
                skipped[f"{str(kind)[:40]} parts"] += 1
    return join_texts(texts)


def content_text(content: dict, media: Media, skipped) -> str | None:
    """The text of a message's ``content``; None for a content type that is not read."""
    kind = content.get("content_type")
    if kind in ("text", "multimodal_text"):
        return _parts_text(content.get("parts"), media, skipped)
    if kind in _TEXT_KEY_TYPES:
        value = content.get("text", content.get("result"))
        return value if isinstance(value, str) else ""
    if kind == "thoughts":
        out = []
        for t in content.get("thoughts") if isinstance(content.get("thoughts"), list) else ():
            if isinstance(t, dict):
                out.append(join_texts([nonempty(t.get("summary")) or "", nonempty(t.get("content")) or ""]))
        return join_texts(out)
    if kind == "tether_quote":
        return join_texts([nonempty(content.get(k)) or "" for k in ("title", "url", "text")])
    if kind == "user_editable_context":
        return join_texts([nonempty(content.get(k)) or "" for k in ("user_profile", "user_instructions")])
    if kind == "system_error":
        return join_texts([nonempty(content.get(k)) or "" for k in ("name", "text")])
    return None


class _Conversation:
    def __init__(self, conv: dict, skipped):
        self.conv = conv
        self.skipped = skipped
        self.clock = Clock(skipped)
        self.pending: deque = deque()   # (call id, tool name) unanswered

    def events(self, line: int):
        conv = self.conv
        session = conversation_id(conv)
        branch = current_branch(conv["mapping"], conv.get("current_node"))
        passed = sum(1 for n in conv["mapping"].values() if isinstance(n, dict) and n.get("message")) - sum(
            1 for n in branch if n.get("message"))
        if passed > 0:
            self.skipped["messages on other branches (edits, regenerations)"] += passed
        for node in branch:
            message = node.get("message")
            if not isinstance(message, dict):
                continue
            for event in self._message(message, session):
                yield line, event

    def _message(self, message: dict, session: str | None) -> list[dict]:
        skipped = self.skipped
        author = message.get("author") if isinstance(message.get("author"), dict) else {}
        role = author.get("role")
        metadata = message.get("metadata") if isinstance(message.get("metadata"), dict) else {}
        content = message.get("content") if isinstance(message.get("content"), dict) else {}
        kind = content.get("content_type")
        mid = nonempty(message.get("id")) or nonempty(message.get("_node")) or "x"
        if metadata.get("is_visually_hidden_from_conversation"):
            skipped["hidden messages (the app's own context)"] += 1
            return []
        media = Media()
        text = content_text(content, media, skipped)
        if text is None:
            skipped[f"{str(kind)[:40]} messages"] += 1
            return []
        events: list[dict] = []
        if role == "user":
            event = {"trace_type": "user", "content": text}
            if kind == "user_editable_context":
                event["tags"] = [TAG_CONTEXT]
            set_fields(event, media=media.as_field())
            if text or media:
                events.append(event)
        elif role == "system":
            if text.strip():
                events.append({"trace_type": "user", "content": text, "tags": [TAG_SYSTEM]})
        elif role == "assistant":
            recipient = message.get("recipient")
            if isinstance(recipient, str) and recipient not in ("all", ""):
                call_id = f"cg-{mid}"
                self.pending.append((call_id, recipient))
                events.append(call_event("", call_id, recipient, text))
            elif kind == "thoughts":
                if text:
                    events.append({"trace_type": "assistant", "content": text, "tags": [TAG_REASONING]})
            elif text:
                events.append({"trace_type": "assistant", "content": text})
        elif role == "tool":
            name = nonempty(author.get("name"))
            call_id = take_named(self.pending, name) or f"cg-{mid}-orphan"
            event = result_event("", call_id, text, error=kind == "system_error")
            set_fields(event, tool_name=name, media=media.as_field())
            events.append(event)
        else:
            skipped[f"messages from {str(role)[:40]!r}"] += 1
            return []
        if not events:
            skipped[f"empty {role} messages"] += 1
            return []
        common: dict = {}
        set_fields(common, ts=self.clock.read(message.get("create_time")),
                   model=nonempty(metadata.get("model_slug")), message_id=nonempty(message.get("id")),
                   session_id=session)
        return numbered(events, f"cg-{mid}", common)


class ChatGPTImporter(ExportImporter):
    name = "chatgpt"
    source_event = "chatgpt"
    expected = 'a ChatGPT conversation (an object with "mapping")'
    is_conversation = staticmethod(is_conversation)
    conversation_id = staticmethod(conversation_id)

    def conversation_events(self, line, conversation, skipped):
        return _Conversation(conversation, skipped).events(line)


IMPORTER = ChatGPTImporter()
