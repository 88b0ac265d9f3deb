"""The offline summarizer: deterministic, no network, no key — the default of ``memcli compact``.

Episodic summary (plain text, bounded whatever the window size)::

    37 turns (turn_0001–turn_0037), 2026-03-02 08:41 → 09:30 UTC: 184 traces, 61 tool calls, 9 failed.
    - turn_0001 · user: "The order total endpoint returns 100.0 for order 1042 …" · run_command ×1
      (1 failed: exit status 1) · assistant: "The endpoint never applies the discount: …"
    - …
    … 12 more turns (turn_0011–turn_0022): 40 tool calls, 3 failed.
    Files modified: app/api.py, tests/test_orders.py
    Failed: `pytest -q tests/test_orders.py` ×4 (exit status 1); refund_order ×1 (PaymentGatewayError: …)
    URLs: https://help.acme.example/returns

One line per turn: what the user asked, which tools ran (and which failed, with the first line of
the error), what the assistant concluded (its last message of the turn). Text is clipped at word
boundaries, so identifiers (paths, URLs, ids — anything without spaces) are kept whole and
verbatim; identifiers that fell in a clipped part are listed after ``refs:``. At most
``MAX_LISTED_TURNS`` turns are listed (the first ``HEAD_TURNS`` and the most recent rest); the
others are counted on an honest "… N more turns" line, and the aggregate lines (files, failures,
URLs) still cover every turn. The whole summary is capped at ``MAX_CHARS``.

Semantic facts it extracts, only where the transcript says so explicitly:

* user preferences: a sentence of a user ask with "always", "never", "I prefer", "from now
  on", ... → ``User preference: "<the sentence>"`` (tags preference, user);
* commands whose last run in the window failed → ``Command failed: `<cmd>` — <first error line>``
  (tags command, failure), superseding earlier ``Command failed/passed: `<cmd>``` facts; a command
  that failed before and now passes → ``Command passed: `<cmd>` (it had failed before)``;
* files written by tools (edit/write/create/patch/delete tools; Codex ``apply_patch`` bodies)
  → ``Modified file: <path>`` (tags file, modified).

Context traces (system prompt, injected context, subagent sidechains) are not summarized as
user asks. Memory is flat: turns are consumed one at a time.
"""

from __future__ import annotations

import re
from collections import Counter, deque
from datetime import datetime, timezone
from typing import Iterable

import orjson

from memcli.compaction.summarizer import Fact, MemoryContext, Summary, Turn
from memcli.models import NON_OPENING_TAGS, TAG_REASONING
from memcli.pairing import pop_open_call

MAX_LISTED_TURNS = 40
HEAD_TURNS = 10
MAX_CHARS = 12_000
MIN_CHARS = 1_000         # the cap is a quarter of the window's text, within [MIN_CHARS, MAX_CHARS]
ASK_CHARS = 180
REPLY_CHARS = 220
ERROR_CHARS = 120
MAX_REFS = 8
MAX_LISTED = 15          # files, failures, URLs in the aggregate lines

_URL = re.compile(r"https?://[^\s\"'<>()\[\]{}`]+")
_PATH = re.compile(
    r"(?<![\w/.-])(?:~?/)?(?:[\w.-]+/)+[\w.-]+|(?<![\w/.-])[\w-]+\.(?:py|pyi|js|mjs|ts|tsx|jsx|json|jsonl|md|"
    r"rst|txt|yaml|yml|toml|ini|cfg|go|rs|java|kt|c|h|cc|cpp|hpp|rb|php|sh|sql|html|css|scss|lock|csv|xml|"
    r"proto|tf|swift|env)\b")
_ID = re.compile(r"(?<![\w/.-])(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[A-Za-z0-9][\w-]{3,}(?![\w/])")
_PREFERENCE = re.compile(
    r"\b(?:always|never|i (?:always|never)|i (?:would|'d) (?:prefer|rather)|i prefer|prefer to|from now on|"
    r"going forward|do not ever|don'?t ever|make sure (?:to|you) always|remember to|please (?:always|never))\b",
    re.IGNORECASE)
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")
_WRITE_TOOL = re.compile(r"(?:^|[_\-.])(?:edit|write|create|patch|apply_patch|str_replace|replace|insert|"
                         r"delete|remove|rm|mv|move|rename|save|multiedit|notebookedit|append)(?:$|[_\-.])|"
                         r"^(?:Edit|Write|MultiEdit|NotebookEdit|apply_patch)$", re.IGNORECASE)
_PATH_KEYS = ("path", "file_path", "filepath", "file", "filename", "target_file", "notebook_path", "dest",
              "destination")
_PATCH_FILE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+)$", re.MULTILINE)
_COMMAND_KEYS = ("command", "cmd", "commands", "script")


def clip(text: str, limit: int) -> str:
    """``text`` on one line, cut at a word boundary to at most ``limit`` characters (plus "…").
    A single word longer than the limit is kept whole up to 3× the limit: identifiers stay intact."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit + 1)
    if cut <= 0:
        end = text.find(" ")
        end = len(text) if end < 0 else end
        if end <= limit * 3:
            return text[:end] + ("…" if end < len(text) else "")
        return text[:limit] + "…"
    return text[:cut].rstrip(",;:") + " …"


def identifiers(text: str) -> list[str]:
    """URLs, paths and ids in ``text``, in order of appearance, without repeats."""
    found: list[tuple[int, str]] = []
    taken: list[tuple[int, int]] = []
    for pattern in (_URL, _PATH, _ID):
        for m in pattern.finditer(text):
            start, end = m.span()
            value = m.group(0).rstrip(".,;:!?")
            if any(s <= start < e for s, e in taken) or not value:
                continue
            taken.append((start, start + len(value)))
            found.append((start, value))
    found.sort()
    out: list[str] = []
    for _, value in found:
        if value not in out:
            out.append(value)
    return out


def _json_text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return orjson.dumps(value).decode()


def command_of(args) -> str | None:
    """The shell command in a tool's arguments (``command``/``cmd``; lists are joined; a
    ``bash -lc "..."`` wrapper is unwrapped)."""
    if not isinstance(args, dict):
        return None
    for key in _COMMAND_KEYS:
        value = args.get(key)
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            if len(value) >= 3 and value[0] in ("bash", "sh", "zsh", "/bin/bash", "/bin/sh") and value[1] in ("-lc", "-c"):
                return value[2].strip()
            return " ".join(value).strip()
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def written_paths(tool_name: str | None, args) -> list[str]:
    """Files a tool call writes, when its name says it writes and its arguments name them."""
    if not isinstance(args, dict):
        return []
    paths: list[str] = []
    patch = None
    for key in ("input", "patch", "content", "diff"):
        value = args.get(key)
        if isinstance(value, str) and "*** Begin Patch" in value:
            patch = value
            break
    if patch is not None:
        paths.extend(m.strip() for m in _PATCH_FILE.findall(patch))
    if tool_name and _WRITE_TOOL.search(tool_name):
        for key in _PATH_KEYS:
            value = args.get(key)
            if isinstance(value, str) and value.strip() and "\n" not in value and len(value) < 400:
                paths.append(value.strip())
        edits = args.get("edits")
        if isinstance(edits, list):
            for edit in edits:
                if isinstance(edit, dict) and isinstance(edit.get("path"), str):
                    paths.append(edit["path"])
    out: list[str] = []
    for p in paths:
        if p not in out:
            out.append(p)
    return out


def _result_failed(trace) -> tuple[bool, str]:
    """(failed, error text) of a tool result: a ``tool_error``, or an exit code other than 0."""
    if trace.tool_error:
        return True, trace.tool_error
    result = trace.tool_result
    if isinstance(result, dict):
        for key in ("exit_code", "exitCode", "returncode", "status_code"):
            code = result.get(key)
            if isinstance(code, int) and not isinstance(code, bool) and code != 0 and key != "status_code":
                text = result.get("stderr") or result.get("output") or result.get("stdout") or ""
                return True, f"exit code {code}" + (f": {_json_text(text)}" if text else "")
        if result.get("is_error") is True or result.get("success") is False:
            return True, _json_text(result.get("error") or result.get("message") or result)
    return False, ""


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return text.strip()


def _error_brief(text: str) -> str:
    """The first line of an error, plus the first line that names a failing test or an exception."""
    first = _first_line(text)
    detail = ""
    for line in text.splitlines()[1:]:
        s = line.strip()
        if s.startswith(("FAILED", "ERROR", "E ", "error:", "Error:")) or re.match(r"^\w+(Error|Exception)\b", s):
            detail = s
            break
    brief = first if not detail or detail == first else f"{first} {detail}"
    return clip(brief, ERROR_CHARS)


def _arg_brief(tool_name: str | None, args) -> str:
    command = command_of(args)
    if command:
        return f"`{clip(command, 80)}`"
    if isinstance(args, dict):
        for key in (*_PATH_KEYS, "url", "query", "pattern", "order_id", "id", "name"):
            value = args.get(key)
            if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value).strip():
                return clip(str(value), 80)
    return ""


def _trace_turn(trace) -> str | None:
    return trace.turn_id


def _turn_key(turn_id: str) -> tuple:
    m = re.fullmatch(r"turn_(\d+)", turn_id or "")
    return (0, int(m.group(1)), "") if m else (1, 0, turn_id or "")


def _fmt_time(ts: float | None) -> str:
    if ts is None:
        return "?"
    return datetime.fromtimestamp(ts, tz=timezone.utc).strftime("%Y-%m-%d %H:%M")


class _TurnDigest:
    """What one turn contributes: its summary line and its facts."""

    def __init__(self, turn: Turn):
        self.turn_id = turn.turn_id
        self.asks: list[str] = []
        self.reply = ""
        self.calls: Counter = Counter()
        self.failures: list[tuple[str, str]] = []   # (tool label, error brief)
        self.call_args: list[str] = []
        self.commands: list[tuple[str, bool, str]] = []   # (command, failed, error)
        self.files: list[str] = []
        self.urls: list[str] = []
        self.preferences: list[str] = []
        self.full_text: list[str] = []
        self.n_traces = len(turn.traces)
        self.text_chars = sum(len(t.content or '') + len(_json_text(t.tool_args)) + len(t.tool_error or _json_text(t.tool_result))
                              for t in turn.traces)
        self.first_ts = None
        self.last_ts = None
        calls_by_id: dict[str, list] = {}
        for t in turn.traces:
            if isinstance(t.ts, (int, float)):
                self.first_ts = t.ts if self.first_ts is None else min(self.first_ts, t.ts)
                self.last_ts = t.ts if self.last_ts is None else max(self.last_ts, t.ts)
            context = not NON_OPENING_TAGS.isdisjoint(t.tags or ())
            if t.trace_type == "user":
                if context:
                    continue
                if t.content.strip():
                    self.asks.append(t.content)
                    self.full_text.append(t.content)
                    for sentence in _SENTENCE.findall(t.content):
                        if _PREFERENCE.search(sentence) and len(sentence.strip()) >= 8:
                            self.preferences.append(" ".join(sentence.split()))
            elif t.trace_type == "assistant":
                if context or TAG_REASONING in (t.tags or ()):
                    continue
                if t.content.strip():
                    self.reply = t.content
                    self.full_text.append(t.content)
            elif t.trace_type == "tool_call":
                name = t.tool_name or "tool"
                self.calls[name] += 1
                brief = _arg_brief(name, t.tool_args)
                if brief and len(self.call_args) < 4:
                    self.call_args.append(f"{name} {brief}")
                calls_by_id.setdefault(t.tool_call_id or "", []).append(t)
                self.full_text.append(_json_text(t.tool_args))
            elif t.trace_type == "tool_result":
                call = pop_open_call(calls_by_id, t.tool_call_id or "", t.turn_id, _trace_turn)
                name = (call.tool_name if call else None) or t.tool_name or "tool"
                args = call.tool_args if call else t.tool_args
                failed, error = _result_failed(t)
                command = command_of(args)
                if failed:
                    self.failures.append((f"`{clip(command, 80)}`" if command else name, _error_brief(error)))
                    self.full_text.append(error[:2000])
                if command:
                    self.commands.append((command, failed, _error_brief(error) if failed else ""))
                if not failed:
                    for path in written_paths(name, args):
                        if path not in self.files:
                            self.files.append(path)
                if call is None and not failed and t.tool_result is not None:
                    self.full_text.append(_json_text(t.tool_result)[:2000])
                elif not failed and t.tool_result is not None:
                    self.full_text.append(_json_text(t.tool_result)[:2000])
        # calls whose result is not in the turn (a window never has pending calls; foreign data may)
        for queue in calls_by_id.values():
            for call in queue:
                for path in written_paths(call.tool_name, call.tool_args):
                    if path not in self.files:
                        self.files.append(path)
        for text in self.full_text:
            for url in _URL.findall(text):
                url = url.rstrip(".,;:!?")
                if url not in self.urls:
                    self.urls.append(url)

    def line(self) -> str:
        parts = [f"- {self.turn_id}"]
        if self.asks:
            parts.append(f'user: "{clip(self.asks[0], ASK_CHARS)}"'
                         + (f" (+{len(self.asks) - 1} more message{'s' if len(self.asks) > 2 else ''})"
                            if len(self.asks) > 1 else ""))
        if self.calls:
            tools = ", ".join(f"{name} ×{n}" for name, n in self.calls.most_common(5))
            if len(self.calls) > 5:
                tools += f", +{len(self.calls) - 5} more tools"
            shown = "; ".join(dict.fromkeys(self.call_args[:3]))
            part = f"tools: {tools}" + (f" [{shown}]" if shown else "")
            if self.failures:
                label, error = self.failures[-1]
                part += f" ({len(self.failures)} failed; last: {label}: {error})"
            parts.append(part)
        if self.reply:
            parts.append(f'assistant: "{clip(self.reply, REPLY_CHARS)}"')
        elif not self.calls and not self.asks:
            parts.append(f"{self.n_traces} context trace{'s' if self.n_traces != 1 else ''}")
        text = " · ".join(parts)
        missing = [i for i in dict.fromkeys(ident for t in self.full_text for ident in identifiers(t))
                   if i not in text]
        if missing:
            more = len(missing) - MAX_REFS
            text += " · refs: " + ", ".join(missing[:MAX_REFS]) + (f", +{more} more" if more > 0 else "")
        return text


class OfflineSummarizer:
    """Deterministic summaries and facts from the transcript alone (see the module docstring)."""

    name = "offline"

    def __init__(self, max_facts: int = 20):
        self.max_facts = max_facts

    def context_tokens(self) -> int | None:
        return None

    def summarize(self, turns: Iterable[Turn], memory: MemoryContext | None = None) -> Summary:
        memory = memory or MemoryContext()
        head: list[tuple] = []          # (line, turn_id, calls, failed) of the first turns
        tail: deque = deque()           # the same for the most recent turns
        n_turns = n_traces = n_calls = n_failed = 0
        text_chars = 0
        first_turn = last_turn = None
        first_ts = last_ts = None
        omitted = [0, None, None, 0, 0]  # count, first id, last id, calls, failed of unlisted turns
        files: dict[str, None] = {}
        failures: Counter = Counter()
        failure_error: dict[str, str] = {}
        urls: dict[str, None] = {}
        preferences: dict[str, list] = {}
        commands: dict[str, list] = {}   # command -> [failed_before, last_failed, last_error, turns]
        file_turns: dict[str, list] = {}

        def omit(entry) -> None:
            omitted[0] += 1
            if omitted[1] is None or _turn_key(entry[1]) < _turn_key(omitted[1]):
                omitted[1] = entry[1]
            if omitted[2] is None or _turn_key(entry[1]) > _turn_key(omitted[2]):
                omitted[2] = entry[1]
            omitted[3] += entry[2]
            omitted[4] += entry[3]

        for turn in turns:
            d = _TurnDigest(turn)
            n_turns += 1
            n_traces += d.n_traces
            text_chars += d.text_chars
            calls = sum(d.calls.values())
            n_calls += calls
            n_failed += len(d.failures)
            first_turn = first_turn or d.turn_id
            last_turn = d.turn_id
            if d.first_ts is not None:
                first_ts = d.first_ts if first_ts is None else min(first_ts, d.first_ts)
            if d.last_ts is not None:
                last_ts = d.last_ts if last_ts is None else max(last_ts, d.last_ts)
            entry = (d, d.turn_id, calls, len(d.failures))  # the line is made only if it is listed
            if len(head) < HEAD_TURNS:
                head.append(entry)
            else:
                tail.append(entry)
                if len(tail) > MAX_LISTED_TURNS - HEAD_TURNS:
                    omit(tail.popleft())
            for path in d.files:
                files.pop(path, None)
                files[path] = None      # most recent last
                turns_of = file_turns.setdefault(path, [])
                if len(turns_of) < 20:
                    turns_of.append(d.turn_id)
            for label, error in d.failures:
                failures[label] += 1
                failure_error[label] = error
            for url in d.urls:
                if len(urls) < 200:
                    urls[url] = None
            for sentence in d.preferences:
                preferences.setdefault(sentence, []).append(d.turn_id)
            for command, failed, error in d.commands:
                entry_c = commands.setdefault(command, [False, False, "", []])
                entry_c[0] = entry_c[0] or entry_c[1]
                entry_c[1], entry_c[2] = failed, error
                if len(entry_c[3]) < 20 and (not entry_c[3] or entry_c[3][-1] != d.turn_id):
                    entry_c[3].append(d.turn_id)
            if len(files) > 5000:  # bounded memory on pathological windows
                files = dict.fromkeys(list(files)[-1000:])
                file_turns = {k: v for k, v in file_turns.items() if k in files}
            if len(commands) > 5000:
                commands = dict(list(commands.items())[-1000:])
        if n_turns == 0:
            raise ValueError("nothing to summarize")

        span = first_turn if n_turns == 1 else f"{first_turn}–{last_turn}"
        header = (f"{n_turns} turn{'s' if n_turns != 1 else ''} ({span}), {_fmt_time(first_ts)} → "
                  f"{_fmt_time(last_ts)} UTC: {n_traces} trace{'s' if n_traces != 1 else ''}, "
                  f"{n_calls} tool call{'s' if n_calls != 1 else ''}, {n_failed} failed.")
        footer = []
        if files:
            names = list(files)[::-1]
            footer.append("Files modified: " + ", ".join(names[:MAX_LISTED])
                          + (f", +{len(names) - MAX_LISTED} more" if len(names) > MAX_LISTED else ""))
        if failures:
            shown = [f"{label} ×{n} ({failure_error[label]})" for label, n in failures.most_common(MAX_LISTED // 2)]
            more = len(failures) - len(shown)
            footer.append(clip("Failed: " + "; ".join(shown), 1500) + (f"; +{more} more" if more > 0 else ""))
        if urls:
            names = list(urls)
            footer.append("URLs: " + ", ".join(names[:MAX_LISTED])
                          + (f", +{len(names) - MAX_LISTED} more" if len(names) > MAX_LISTED else ""))

        lines_of: dict[str, str] = {}

        def line_of(entry) -> str:
            text = lines_of.get(entry[1])
            if text is None:
                text = lines_of[entry[1]] = entry[0].line()
            return text

        def assemble() -> str:
            lines = [header, *(line_of(e) for e in head)]
            if omitted[0]:
                lines.append(f"… {omitted[0]} more turn{'s' if omitted[0] != 1 else ''} "
                             f"({omitted[1]}–{omitted[2]}) not listed: {omitted[3]} tool calls, {omitted[4]} failed "
                             "(`memcli show AGENT --archive --turn ID` shows any of them).")
            lines.extend(line_of(e) for e in tail)
            lines.extend(footer)
            return "\n".join(lines)

        limit = min(max(text_chars // 4, MIN_CHARS), MAX_CHARS)
        summary = assemble()
        # over the size limit: stop listing turns from the middle (oldest of the recent ones first,
        # then the later ones of the first few), keeping the first 3 and the last 3
        while len(summary) > limit and (len(tail) > 3 or len(head) > 3):
            omit(tail.popleft() if len(tail) > 3 else head.pop())
            summary = assemble()
        if len(summary) > limit:
            summary = summary[:limit].rsplit("\n", 1)[0] + "\n… (clipped at the summary size limit)"
        return Summary(summary, self._facts(preferences, commands, files, file_turns, memory))

    def _facts(self, preferences, commands, files, file_turns, memory: MemoryContext) -> list[Fact]:
        facts: list[Fact] = []
        for sentence in preferences:
            facts.append(Fact(f'User preference: "{clip(sentence, 400)}"', ["preference", "user"], 0.9,
                              source_turn_ids=preferences[sentence][:20]))
        existing = memory.facts
        for command, (failed_before, last_failed, error, turns) in commands.items():
            shown = clip(command, 200)
            prefix_failed = f"Command failed: `{shown}`"
            prefix_passed = f"Command passed: `{shown}`"
            older = [f.id for f in existing if f.fact.startswith((prefix_failed, prefix_passed))]
            had_failed = failed_before or any(f.fact.startswith(prefix_failed) for f in existing)
            if last_failed:
                facts.append(Fact(f"{prefix_failed} — {error}", ["command", "failure"], 0.8, older, turns[-5:]))
            elif had_failed:
                facts.append(Fact(f"{prefix_passed} (it had failed before)", ["command"], 0.8, older, turns[-5:]))
        for path in list(files)[-MAX_LISTED:]:
            facts.append(Fact(f"Modified file: {path}", ["file", "modified"], 0.8,
                              source_turn_ids=file_turns.get(path, [])[-5:]))
        return facts[: self.max_facts]
