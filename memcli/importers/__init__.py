"""Importers: turn recorded transcripts into native memcli events.

Each format is one module exposing an ``IMPORTER`` object with this small interface:

* ``name`` — the ``--from`` value; ``source_event`` — stamped on traces that do not set their own;
* ``sniff(values) -> int`` (*detect*) — 0..100, how sure it is that the first parsed values (a
  list of ``(line, value)``: the first non-blank lines, array elements, or the one document) are
  in its format; used by ``--from auto``;
* ``events(values, result)`` (*read*) — an iterator of ``(line, event | InputError)``: native
  events with ids derived deterministically from the source, so re-importing adds nothing.
  Things the format allows but the importer does not map are counted in ``result.skipped``;
* optionally ``conversations(values)`` — for formats whose files can hold many conversations
  (datasets, eval logs, NDJSON of request bodies): the input split into
  :class:`memcli.importers.conversations.Conversation` objects, each read on its own by
  ``events``. Formats without it hold one conversation per file.

:data:`REGISTRY` is the one table of formats: ``--from`` choices, hints, the names used in
"it looks like ..." messages and the detection order all come from it.
"""

from __future__ import annotations

import importlib
from collections import namedtuple
from itertools import chain, islice
from typing import Iterator

from memcli.errors import InputError, UsageError

# name: the --from value; module: memcli.importers.<module>; title: what a message calls a file of
# this format; keys: keys typical of its records ("it resembles ... most" when nothing matches).
# (collections.namedtuple, not typing.NamedTuple: this module loads on every memcli start, and the
# typing form costs ~0.5 ms more there.)
Format = namedtuple("Format", "name module title keys")


def _keys(text: str) -> frozenset:
    return frozenset(text.split())


REGISTRY: tuple[Format, ...] = (
    Format("native", "native", "memcli native events", _keys("trace_type content tool_call_id tool_args turn_id seq")),
    Format("openai", "openai", "OpenAI Chat Completions messages",
           _keys("role content tool_calls tool_call_id name messages history traj function_call")),
    Format("anthropic", "anthropic", "Anthropic Messages API messages",
           _keys("role content system messages type id model stop_reason usage")),
    Format("claude-code", "claude_code", "a Claude Code session",
           _keys("type uuid parentUuid sessionId message isSidechain cwd version gitBranch userType")),
    Format("codex", "codex", "a Codex rollout", _keys("timestamp type payload")),
    Format("openai-responses", "openai_responses", "OpenAI Responses API items",
           _keys("type role content call_id arguments output input instructions summary encrypted_content")),
    Format("gemini", "gemini", "Gemini contents (API, Gemini CLI or Google ADK)",
           _keys("contents parts role system_instruction systemInstruction events author sessionId messages")),
    Format("gemini-cli", "gemini_cli", "a Gemini CLI session (JSONL replay log)",
           _keys("sessionId projectHash startTime lastUpdated $set $rewindTo id type content toolCalls thoughts")),
    Format("openhands", "openhands", "an OpenHands trajectory",
           _keys("id source action args observation cause extras tool_call_metadata message history instance_id")),
    Format("inspect", "inspect", "an inspect_ai eval log",
           _keys("version status eval plan results stats samples")),
    Format("sharegpt", "sharegpt", "a ShareGPT-style dataset", _keys("conversations from value tools system")),
    Format("cline", "cline", "a Cline / Roo Code api_conversation_history.json",
           _keys("role content ts")),
    Format("copilot-cli", "copilot_cli", "a GitHub Copilot CLI session (events.jsonl)",
           _keys("type id timestamp parentId data")),
    Format("goose", "goose", "a Goose session (legacy .jsonl)",
           _keys("working_dir description role created content metadata toolRequest toolResponse")),
    Format("opencode", "opencode", "an opencode session (opencode export)",
           _keys("info messages parts role callID state sessionID messageID")),
    Format("cursor", "cursor", "a Cursor agent transcript",
           _keys("role message content")),
    Format("chatgpt", "chatgpt", "a ChatGPT data export (conversations.json)",
           _keys("mapping current_node title create_time update_time conversation_id author parts")),
    Format("claude-ai", "claude_ai", "a Claude.ai data export (conversations.json)",
           _keys("chat_messages uuid name sender text created_at updated_at account")),
)
FORMATS = tuple(f.name for f in REGISTRY)
_BY_NAME = {f.name: f for f in REGISTRY}
SNIFF_VALUES = 64
CERTAIN = 90  # a sniff score at which no other format is consulted


def title(name: str) -> str:
    return _BY_NAME[name].title


def from_hint() -> str:
    return "name it with --from " + "|".join(FORMATS)


def get_importer(name: str):
    fmt = _BY_NAME.get(name)
    if fmt is None:
        raise UsageError(f"unknown format {name!r} (expected auto or one of {', '.join(FORMATS)})")
    try:
        return importlib.import_module(f"memcli.importers.{fmt.module}").IMPORTER
    except ModuleNotFoundError as exc:
        if exc.name == f"memcli.importers.{fmt.module}":
            raise UsageError(f"format {name!r} is not available in this version of memcli") from None
        raise


def resolve(fmt: str, values: Iterator, source_name: str = "input", sniff_values: int = SNIFF_VALUES):
    """(importer, values) for ``--from fmt``; ``auto`` sniffs the first ``sniff_values`` values
    (a live stream sniffs only the first, so that it never waits for more input)."""
    if fmt != "auto":
        return get_importer(fmt), values
    head = list(islice(values, sniff_values))
    if not head:
        return get_importer("native"), iter(())
    native = get_importer("native")
    if native.sniff(head) >= CERTAIN:  # memcli's own events: no need to load the other importers
        return native, chain(head, values)
    best, best_score = None, 0
    for name in FORMATS:
        try:
            importer = get_importer(name)
        except UsageError:
            continue
        score = importer.sniff(head)
        if score > best_score:
            best, best_score = importer, score
    if best is None:
        raise undecided(head, source_name)
    return best, chain(head, values)


def undecided(head: list, source_name: str) -> InputError:
    """The error for input no importer claims: what it saw, a known format memcli does not read
    named as such, else the format it resembles most."""
    from memcli.importers.detect import known_foreign_format, resembles, seen_keys

    line, first = head[0]
    if isinstance(first, InputError):
        return first
    foreign = known_foreign_format([v for _, v in head if not isinstance(v, InputError)])
    if foreign is not None:
        return InputError(f"{source_name} looks like {foreign}, which memcli does not import", line=line,
                          hint="convert it to one of: " + ", ".join(FORMATS))
    keys = seen_keys([v for _, v in head if not isinstance(v, InputError)])
    message = f"cannot tell what format {source_name} is in"
    if keys:
        message += f" (saw keys: {', '.join(sorted(keys)[:12])}{', ...' if len(keys) > 12 else ''})"
    near = resembles(keys, REGISTRY)
    if near is not None:
        message += f"; it resembles {near.title} most (--from {near.name})"
    return InputError(message, line=line, hint=from_hint())
