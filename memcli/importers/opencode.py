"""``--from opencode``: an opencode session as ``opencode export <session id>`` writes it —
``{"info": <session>, "messages": [{"info": <message>, "parts": [<part>...]}]}`` — which is also
how ``memcli sync`` hands over a session it read from opencode's database or its legacy JSON
tree (:mod:`memcli.sync.opencode`).

``info`` is the session (``id``, ``directory``, ``title``, ``parentID``, ``time``). A message
``info`` has ``id``, ``role`` (``user`` / ``assistant``), ``time.created`` (epoch ms),
``modelID``, ``summary`` (an assistant message that is a compaction summary); its ``parts``:

* ``text`` -> ``user`` / ``assistant`` (a ``synthetic`` user text, added by opencode, is tagged
  ``context``; an ``ignored`` one is passed over); ``reasoning`` -> ``assistant`` tagged
  ``reasoning``; the text of a ``summary`` message is tagged ``compact_summary`` and carries
  ``harness_compaction: {"harness": "opencode"}`` (opencode's own compaction; a memory item too);
* ``tool`` ``{callID, tool, state: {status, input, output, error, metadata}}`` -> a ``tool_call``,
  and once the state is ``completed`` its ``tool_result`` (``output``; a non-zero
  ``metadata.exit``, a command that failed, is kept as ``exit_code``), or ``error`` a
  ``tool_error``; a
  call still ``pending`` / ``running`` gets its result when a later read finds it finished;
* ``file`` -> ``media`` (image ``url``) or counted; ``step-start``, ``step-finish``,
  ``snapshot``, ``patch``, ``agent``, ``retry``, ``compaction``, ``subtask`` and unknown part types
  are counted by type.

Ids: ``oc-<part id>`` (``-r`` for a tool's result): opencode's own part ids, so a session read
again — from the database, the legacy tree or an export — adds only new parts. opencode ids are
time-ordered: they are used whole, never shortened.
"""

from __future__ import annotations

from memcli.importers._common import (
    Clock,
    call_event,
    decoded,
    harness_compaction,
    nonempty,
    not_format,
    result_event,
    set_fields,
    string,
)
from memcli.models import TAG_COMPACT_SUMMARY, TAG_CONTEXT, TAG_REASONING

_PASSED = frozenset({"step-start", "step-finish", "snapshot", "patch", "agent", "retry", "compaction", "subtask"})


def is_session(value) -> bool:
    return (isinstance(value, dict) and isinstance(value.get("info"), dict)
            and isinstance(value.get("messages"), list))


class OpencodeImporter:
    name = "opencode"
    source_event = "opencode"

    def sniff(self, values) -> int:
        items = decoded(values)
        if items and is_session(items[0]) and isinstance(items[0]["info"].get("id"), str) \
                and str(items[0]["info"]["id"]).startswith("ses"):
            return 96
        return 0

    def events(self, values, result):
        for line, value in values:
            if isinstance(value, Exception):
                yield line, value
                continue
            if not is_session(value):
                yield line, not_format(line, 'an opencode session (an object with "info" and "messages")', value,
                                       guess_from=self.name)
                continue
            info = value["info"]
            if nonempty(info.get("title")):
                result.meta["ai_title"] = info["title"]
            yield from self._session(line, value, nonempty(info.get("id")), result.skipped)

    def _session(self, line, doc, session_id, skipped):
        clock = Clock(skipped)
        for message in doc["messages"]:
            info = message.get("info") if isinstance(message, dict) else None
            parts = message.get("parts") if isinstance(message, dict) else None
            if not isinstance(info, dict) or not isinstance(parts, list):
                skipped["messages without info and parts"] += 1
                continue
            role = info.get("role")
            if role not in ("user", "assistant"):
                skipped[f"messages with role {str(role)[:40]!r}"] += 1
                continue
            time = info.get("time") if isinstance(info.get("time"), dict) else {}
            common: dict = {}
            set_fields(common, ts=clock.read(time.get("created")), session_id=session_id,
                       message_id=nonempty(info.get("id")), model=nonempty(info.get("modelID")))
            summary = info.get("summary") is True and role == "assistant"
            for part in parts:
                for event in self._part(part, role, summary, skipped):
                    for key, value in common.items():
                        event.setdefault(key, value)
                    yield line, event

    @staticmethod
    def _part(part, role: str, summary: bool, skipped) -> list[dict]:
        if not isinstance(part, dict) or not nonempty(part.get("id")):
            skipped["parts without an id"] += 1
            return []
        kind, pid = part.get("type"), part["id"]
        if kind == "text" and isinstance(part.get("text"), str):
            if part.get("ignored") is True or not part["text"]:
                skipped["ignored or empty text parts"] += 1
                return []
            event = {"id": f"oc-{pid}", "trace_type": "assistant" if role == "assistant" else "user",
                     "content": part["text"]}
            if summary:
                event["tags"] = [TAG_COMPACT_SUMMARY]
                event["harness_compaction"] = harness_compaction("opencode", None)
            elif role == "user" and part.get("synthetic") is True:
                event["tags"] = [TAG_CONTEXT]
            return [event]
        if kind == "reasoning" and isinstance(part.get("text"), str):
            if not part["text"]:
                return []
            return [{"id": f"oc-{pid}", "trace_type": "assistant", "content": part["text"], "tags": [TAG_REASONING]}]
        if kind == "tool" and nonempty(part.get("callID")):
            state = part.get("state") if isinstance(part.get("state"), dict) else {}
            call_id = part["callID"]
            out = [call_event(f"oc-{pid}", call_id, nonempty(part.get("tool")) or "tool", state.get("input"))]
            status = state.get("status")
            if status == "completed":
                output = state.get("output")
                out.append(result_event(f"oc-{pid}-r", call_id, output if output is not None else ""))
                meta = state.get("metadata")
                code = meta.get("exit") if isinstance(meta, dict) else None
                if type(code) is int and code != 0:   # a command that ran and failed: its output is all the
                    out[-1]["exit_code"] = code         # model saw, the exit status is in the metadata
            elif status == "error":
                out.append(result_event(f"oc-{pid}-r", call_id, state.get("error"), error=True))
            return out
        if kind == "file":
            url, mime = nonempty(part.get("url")), nonempty(part.get("mime")) or ""
            if role == "user" and url and mime.startswith("image/"):
                return [{"id": f"oc-{pid}", "trace_type": "user", "content": "", "media": {"images": [url]}}]
            skipped["file parts (attached files)"] += 1
            return []
        skipped[f"{str(kind)[:40]} parts" if string(kind) in _PASSED else f"unknown part type {str(kind)[:40]!r}"] += 1
        return []


IMPORTER = OpencodeImporter()
