"""``--from claude-code``: a Claude Code session transcript (``~/.claude/projects/*/<session>.jsonl``),
or the records of ``claude -p --output-format stream-json`` (the Claude Code SDK).

Each line is an object with a ``type``. ``user`` and ``assistant`` lines hold an Anthropic
message in ``message`` and are mapped block by block as ``--from anthropic`` does
(:mod:`memcli.importers.anthropic`). Everything else — ``summary``, ``system`` (hook summaries,
compact boundaries, the SDK's ``init``), ``file-history-snapshot``, ``progress``,
``queue-operation``, the SDK's ``result``, and the session metadata lines of Claude Code 2.x
(``mode``, ``permission-mode``, ``attachment``, ``last-prompt``, ``custom-title``, ``ai-title``,
``agent-name``, ``pr-link``, ``bridge-session``, ``teleported-from``) — is not conversation and is
passed over, uncounted — except an ``attachment`` line holding a ``queued_command`` a person typed
(``commandMode: "prompt"`` or ``origin.kind: "human"``): a message typed while Claude was working,
which current Claude Code writes only there (no ``user`` line): it is a user ask, its ``prompt``
(text, or content blocks) mapped as a user message. Were the same text also written as a ``user``
line next to it (no assistant line between), it is one ask, stored once. Claude Code 2.1.x
before that attachment journals such a message only as ``queue-operation`` lines: ``enqueue``
with its text, then ``remove`` where the running turn took it — an ask there
(:meth:`_Reader._taken_from_queue` says which removes do, and what ``dequeue`` and ``popAll`` mean). The titles (``customTitle``, ``aiTitle``; the user's own wins) and linked
pull requests (``prUrl``, each once) are kept as session metadata (``result.meta``: ``title``,
``custom_title``, ``ai_title``, ``agent_name``, ``pr_links``) that ``memcli sync`` stores with
the agent. Lines that
are not objects, have no ``type`` or a type the importer does not know are skipped and counted;
so are messages without content. Only while no Claude Code line has been seen yet is such a line
an error (then the file is not a Claude Code transcript).

Claude Code specifics:

* one API response is written as several lines (one per content block) sharing ``message.id``:
  every trace of them has that ``message_id`` (renderers group them back into one assistant
  message), and the message's ``usage`` is put once, on the first trace of its first line that
  gives one. Claude Code writes a running output count there, so ``completion_tokens`` can be
  lower than the final count; ``prompt_tokens`` (input + cache creation + cache read) is exact.
  (The last line's figures would make the result depend on where an import of a session that is
  still being written stops.);
* ``isSidechain: true`` lines (subagents run by the Task tool) are tagged ``sidechain`` (a user
  line of a subagent never opens a turn) and keep ``agentId`` as ``agent_id``;
* ``isCompactSummary`` user lines (the summary Claude Code's own compaction wrote; a user line
  that begins as every such summary does, "This session is being continued from a previous
  conversation", is one even without the flag) are tagged
  ``compact_summary`` and carry ``harness_compaction`` (``{"harness": "claude-code", "trigger",
  "pre_tokens"}``, from the ``compact_boundary`` system line right before them — its
  ``compactMetadata``, or the SDK stream's ``compact_metadata``; a boundary followed by another
  conversation line instead describes no summary; a compaction that kept the newest messages as
  they were — ``preservedSegment.headUuid``, or the first of ``preservedMessages.uuids``; not a
  partial compaction "from" a message, which kept the older ones, its anchor the boundary — adds
  ``"kept_from": "cc-<that uuid>-0"``, the first of them, which it did not summarize): the
  harness's own compaction, never a user ask; ``isMeta`` user lines (expanded slash commands, caveats), the ``/compact`` command line of a
  manual compaction and the user lines Claude Code writes itself (``<local-command-stdout>``,
  ``[Request interrupted by user]``, the local-command caveat, a background task's
  ``<task-notification>``, ``<system-reminder>``, hook output) are tagged ``context``: none opens a
  turn;
* ``isApiErrorMessage`` assistant lines (errors Claude Code shows as a reply) are tagged
  ``api_error``;
* the harness's ``toolUseResult`` copy of each tool result is not kept: the ``tool_result``
  block is what the model saw;
* ``sessionId`` is kept as ``session_id``, ``message.model`` as ``model``.

A conversation line (or a ``compact_boundary``) with the ``uuid`` and ``timestamp`` of a line
read before is a copy, skipped and counted: a second ``/compact`` in one Claude Code process
first writes the lines before the previous compaction again (anthropics/claude-code#92089).

Ids: ``cc-<uuid>-<n>`` (the line's ``uuid``, ``n`` the trace's index within the line); a uuid
that comes back on a line of its own (another timestamp) gets ``~2``, ``~3``... Lines
without a ``uuid`` (SDK stream-json) use a hash chain over the lines instead
(:mod:`memcli.importers._common`). A half-written last line (a session still being written) is
skipped and counted; the next import picks it up.
"""

from __future__ import annotations

from memcli.importers._common import (
    Clock,
    KeyChain,
    UniqueKeys,
    anthropic_usage,
    blake2b,
    harness_compaction,
    hold_torn_tail,
    nonempty,
    not_format,
    set_fields,
)
from memcli.importers.anthropic_blocks import BlockMapper
from memcli.models import TAG_COMPACT_SUMMARY, TAG_CONTEXT, TAG_SIDECHAIN

_CONVERSATION = ("user", "assistant")
# line types that are not conversation (passed over without a count)
_NOT_CONVERSATION = frozenset({
    "summary", "system", "file-history-snapshot", "progress", "queue-operation", "result", "stream_event",
    # session metadata of Claude Code 2.x: permission mode, hook attachments, titles, last prompt
    "mode", "permission-mode", "attachment", "last-prompt", "custom-title", "summary-title", "agent-name",
    # session-state rows: titles, linked pull requests, remote-control bridge, teleport, worktree
    "ai-title", "pr-link", "bridge-session", "teleported-from", "worktree-state",
})
# session-state rows whose value is kept as session metadata (result.meta): row type -> (field, meta key)
_META_ROWS = {"custom-title": ("customTitle", "custom_title"), "ai-title": ("aiTitle", "ai_title"),
              "agent-name": ("agentName", "agent_name")}
_KNOWN_KEYS = frozenset({"uuid", "sessionId", "session_id", "message", "parentUuid", "leafUuid",
                         "isSidechain", "messageId", "snapshot", "subtype", "permissionMode", "mode"})
# user lines Claude Code writes itself: context, not a user ask
_HARNESS_PREFIXES = (
    "<local-command-stdout>", "<local-command-stderr>", "[Request interrupted by user",
    "Caveat: The messages below were generated by the user while running local commands",
    # a background task's notice, a reminder, hook output: the harness speaking in the user's place
    "<task-notification>", "<system-reminder>", "<user-prompt-submit-hook>", "Stop hook feedback:",
    "<bash-notification>",
)
_COMPACT_COMMAND = "<command-name>/compact</command-name>"
# how every summary Claude Code's compaction wrote begins, flagged isCompactSummary or not (older
# versions, copies in a resumed file): the harness's own summary, never a user ask
_SUMMARY_HEAD = "This session is being continued from a previous conversation"
TAG_API_ERROR = "api_error"
REPLAYED = "lines written again with the uuid and timestamp of an earlier line (replayed copies)"


def is_compact_command(text: str) -> bool:
    """Whether a user line's text (stripped of leading space) is the ``/compact`` command line of
    a manual compaction."""
    return text.startswith("<command-") and _COMPACT_COMMAND in text[:300]


def _kept_head(metadata, boundary_uuid) -> str | None:
    """The uuid of the first of the newest messages a compaction kept as they were (session-memory
    compaction and a partial ``/compact`` "up to" a message: the boundary's
    ``preservedSegment.headUuid``, else the first of ``preservedMessages.uuids``; the SDK stream's
    snake_case alike), or None — also for a partial compaction "from" a message, which kept the
    older ones and summarized the rest: its segment's ``anchorUuid`` is the boundary itself."""
    if not isinstance(metadata, dict):
        return None
    segment = metadata.get("preservedSegment", metadata.get("preserved_segment"))
    kept = metadata.get("preservedMessages", metadata.get("preserved_messages"))
    for part in (segment, kept):
        if boundary_uuid is not None and isinstance(part, dict) \
                and part.get("anchorUuid", part.get("anchor_uuid")) == boundary_uuid:
            return None
    if isinstance(segment, dict):
        head = segment.get("headUuid", segment.get("head_uuid"))
        if isinstance(head, str) and head:
            return head
    uuids = kept.get("uuids") if isinstance(kept, dict) else None
    if isinstance(uuids, list) and uuids and isinstance(uuids[0], str) and uuids[0]:
        return uuids[0]
    return None


def is_harness_text(text: str) -> bool:
    """Whether a user line's text is one Claude Code wrote itself (module docstring), or the
    ``/compact`` command line of a manual compaction (its caveat, command and output follow the
    summary: the harness's own compaction, not an ask to the agent)."""
    text = text.lstrip()
    return text.startswith(_HARNESS_PREFIXES) or is_compact_command(text)


def replayed(stamps: dict, value: dict) -> bool:
    """Whether a line is a copy of one read before (``stamps``: uuid -> timestamp of the lines
    read, which it adds to): the same ``uuid`` and ``timestamp``. A second ``/compact`` in one
    Claude Code process first appends again the lines before the previous compaction, each with
    its own uuid, parent and timestamp (anthropics/claude-code#92089): imported, they would be
    every earlier ask, call and summary a second time, new turns the next harness compaction
    would claim to cover. A line that only reuses a uuid (a different timestamp) is a line of its
    own."""
    uuid, ts = value.get("uuid"), value.get("timestamp")
    if not (isinstance(uuid, str) and uuid and isinstance(ts, str) and ts):
        return False
    if stamps.get(uuid) == ts:
        return True
    stamps[uuid] = ts
    return False


def _first_text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
                return block["text"]
            if isinstance(block, dict) and block.get("type") != "text":
                return ""
    return ""


def looks_like_line(value) -> bool:
    return (isinstance(value, dict) and isinstance(value.get("type"), str)
            and (value["type"] in _CONVERSATION or value["type"] in _NOT_CONVERSATION)
            and "payload" not in value and not _KNOWN_KEYS.isdisjoint(value))


class ClaudeCodeImporter:
    name = "claude-code"
    source_event = "claude-code"

    def sniff(self, values) -> int:
        objects = [v for _, v in values if isinstance(v, dict)]
        if not objects:
            return 0
        good = sum(1 for v in objects if looks_like_line(v))
        if looks_like_line(objects[0]) and good * 2 >= len(objects):
            return 95
        return 60 if good * 2 > len(objects) else 0

    def events(self, values, result):
        return _Reader(result).events(values)

    def resume(self, result, carry: dict | None):
        """A reader that goes on from ``carry`` (a :meth:`_Reader.checkpoint`), for ``memcli sync``."""
        return _Reader(result, carry, hold_tail=False)


# message ids whose usage was placed, kept in a checkpoint (a message's lines are written together)
_CARRY_MESSAGES = 64
# sidechain line uuid -> its chain's first uuid, the newest kept in a checkpoint
_CARRY_SIDECHAINS = 512
# messages typed while Claude was working and not yet taken, the newest kept in a checkpoint
_CARRY_QUEUED = 32


class _Reader:
    """One pass over a session's lines; :meth:`checkpoint` is the state needed to go on later
    from the line last read (the ids are the lines' own ``uuid``, so little is needed)."""

    def __init__(self, result, carry: dict | None = None, *, hold_tail: bool = True):
        self.result = result
        self.hold_tail = hold_tail
        self.clock = Clock(result.skipped)
        self.chain = KeyChain()
        self.seen_messages: dict[str, None] = {}
        self.recognized = False
        self.boundary = None   # the compact_boundary's metadata, for the summary line after it
        # 1.x inline subagents carry no agentId: a sidechain line's lane is the first line of its
        # parentUuid chain among the sidechain lines (parallel subagents are separate chains)
        self.sidechain_roots: dict[str, str] = {}
        self.last_ask: list | None = None   # [digest of its text, queued?] until an assistant line
        # the messages typed while Claude was working (queue-operation enqueue), oldest first,
        # until a remove, dequeue or popAll takes them (the harness's own notices are not kept)
        self.queue: list = []
        self.dequeued = False   # a dequeue that named no message: the next user line says which
        # digests of the newest asks a remove gave (the same message written later as a user line
        # after a dequeue is that ask again)
        self.from_queue: list = []
        # uuid -> timestamp of the conversation and boundary lines read: a line written again with
        # both (Claude Code replays earlier lines before a later /compact) is a copy, not new work
        # uuid -> timestamp of the lines read (replayed); not in a checkpoint (one per line): a
        # reader ``sync`` resumes sees a replay's lines as new, and the ingest drops them as
        # duplicates by their ids (cc-<uuid>-…), so they are counted as already present
        self.stamps: dict[str, str] = {}
        if carry:
            self.last_ask = carry.get("last_ask")
            self.recognized = bool(carry.get("recognized"))
            self.clock.last = carry.get("ts")
            self.chain.key = carry.get("chain") or ""
            self.seen_messages = dict.fromkeys(carry.get("messages") or ())
            self.boundary = carry.get("boundary")
            self.sidechain_roots = dict(carry.get("sidechains") or {})
            self.queue = list(carry.get("queue") or ())
            self.dequeued = carry.get("dequeued") is True
            self.from_queue = list(carry.get("from_queue") or ())

    def checkpoint(self) -> dict:
        return {"recognized": self.recognized, "ts": self.clock.last, "chain": self.chain.key,
                "messages": list(self.seen_messages)[-_CARRY_MESSAGES:], "boundary": self.boundary,
                "sidechains": dict(list(self.sidechain_roots.items())[-_CARRY_SIDECHAINS:]),
                "last_ask": self.last_ask, "queue": self.queue[-_CARRY_QUEUED:], "dequeued": self.dequeued,
                "from_queue": self.from_queue[-_CARRY_QUEUED:]}

    def sidechain_lane(self, value: dict, uuid) -> str | None:
        """The subagent a 1.x inline sidechain line belongs to: ``agentId`` when the line has it,
        else the first 8 characters of its chain's first uuid."""
        agent = nonempty(value.get("agentId"))
        if agent or not isinstance(uuid, str) or not uuid:
            return agent
        parent = value.get("parentUuid")
        root = self.sidechain_roots.get(parent) if isinstance(parent, str) else None
        root = root or uuid
        self.sidechain_roots[uuid] = root
        if len(self.sidechain_roots) > 4 * _CARRY_SIDECHAINS:
            for old in list(self.sidechain_roots)[:-_CARRY_SIDECHAINS]:
                del self.sidechain_roots[old]
        return root[:8]

    def _new_ask(self, content, queued: bool) -> bool:
        """False for the second copy of one typed message (a queued prompt and a user line with
        its text, no assistant line between them); remembers the ask otherwise."""
        text = _first_text(content)
        if not text:
            return True
        digest = _digest(text)
        last, self.last_ask = self.last_ask, [digest, queued]
        if last is not None and last[0] == digest and (queued or last[1]):
            self.last_ask = last
            return False
        return True

    def _taken_from_queue(self, value: dict):
        """The message a ``queue-operation`` line hands to the running turn, else None.

        A message typed while Claude works is queued (``enqueue``, with its ``content``); Claude
        Code then takes it in one of three ways: ``dequeue`` at the end of the turn (it is then
        written as a ``user`` line of its own, imported as such: a dequeue that names no message
        leaves the queue to that line, :meth:`_user_line`), ``popAll`` (drawn back into the input
        box, to be edited: sent later as a ``user`` line, or never), or ``remove``: taken into the
        running turn after the current tool call's result — which Claude Code 2.1.x before the
        ``queued_command`` attachment (the spotter session, 2.1.39) journals nowhere else: the
        remove is the only sign that the person's message reached the model. So a ``remove`` with
        no ``reason``, or ``absorbed_mid_turn``, gives the queued message it names (else the
        oldest) as a user ask; any other reason (the person cancelled it, it went to a subagent)
        gives nothing. The same text also written as a ``queued_command`` attachment beside it is
        one ask (:meth:`_new_ask`). What is never queued as a message: a harness notice (a
        background task's ``<task-notification>``) and a slash command (``/model opus``, run by
        Claude Code itself, some never removed: held, they would shift every remove after them).
        A remove that names nothing while a notice was queued too may take the message in the
        notice's place: the journal cannot tell them apart."""
        queue = self.queue
        operation = value.get("operation")
        content = value.get("content")
        if operation == "enqueue":
            text = _first_text(content).lstrip() if isinstance(content, (str, list)) else ""
            if text and not is_harness_text(text) and not text.startswith("/"):
                queue.append(content)
            return None
        if operation == "popAll":
            queue.clear()
            return None
        if operation == "dequeue" and content is None:
            self.dequeued = True
            return None
        if operation not in ("remove", "dequeue") or not queue:
            return None
        index = 0 if content is None else next((i for i, queued in enumerate(queue) if queued == content), -1)
        if index < 0:   # (one it never queued: a notice, a slash command)
            return None
        taken = queue.pop(index)
        if operation == "dequeue" or value.get("reason") not in (None, "absorbed_mid_turn"):
            return None
        self.from_queue = [*self.from_queue[-(_CARRY_QUEUED - 1):], _digest(_first_text(taken))]
        return taken

    def _user_line(self, content) -> bool:
        """For a user line while messages are queued or a dequeue waits: take from the queue the
        message it is (the one a dequeue handed over, or one a tool result carried as its text:
        ``The user sent a new message while you were working:`` and the message); False when it
        is an ask a remove already gave (written again after its dequeue), else True."""
        again = False
        if self.dequeued:
            self.dequeued = False
            text = _first_text(content)
            digest = _digest(text)
            if digest in self.from_queue:
                self.from_queue.remove(digest)
                again = True
            self.queue = [queued for queued in self.queue if _first_text(queued) != text]
        if self.queue and isinstance(content, list):
            carried = set()
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    for said in _result_texts(block.get("content")):
                        for part in said.split(_SURFACED)[1:]:
                            carried.add(part.split("\n\n", 1)[0].strip())
            if carried:
                self.queue = [queued for queued in self.queue if _first_text(queued).strip() not in carried]
        return not again

    def _metadata(self, kind: str, value: dict) -> None:
        """Titles (the last of each kind wins) and linked pull requests (each once, in order)."""
        meta = self.result.meta
        if kind == "pr-link":
            url = nonempty(value.get("prUrl"))
            if url and url not in meta.setdefault("pr_links", []):
                meta["pr_links"].append(url)
            return
        field, key = _META_ROWS[kind]
        title = nonempty(value.get(field))
        if title:
            meta[key] = title
        meta_title = meta.get("custom_title") or meta.get("ai_title")
        if meta_title:
            meta["title"] = meta_title

    def events(self, values):
        skipped = self.result.skipped
        clock = self.clock
        mapper = BlockMapper(skipped)
        chain = self.chain
        unique = UniqueKeys()
        seen_messages = self.seen_messages
        for line, value in hold_torn_tail(values, skipped) if self.hold_tail else values:
            if isinstance(value, Exception):
                yield line, value
                continue
            kind = value.get("type") if isinstance(value, dict) else None
            if not self.recognized and (not isinstance(kind, str) or "payload" in value):
                # the input does not start like a Claude Code session: one error, not one per line
                yield line, not_format(line, 'a Claude Code session line (an object with "type" and "message")',
                                       value, guess_from=ClaudeCodeImporter.name)
                return
            if not isinstance(kind, str):
                if isinstance(value, dict):
                    skipped["lines without a type"] += 1
                else:
                    skipped["lines that are not objects"] += 1
                continue
            queued = _queued_prompt(value) if kind == "attachment" else \
                self._taken_from_queue(value) if kind == "queue-operation" else None
            if (kind in _CONVERSATION or (kind == "system" and value.get("subtype") == "compact_boundary")) \
                    and replayed(self.stamps, value):
                skipped[REPLAYED] += 1
                self.recognized = True
                continue
            if kind not in _CONVERSATION and queued is None:
                if kind == "system" and value.get("subtype") == "compact_boundary":
                    # the session file writes compactMetadata; the SDK's stream-json compact_metadata
                    metadata = value.get("compactMetadata", value.get("compact_metadata"))
                    self.boundary = harness_compaction(ClaudeCodeImporter.name, metadata)
                    head = _kept_head(metadata, value.get("uuid"))
                    if head is not None:   # the newest messages kept as they were: not summarized
                        self.boundary["kept_from"] = f"cc-{head}-0"
                if kind in _META_ROWS or kind == "pr-link":
                    self._metadata(kind, value)
                elif kind not in _NOT_CONVERSATION:
                    skipped[f"{kind[:40]!r} lines"] += 1
                self.recognized = True
                continue
            self.recognized = True
            if queued is not None:
                kind, message = "user", {"role": "user", "content": queued}
                if value.get("type") == "queue-operation":   # (no uuid: keyed by the line and the message)
                    value = {**value, "content": queued}
            else:
                message = value.get("message")
            if not isinstance(message, dict):
                skipped[f"{kind} lines without a message object"] += 1
                continue
            content = message.get("content")
            if content is None:
                skipped["messages without content"] += 1
                continue
            if not isinstance(content, (str, list)):
                skipped["messages with unreadable content"] += 1
                continue
            if queued is None and kind == "user" and (self.queue or self.dequeued) and not self._user_line(content):
                skipped["queued prompts also written as a user line"] += 1
                continue
            uuid = value.get("uuid")
            if isinstance(uuid, str) and uuid:
                key = chain.key = unique.unique(uuid)
            else:
                key = unique.unique(chain.next(value))
            common: dict = {}
            tags = []
            agent_id = nonempty(value.get("agentId"))
            if value.get("isSidechain") is True:
                tags.append(TAG_SIDECHAIN)
                agent_id = self.sidechain_lane(value, uuid)
            ts = clock.read(value.get("timestamp"))
            message_id = nonempty(message.get("id"))
            set_fields(common, ts=ts, message_id=message_id,
                       model=message.get("model") if isinstance(message.get("model"), str) else None,
                       session_id=nonempty(value.get("sessionId")) or nonempty(value.get("session_id")),
                       agent_id=agent_id)
            user_tags = []
            usage = None
            if kind == "assistant":
                if value.get("isApiErrorMessage") is True:
                    tags.append(TAG_API_ERROR)
                if message_id is None or message_id not in seen_messages:
                    usage = anthropic_usage(message.get("usage"))
            elif value.get("isCompactSummary") is True or _first_text(content).startswith(_SUMMARY_HEAD):
                user_tags.append(TAG_COMPACT_SUMMARY)
                common["harness_compaction"] = self.boundary or harness_compaction(ClaudeCodeImporter.name, None)
                self.boundary = None
            elif value.get("isMeta") is True or is_harness_text(_first_text(content)):
                user_tags.append(TAG_CONTEXT)
            if kind == "assistant":
                self.last_ask = None
            elif not user_tags and not self._new_ask(content, queued is not None):
                skipped["queued prompts also written as a user line"] += 1
                continue
            if self.boundary is not None and not user_tags:
                # a boundary describes the summary written right after it (Claude Code writes the
                # two at once): a conversation line between them means that summary never came
                self.boundary = None
            if tags:
                common["tags"] = tags
            events = mapper.message(kind, content, f"cc-{key}", common, user_tags=user_tags, usage=usage)
            if not events:
                skipped[f"empty {kind} messages"] += 1
            elif usage is not None and message_id is not None:
                seen_messages[message_id] = None  # the usage is placed: not again on its later lines
            for event in events:
                yield line, event


# how a tool result carries a message typed while the tool ran (some Claude Code versions)
_SURFACED = "The user sent a new message while you were working:"


def _digest(text: str) -> str:
    return blake2b(text.encode(), digest_size=8).hexdigest()


def _result_texts(content) -> list[str]:
    """The texts of a ``tool_result`` block's content (a string, or text blocks)."""
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)]
    return []


def _queued_prompt(value: dict):
    """The prompt of an ``attachment`` line that holds a ``queued_command`` a person typed (text or
    content blocks), else None (task notifications and other harness attachments)."""
    attachment = value.get("attachment")
    if not isinstance(attachment, dict) or attachment.get("type") != "queued_command":
        return None
    origin = attachment.get("origin")
    kind = origin.get("kind") if isinstance(origin, dict) else None
    if not (kind == "human" or (kind is None and attachment.get("commandMode") == "prompt")):
        return None
    prompt = attachment.get("prompt")
    return prompt if isinstance(prompt, (str, list)) and prompt else None


IMPORTER = ClaudeCodeImporter()
