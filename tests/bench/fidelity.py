"""Compaction fidelity: needed-later identifier recall against a harness's own compaction.

A session that an agent harness compacted itself (Claude Code: a ``compact_boundary`` system line
and the ``isCompactSummary`` user line after it; Codex: a ``compacted`` item; Gemini CLI: a
``user`` record holding ``<state_snapshot>``, or the ``$set`` of the history it replaced; Copilot
CLI: a ``session.compaction_complete`` event; Goose: its summary message before the "Your context
was compacted" note) is split at the
boundary of its first compaction with a readable summary, the part after it ending where the next
compaction begins (:func:`split_session`; docs/compaction.md says why the first). The identifiers that appear before it AND are used again after it (file paths, shell
commands' programs and subcommands are not counted, but paths, CamelCase / snake_case / dotted
names, error names, test names, ids with digits, URLs) are what the agent needed next. We count
how many of them survive:

* in the harness's own summary text (the harness's recall);
* in memcli's working snapshot after ingesting the part before the boundary and running
  ``compact --target-tokens T --keep-steps 0 --tail-turns 0`` with ``T`` = the harness summary's
  token count (memcli's counter) plus what the snapshot carries anyway (system prompt, reply
  priming): memcli's recall at the same budget. The snapshot's real token count is reported too.

The identifier extractor here is deliberately not the summarizer's own (``memcli.compaction.
offline.identifiers``): the benchmark must not grade memcli with its own ruler. Whether the last
user ask before the boundary survives verbatim (whitespace aside) is reported for both.
"""

from __future__ import annotations

import os
import random
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

import orjson

from memcli.importers.claude_code import is_compact_command, is_harness_text, replayed
from memcli.importers.gemini_cli import HARNESS_CONTEXT as _GEMINI_CONTEXT
from memcli.importers.gemini_cli import _is_ack
from memcli.importers.goose import _continues_compaction, _may_summarize, _not_shown

_IDENT = re.compile(
    r"https?://[^\s\"'<>()\[\]{}`\\]+"                                  # URLs
    r"|(?:~?/|\.{1,2}/)?(?:[\w.@-]+/)+[\w.@-]+"                         # paths with a slash
    r"|[\w-]+\.(?:py|js|ts|tsx|jsx|json|jsonl|md|toml|yaml|yml|go|rs|ex|exs|heex|java|rb|sh|sql|css|html|lock|cfg|ini|txt)\b"
    r"|\b[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+\b"         # dotted names (Module.fun)
    r"|\b[A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+\b"                        # CamelCase
    r"|\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b"                               # snake_case
    r"|\b[a-z]+[A-Z][A-Za-z0-9]*\b"                                     # camelCase
    r"|\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b"                               # ENV_VARS
    r"|\b(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[A-Za-z0-9]+(?:-[A-Za-z0-9]+)+\b"  # ids: spotter-gqc1, abc-123
    r"|\b[0-9a-f]{7,40}\b")                                             # hashes
_DULL = {"e.g", "i.e", "etc.", "self.assert", "os.path"}


def idents(text: str) -> set[str]:
    """The identifiers of ``text`` (module docstring), trailing punctuation stripped."""
    out = set()
    for m in _IDENT.finditer(text):
        value = m.group(0).rstrip(".,;:!?\\/")
        if len(value) >= 4 and value not in _DULL and not value.isdigit():
            out.add(value)
    return out


def _texts(value) -> list[str]:
    """Every string inside a parsed JSON value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _texts(v)]
    if isinstance(value, list):
        return [t for v in value for t in _texts(v)]
    return []


@dataclass
class Compacted:
    """A harness-compacted session split at its boundary."""

    name: str
    fmt: str                 # memcli --from
    before: list             # raw lines before the boundary
    after: list              # raw lines after the summary
    summary: str             # the harness's own summary
    last_ask: str            # the last user ask before the boundary
    first_ask: str = ""      # the first one (the request the work started from)
    kept: str = ""           # the text of the messages the harness kept verbatim beside its summary


def _kept_verbatim(values: list, start: int, i: int, fmt: str) -> str:
    """The text of the messages a harness's compaction (its summary at line ``i``, beginning at
    ``start``) kept verbatim in the context it went on with, beside its summary — part of what
    the harness kept, so its recall and its token count include them:

    * Claude Code: the boundary's ``compactMetadata.preservedMessages.uuids`` (or the lines from
      ``preservedSegment.headUuid`` to its ``tailUuid``): a compaction that keeps the newest
      messages (session-memory compaction, a partial ``/compact``) summarizes only those before;
    * Codex: the ``replacement_history`` messages other than the summary's own (a local
      compaction keeps the user's messages, a remote one the newest messages of both sides);
    * Gemini CLI: the ``$set`` history's messages after the summary and the model's
      acknowledgement (the newest part of the history a compression keeps)."""
    texts: list[str] = []
    value = values[i]
    if fmt == "claude-code" and start != i and isinstance(values[start], dict):
        meta = values[start].get("compactMetadata", values[start].get("compact_metadata"))
        meta = meta if isinstance(meta, dict) else {}
        kept, segment = meta.get("preservedMessages"), meta.get("preservedSegment")
        listed = kept.get("uuids") if isinstance(kept, dict) else None
        segment = segment if isinstance(segment, dict) else {}
        uuids = [v.get("uuid") if isinstance(v, dict) else None for v in values[:start]]
        if isinstance(listed, list):
            keep = set(u for u in listed if isinstance(u, str))
            lines = [n for n, u in enumerate(uuids) if u in keep]
        elif isinstance(segment.get("headUuid"), str) and segment["headUuid"] in uuids:
            head = uuids.index(segment["headUuid"])
            tail = segment.get("tailUuid")
            tail = uuids.index(tail, head) if isinstance(tail, str) and tail in uuids[head:] else start - 1
            lines = range(head, tail + 1)
        else:
            lines = []
        texts = ["\n".join(_texts(_conversation(values[n]))) for n in lines if isinstance(values[n], dict)]
    elif fmt == "codex":
        payload = value.get("payload") if isinstance(value.get("payload"), dict) else {}
        summary = payload.get("message") if isinstance(payload.get("message"), str) else ""
        for item in payload.get("replacement_history") or ():
            if isinstance(item, dict) and item.get("type") == "message":
                content = item.get("content")
                text = content if isinstance(content, str) else "\n".join(
                    c["text"] for c in content or () if isinstance(c, dict) and isinstance(c.get("text"), str))
                if not (summary.strip() and summary.strip() in text):   # (the summary, as the bridge message says it)
                    texts.append(text)
    elif fmt == "gemini-cli":
        for later in values[i:i + 4]:
            held = later.get("$set") if isinstance(later, dict) else None
            if isinstance(held, dict) and isinstance(held.get("messages"), list):
                for message in held["messages"]:
                    if isinstance(message, dict) and _SNAPSHOT not in _gm_text(message) and not _is_ack(message):
                        texts.append("\n".join(_texts(_conversation(message))))
                break
    return "\n".join(t for t in texts if t)


def _cc_text(value: dict) -> str:
    """The text of a Claude Code user line: ``message.content`` as a string or its text blocks
    (a ``message`` that is a bare string is taken as the content)."""
    message = value.get("message")
    content = message.get("content") if isinstance(message, dict) else message
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b["text"] for b in content
                         if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str))
    return ""


_SUMMARY_HEAD = "This session is being continued from a previous conversation"   # every Claude Code summary


def _cc_ask(value) -> str | None:
    if value.get("type") != "user" or value.get("isMeta") or value.get("isSidechain") or value.get("isCompactSummary"):
        return None
    message = value.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not (isinstance(content, str) or (isinstance(content, list) and content and all(
            isinstance(b, dict) and b.get("type") == "text" for b in content))):
        return None   # tool results, images: not something the user typed
    text = _cc_text(value)
    # what Claude Code writes in the user's place (the importer's rule: a reminder, a task's notice,
    # hook output …) is no ask; nor a slash command's markup (the importer reads it as ``/name args``)
    return None if text.startswith(("<command-", _SUMMARY_HEAD)) or is_harness_text(text) else text


_SNAPSHOT = "<state_snapshot>"   # Gemini CLI's compression summary


def _gm_text(value: dict) -> str:
    """The text of a Gemini CLI message record: ``content`` as a string or its ``text`` parts."""
    content = value.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _is_gemini(value: dict) -> bool:
    """A Gemini CLI message record (not a Claude Code line: no ``message``; not Codex: no ``payload``)."""
    return value.get("type") in ("user", "gemini") and "message" not in value and "payload" not in value


def _gemini_ask(value) -> str | None:
    if value.get("type") != "user" or not _is_gemini(value):
        return None
    text = _gm_text(value)
    # (Gemini CLI's own user turns, the environment and a hook's context, are no asks: the importer's rule)
    return text if text and _SNAPSHOT not in text and not text.lstrip().startswith(_GEMINI_CONTEXT) else None


_COPILOT_MESSAGES = ("user.message", "assistant.message")


def _copilot_ask(value) -> str | None:
    """A Copilot CLI ``user.message`` the person typed (not autopilot's continuation, a skill's
    injection or another agent's prompt)."""
    data = value.get("data")
    if value.get("type") != "user.message" or not isinstance(data, dict) or data.get("isAutopilotContinuation"):
        return None
    if isinstance(data.get("source"), str) and data["source"].startswith(("skill-", "agent-")):
        return None
    return data["content"] if isinstance(data.get("content"), str) and data["content"] else None


def _goose_text(value: dict) -> str:
    """The text items of a Goose message."""
    content = value.get("content")
    return "\n".join(c["text"] for c in content if isinstance(c, dict) and c.get("type") == "text"
                     and isinstance(c.get("text"), str)) if isinstance(content, list) else ""


def _is_goose(value: dict) -> bool:
    return value.get("role") in ("user", "assistant") and isinstance(value.get("content"), list)


def _goose_ask(value) -> str | None:
    """A Goose user message the person typed and sees: text items only. (Goose's copy of the last
    ask after an automatic compaction's note passes here too — the importer tags it ``context``,
    :func:`memcli.importers.goose.is_ask_copy` — but it repeats an earlier message's text, so the
    first and last ask texts before a boundary are the same without it.)"""
    if not _is_goose(value) or value.get("role") != "user" or _not_shown(value):
        return None
    if not all(isinstance(c, dict) and c.get("type") == "text" for c in value["content"]):
        return None   # tool responses: not something the person typed
    return _goose_text(value) or None


def _goose_hidden_ask(values: list, start: int, end: int) -> list:
    """The ask Goose compacted on before answering, when it did, by the importer's rule: Goose
    hides that message (``userVisible`` false, just before its summary) and writes a copy of its
    text right after its automatic note (:func:`memcli.importers.goose.is_ask_copy`); the hidden
    one stays the ask. [] otherwise."""
    from memcli.importers.goose import _ask_text, is_ask_copy, is_message

    if not 0 < start < end - 2:
        return []
    hidden, note, copy = values[start - 1], values[start + 1], values[start + 2]
    if not all(isinstance(v, dict) and is_message(v) for v in (hidden, note, copy)):
        return []
    text = _ask_text(hidden)
    if text is None or not _may_summarize(hidden) or _continues_compaction(note) != "auto" or not is_ask_copy(copy, text):
        return []
    return [text] if text else []


def _codex_ask(value) -> str | None:
    payload = value.get("payload")
    if value.get("type") != "event_msg" or not isinstance(payload, dict) or payload.get("type") != "user_message":
        return None
    return payload["message"] if isinstance(payload.get("message"), str) and payload["message"] else None


def _point(values: list, i: int):
    """(format, where the harness's compaction begins, its summary text) when line ``i`` is the
    summary of one, else None. Claude Code: an ``isCompactSummary`` user line of the main chain
    (a subagent's own compaction is not the session's), beginning at the ``compact_boundary``
    just before it (file-history rows may sit between) or at the summary itself when there is no
    boundary (1.x, a resumed file). Codex: a ``compacted`` line; its summary is ``message``.
    Gemini CLI: the ``user`` record holding ``<state_snapshot>``. Copilot CLI: a
    ``session.compaction_complete`` event (``summaryContent``). Goose: the user message the person
    is not shown that the "Your context was compacted" note follows."""
    value = values[i]
    if not isinstance(value, dict):
        return None
    if (value.get("type") == "user" and value.get("isSidechain") is not True
            and (value.get("isCompactSummary") is True or _cc_text(value).startswith(_SUMMARY_HEAD))):
        start = i
        for j in range(i - 1, max(i - 6, -1), -1):
            v = values[j]
            if isinstance(v, dict) and v.get("type") == "system" and v.get("subtype") == "compact_boundary":
                start = j
                break
            if isinstance(v, dict) and v.get("type") in ("user", "assistant"):
                break   # conversation between: that boundary is not this summary's
        return "claude-code", start, _cc_text(value)
    if value.get("type") == "compacted":
        payload = value.get("payload")
        message = payload.get("message") if isinstance(payload, dict) else None
        return "codex", i, message if isinstance(message, str) else ""
    if value.get("type") == "user" and _is_gemini(value) and _SNAPSHOT in _gm_text(value):
        return "gemini-cli", i, _gm_text(value)
    if value.get("type") == "session.compaction_complete" and isinstance(value.get("data"), dict) \
            and value["data"].get("success") is not False:   # (a compaction that failed replaced nothing)
        summary = value["data"].get("summaryContent")   # Copilot CLI
        return "copilot-cli", i, summary if isinstance(summary, str) else ""
    if _is_goose(value) and _may_summarize(value) and i + 1 < len(values):   # Goose: the importer's rule
        note = values[i + 1]
        if isinstance(note, dict) and _is_goose(note) and _continues_compaction(note) is not None:
            return "goose", i, _goose_text(value)
    if isinstance(value.get("$set"), dict) and isinstance(value["$set"].get("messages"), list):
        # a compression written only as the history it replaces: the summary is its first message
        for message in value["$set"]["messages"]:
            if isinstance(message, dict) and message.get("type") == "user" and _SNAPSHOT in _gm_text(message):
                return "gemini-cli", i, _gm_text(message)
    return None


def _redacted(summary: str) -> bool:
    """An empty summary, or one that is only a placeholder note (``[REDACTED]``, ``[trimmed for
    fixture]``): nothing a harness wrote to compare with."""
    text = summary.strip()
    return not text or text.startswith("[REDACTED") or bool(re.fullmatch(r"\[[^\[\]\n]{0,200}\]", text))


def _copies(values: list) -> set:
    """The lines that repeat an earlier line's ``uuid`` and ``timestamp``: Claude Code's second
    ``/compact`` in a process first appends again the lines before the previous compaction
    (anthropics/claude-code#92089; the importer skips them likewise). Read as written, they would
    be names "used again" after the first summary and a second copy of its summary."""
    stamps: dict = {}
    return {n for n, value in enumerate(values) if isinstance(value, dict) and replayed(stamps, value)}


def compactions(path: Path) -> list[Compacted]:
    """Every harness compaction of the session, in file order, each split as one
    (:func:`split_session`). Each one's ``after`` runs to where the next compaction begins — the
    span in which its summary stood for what came before — so a later summary (the harness's
    own text, repeating names from before) never counts as use. A boundary with no summary after
    it is no compaction to measure (nothing stands for the lines before it); its line carries no
    conversation, so it stays inside its neighbours' spans harmlessly."""
    lines = path.read_bytes().splitlines()
    values = []
    for raw in lines:
        try:
            values.append(orjson.loads(raw))
        except orjson.JSONDecodeError:
            values.append(None)
    copies = _copies(values)
    if copies:   # a replay is neither a compaction nor use: read the session without it
        lines = [raw for n, raw in enumerate(lines) if n not in copies]
        values = [v for n, v in enumerate(values) if n not in copies]
    points = []
    for i in range(len(values)):
        p = _point(values, i)
        if p is not None and not (points and p[0] == "gemini-cli" and points[-1][1][2] == p[2]):
            points.append((i, p))   # (Gemini CLI writes the summary's record, then the $set holding it again)
    out = []
    for n, (i, (fmt, start, summary)) in enumerate(points):
        end = points[n + 1][1][1] if n + 1 < len(points) else len(lines)
        ask = {"claude-code": _cc_ask, "codex": _codex_ask, "gemini-cli": _gemini_ask, "copilot-cli": _copilot_ask,
               "goose": _goose_ask}[fmt]
        asks = [a for a in (ask(v) for v in values[:start] if isinstance(v, dict)) if a]
        if fmt == "goose":
            asks += _goose_hidden_ask(values, start, end)
        after = i + 1
        if fmt == "claude-code":
            while after < end and _cc_compaction_line(values[after]):
                after += 1
        out.append(Compacted(path.stem, fmt, lines[:start], lines[after:end], summary, asks[-1] if asks else "",
                             asks[0] if asks else "", _kept_verbatim(values, start, i, fmt)))
    return out


_CC_COMMAND_LINES = ("Caveat:", "<local-command-stdout>", "<local-command-stderr>")


def _cc_compaction_line(value) -> bool:
    """Whether a Claude Code line right after a summary is still the compaction's own: a manual
    ``/compact``'s caveat, its command line (whose ``<command-args>`` are instructions to the
    compaction, which the harness's summary read and memcli's did not) and its output, or a line
    that is not conversation. Their names are no use of what came before."""
    if not isinstance(value, dict) or value.get("type") not in ("user", "assistant"):
        return True
    if value.get("type") != "user":
        return False
    text = _cc_text(value).lstrip()
    return text.startswith(_CC_COMMAND_LINES) or is_compact_command(text)


def _talks(raw: bytes) -> bool:
    """Whether a transcript line is conversation (a message of either side, a Codex item)."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return False
    return isinstance(value, dict) and (value.get("type") in ("user", "assistant", "response_item", "gemini",
                                                              *_COPILOT_MESSAGES) or _is_goose(value))


def split_session(path: Path, redacted: bool = False) -> Compacted | None:
    """The session split at its FIRST harness compaction whose summary is readable, or None when
    it has none. The first, because there the harness and memcli start from the same raw lines:
    from the second on, the harness summarized its own earlier summary and the work since, while
    memcli would read every line before. One with nothing before it (a summary that opens a
    resumed file, or only other compactions) is passed over. ``redacted=True``: a compaction whose summary is redacted or
    empty (a Codex remote compaction) is taken too, with an empty summary — memcli's side can
    still be measured at a chosen budget."""
    for session in compactions(path):
        if not any(_talks(raw) for raw in session.before):
            continue
        if _redacted(session.summary):
            if not redacted:
                continue
            session.summary = ""
        return session
    return None


_CALL_ID_KEYS = {"id", "tool_use_id", "call_id"}


_COPILOT_TALK = (*_COPILOT_MESSAGES, "tool.execution_complete")


def _conversation(value):
    """What the model read and wrote in a transcript line: the message (Claude Code), the payload
    (Codex) or the record's text and calls (Gemini CLI), without the harness's bookkeeping (uuids,
    timestamps, cwd, tokens) or call ids."""
    if not isinstance(value, dict):
        return None
    data = value.get("data")
    if _is_gemini(value):   # its text and its calls (name, args, result), not thoughts, tokens, model
        content = [value.get("content"), [{k: c.get(k) for k in ("name", "args", "result")}
                                          for c in value.get("toolCalls") or () if isinstance(c, dict)]]
    elif value.get("type") in _COPILOT_TALK and isinstance(data, dict):   # what was typed, said, run, returned
        content = [data.get("content"), [{k: r.get(k) for k in ("name", "arguments")}
                                         for r in data.get("toolRequests") or () if isinstance(r, dict)],
                   (data.get("result") or {}).get("content") if isinstance(data.get("result"), dict) else None,
                   data["error"].get("message") if isinstance(data.get("error"), dict) else data.get("error")]
    elif _is_goose(value):   # text, tool requests (name, arguments), tool responses' values
        content = [c.get("text") if c.get("type") == "text" else
                   (c.get("toolCall") or {}).get("value") if c.get("type") == "toolRequest" else
                   (c.get("toolResult") or {}).get("value") if c.get("type") == "toolResponse" else None
                   for c in value["content"] if isinstance(c, dict)]
    else:
        inner = value.get("message") if "message" in value and isinstance(value.get("message"), dict) \
            else value.get("payload")
        if not isinstance(inner, dict):
            return None
        content = inner.get("content", inner)

    def strip(v):
        if isinstance(v, dict):
            return {k: strip(x) for k, x in v.items() if k not in _CALL_ID_KEYS and k != "type"}
        if isinstance(v, list):
            return [strip(x) for x in v]
        if isinstance(v, str) and v.startswith('{"output"'):
            # an older Codex exec result: JSON whose "metadata" (exit_code, duration_seconds) is the
            # harness's bookkeeping; the command's output is the conversation
            try:
                parsed = orjson.loads(v)
            except orjson.JSONDecodeError:
                return v
            if isinstance(parsed, dict) and isinstance(parsed.get("output"), str):
                return parsed["output"]
        return v
    return strip(content)


def needed_later(session: Compacted) -> set[str]:
    """Identifiers present before the boundary and used again after it."""
    def of(lines) -> set:
        out = set()
        for raw in lines:
            try:
                out |= idents("\n".join(_texts(_conversation(orjson.loads(raw)))))
            except orjson.JSONDecodeError:
                continue
        return out
    return of(session.before) & of(session.after)


def project_root(identifiers: set[str]) -> str:
    """The directory every absolute path among ``identifiers`` lies under (``/home/me/shop/``),
    when there are two or more and it is deeper than one level; else ""."""
    paths = sorted(i for i in identifiers if i.startswith("/") and i.count("/") >= 3)
    if len(paths) < 2:
        return ""
    common = os.path.commonpath(paths)
    return common.rstrip("/") + "/" if common.count("/") >= 2 else ""


def named(identifier: str, text: str, root: str = "") -> bool:
    """Whether ``text`` names ``identifier``: as written, or an absolute path under the project
    ``root`` by the path from there (``src/app.py`` for ``/home/me/shop/src/app.py``), as
    summaries (a harness's, memcli's) and the agent's next calls write them; the same rule for both."""
    if identifier in text:
        return True
    return bool(root) and identifier.startswith(root) and "/" in identifier[len(root):] and \
        identifier[len(root):] in text


def _norm(text: str) -> str:
    return " ".join(text.split())


@dataclass
class Fidelity:
    name: str
    needed: int
    harness_recall: float
    memcli_recall: float
    harness_tokens: int
    memcli_tokens: int
    target_tokens: int
    harness_last_ask: bool
    memcli_last_ask: bool
    refused: str | None = None   # why memcli could not compact to target_tokens (it fit a larger one)
    harness_first_ask: bool = False   # the first ask verbatim (whitespace aside) in the harness's summary
    memcli_first_ask: bool = False    # ... in memcli's snapshot
    kept_tokens: int = 0              # of harness_tokens, the messages the harness kept verbatim (Compacted.kept)


def _refusal(agent, target: int, policies: tuple) -> str | None:
    """None when ``agent`` compacted to ``target`` with one of ``policies`` (compact's options,
    tried in order), else the last one's refusal."""
    from memcli.errors import CompactionError

    said = None
    for policy in policies:
        try:
            agent.compact(target_tokens=target, **policy)
            return None
        except CompactionError as exc:
            said = str(exc)
    return said


def measure(session: Compacted, work: Path | None = None, summary_tokens: int | None = None) -> Fidelity:
    """Ingest ``session.before``, compact it to the token count of what the harness went on with
    (its summary, and the messages it kept verbatim: :func:`_kept_verbatim`; or to
    ``summary_tokens`` when the harness's summary is not readable), and compare. Where the harness
    kept its summary alone, memcli moves all it can (``--tail-turns 0 --keep-steps 0``: summary
    against summary); where it kept messages verbatim too, memcli compacts as a user runs it
    (its default policy: its newest steps kept verbatim too)."""
    from memcli.api import Memory
    from memcli.snapshot.assemble import working_counter
    from memcli.snapshot.views import TokenMeter

    needed = needed_later(session)
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        src = Path(tmp) / f"{session.name}.jsonl"
        src.write_bytes(b"\n".join(session.before) + b"\n")
        agent = Memory(Path(tmp) / "mem").agent("s")
        agent.ingest(src, session.fmt, skip_invalid=True)   # a torn or corrupt line of a real session: passed over
        harness_text = "\n".join(t for t in (session.summary, session.kept) if t)   # what the harness went on with
        meter = TokenMeter(working_counter())
        harness_tokens = meter.text(harness_text) if summary_tokens is None else summary_tokens
        empty = Memory(Path(tmp) / "empty").agent("e")   # what a snapshot carries with no trace
        empty.ingest([{"trace_type": "user", "content": "x"}], "native")
        floor = empty.snapshot(full=True).tokens - meter.text("x")
        target = harness_tokens + max(floor, 0)
        # the harness kept its summary alone: memcli moves all it can; it went on with messages
        # verbatim too: memcli compacts as a user runs it (its newest steps stay), and where those
        # alone are over the budget (it refuses, naming its minimum), moving all it can
        # (a summary not readable: memcli alone at ``summary_tokens`` for its summary, all moved)
        moved = {"keep_steps": 0, "tail_turns": 0}
        policies = ({}, moved) if session.kept and summary_tokens is None else (moved,)
        refused = None
        for size in (target << attempt for attempt in range(8)):
            said = _refusal(agent, size, policies)
            if said is None:
                break
            # what must stay (the last ask, the newest step: a large tool result just before the
            # boundary) is above the harness's budget: memcli is measured at the first doubling
            # it can meet, and the figures say it did not fit
            refused = refused or said
        else:
            raise RuntimeError(f"{session.name}: no compaction up to {target << 7:,} tokens: {refused}")
        snap = agent.snapshot(full=True)
        text = "\n".join(_texts(orjson.loads(orjson.dumps(snap.payload))))
    root = project_root(needed)
    found_memcli = {i for i in needed if named(i, text, root)}
    found_harness = {i for i in needed if named(i, harness_text, root)}
    n = max(len(needed), 1)
    ask, first = _norm(session.last_ask), _norm(session.first_ask)
    return Fidelity(session.name, len(needed), len(found_harness) / n, len(found_memcli) / n, harness_tokens,
                    snap.tokens, target, bool(ask) and ask in _norm(harness_text),
                    bool(ask) and ask in _norm(text), refused, bool(first) and first in _norm(harness_text),
                    bool(first) and first in _norm(text), kept_tokens=meter.text(session.kept) if session.kept else 0)


def measure_in_rounds(session: Compacted, rounds: int = 8) -> tuple[float, float]:
    """(memcli's recall, the harness's) when the part before the boundary arrives in ``rounds``
    parts, compacted after each (as a hook does) to twice the harness summary's size plus what a
    snapshot carries, then once more to the harness's size itself (:func:`measure`'s target, or
    its first doubling memcli can meet): memcli's summaries roll up (and merge) on the way."""
    from memcli.api import Memory
    from memcli.errors import CompactionError

    first = measure(session)
    needed = needed_later(session)
    with tempfile.TemporaryDirectory() as tmp:
        agent = Memory(Path(tmp) / "mem").agent("s")
        size = max(len(session.before) // rounds, 1)
        for n, start in enumerate(range(0, len(session.before), size)):
            part = Path(tmp) / f"part{n}.jsonl"
            part.write_bytes(b"\n".join(session.before[start:start + size]) + b"\n")
            agent.ingest(part, session.fmt, skip_invalid=True)
            try:
                agent.compact(target_tokens=2 * first.target_tokens, tail_turns=0)
            except CompactionError:   # the newest steps alone are larger: the next round moves them
                pass
        for attempt in range(8):
            try:
                agent.compact(target_tokens=first.target_tokens << attempt, keep_steps=0, tail_turns=0)
                break
            except CompactionError:
                continue
        text = "\n".join(_texts(orjson.loads(orjson.dumps(agent.snapshot(full=True).payload))))
    root = project_root(needed)
    n = max(len(needed), 1)
    return sum(named(i, text, root) for i in needed) / n, first.harness_recall


def rule_session(seed: int, steps: int = 300, after: int = 120, compactions: int = 2) -> Compacted:
    """A Claude Code session built by rule, compacted by a rule-made harness summary.

    The agent works on a project whose vocabulary is drawn from a pool (files ``pkg/<area>/
    mod_<k>.py``, classes ``<Area><K>Manager``, functions ``handle_<area>_<k>``, env vars, test
    ids, commit hashes), using recent names more often (a random walk over the pool); two asks,
    a failing test fixed later. The "harness summary" follows the sections Claude Code's own
    holds (primary request, key concepts, files and code sections, errors and fixes, all user
    messages, pending tasks, current work, next step), naming the 16 files edited last with the
    class, function and code edited in them, every ask and the last 4 errors — what Claude Code's
    summaries hold, at a length (~1,500 tokens) like theirs for a session of this size. After the
    boundary the work goes on with the same random walk for ``after`` steps; with ``compactions``
    of 2 or more the harness compacts again (a new boundary and summary) and the work goes on
    again. The session is written as Claude Code writes its file and split by
    :func:`split_session`, as a real one is: at the first compaction, its ``after`` ending where
    the second begins."""
    import random

    rng = random.Random(seed)
    areas = ["billing", "orders", "shipping", "auth", "search", "reports", "catalog", "notify"]
    pool = []
    for k in range(60):
        area = areas[k % len(areas)]
        pool.append({"file": f"pkg/{area}/mod_{k}.py", "cls": f"{area.title()}{k}Manager",
                     "fn": f"handle_{area}_{k}", "env": f"APP_{area.upper()}_{k}_URL",
                     "test": f"tests/test_{area}_{k}.py::test_case_{k}", "sha": f"{rng.getrandbits(28):07x}"})
    lines: list[bytes] = []
    uid = [0]

    def emit(kind: str, content, **extra) -> None:
        uid[0] += 1
        value = {"type": kind, "uuid": f"r{seed}-{uid[0]}", "sessionId": f"rule-{seed}",
                 "timestamp": f"2026-01-01T00:{uid[0] // 60 % 60:02d}:{uid[0] % 60:02d}Z",
                 "message": {"role": kind, "content": content}, **extra}
        if kind == "assistant":
            value["message"]["id"] = f"msg_{seed}_{uid[0]}"
        lines.append(orjson.dumps(value))

    position = [0]
    edited: list[dict] = []
    errors: list[str] = []

    def step(n: int) -> None:
        position[0] = max(0, min(len(pool) - 1, position[0] + rng.choice([-2, -1, 0, 1, 1, 2, 3])))
        item = pool[position[0]]
        other = pool[rng.randrange(len(pool))]
        call = f"toolu_{seed}_{n}"
        kind = rng.choice(["read", "edit", "edit", "test", "grep"])
        emit("assistant", [{"type": "text", "text": f"Next I look at {item['cls']} in {item['file']}."}])
        if kind == "edit":
            emit("assistant", [{"type": "tool_use", "id": call, "name": "Edit", "input": {
                "file_path": item["file"], "old_string": f"def {item['fn']}(self):\n    pass",
                "new_string": f"def {item['fn']}(self):\n    return os.environ['{item['env']}']"}}])
            emit("user", [{"type": "tool_result", "tool_use_id": call, "content": f"Updated {item['file']}"}])
            edited.append(item)
        elif kind == "test":
            failing = rng.random() < 0.3
            text = (f"FAILED {item['test']} - AssertionError: {item['cls']}.{item['fn']} returned None"
                    if failing else f"12 passed in 0.4s ({item['test']})")
            emit("assistant", [{"type": "tool_use", "id": call, "name": "Bash",
                                "input": {"command": f"pytest -q {item['test'].split('::')[0]}"}}])
            emit("user", [{"type": "tool_result", "tool_use_id": call, "content": text, "is_error": failing}])
            if failing:
                errors.append(text)
        elif kind == "grep":
            emit("assistant", [{"type": "tool_use", "id": call, "name": "Grep", "input": {"pattern": item["fn"]}}])
            emit("user", [{"type": "tool_result", "tool_use_id": call,
                           "content": f"{item['file']}:12: {item['fn']}\n{other['file']}:40: uses {item['cls']}"}])
        else:
            emit("assistant", [{"type": "tool_use", "id": call, "name": "Read", "input": {"file_path": item["file"]}}])
            emit("user", [{"type": "tool_result", "tool_use_id": call, "content":
                           f"class {item['cls']}:\n    def {item['fn']}(self): ...\n# see commit {item['sha']}\n"
                           f"# config: {item['env']}; related: {other['cls']}"}])

    asks = [f"Make the {areas[seed % 8]} flows read their endpoints from the environment and keep the tests green.",
            "Also keep the public names unchanged, and tell me which commits touched them."]
    emit("user", asks[0])
    for n in range(steps):
        if n == steps // 2:
            emit("user", asks[1])
        step(n)

    def harness_summary() -> str:
        files = list(dict.fromkeys(i["file"] for i in reversed(edited)))[:16]
        by_file = {i["file"]: i for i in edited}
        return "\n".join([
            "This session is being continued from a previous conversation that ran out of context.",
            "Summary:", "1. Primary Request and Intent:", *(f"   - {a}" for a in asks),
            "2. Key Technical Concepts:", "   - endpoints read from environment variables; pytest",
            "3. Files and Code Sections:",
            *(f"   - {f}\n     - {by_file[f]['cls']}.{by_file[f]['fn']} now returns the endpoint\n"
              f"     ```python\n     def {by_file[f]['fn']}(self):\n         return os.environ['{by_file[f]['env']}']\n     ```"
              for f in files),
            "4. Errors and fixes:", *(f"   - {e}\n     - fixed by editing the function it names" for e in errors[-4:]),
            "5. All user messages:", *(f"   - {a}" for a in asks),
            "6. Pending Tasks:", "   - finish the remaining modules; list the commits",
            "7. Current Work:", f"   - working on {pool[position[0]]['cls']} in {pool[position[0]]['file']}",
            "8. Optional Next Step:", "   - run the whole test suite"])

    def compact(pre_tokens: int) -> None:
        """The boundary and the summary line, as Claude Code writes them."""
        uid[0] += 1
        lines.append(orjson.dumps({"type": "system", "subtype": "compact_boundary", "uuid": f"r{seed}-{uid[0]}",
                                   "parentUuid": None, "logicalParentUuid": f"r{seed}-{uid[0] - 1}",
                                   "sessionId": f"rule-{seed}", "content": "Conversation compacted",
                                   "compactMetadata": {"trigger": "auto", "preTokens": pre_tokens}}))
        emit("user", harness_summary(), isCompactSummary=True, isVisibleInTranscriptOnly=True)

    for c in range(compactions):
        compact(150_000 + c)
        for n in range(steps + c * after, steps + (c + 1) * after):
            step(n)
    return _split(f"rule-built-{seed}", b"\n".join(lines) + b"\n")


def _split(name: str, data: bytes) -> Compacted:
    """A session's bytes, written as its harness writes them and split as a real one is."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{name}.jsonl"
        path.write_bytes(data)
        session = split_session(path)
    assert session is not None
    return session


def seeded_shapes() -> dict:
    """The shapes harnesses compact in practice, built by rule, as functions of a seed
    (:func:`tests.harness_fixtures.worked_session`, ``worked_rollout``, ``worked_gemini``): Claude
    Code summaries in its nine sections naming the files read and edited last (24, or only the
    edited ones, or 5: a terse one), compacted while a large tool result was the last step, with
    the first ask's names coming back only after the boundary, compacted three times; Codex local
    compactions whose handoff summary is a few hundred tokens, the user's messages kept beside it;
    Gemini CLI compressions (a ``<state_snapshot>``), alone or with the newest part of the history
    kept as it was (``-kept-history``: where Gemini CLI's split point falls)."""
    from tests.harness_fixtures import worked_gemini, worked_rollout, worked_session

    return {"worked-dense": lambda seed: worked_session(seed),
            "worked-edited-only": lambda seed: worked_session(seed, dense=False),
            "worked-big-last-result": lambda seed: worked_session(seed, big_tail=True),
            "worked-early-names": lambda seed: worked_session(seed, early=True),
            "worked-compacted-3x": lambda seed: worked_session(seed, compactions=3),
            "worked-terse": lambda seed: worked_session(seed, named=5),
            "codex-handoff": lambda seed: worked_rollout(seed),
            "codex-handoff-short": lambda seed: worked_rollout(seed, steps=40, after=30),
            "gemini-state-snapshot": lambda seed: worked_gemini(seed),
            "gemini-state-snapshot-short": lambda seed: worked_gemini(seed, steps=50, after=30, named=6),
            "gemini-kept-history": lambda seed: worked_gemini(seed, keep=0.3),
            "gemini-kept-history-short": lambda seed: worked_gemini(seed, steps=50, after=30, named=6, keep=0.3)}


# the seed of each shape's one session in :func:`worked_sessions`
WORKED_SEEDS = {"worked-dense": 1, "worked-edited-only": 3, "worked-big-last-result": 4, "worked-early-names": 5,
                "worked-compacted-3x": 6, "worked-terse": 13, "codex-handoff": 8, "codex-handoff-short": 12,
                "gemini-state-snapshot": 17, "gemini-state-snapshot-short": 18, "gemini-kept-history": 19,
                "gemini-kept-history-short": 20}
SEEDS = range(200, 240)   # the seeds the shapes of MANY_SEEDED are built with for the many-sessions rows
# the shapes ``make bench`` measures on every seed of SEEDS, so one lucky or unlucky seed decides nothing
MANY_SEEDED = ("codex-handoff", "codex-handoff-short", "gemini-state-snapshot", "gemini-state-snapshot-short",
               "gemini-kept-history", "gemini-kept-history-short", "worked-terse", "worked-dense")


def worked_sessions() -> list[Compacted]:
    """One session of each :func:`seeded_shapes` shape (its seed: :data:`WORKED_SEEDS`)."""
    shapes = seeded_shapes()
    return [_split(name, shapes[name](seed).jsonl()) for name, seed in WORKED_SEEDS.items()]


# --- a long conversation: facts both sides state once, in small talk ---

_SMALL_TALK = ["That sounds great!", "Wow, I love that.", "How was your week?", "Tell me more about it.",
               "I've been pretty busy lately with work.", "Haha yes, totally agree.", "That must have been hard.",
               "I'm so happy for you!", "What are you up to this weekend?", "Take care, talk soon!",
               "Oh nice, good for you.", "Same here, honestly.", "Sorry to hear that.", "Let's catch up soon."]
_FACTS = ["Last week I finally visited {v} with my family, it was amazing.",
          "I signed up for the {v} class at the community center.",
          "We adopted a puppy and named him {v}!",
          "My new manager is called {v} and she is really kind.",
          "I ran the charity race in {v} minutes this year.",
          "The book I can't put down is {v}, you should read it."]
_VALUES = [["Oslo", "Lima", "Kyoto", "Denver", "Nairobi", "Lisbon"], ["pottery", "salsa", "guitar", "yoga"],
           ["Pepper", "Milo", "Luna", "Bailey"], ["Gina", "Audrey", "Priya", "Helen"], None,
           ["Dune", "Beloved", "Emma", "Ulysses"]]


SPEAKERS = {"user": "Maya", "assistant": "Theo"}   # a dated chat's two people (conversation(dated=True))
SESSION_TURNS = 20   # exchanges a day in a dated chat


def conversation(seed: int, turns: int = 300, dated: bool = False,
                 one_role: bool = False) -> tuple[list[dict], dict[str, str]]:
    """A chat of ``turns`` user/assistant exchanges, mostly small talk, into which each side states
    facts once (a place, a class, a pet's name, a number …), anywhere in its message: (native
    events, {fact value: speaker}). ``dated``: as conversation benchmarks over several sessions
    have it — :data:`SESSION_TURNS` exchanges a day, the days 2–8 apart (each event's ``ts``),
    each message beginning with its speaker's name (:data:`SPEAKERS`); ``one_role`` too: both
    speakers' messages as ``user`` (as a two-person chat is often piped in). Built by rule; no
    public conversation benchmark is used."""
    rnd = random.Random(seed)
    days = random.Random(seed + 1_000)
    events, facts = [], {}
    ts = 1_680_000_000.0
    for turn in range(turns):
        if dated and turn % SESSION_TURNS == 0:
            ts += days.randrange(2, 9) * 86_400
        for speaker in ("user", "assistant"):
            said = rnd.sample(_SMALL_TALK, rnd.choice((1, 2, 3)))
            if rnd.random() < 0.3:
                kind = rnd.randrange(len(_FACTS))
                value = str(rnd.randrange(20, 400)) if _VALUES[kind] is None else \
                    f"{rnd.choice(_VALUES[kind])}{len(facts)}"
                facts[value] = speaker
                said.insert(rnd.randrange(len(said) + 1), _FACTS[kind].format(v=value))
            if not dated:
                events.append({"trace_type": speaker, "content": " ".join(said)})
                continue
            ts += 30
            events.append({"trace_type": "user" if one_role else speaker, "content": f"{SPEAKERS[speaker]}: "
                           + " ".join(said), "ts": ts})
    return events, facts


def lead_kept(messages: list[str], chars: int, facts: dict[str, str], line: int = 22) -> int:
    """The baseline of extractive summarization (lead): every message's head, one length for all,
    as long as fits ``chars`` (each message on a line of ``line`` more characters: its turn id and
    speaker); how many of ``facts`` it keeps."""
    from memcli.compaction.offline import clip_ask

    lo, hi = 0, max((len(m) for m in messages), default=0)
    while lo < hi:   # the longest head length that fits
        mid = (lo + hi + 1) // 2
        if sum(len(clip_ask(m, mid)) + line for m in messages) <= chars:
            lo = mid
        else:
            hi = mid - 1
    text = "\n".join(clip_ask(m, lo) for m in messages) if lo else ""
    return sum(value in text for value in facts)


def measure_conversation(seed: int, target_tokens: int | None = None, dated: bool = False,
                         one_role: bool = False) -> tuple[int, int, int]:
    """(facts, kept by memcli's compaction at ``target_tokens`` — its default target when None —,
    kept by the lead baseline in as many characters as memcli's summary plus what memcli keeps
    active) of :func:`conversation` (``dated``: over days, its speakers named; ``one_role``: both
    as ``user``)."""
    from memcli.api import Memory

    events, facts = conversation(seed, dated=dated, one_role=one_role)
    with tempfile.TemporaryDirectory() as tmp:
        agent = Memory(Path(tmp)).agent("c")
        agent.ingest(events, "native")
        result = agent.compact(target_tokens=target_tokens)
        text = "\n".join(_texts(orjson.loads(orjson.dumps(agent.snapshot(full=True).payload))))
    moved = [e["content"] for e in events[:(1 if one_role else 2) * result.whole_turns]]   # (a turn: an ask and a reply)
    active = "\n".join(e["content"] for e in events[len(moved):])
    # the better lead: every message's head, or the asks' alone (what the offline summary kept before)
    room = len(result.summary or "")
    lead = max(lead_kept(moved, room, facts), lead_kept(moved[::2], room, facts)) + sum(v in active for v in facts)
    return len(facts), sum(v in text for v in facts), lead
