"""``--from gemini-cli``: a Gemini CLI recorded session, as a replay log
(``~/.gemini/tmp/<project>/chats/session-<time>-<id8>.jsonl``, written since March 2026) or as
the legacy one-document ``session-*.json``.

The JSONL file is a log its ``chatRecordingService`` appends to, replayed in order:

* a header line ``{"sessionId", "projectHash", "startTime", "lastUpdated", "kind"?,
  "directories"?}`` (a legacy record written on one line also carries ``messages``);
* message records ``{"id", "timestamp", "type": "user" | "gemini" | "info" | "error" |
  "warning", "content", "toolCalls", "thoughts", "tokens", "model"}``: a record whose ``id`` was
  seen before replaces that message in place (the last version wins; Gemini CLI re-writes a
  message when its tool calls finish or its thoughts and tokens arrive);
* ``{"$set": {...}}`` updates the metadata; its ``summary`` (Gemini's one-line summary of the
  session) becomes the session's title (``result.meta``, kept by ``memcli sync``). With
  ``messages`` Gemini CLI wrote its history again (``updateMessagesFromHistory``: on initialize
  and resume, after the rollback of an aborted prompt, a compression, tool-output masking); each
  kept message is its record with ``content`` set to its history parts. Memory is append-only
  and a harness compaction is an item beside the history it summarized, so only a rollback
  removes messages (see ``_Session._set_messages``): a list that brings a ``<state_snapshot>``
  summary never read before is a compression and removes nothing; otherwise the messages after
  the last one the list holds are dropped (all of them when it holds none: the whole
  conversation again). Held messages are updated in place and the list's new ones (the summary,
  the model's acknowledgement) go after every message read, so one import of a file gives what
  a sync across the compression stored: the same traces in the same order. A compression keeps
  the newest messages under new ids (``startChat`` gives each kept history turn a new id and
  ``updateMessagesFromHistory`` a new record of its parts): a new message after the summary that
  copies a message read — same type, same text of its text parts (whitespace, invisible
  characters and HTML comments aside: what Gemini CLI strips when it records the model's text),
  same ``functionCall`` / ``functionResponse`` names and ids (a ``synth_`` id not compared) — is
  that message: it stays where it was and the copy adds nothing, now or when a later ``$set``
  or ``$rewindTo`` names the copy's id. Copies are matched in order as the newest part of what
  was read (``_Session._copies``), so an ask typed twice elsewhere stays two asks; one history
  turn that coalesced consecutive messages of one role is matched as that run;
* a re-recording: tool-output masking (``client.tryMaskToolOutputs(getHistory())``) and a
  truncation-only compression (``CONTENT_TRUNCATED``) hand ``GeminiChat.setHistory`` the history
  as ``Content`` turns with no ids (consecutive turns of one role coalesced); for each turn, in
  order, ``recordSyntheticMessage`` appends a new record (a new id, ``content`` its parts, no
  ``toolCalls``) and a ``{"$set": {"lastUpdated"}}``, then ``updateMessagesFromHistory`` writes a
  ``$set.messages`` of exactly those records (Gemini CLI's own loader then sees only them). What
  this relies on (``_Session._rerecorded``): records with ids never seen are held as a run (only
  ``$set`` lines without ``messages`` between them); when the ``$set.messages`` that ends the run
  holds the run's newest records, in the run's order, those are copies of the history read
  before — matched from the list's newest back against that history in Gemini CLI's order
  (``_Session.live``: what its loader has, the summary before the messages a compression kept),
  each as the newest message not matched yet (a coalesced turn as the run it copies), until one
  does not match (it and the older ones are new messages). A match is that message: it adds
  nothing (and a masked or truncated output never replaces the one read). The run's records before
  the ones the list holds, a run no list ends, a list holding none of it: new messages, whatever
  they say (an ask typed again stays a new ask);
* ``{"$rewindTo": "<message id>"}`` removes that message and every later one (an unknown id
  removes all).

Messages map as in :mod:`memcli.importers.gemini` (a ``gemini`` message: thoughts as reasoning,
text, tool calls; the calls' results as tool results), but ids come from the message id, so every
version of a message — in the ``.json``, in the ``.jsonl`` Gemini writes beside it when the
session is resumed, in a later re-write — gives the same trace ids: ``gm-<message id>-u<n>``
(user text), ``-x<n>`` (model text), ``-t<n>`` (thoughts), ``-c<n>`` / ``-r<n>`` (the n-th tool
call and its result). A tool call's result is read only once the call has one (``result``, or a
final status ``success`` / ``error`` / ``cancelled``), so a result is never stored empty before it
exists. A re-written ``gemini`` message's ``functionCall`` parts that its ``toolCalls`` records
hold are read from the records only (each call stored once). Memory keeps what the agent saw
first: a result that tool-output masking replaced by its ``<tool_output_masked>`` preview keeps
the output read before it in the same import (a sync that stored the original keeps it too; a
masked result with nothing before it is stored as it is). ``info`` / ``error`` / ``warning``
messages are the CLI's own notices: skipped and counted. A ``user`` record's ``functionResponse``
parts (Gemini CLI records each tool response as a user message too) are counted, not read: the
call's record holds that result, and a record of tool responses only is no ask. A ``user``
message holding ``<state_snapshot>`` is the summary Gemini CLI's compression (``/compress`` or
automatic) put first in the history it kept (``$set`` with ``messages``): tagged
``compact_summary`` with ``harness_compaction: {"harness": "gemini-cli"}``, never an ask. The
``gemini`` message right after it saying "Got it. Thanks for the additional context!" is the line
compression writes for the model (``chatCompressionService``), not the agent's work: tagged
``context`` (kept, so the pair stays as Gemini CLI's history has it, and never taken for the
agent's last note: the offline summary passes over context-tagged assistant text). A ``user``
message Gemini CLI writes itself — its environment (``<session_context>``, the first message of
every session) or a hook's context (``<hook_context>``), which its ``isIgnoredUserContent`` never
lists as an ask — is tagged ``context``: no turn, no ask.

``memcli sync`` reads a grown file on from where it stopped: the new lines are replayed among
themselves (a rewind inside them drops what it rewinds); what an earlier sync stored stays
stored (memory is append-only), and a re-written message adds only its new traces. Its carry
holds the session id, the ids of the compression summaries read (so a later ``$set`` that
carries a known summary is not taken for a new compression), the signatures of the newest
messages read (the last ``SIGNATURES_KEPT`` = 200, id and signature, the text as a digest: a
compression keeps far fewer messages than that, so a sync that reads only the ``$set`` line tells
its copies as one import does), Gemini CLI's history (``live``: the ids of its newest
``SIGNATURES_KEPT`` messages in its order, their signatures in the tail: a re-recording read by a
later sync is matched as in one import) and the last ``SIGNATURES_KEPT`` copies matched (copy id
→ message id). A carry taken after more than ``SIGNATURES_KEPT`` messages is marked ``truncated``
(older messages were read than it holds) and keeps ``head``, the signature of the history's first
message: a reader resumed from it that meets a copy it cannot match (a re-recording of the whole
history, a compression keeping more than the carry holds) raises :class:`ReadWhole` before it
yields anything, and ``memcli sync`` reads the file again from its start with no carry (one
import: every copy matched; what was stored before is de-duplicated by id). A sync asks for a
checkpoint after every line and keeps the last: the carry is built once where it can be that last
one (before a run held back starts, at the end of the lines), from the newest message back, each
message's signature computed once per version. A run of new records that starts as a re-recording does (its first record copies the
history's first message: Gemini CLI's environment context) has no checkpoint inside it, and a
sync whose read ends inside it leaves it unread (the file is read on from its start next time)
unless the file is settled (``final``): a sync between the run's lines stores what one import
stores. A re-recording whose first turn copies nothing read (a history without that message
known) is not held: a sync that stops inside it stores its first records as new.

Detection: a JSONL log (a header, then records) and a legacy session document (one header
carrying ``messages`` of Gemini CLI message records) are claimed above ``--from gemini``, so
``auto`` reads a legacy ``.json`` as ``--from gemini-cli`` and ``memcli sync`` do; a file of
several session documents is left to ``--from gemini`` (which splits them).
"""

from __future__ import annotations

import re
from itertools import chain, islice

from memcli.importers._common import ReadWhole, blake2b, decoded, harness_compaction, not_format, string
from memcli.importers.gemini import _Reader as _ContentReader
from memcli.importers.gemini import _without_recorded_calls
from memcli.models import TAG_COMPACT_SUMMARY, TAG_CONTEXT

_KINDS = frozenset({"user", "gemini", "info", "error", "warning"})
_FINAL = frozenset({"success", "error", "cancelled"})
_PREFIX = {"user": "u", "assistant": "x", "reasoning": "t", "tool_call": "c", "tool_result": "r"}
_RESPONSE_KEYS = ("functionResponse", "function_response")
# user turns Gemini CLI writes itself (its isIgnoredUserContent): the environment, a hook's context
HARNESS_CONTEXT = ("<session_context>", "<hook_context>")
_SNAPSHOT = "<state_snapshot>"   # how Gemini CLI itself recognizes its compression summary
_MASKED = "<tool_output_masked"   # how tool-output masking marks the preview it puts in a result's place
_ACK = "Got it. Thanks for the additional context!"   # the model line compression puts after its summary
SIGNATURES_KEPT = 200   # signatures of the newest messages read, kept in a sync's carry (see _Session._copies)


# what Gemini CLI strips from the model's text before it records it (the history keeps it)
_INVISIBLE = re.compile("[\u200b-\u200d\ufeff\u200e\u200f]")
_COMMENT = re.compile(r"<!--[\s\S]*?-->")
_SPACE = re.compile(r"\s+")


def _user_parts(message: dict, skipped) -> dict | None:
    """A ``user`` record without its ``functionResponse`` parts (None when nothing is left).
    Gemini CLI records each tool response as a ``user`` message too (since May 2026), beside the
    result it keeps on the call's ``ToolCallRecord``: the call's record is what is read, so a
    result is stored once and a tool response never opens a turn as an ask."""
    content = message.get("content")
    if not isinstance(content, list):
        return message
    kept = [p for p in content if not (isinstance(p, dict) and any(k in p for k in _RESPONSE_KEYS))]
    if len(kept) == len(content):
        return message
    skipped["tool responses (read from their call's record)"] += len(content) - len(kept)
    return dict(message, content=kept) if kept else None


def is_header(value) -> bool:
    return (isinstance(value, dict) and isinstance(value.get("sessionId"), str)
            and "projectHash" in value and "type" not in value)


def is_message(value) -> bool:
    if not isinstance(value, dict):
        return False
    kind = value.get("type")   # any JSON value: a list would not hash
    return isinstance(value.get("id"), str) and isinstance(kind, str) and kind in _KINDS


def _messages_are_cli(messages: list) -> bool:
    """The first messages of a legacy session document are Gemini CLI message records."""
    return all(is_message(m) for m in messages[:16])


def _text_of(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))


def _is_snapshot(message: dict) -> bool:
    """A compression summary: a ``user`` message holding ``<state_snapshot>``."""
    return message.get("type") == "user" and _SNAPSHOT in _text_of(message)


def _masked(value) -> bool:
    """Whether a tool call's ``result`` is the preview tool-output masking put in its place
    (walked without recursion: the input may nest deeper than Python's stack allows)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _MASKED in item:
                return True
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
    return False


def _first_results(previous: dict, record: dict) -> dict:
    """``record`` (a new version of ``previous``) with each tool call's result as first read where
    the new version's is only tool-output masking's preview: memory keeps what the agent saw."""
    calls, before = record.get("toolCalls"), previous.get("toolCalls")
    if not isinstance(calls, list) or not isinstance(before, list):
        return record
    first = {c["id"]: c["result"] for c in before
             if isinstance(c, dict) and isinstance(c.get("id"), str) and c.get("result") is not None
             and not _masked(c["result"])}
    if not first:
        return record
    kept = [dict(c, result=first[c["id"]]) if isinstance(c, dict) and c.get("id") in first and _masked(c.get("result"))
            else c for c in calls]
    return dict(record, toolCalls=kept) if kept != calls else record


def _norm(text: str) -> str:
    """Text as compared between a record and its history copy: without what Gemini CLI strips from
    the model's text when it records it (invisible characters, HTML comments) and without any
    whitespace (the record joins the history's text parts into one string)."""
    text = _INVISIBLE.sub("", text)
    while True:
        shorter = _COMMENT.sub("", text)
        if shorter == text:
            break
        text = shorter
    return _SPACE.sub("", text)


_ACK_NORM = _norm(_ACK)


def _is_ack(message: dict) -> bool:
    """Whether a record is the model line compression puts after its summary (:data:`_ACK`)."""
    return message.get("type") == "gemini" and _norm(_text_of(message)) == _ACK_NORM


def _call_keys(found: list) -> tuple[list, list]:
    """(names sorted, ids sorted) of functionCall / functionResponse objects; a ``synth_...`` id is
    one ``ensureStableToolIds`` made up for a call sent without an id: not compared."""
    names = sorted(str(c.get("name")) for c in found)
    ids = sorted(c["id"] for c in found if isinstance(c.get("id"), str) and c["id"] and not c["id"].startswith("synth_"))
    return names, ids


def _parts(message: dict) -> list:
    content = message.get("content")
    if isinstance(content, str):
        return [{"text": content}]
    if not isinstance(content, list):
        return []
    return [p if isinstance(p, dict) else {"text": p} for p in content if isinstance(p, (dict, str))]


def _signature(kind, parts: list, records=()) -> list:
    """What a message and the copy Gemini CLI writes of it in a compression's ``$set`` (its
    history parts under a new id) both give: its type, a digest of its text (thoughts left out),
    the names and ids of its tool calls (``toolCalls`` records and ``functionCall`` parts, each
    once) and of the tool responses it carries. JSON, for the carry."""
    parts = [p for p in parts if p.get("thought") is not True]
    calls = [c for c in records if isinstance(c, dict)]
    if calls:
        parts = _without_recorded_calls(parts, calls)[0]
    text = _norm("".join(p["text"] for p in parts if isinstance(p.get("text"), str)))
    for p in parts:
        call = p.get("functionCall", p.get("function_call"))
        if isinstance(call, dict):
            calls.append(call)
    responses = [r for p in parts for r in [p.get("functionResponse", p.get("function_response"))] if isinstance(r, dict)]
    digest = blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest() if text else ""
    return [kind, digest, *_call_keys(calls), *_call_keys(responses)]


def _message_signature(message: dict) -> list:
    calls = message.get("toolCalls") if message.get("type") == "gemini" else None
    return _signature(message.get("type"), _parts(message), calls if isinstance(calls, list) else ())


def _same(a: list, b: list) -> bool:
    """Two signatures of one message: ids are compared where both sides have real ones."""
    return (len(a) == len(b) == 6 and a[:3] == b[:3] and a[4] == b[4]
            and (not a[3] or not b[3] or a[3] == b[3]) and (not a[5] or not b[5] or a[5] == b[5]))


def _empty(signature: list) -> bool:
    """A message with nothing a history turn keeps (thoughts only): it has no copy."""
    return not signature[1] and not signature[2] and not signature[4]


def _valid(signature) -> bool:
    return (isinstance(signature, list) and len(signature) == 6 and all(isinstance(v, str) for v in signature[:2])
            and all(isinstance(v, list) and all(isinstance(x, str) for x in v) for v in signature[2:]))


class _Session:
    def __init__(self, result, carry: dict | None = None):
        self.result = result
        self.skipped = result.skipped
        self.session_id: str | None = (carry or {}).get("session")
        self.recognized = bool(carry)
        self.messages: dict[str, tuple[int, dict]] = {}   # id -> (line, record), in conversation order
        # ids of the compression summaries read so far (kept in the carry: a sync that reads on
        # tells a summary it stored before from a new compression, see _set_messages)
        snapshots = (carry or {}).get("snapshots")
        self.snapshots: list[str] = [s for s in snapshots if isinstance(s, str)] if isinstance(snapshots, list) else []
        # the signatures of the newest messages an earlier sync read (id -> signature, in
        # conversation order) and the copies a compression wrote of them (copy id -> message id):
        # a sync that reads on tells a compression's copies as one import of the file does
        tail = (carry or {}).get("tail")
        self.tail: dict[str, list] = {t[0]: t[1] for t in tail if isinstance(t, list) and len(t) == 2
                                      and isinstance(t[0], str) and _valid(t[1])} if isinstance(tail, list) else {}
        copies = (carry or {}).get("copies")
        self.aliases: dict[str, str] = {c[0]: c[1] for c in copies if isinstance(c, list) and len(c) == 2
                                        and all(isinstance(x, str) for x in c)} if isinstance(copies, list) else {}
        # the history as Gemini CLI's own loader has it (ids of messages read, in its order: a
        # ``$set`` list rebuilds it, a new record goes last): what a re-recording copies, in order
        live = (carry or {}).get("live", list(self.tail))   # a carry from before: the tail's order
        self.live: dict[str, None] = dict.fromkeys(m for m in live if isinstance(m, str)) if isinstance(live, list) else {}
        # the run of records with new ids being read (line, record): a re-recording, when the
        # ``$set`` list that ends it holds them (see _rerecorded), else new messages
        self.pending: list[tuple[object, dict]] = []
        self.pending_ids: set[str] = set()
        self.cache: dict[str, tuple[dict, list]] = {}   # id -> (record, its signature)
        self.run_start: int | None = None   # where in ``pending`` a re-recording seems to start (see _starts_run)
        self.first: list | None = None   # the signature of the history's first message, while a run is read
        # the carry held SIGNATURES_KEPT messages of more: older ones were read that this reader
        # does not know (copies of them it cannot match raise ReadWhole); ``head`` is the signature
        # of the history's first message then (a re-recording starts with its copy, see _starts_run)
        self.truncated = bool((carry or {}).get("truncated"))
        head = (carry or {}).get("head")
        self.head: list | None = head if self.truncated and _valid(head) else None
        self.final = True   # memcli sync: False while the file may still be written (a run is then held back)
        self.reading = False   # events() is reading lines: checkpoints share carry_out (see checkpoint)
        self.carry_out: dict = {}

    def _summary(self, record: dict) -> None:
        """Gemini CLI's own one-line summary of the session: its title (``result.meta``)."""
        summary = string(record.get("summary"))
        if summary and summary.strip():
            self.result.meta["ai_title"] = self.result.meta["title"] = summary.strip()

    def checkpoint(self) -> dict | None:
        """The carry after the last line read, or None inside a re-recording being read (the next
        sync reads it again from its start). A sync asks after every line and keeps the last one
        given, so while a read goes on the carry is one shared dict filled where it can be the
        last one kept (:meth:`_fill_carry`: before a held run starts, at the end of the lines): a
        carry of up to 2 × ``SIGNATURES_KEPT`` signatures is built once per run, not per line."""
        if not self.recognized or self._held():
            return None
        if self.reading:
            return self.carry_out
        return self._carry()

    def _fill_carry(self) -> None:
        """Fill the carry handed out since the last fill with the state as it stands (the state
        after the last line the sync asked a checkpoint for); later checkpoints get a new one."""
        if self.recognized and not self._held():
            self.carry_out.update(self._carry())
        self.carry_out = {}

    def _carry(self) -> dict:
        carry = {"session": self.session_id}
        if self.snapshots:
            carry["snapshots"] = list(self.snapshots)
        # the run being read is new messages unless the next lines make it a re-recording: carried
        # as read (a later $set that holds them holds known messages), from the newest back
        def newest_first():
            for _, m in reversed(self.pending):
                yield m["id"], self._signature_of(m)
            for mid in reversed(self.messages):
                if mid not in self.tail:
                    yield mid, self._sig(mid)
            for mid in reversed(self.tail):
                yield mid, self._sig(mid)

        newest = list(islice(((mid, sig) for mid, sig in newest_first() if sig), SIGNATURES_KEPT))[::-1]
        ids = (m["id"] for _, m in reversed(self.pending))
        live = list(islice(chain(ids, reversed(self.live)), SIGNATURES_KEPT))[::-1]
        kept = {mid for mid, _ in newest}
        older = [(mid, sig) for mid in live if mid not in kept for sig in [self._sig(mid)] if sig]
        tail = older + newest   # those of Gemini CLI's history older than the newest read go first
        if tail:
            carry["tail"] = [[mid, sig] for mid, sig in tail]
        if live or tail:
            carry["live"] = live
        if self.aliases:
            carry["copies"] = [list(c) for c in islice(reversed(self.aliases.items()), SIGNATURES_KEPT)][::-1]
        if self.truncated or max(len(self.live), len(self.messages) + len(self.tail)) + len(self.pending) > SIGNATURES_KEPT:
            carry["truncated"] = True   # older messages were read than the carry holds
            head = self._head()
            if head:
                carry["head"] = head
        return carry

    def _head(self) -> list | None:
        """The signature of the first message of Gemini CLI's history (what a re-recording copies first)."""
        if self.truncated:
            return self.head
        first = next(self._each_signature(self.live), None)
        return first[1] if first else None

    # ------------------------------------------------------------------ what was read
    def _order(self) -> list[str]:
        """The ids read, in conversation order: an earlier sync's (the carry), then this read's."""
        return [*self.tail, *(mid for mid in self.messages if mid not in self.tail)]

    def _known(self, mid: str) -> bool:
        return mid in self.messages or mid in self.tail

    def _delete(self, mid: str) -> None:
        self.messages.pop(mid, None)
        self.tail.pop(mid, None)
        self.live.pop(mid, None)

    def _canon(self, mid: str) -> str:
        return self.aliases.get(mid, mid)

    def _new_snapshot(self, message: dict) -> bool:
        """A compression summary never read before (not a copy of one read)."""
        mid = self._canon(message["id"])
        return _is_snapshot(message) and not self._known(mid) and mid not in self.snapshots

    def _signatures(self, order=None) -> list[tuple[str, list]]:
        """(id, signature) of the messages read that a history turn holds, in conversation order
        (or in ``order``: ids, those with no signature known passed over)."""
        return list(self._each_signature(self._order() if order is None else order))

    def _each_signature(self, order):
        for mid in order:
            sig = self._sig(mid)
            if sig:
                yield mid, sig

    def _signature_of(self, message: dict) -> list | None:
        """The signature of a message record (None: nothing a history turn holds), computed once
        per version of the record."""
        if message.get("type") not in ("user", "gemini"):
            return None
        cached = self.cache.get(message["id"])
        if cached is None or cached[0] is not message:
            cached = self.cache[message["id"]] = (message, _message_signature(message))
        return None if _empty(cached[1]) else cached[1]

    def _sig(self, mid: str) -> list | None:
        """The signature of a message read (this read's, or the carried tail's)."""
        if mid in self.messages:
            return self._signature_of(self.messages[mid][1])
        sig = self.tail.get(mid)
        return None if sig is None or _empty(sig) else sig

    @staticmethod
    def _consume(kind, parts: list, originals: list, end_at: int) -> int:
        """How many of ``originals[:end_at]`` (the newest of them) the history turn ``parts`` copies:
        one, or a run of them (Gemini CLI coalesces consecutive turns of one role); 0: none."""
        parts = [p for p in parts if p.get("thought") is not True]
        end, used = len(parts), 0
        while end > 0:
            if used and _empty(_signature(kind, parts[:end])):
                break   # parts no signature holds (media): they go with the turn after them
            if end_at - used <= 0:
                return 0
            target = originals[end_at - 1 - used][1]
            if target[0] != kind:
                return 0
            for start in range(end - 1, -1, -1) if end <= 64 else (0,):
                if _same(_signature(kind, parts[start:end]), target):
                    break
            else:
                return 0
            end, used = start, used + 1
        return used

    def _copies(self, records: list) -> None:
        """A compression's ``$set``: each new message after its summary (and the acknowledgement)
        that copies a message read is that message (``self.aliases``), not a new one. Compression
        keeps the newest history, so the copies are matched in order as the suffix of what was
        read (an ask the user typed twice elsewhere stays two asks): from the last, each copy is
        compared with the newest message not matched yet; one that does not match is new (it moves
        nothing), a message the list holds under its own id places the copies before it."""
        start = next(n for n, m in enumerate(records) if self._new_snapshot(m))
        after = records[start + 1:]
        if after and _is_ack(after[0]):
            after = after[1:]
        originals = self._signatures()
        where = {mid: n for n, (mid, _) in enumerate(originals)}
        end_at = len(originals)
        for message in reversed(after):
            mid = self.aliases.get(message["id"], message["id"])
            if self._known(mid):
                end_at = where.get(mid, end_at)
                continue
            if message.get("type") not in ("user", "gemini"):
                continue
            used = self._consume(message["type"], _parts(message), originals, end_at)
            if used:
                self.aliases[message["id"]] = originals[end_at - 1][0]
                end_at -= used
            elif self.truncated and not _empty(_message_signature(message)):
                raise ReadWhole   # it may copy a message older than the carry: read the file whole

    def _seen(self, message: dict) -> None:
        if _is_snapshot(message) and message["id"] not in self.snapshots:
            self.snapshots.append(message["id"])

    def _put(self, line, message: dict, counted: bool = True) -> None:
        """Read ``message``: a new one at the end, a known id replaced in place; a copy of a
        message read (a compression's, a re-recording's) adds nothing (that message stays as read)."""
        if message["id"] in self.aliases:
            if counted:
                self.skipped["copies of messages read before (kept by a compression)"] += 1
            return
        previous = self.messages.get(message["id"])
        if previous:
            self.messages[message["id"]] = (previous[0], _first_results(previous[1], message))
        else:
            self.messages[message["id"]] = (line, message)
            self.live[message["id"]] = None
        self._seen(message)

    def _replace_all(self, line, messages) -> None:
        self.messages.clear()
        self.live = {}
        for m in messages if isinstance(messages, list) else ():
            if is_message(m):
                self.messages[m["id"]] = (line, m)
                self.live[m["id"]] = None
                self._seen(m)

    # ------------------------------------------------------------------ re-recordings
    def _is_new_record(self, message: dict) -> bool:
        """A record line whose id was never seen: it may open or go on with a re-recording run."""
        mid = message["id"]
        return mid not in self.aliases and not self._known(mid) and mid not in self.pending_ids

    def _held(self) -> bool:
        return self.run_start is not None

    def _pend(self, line, message: dict) -> None:
        """A record with a new id: a new message, or a re-recording's copy (known at the list)."""
        if not self.pending:
            self.first = self._head()
        starts = self.run_start is None and self._starts_run(message)
        if starts:   # no checkpoint from here until the run is resolved: the last one is the one before it
            self._fill_carry()
        self.pending.append((line, message))
        self.pending_ids.add(message["id"])
        if starts:
            self.run_start = len(self.pending) - 1

    def _starts_run(self, message: dict) -> bool:
        """Whether ``message`` starts as a re-recording does: with a copy of the first message of
        the history (``setHistory`` records the whole history from its first turn, the
        environment context Gemini CLI puts first). A sync that stops after it, before the list,
        reads on from it next time instead of storing the run's first lines as new messages."""
        kind = message.get("type")
        if self.first is None or kind != self.first[0]:   # (a signature's kind first: _same compares it)
            return False
        parts = [p for p in _parts(message) if p.get("thought") is not True]
        return any(_same(_signature(kind, parts[:n]), self.first) for n in range(1, min(len(parts), 64) + 1))

    def _flush(self, upto: int | None = None) -> None:
        """The run read so far (up to ``upto``) is not a re-recording: its records are new messages."""
        pending, self.pending, self.pending_ids, self.run_start = self.pending[:upto], [], set(), None
        for line, message in pending:
            self._put(line, message)

    def _rerecorded(self, records: list) -> set:
        """A ``$set`` list after a run of records with new ids: when the list holds the newest of
        them, in the run's order (``setHistory`` records each history turn it gets without an id —
        tool-output masking's history, a truncation's — then writes the list of them), those are
        copies of the history read before. Matched from the list's newest back against that
        history (``self.live``: Gemini CLI's order, the summary before the messages a compression
        kept), each as the newest message not matched yet (one copy may be a run of them, as a
        coalesced turn is); the first one that does not match ends the matching (it and the older
        ones are new messages). Returns the ids of the run the list holds."""
        run = [m["id"] for _, m in self.pending]
        listed = [m["id"] for m in records if m["id"] in self.pending_ids]
        if not listed or listed != run[len(run) - len(listed):]:
            self._flush()
            return set()
        before, self.pending = self.pending[:len(run) - len(listed)], self.pending[len(run) - len(listed):]
        for line, message in before:   # new messages just before the re-recording (it copies them too)
            self._put(line, message)
        held = set(listed)
        originals = self._signatures(self.live)
        where = {mid: n for n, (mid, _) in enumerate(originals)}
        end_at = len(originals)
        for message in reversed(records):
            if message["id"] not in held:
                end_at = where.get(self._canon(message["id"]), end_at)
                continue
            kind, parts = message.get("type"), _parts(message)
            if kind not in ("user", "gemini") or _empty(_signature(kind, parts)):
                continue   # nothing a message read could have (thoughts only): nothing to match
            used = self._consume(kind, parts, originals, end_at)
            if not used:
                if self.truncated:   # it may copy a message older than the carry: read the file whole
                    raise ReadWhole
                break
            self.aliases[message["id"]] = originals[end_at - 1][0]
            end_at -= used
        pending, self.pending, self.pending_ids, self.run_start = self.pending, [], set(), None
        for line, message in pending:
            if message["id"] in self.aliases:
                self.skipped["copies of messages read before (re-recorded by masking or truncation)"] += 1
            else:
                self._put(line, message)
        return held

    def _set_messages(self, line, messages: list, run: set = frozenset()) -> None:
        """``{"$set": {"messages": [...]}}``: Gemini CLI wrote its history again
        (``updateMessagesFromHistory``): on initialize and resume (the same messages), after a
        rollback of an aborted prompt (the newest ones gone), a compression (the oldest gone; a
        new ``<state_snapshot>`` summary and the model's acknowledgement first) or tool-output
        masking (results shortened). memcli memory is append-only and a harness compaction is an
        item beside the history it summarized, so only a rollback removes messages:

        * a list that brings a summary never read before is a compression: every message read
          stays (it may hold only the environment context Gemini CLI puts first, and copies of
          the messages it kept under new ids: those are the messages read, see ``_copies``);
        * else the messages after the last one the list holds are dropped (a rollback), those
          before it stay; a list holding none of them is the whole conversation (it replaces them);
        * held messages are updated in place, the list's new ones go after all others (the
          summary and its acknowledgement after the history they summarized) — so one import of
          a file gives what a sync across the compression stored."""
        records = [m for m in messages if is_message(m)]
        compression = any(self._new_snapshot(m) for m in records)
        if compression:
            self._copies(records)
        else:
            held = {self.aliases.get(m["id"], m["id"]) for m in records}
            ids = self._order()
            last = max((n for n, mid in enumerate(ids) if mid in held), default=-1)
            for mid in ids[last + 1:]:   # the newest messages the history no longer has (all: none held)
                self._delete(mid)
        for m in records:
            self._put(line, m, counted=m["id"] not in run)   # a run's copies were counted as records
        self.live = dict.fromkeys(mid for mid in map(self._canon, (m["id"] for m in records)) if self._known(mid))
        if self.truncated:   # the history Gemini CLI starts again from
            self.head = next((sig for sig in map(_message_signature, records) if not _empty(sig)), self.head)

    def events(self, values):
        self.reading = True
        try:
            yield from self._read(values)
        finally:
            self.reading = False

    def _read(self, values):
        for line, value in values:
            if isinstance(value, Exception):
                yield line, value
                continue
            if not self.recognized:
                if not is_header(value):
                    yield line, not_format(line, 'a Gemini CLI session header (an object with "sessionId" and '
                                                 '"projectHash")', value, guess_from="gemini-cli")
                    return
                self.recognized = True
            if is_message(value) and self._is_new_record(value):
                self._pend(line, value)
                continue
            if isinstance(value, dict) and isinstance(value.get("$set"), dict) and "messages" not in value["$set"]:
                self._summary(value["$set"])   # metadata (the lastUpdated after each record): the run goes on
                continue
            run = (self._rerecorded([m for m in value["$set"]["messages"] if is_message(m)])
                   if isinstance(value, dict) and isinstance(value.get("$set"), dict)
                   and isinstance(value["$set"].get("messages"), list) else set())
            self._flush()
            if not isinstance(value, dict):
                self.skipped["lines that are not objects"] += 1
            elif is_header(value):
                self.session_id = self.session_id or string(value.get("sessionId"))
                self._summary(value)
                if isinstance(value.get("messages"), list):
                    self._replace_all(line, value["messages"])
            elif "$rewindTo" in value:
                target = value["$rewindTo"]
                target = self.aliases.get(target, target) if isinstance(target, str) else target
                ids = self._order()
                cut = ids.index(target) if target in ids else 0
                for mid in ids[cut:]:
                    self._delete(mid)
            elif "$set" in value:
                update = value["$set"]
                if isinstance(update, dict):
                    self._summary(update)
                if isinstance(update, dict) and isinstance(update.get("messages"), list):
                    self._set_messages(line, update["messages"], run)
            elif is_message(value):
                self._put(line, value)
            else:
                self.skipped["lines that are not Gemini CLI records"] += 1
        self._fill_carry()   # the checkpoint after the last line: before the run held is flushed
        self.reading = False   # (a checkpoint asked from here on is built as the state stands)
        # a re-recording still being written (memcli sync) is read again from its start next time
        self._flush(None if self.final else self.run_start)
        yield from self._emit()

    def _emit(self):
        reader = _ContentReader(self.result)
        reader.seed(self.session_id)
        after_summary = False
        for line, message in self.messages.values():
            kind = message.get("type")
            if kind not in ("user", "gemini"):
                self.skipped[f"{kind} messages (the CLI's own notices)"] += 1
                continue
            # the model line compression writes after its summary is the harness's, not the agent's
            ack, after_summary = after_summary and _is_ack(message), \
                _is_snapshot(message)
            if kind == "user":
                message = _user_parts(message, self.skipped)
                if message is None:
                    continue
            if kind == "gemini":
                calls = message.get("toolCalls")
                if isinstance(calls, list):
                    message = dict(message, toolCalls=[c for c in calls if isinstance(c, dict)])
            counts: dict[str, int] = {}
            mid = message["id"]
            for ln, event in reader.cli_message(line, message, ""):
                if isinstance(event, Exception):
                    yield ln, event
                    continue
                if event["trace_type"] == "tool_result" and not self._has_result(message, event):
                    continue
                if kind == "user" and event["trace_type"] == "user":
                    text = string(event.get("content")) or ""
                    if _SNAPSHOT in text:
                        event["tags"] = [*(event.get("tags") or ()), TAG_COMPACT_SUMMARY]
                        event["harness_compaction"] = harness_compaction("gemini-cli", None)
                    elif text.lstrip().startswith(HARNESS_CONTEXT):
                        # the environment (<session_context>, first in every session) or a hook's
                        # context: Gemini CLI's own user turns, which it never lists as asks either
                        event["tags"] = [*(event.get("tags") or ()), TAG_CONTEXT]
                if ack and event["trace_type"] == "assistant":
                    event["tags"] = [*(event.get("tags") or ()), TAG_CONTEXT]
                kind_of = "reasoning" if "reasoning" in (event.get("tags") or ()) else event["trace_type"]
                prefix = _PREFIX[kind_of]
                n = counts.get(prefix, 0)
                counts[prefix] = n + 1
                event["id"] = f"gm-{mid}-{prefix}{n}"
                if self.session_id:
                    event.setdefault("session_id", self.session_id)
                yield ln, event

    @staticmethod
    def _has_result(message: dict, event: dict) -> bool:
        for call in message.get("toolCalls") or ():
            if call.get("id") == event.get("tool_call_id"):
                return call.get("result") is not None or call.get("status") in _FINAL
        return True


class GeminiCliImporter:
    name = "gemini-cli"
    source_event = "gemini-cli"

    def sniff(self, values) -> int:
        items = decoded(values)
        if not items or not is_header(items[0]):
            return 0
        rest = items[1:]
        if isinstance(items[0].get("messages"), list):
            # a legacy one-document session (or its record written on one line, replayed on): read
            # here, above --from gemini's 95, so auto-detection gives what --from gemini-cli and
            # memcli sync give (ids from the message ids, the compression summary tagged, tool
            # responses read once); several documents in one file are for --from gemini (--split)
            if not rest:
                return 96 if _messages_are_cli(items[0]["messages"]) else 0
            if any(is_header(v) for v in rest):
                return 0
        good = sum(1 for v in rest if is_message(v) or (isinstance(v, dict) and ("$set" in v or "$rewindTo" in v)))
        return 97 if good * 2 >= len(rest) else 0

    def events(self, values, result):
        return _Session(result).events(values)

    def resume(self, result, carry: dict | None):
        """A reader that goes on from ``carry`` (a checkpoint), for ``memcli sync``."""
        return _Session(result, carry)


IMPORTER = GeminiCliImporter()
