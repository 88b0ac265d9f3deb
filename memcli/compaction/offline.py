"""The offline summarizer: deterministic, no network, no key — the default of ``memcli compact``.

It writes what an agent needs to continue from the window it replaces (docs/design.md §4)::

    37 turns (turn_0001–turn_0037), 2026-03-02 08:41 → 09:30 UTC: 184 traces, 61 tool calls, 9 failed.
    - turn_0001 · user: "The order total endpoint returns 100.0 for order 1042 …" (full: t-1-u) · tools: Bash ×3,
      Edit ×1 [Bash `pytest -q`] · 1 failed (`pytest -q`: FAILED tests/test_orders.py::test_total) ·
      assistant: "The endpoint never applies the discount: …"
    - turn_0002 · steps 1–120 of 130 (its ask stays in the active file) · tools: … · never answered: Bash `sleep 999`
    Subagents:
    - agent a1b2 (turn_0003): task "Review the API layer …" · changed: app/api.py · concluded: "…"
    Files modified: app/api.py, tests/test_orders.py
    Failed: `pytest -q tests/test_orders.py` ×4 (FAILED tests/test_orders.py::test_total - assert …) — passed later
    Never answered: 1 call (Bash `sleep 999` in turn_0002)
    URLs: https://help.acme.example/returns

* **Every user ask** of a moved turn, verbatim up to ``ASK_CHARS`` (200) characters; a longer
  one names the trace id that expands it (``memcli get ID``). Subagent prompts and injected
  context are not asks.
* **Every file** the agent or a subagent modified — Edit/Write/MultiEdit/NotebookEdit, ``create``
  and the writing commands of ``str_replace_editor``-style tools, ``apply_patch`` headers (also
  inside a shell command), any tool whose name says it writes and whose arguments name a path —
  all of them, in the order last modified.
* **Failures** by their informative line: the failing test (``FAILED …``), the exception's last
  line, an ``error:`` line — never a warning (``npm warn …``, ``DeprecationWarning``) — after the
  exit status; with whether a later run of the same command in the window passed.
* Each turn's **final assistant message**, up to ``REPLY_CHARS`` (600) characters.
* **Subagents** (sidechain traces, grouped by their ``agent_id``): the task, files changed,
  failures, the conclusion (their last message).
* **Calls never answered** (abandoned calls that moved with their step), by tool and argument.
* ``refs:`` identifiers of the turn that the line does not show: paths, URLs, ids with digits
  (order numbers, hashes, uuids) — not CSS classes (``text-gray-500``) or prose (``and/or``);
  URLs end before any backslash or quote left by escaping.

* **Files** carry the names their edits define or replace (``path (fn, Class)``); the latest
  **todo list / plan** (``TodoWrite``, ``update_plan`` …) is listed in full; a failure is
  "fixed later" when a later command of the same *family* (:func:`command_family`) passed.
* **Vocabulary**: the room left goes to the window's identifiers the summary does not show yet,
  ranked by weighted use × how late they were last used (:func:`vocabulary`).

Size: without a budget, a quarter of the window's text within [``MIN_CHARS``, ``MAX_CHARS``].
With one (``MemoryContext.summary_tokens``: what the compaction's target leaves), that budget at
``CHARS_PER_TOKEN``, at most a quarter of the window's text and ``HARD_MAX_CHARS``; the
compaction checks the result with the real counter and asks :attr:`Summary.resize` for less when
needed. Over the size, the turn lines of the middle turns (oldest of the recent ones first) shrink
to their asks, then asks are clipped shorter (never under ``MIN_ASK_CHARS``), then
:func:`_squeeze` keeps the header, files, plan, other aggregate lines and the newest turn lines
(never cutting inside a path).

Facts (``semantic_facts``), ranked so the 20-item bundle holds what matters: user preferences
(a sentence of an ask with "always", "never", "I prefer", "from now on" …), then commands whose
last run failed (``Command failed: `cmd` — line``, superseding older facts about the command),
then commands that pass after failing, then ONE ``Files modified: a, b, …`` fact that
supersedes the previous one and carries its files forward.

Memory is flat in the number of turns: turns are consumed one at a time; only the listed ones
keep their digest.
"""

from __future__ import annotations

import re
from collections import Counter, deque
from datetime import datetime, timezone
from functools import lru_cache
from typing import Iterable

import orjson

from memcli.compaction.summarizer import MAX_FACT_CHARS, Fact, MemoryContext, Summarizer, Summary, Turn
from memcli.models import NON_OPENING_TAGS, TAG_REASONING, TAG_SIDECHAIN
from memcli.pairing import pop_open_call

MAX_LISTED_TURNS = 40
HEAD_TURNS = 10
MAX_CHARS = 12_000
MIN_CHARS = 300           # the cap is a quarter of the window's text, within [MIN_CHARS, MAX_CHARS]
HARD_MAX_CHARS = 19_000   # asks and aggregates may push past MAX_CHARS, never past this
ASK_CHARS = 200
MIN_ASK_CHARS = 40
REPLY_CHARS = 600
SHORT_REPLY_CHARS = 200   # a turn line shrunk to fit
NOTE_CHARS = 100          # the last assistant note of steps whose turn goes on
ERROR_CHARS = 160
MAX_REFS = 8
REF_TEXT_CHARS = 200_000  # text a turn keeps to draw its refs from
MAX_SHORT_LINES = 2_000   # turns listed by their asks only; beyond, counted
MAX_LISTED = 15           # failures, URLs, unanswered calls in the aggregate lines
FILES_FACT_PREFIX = "Files modified: "

_URL = re.compile(r"https?://[^\s\"'<>()\[\]{}`\\]+")
_PATH = re.compile(
    r"(?<![\w/.-])(?:~?/|\.{1,2}/)?(?:[\w.-]+/)+[\w.-]+|(?<![\w/.-])[\w-]+\.(?:py|pyi|js|mjs|cjs|ts|tsx|jsx|json|"
    r"jsonl|md|rst|txt|yaml|yml|toml|ini|cfg|go|rs|java|kt|c|h|cc|cpp|hpp|rb|php|sh|sql|html|css|scss|lock|csv|"
    r"xml|proto|tf|swift|env|vue|svelte)\b")
_EXTENSION = re.compile(r"\.[A-Za-z0-9]{1,8}$")
_ID = re.compile(r"(?<![\w/.:-])(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[A-Za-z0-9][\w-]{3,}(?![\w/])")
_HASH = re.compile(r"[0-9a-f]{7,64}")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_CSS_LIKE = re.compile(r"[a-z]+(?:-[a-z0-9]+)+|[a-z]+\d+|\d+[a-z]+")   # text-gray-500, px4, 2xl, 10px
_PREFERENCE = re.compile(
    r"\b(?:always|never|i (?:always|never)|i (?:would|'d) (?:prefer|rather)|i prefer|prefer to|from now on|"
    r"going forward|do not ever|don'?t ever|make sure (?:to|you) always|remember to|please (?:always|never))\b",
    re.IGNORECASE)
_PREFERENCE_WORDS = ("always", "ever", "prefer", "rather", "from now on", "going forward", "remember to")
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")
_WRITE_TOOL = re.compile(r"(?:^|[_\-.])(?:edit|write|create|patch|apply_patch|str_replace|replace|insert|"
                         r"delete|remove|rm|mv|move|rename|save|multiedit|notebookedit|append)(?:$|[_\-.])|"
                         r"^(?:Edit|Write|MultiEdit|NotebookEdit|apply_patch)$", re.IGNORECASE)
_EDITOR_COMMANDS = {"view", "create", "str_replace", "insert", "undo_edit", "delete", "rename"}
_EDITOR_WRITES = {"create", "str_replace", "insert", "undo_edit", "delete", "rename"}
_PATH_KEYS = ("path", "file_path", "filepath", "file", "filename", "target_file", "notebook_path", "dest",
              "destination")
_PATCH_FILE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+)$", re.MULTILINE)
_COMMAND_KEYS = ("command", "cmd", "commands", "script")
_WARNING = re.compile(r"^\s*(?:npm\s+warn|yarn\s+warn|warn(?:ing)?\b|\[warn|\S*warning:|\S*Warning\b)", re.IGNORECASE)
_EXIT_LINE = re.compile(r"^(?:exit (?:status|code)|process exited with code|exited with|command failed with exit)"
                        r"\b.*", re.IGNORECASE)
_FAILING_TEST = re.compile(r"^(?:FAILED|FAIL|ERROR)\b\s*\S")
_EXCEPTION = re.compile(r"^(?:[\w.]+\.)?\w*(?:Error|Exception|Exit|Interrupt|Failure)\b(?::|$)")
_ERROR_LINE = re.compile(r"^(?:E\s+\S|error(?:\[\w+\])?:|fatal:|npm ERR!|panic:|Traceback|✗|×|✘)", re.IGNORECASE)
# the project's vocabulary: paths, dotted names, CamelCase, snake_case, camelCase, ENV_VARS, ids with digits
_VOCAB = re.compile(   # each alternative starts only where its run starts (linear time, no backtracking)
    r"(?<![\w.@/~-])(?:~?/|\.{1,2}/)?(?:[\w.@-]++/)+[\w.@-]*\w"
    r"|(?<![\w./-])[\w-]++\.(?:py|pyi|js|mjs|ts|tsx|jsx|json|jsonl|md|toml|yaml|yml|go|rs|ex|exs|heex|java|kt|rb|"
    r"php|sh|sql|css|scss|html|vue|svelte|c|h|cc|cpp|lock|cfg|ini|txt|xml|proto|tf|swift)\b"
    r"|(?<![\w.])[A-Za-z_]\w*+(?:\.[A-Za-z_]\w*+)+"
    r"|(?<![\w-])[A-Za-z0-9]++(?:-[A-Za-z0-9]++)+"
    r"|(?<!\w)\w*?(?:[a-z0-9]_|[a-z][A-Z]|[A-Z][a-z0-9]+[A-Z]|_[A-Z0-9])\w*+"
    r"|(?<!\w)[0-9a-f]{7,40}(?!\w)")
_DEFINED = re.compile(r"\b(?:def|class|function|defp?|defmodule|fn|func|interface|struct|enum|trait|impl|module)\s+"
                      r"([A-Za-z_][\w.]*)")
_CHANGES = re.compile(r" \([^()]*\)(?=, |$)")   # "path (fn, Class)" in the files line
_TODO_TOOLS = frozenset({"TodoWrite", "todo_write", "update_plan", "todowrite", "write_todos"})
VOCAB_TEXT_CHARS = 2_000      # of each text, scanned for the vocabulary
MAX_VOCAB = 20_000            # distinct identifiers a window tracks (the least used go first)
MIN_BUDGET_CHARS = 200       # a summary is never asked to be smaller
CHARS_PER_TOKEN = 3.0         # a conservative guess, checked by the compaction with the real counter


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


def clip_ask(text: str, limit: int) -> str:
    """A user ask on one line: verbatim up to ``limit`` characters — at least ``limit`` are kept
    (to the end of the word that crosses it), so the ask's first ``limit`` characters survive."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text.find(" ", limit)
    if cut < 0 or cut > limit + 30:
        cut = limit
    return text[:cut] + " …"


def _is_ref_path(value: str) -> bool:
    if "/" not in value:
        return True  # matched by extension
    if value.startswith(("/", "~/", "./", "../")) or value.count("/") >= 2:
        return True
    return bool(_EXTENSION.search(value.rsplit("/", 1)[-1]))


def _is_ref_id(value: str) -> bool:
    if _UUID.fullmatch(value) or (_HASH.fullmatch(value) and not value.isdigit()):
        return True
    if _CSS_LIKE.fullmatch(value):
        return False
    return any(c.isupper() for c in value) or "_" in value or "-" in value


def identifiers(text: str) -> list[str]:
    """URLs, paths and ids in ``text`` that are worth keeping (module docstring), in order of
    appearance, without repeats."""
    found: list[tuple[int, str]] = []
    taken: list[tuple[int, int]] = []
    for pattern, keep in ((_URL, None), (_PATH, _is_ref_path), (_ID, _is_ref_id)):
        for m in pattern.finditer(text):
            start, end = m.span()
            value = m.group(0).rstrip(".,;:!?\\")
            if any(s <= start < e for s, e in taken) or not value:
                continue
            taken.append((start, end))
            if keep is not None and not keep(value):
                continue
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


def _is_editor_call(args: dict) -> bool:
    """``str_replace_editor``-style arguments: a ``command`` that is an editor verb, and a path."""
    command = args.get("command")
    return isinstance(command, str) and command in _EDITOR_COMMANDS and isinstance(args.get("path"), str)


def command_of(args) -> str | None:
    """The shell command in a tool's arguments (``command``/``cmd``; lists are joined; a
    ``bash -lc "..."`` wrapper is unwrapped). An editor verb (``str_replace`` …) is no command."""
    if not isinstance(args, dict) or _is_editor_call(args):
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


@lru_cache(maxsize=1024)
def _writes_by_name(tool_name: str) -> bool:
    return _WRITE_TOOL.search(tool_name) is not None


_PATCH_KEYS = ("input", "patch", "content", "diff", *_COMMAND_KEYS)


def written_paths(tool_name: str | None, args) -> list[str]:
    """Files a tool call writes (module docstring)."""
    if not isinstance(args, dict):
        return []
    paths: list[str] = []
    patch = None
    for key in _PATCH_KEYS:
        value = args.get(key)
        if isinstance(value, list):
            value = "\n".join(v for v in value if isinstance(v, str))
        if isinstance(value, str) and "*** Begin Patch" in value:
            patch = value
            break
    if patch is not None:
        paths.extend(m.strip() for m in _PATCH_FILE.findall(patch))
    elif _is_editor_call(args):
        if args["command"] in _EDITOR_WRITES:
            paths.append(args["path"].strip())
    elif tool_name and _writes_by_name(tool_name):
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
        if p and p not in out:
            out.append(p)
    return out


_ENV_ASSIGN = re.compile(r"^\w+=\S*$")


def command_family(command: str) -> str:
    """What a command does, for "fixed later": its program and first word that is not an option
    (``git add -f x`` and ``git add x`` are one family, ``npm run build`` another), past any
    ``cd DIR &&`` prefix and ``VAR=value`` assignments."""
    command = command.strip().rsplit("&&", 1)[-1] if command.lstrip().startswith("cd ") else command
    words = [w for w in command.split()[:12] if not _ENV_ASSIGN.match(w)]
    if not words:
        return command.strip()
    program = words[0].rsplit("/", 1)[-1]
    if program in ("uv", "poetry", "pipenv", "bundle", "npx", "pnpm", "yarn", "npm", "mix", "cargo", "go", "python",
                   "python3") and len(words) > 2 and words[1] in ("run", "exec", "-m", "x"):
        rest = words[2:]
        program = f"{program} {words[1]}"
    else:
        rest = words[1:]
    sub = next((w for w in rest if not w.startswith("-")), "")
    return f"{program} {sub}".strip()


def changed_names(args, paths: list[str]) -> dict[str, list[str]]:
    """What an edit touched in each file it wrote: the functions, classes, modules... its new (or
    replaced) text defines — by file for a patch, else for every path of the call."""
    out: dict[str, list[str]] = {}
    if not isinstance(args, dict):
        return out
    patch = next((v for k in _PATCH_KEYS for v in [args.get(k)] if isinstance(v, str) and "*** Begin Patch" in v), None)
    if patch is not None:
        marks = list(_PATCH_FILE.finditer(patch))
        for i, m in enumerate(marks):
            body = patch[m.end(): marks[i + 1].start() if i + 1 < len(marks) else len(patch)]
            out.setdefault(m.group(1).strip(), []).extend(dict.fromkeys(_DEFINED.findall(body[:20_000])))
        return out
    texts = [args.get(k) for k in ("new_string", "old_string", "content", "new_str", "old_str", "file_text", "text",
                                   "source", "new_source")]
    edits = args.get("edits")
    if isinstance(edits, list):
        texts.extend(e.get(k) for e in edits if isinstance(e, dict) for k in ("new_string", "old_string"))
    names = list(dict.fromkeys(n for text in texts if isinstance(text, str) for n in _DEFINED.findall(text[:20_000])))
    return {path: names for path in paths} if names else out


def todo_lines(args) -> list[str]:
    """A todo list / plan tool's arguments (``todos`` of TodoWrite, ``plan`` of update_plan) as
    ``[status] text`` lines."""
    items = None
    for key in ("todos", "plan", "items", "tasks"):
        if isinstance(args.get(key), list):
            items = args[key]
            break
    out = []
    for item in items or ():
        if isinstance(item, dict):
            text = item.get("content") or item.get("step") or item.get("task") or item.get("title") or ""
            status = item.get("status") or ""
            if isinstance(text, str) and text.strip():
                out.append(f"[{status}] {' '.join(text.split())}" if isinstance(status, str) and status else text)
        elif isinstance(item, str) and item.strip():
            out.append(item.strip())
    explanation = args.get("explanation")
    if isinstance(explanation, str) and explanation.strip():
        out.insert(0, " ".join(explanation.split()))
    return out


def _result_failed(trace) -> tuple[bool, str]:
    """(failed, error text) of a tool result: a ``tool_error``, or an exit code other than 0."""
    if trace.tool_error:
        return True, trace.tool_error
    result = trace.tool_result
    if isinstance(result, dict):
        for key in ("exit_code", "exitCode", "returncode"):
            code = result.get(key)
            if isinstance(code, int) and not isinstance(code, bool) and code != 0:
                text = result.get("stderr") or result.get("output") or result.get("stdout") or ""
                return True, f"exit code {code}" + (f"\n{_json_text(text)}" if text else "")
        if result.get("is_error") is True or result.get("success") is False:
            return True, _json_text(result.get("error") or result.get("message") or result)
    return False, ""


def informative_line(text: str) -> str:
    """The line of an error output that says what went wrong (module docstring)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    useful = [line for line in lines if not _WARNING.match(line)]
    if not useful:
        return lines[0] if lines else text.strip()
    for line in useful:
        if _FAILING_TEST.match(line):
            return line
    exceptions = [line for line in useful if _EXCEPTION.match(line)]
    if exceptions:
        return exceptions[-1]
    for line in useful:
        if _ERROR_LINE.match(line) and not line.startswith("Traceback"):
            return line
    for line in useful:
        if not _EXIT_LINE.match(line):
            return line
    return useful[0]


def error_brief(text: str) -> str:
    """The exit status line (when there is one) and the informative line, clipped."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    info = informative_line(text)
    first = lines[0] if lines else ""
    if _EXIT_LINE.match(first) and info != first:
        first = first.split(":", 1)[0] if len(first) > 40 else first
        return clip(f"{first} {info}", ERROR_CHARS)
    return clip(info, ERROR_CHARS)


def _may_state_preference(text: str) -> bool:
    """False when ``text`` holds none of the words every :data:`_PREFERENCE` match contains
    (a substring test, 20× cheaper than the regex; asks are checked one by one)."""
    folded = text.casefold()
    return any(word in folded for word in _PREFERENCE_WORDS) and _PREFERENCE.search(text) is not None


def _arg_brief(tool_name: str | None, args) -> str:
    command = command_of(args)
    if command:
        return f"`{clip(command, 80)}`"
    if isinstance(args, dict):
        for key in (*_PATH_KEYS, "url", "query", "pattern", "description", "order_id", "id", "name"):
            value = args.get(key)
            if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value).strip():
                return clip(str(value), 80)
    return ""


_VOCAB_CACHE: dict[str, tuple] = {}
_VOCAB_WORDS: dict[str, tuple] = {}


def _vocabulary_of(text: str) -> tuple:
    """The vocabulary identifiers of ``text`` (4 characters or more); the same texts come back
    often in a session (results, commands), so the last 4,096 are remembered.

    No :data:`_VOCAB` match spans or borders on whitespace in a way a word boundary would not
    (whitespace is in none of its classes and fails all its lookarounds as the start or end of
    the text does), so the matches of a text are those of its whitespace-separated words, in
    order: each word is scanned once and remembered (the last 16,384), which makes a new text
    made of known words cost a few lookups instead of a regex scan (a test checks the two agree)."""
    found = _VOCAB_CACHE.get(text)
    if found is None:
        words = _VOCAB_WORDS
        out: list = []
        for word in text.split():
            if len(word) < 4:   # no match of 4 characters or more fits in it
                continue
            hits = words.get(word)
            if hits is None:
                hits = tuple(v for v in _VOCAB.findall(word) if len(v) >= 4 and not v.isdigit())
                if len(words) >= 16_384:
                    words.clear()
                words[word] = hits
            if hits:
                out.extend(hits)
        found = tuple(out)
        if len(_VOCAB_CACHE) >= 4096:
            _VOCAB_CACHE.clear()
        _VOCAB_CACHE[text] = found
    return found


def _strings(value, room: int = VOCAB_TEXT_CHARS) -> list[str]:
    """The strings inside a parsed JSON value (arguments, results), up to about ``room`` characters."""
    out: list[str] = []
    stack = [value]
    while stack and room > 0:
        v = stack.pop()
        if isinstance(v, str):
            out.append(v)
            room -= len(v)
        elif isinstance(v, dict):
            stack.extend(reversed(list(v.values())))
        elif isinstance(v, list):
            stack.extend(reversed(v))
    return out


def _trace_turn(trace) -> str | None:
    return trace.turn_id


def _turn_key(turn_id: str) -> tuple:
    m = re.fullmatch(r"turn_(\d+)", turn_id or "")
    return (0, int(m.group(1)), "") if m else (1, 0, turn_id or "")


def _fmt_time(ts: float | None) -> str:
    if ts is None:
        return "?"
    return datetime.fromtimestamp(ts, tz=timezone.utc).strftime("%Y-%m-%d %H:%M")


def _quote(text: str, limit: int) -> str:
    return '"' + clip(text, limit) + '"'


class _Work:
    """Tool activity of the main agent or of one subagent inside a turn, folded as it streams in
    (memory grows with the distinct commands, labels and files, not with the calls)."""

    def __init__(self):
        self.calls: dict[str, int] = {}                   # tool name -> calls
        self.n_calls = 0
        self.call_args: list[str] = []
        self.failed = 0                                    # failed results
        self.last_failure: tuple[str, str] | None = None   # (label, error brief)
        self.failures: dict[str, list] = {}                # label -> [count, last error brief]
        self.commands: dict[str, list] = {}                # command -> [failed before, last failed, last error]
        self.files: dict[str, None] = {}                   # most recently modified last
        self.changes: dict[str, list] = {}                 # path -> names defined/touched in its edits
        self.open: dict[str, list] = {}                    # call id -> unanswered calls, oldest first
        self.todo = None                                   # the latest todo list / plan (its arguments)
        self.families: dict[str, bool] = {}                # command family -> its latest run failed

    def call(self, t) -> None:
        name = t.tool_name or "tool"
        self.calls[name] = self.calls.get(name, 0) + 1
        self.n_calls += 1
        if name in _TODO_TOOLS and isinstance(t.tool_args, dict):
            self.todo = t.tool_args
        if len(self.call_args) < 4:
            brief = _arg_brief(name, t.tool_args)
            if brief:
                self.call_args.append(f"{name} {brief}")
        self.open.setdefault(t.tool_call_id or "", []).append(t)

    def result(self, t, failed: bool, error: str) -> None:
        call = pop_open_call(self.open, t.tool_call_id or "", t.turn_id, _trace_turn)
        name = (call.tool_name if call else None) or t.tool_name or "tool"
        args = call.tool_args if call else t.tool_args
        command = command_of(args)
        brief = error_brief(error) if failed else ""
        if failed:
            label = f"`{clip(command, 80)}`" if command else name
            self.failed += 1
            self.last_failure = (label, brief)
            known = self.failures.get(label)
            if known is None:
                self.failures[label] = [1, brief]
            else:
                known[0] += 1
                known[1] = brief
        if command:
            family = command_family(command)
            self.families.pop(family, None)
            self.families[family] = failed
            known = self.commands.get(command)
            if known is None:
                self.commands[command] = [False, failed, brief]
            else:
                known[0] = known[0] or known[1]
                known[1], known[2] = failed, brief
        if not failed:
            paths = written_paths(name, args)
            for path in paths:
                self.files.pop(path, None)
                self.files[path] = None
            if paths:
                for path, names in changed_names(args, paths).items():
                    known = self.changes.setdefault(path, [])
                    known.extend(n for n in names if n not in known and len(known) < 12)

    def unanswered(self) -> list[str]:
        out = []
        for queue in self.open.values():
            for call in queue:
                brief = _arg_brief(call.tool_name, call.tool_args)
                out.append(f"{call.tool_name or 'tool'}" + (f" {brief}" if brief else ""))
        return out


class _Subagent:
    def __init__(self, name: str, turn_id: str):
        self.name = name
        self.turn_id = turn_id
        self.task = ""
        self.conclusion = ""
        self.work = _Work()

    def line(self) -> str:
        parts = [f"- {self.name} ({self.turn_id})"]
        if self.task:
            parts.append(f"task {_quote(self.task, ASK_CHARS)}")
        if self.work.files:
            parts.append("changed: " + ", ".join(self.work.files))
        if self.work.last_failure:
            label, error = self.work.last_failure
            parts.append(f"{self.work.failed} failed (last: {label}: {error})")
        elif self.work.calls:
            parts.append(f"{self.work.n_calls} tool calls")
        if self.conclusion:
            parts.append(f"concluded: {_quote(self.conclusion, 300)}")
        return " · ".join(parts)


class _TurnDigest:
    """What one turn of the window contributes (module docstring), fed one trace at a time
    (:meth:`add`), so a turn of any length is summarized without holding its traces.

    The texts the ``refs:`` of the turn's line are drawn from are kept up to ``REF_TEXT_CHARS``
    (distinct texts, each clipped to 2,000 characters); past that the line says "or more"."""

    def __init__(self, turn_id: str, steps_only: bool = False, steps: int = 0, total_steps: int = 0):
        self.turn_id = turn_id
        self.steps_only = steps_only
        self.steps, self.total_steps = steps, total_steps
        self.asks: list[tuple[str, str]] = []   # (text, trace id)
        self.reply = ""
        self.main = _Work()
        self.subagents: dict[str, _Subagent] = {}
        self.preferences: list[str] = []
        self.n_traces = 0
        self.text_chars = 0
        self.first_ts = self.last_ts = None
        self.texts: dict[str, None] = {}        # distinct texts, in order, for refs
        self.texts_clipped = False
        self._text_room = REF_TEXT_CHARS
        self.urls: dict[str, None] = {}
        self.vocab: dict[str, list] = {}         # identifier -> [weight, index of the trace it was last in]

    @classmethod
    def of(cls, turn: Turn) -> _TurnDigest:
        digest = cls(turn.turn_id, turn.steps_only, turn.steps, turn.total_steps)
        for trace in turn.traces:
            digest.add(trace)
        return digest

    def _text(self, text: str) -> None:
        if text in self.texts:
            return
        if "://" in text:
            for url in _URL.findall(text):
                self.urls.setdefault(url.rstrip(".,;:!?"), None)
        if self._text_room >= len(text):
            self.texts[text] = None
            self._text_room -= len(text)
        else:
            self.texts_clipped = True

    def _vocab(self, text, weight: int) -> None:
        """Count the identifiers of ``text`` (a string, or the strings of arguments/results)."""
        if not isinstance(text, str):
            text = "\n".join(_strings(text))
        if not text:
            return
        vocab, index = self.vocab, self.n_traces
        for value in _vocabulary_of(text[:VOCAB_TEXT_CHARS]):
            entry = vocab.get(value)
            if entry is None:
                vocab[value] = [weight, index]
            else:
                entry[0] += weight
                entry[1] = index

    def add(self, t) -> None:
        self.n_traces += 1
        ts = t.ts
        if isinstance(ts, (int, float)):
            if self.first_ts is None:
                self.first_ts = self.last_ts = ts
            elif ts < self.first_ts:
                self.first_ts = ts
            elif ts > self.last_ts:
                self.last_ts = ts
        content = t.content or ""
        args_text = _json_text(t.tool_args)
        error = t.tool_error
        result_text = None if error else _json_text(t.tool_result)
        self.text_chars += len(content) + len(args_text) + (len(error) if error else len(result_text))
        tags = t.tags or ()
        if TAG_SIDECHAIN in tags:
            self._vocab(content or t.tool_args or error or t.tool_result, 1)
            self._sidechain(t)
            return
        kind = t.trace_type
        if kind == "user":
            if not NON_OPENING_TAGS.isdisjoint(tags) or not content.strip():
                return
            self.asks.append((content, t.id))
            self._text(content)
            self._vocab(content, 3)
            if _may_state_preference(content):
                for sentence in _SENTENCE.findall(content):
                    if _PREFERENCE.search(sentence) and len(sentence.strip()) >= 8:
                        self.preferences.append(" ".join(sentence.split()))
        elif kind == "assistant":
            if TAG_REASONING in tags or not NON_OPENING_TAGS.isdisjoint(tags) or not content.strip():
                return
            self.reply = content
            self._text(content)
            self._vocab(content, 2)
        elif kind == "tool_call":
            self.main.call(t)
            self._text(args_text[:2000])
            self._vocab(t.tool_args, 2)
        elif kind == "tool_result":
            failed, failure = _result_failed(t)
            self.main.result(t, failed, failure)
            self._text((failure if failed else result_text)[:2000])
            self._vocab(failure if failed else t.tool_result, 1)

    def _sidechain(self, t) -> None:
        name = (t.extra or {}).get("agent_id") or t.correlation_id or "subagent"
        agent = self.subagents.get(name)
        if agent is None:
            agent = self.subagents[name] = _Subagent(f"agent {name}" if name != "subagent" else name, self.turn_id)
        kind = t.trace_type
        if kind == "user" and t.content.strip() and not agent.task:
            agent.task = t.content
        elif kind == "assistant" and t.content.strip() and TAG_REASONING not in (t.tags or ()):
            agent.conclusion = t.content
        elif kind == "tool_call":
            agent.work.call(t)
        elif kind == "tool_result":
            agent.work.result(t, *_result_failed(t))

    @property
    def files(self) -> list[str]:
        out = list(self.main.files)
        for agent in self.subagents.values():
            out.extend(p for p in agent.work.files if p not in out)
        return out

    def line(self, ask_chars: int = ASK_CHARS, full: bool = True) -> str:
        if not full:
            return short_line(self.turn_id, self.asks, self.reply, ask_chars, self.steps_only and
                              f"steps 1–{self.steps} of {self.total_steps} (its ask stays in the active file)")
        parts = [f"- {self.turn_id}"]
        for n, (text, trace_id) in enumerate(self.asks):
            shown = clip_ask(text, ask_chars)
            more = f" (full: {trace_id})" if shown != " ".join(text.split()) else ""
            parts.append(f"{'user' if n == 0 else 'then user'}: \"{shown}\"{more}")
        if self.steps_only:
            parts.append(f"steps 1–{self.steps} of {self.total_steps} (its ask stays in the active file)")
        work = self.main
        if work.calls:
            tools = ", ".join(f"{name} ×{n}" for name, n in Counter(work.calls).most_common(5))
            if len(work.calls) > 5:
                tools += f", +{len(work.calls) - 5} more tools"
            shown = "; ".join(dict.fromkeys(work.call_args[:3]))
            part = f"tools: {tools}" + (f" [{shown}]" if shown else "")
            if work.last_failure:
                label, error = work.last_failure
                part += f" ({work.failed} failed; last: {label}: {error})"
            parts.append(part)
        if self.subagents:
            parts.append(f"subagents: {', '.join(a.name for a in self.subagents.values())}")
        unanswered = work.unanswered()
        if unanswered:
            parts.append("never answered: " + "; ".join(unanswered[:3])
                         + (f" (+{len(unanswered) - 3} more)" if len(unanswered) > 3 else ""))
        if self.reply and self.steps_only:  # the turn's final answer is still to come, in the active file
            parts.append(f"last note: {_quote(self.reply, SHORT_REPLY_CHARS)}")
        elif self.reply:
            parts.append(f"assistant: {_quote(self.reply, REPLY_CHARS)}")
        elif not work.calls and not self.asks:
            parts.append(f"{self.n_traces} context trace{'s' if self.n_traces != 1 else ''}")
        text = " · ".join(parts)
        # each distinct text once: a repeated text adds no identifier the first copy did not
        missing = [i for i in dict.fromkeys(ident for t in self.texts for ident in identifiers(t)) if i not in text]
        if missing:
            more = len(missing) - MAX_REFS
            text += " · refs: " + ", ".join(missing[:MAX_REFS])
            if more > 0 or self.texts_clipped:
                text += f", +{max(more, 0)}{' or' if self.texts_clipped else ''} more"
        return text


def required_items(turns) -> tuple[list[str], list[str]]:
    """The user asks (of turns that move whole or with their ask) and the files modified in
    ``turns``: what any summary of them must name."""
    asks: list[str] = []
    files: list[str] = []
    for turn in turns:
        digest = _TurnDigest.of(turn)
        if not digest.steps_only:
            asks.extend(text for text, _ in digest.asks)
        files.extend(p for p in digest.files if p not in files)
    return asks, files


def turn_digest(turn) -> _TurnDigest:
    """An empty digest for a window turn (:class:`memcli.compaction.window.WindowTurn`), to feed
    its moved traces to with :meth:`_TurnDigest.add`."""
    return _TurnDigest(turn.turn_id, not turn.whole, turn.steps, turn.total_steps)


def short_line(turn_id: str, asks: list, reply: str, ask_chars: int, note: str | None = None) -> str:
    """A turn listed by its asks only (``memcli show AGENT --archive --turn ID`` expands it)."""
    parts = [f"- {turn_id}"]
    for n, (text, _trace_id) in enumerate(asks):
        parts.append(f"{'user' if n == 0 else 'then user'}: \"{clip_ask(text, ask_chars)}\"")
    if note:
        parts.append(note)
        if reply:
            parts.append(f"last note: {_quote(reply, NOTE_CHARS)}")
    elif reply and not asks:
        parts.append(f"assistant: {_quote(reply, SHORT_REPLY_CHARS)}")
    return " · ".join(parts)


class _Listed:
    """A turn of the summary: its digest while listed in full, its short line once condensed."""

    __slots__ = ("digest", "turn_id", "calls", "failed", "short")

    def __init__(self, digest: _TurnDigest):
        self.digest = digest
        self.turn_id = digest.turn_id
        self.calls = digest.main.n_calls
        self.failed = digest.main.failed
        self.short = False


class WindowSummary:
    """The offline summary of a window in the making: digests are added one turn at a time, in
    window order (memory stays flat: only the listed turns keep their digest); :meth:`finish`
    writes the text and the facts."""

    def __init__(self, summarizer: OfflineSummarizer):
        self.summarizer = summarizer
        self.listed: list[_Listed] = []
        self.short_lines: list[tuple] = []   # (turn id, [(ask, id)], reply) of turns past the head
        self.n_turns = self.n_traces = self.n_calls = self.n_failed = 0
        self.text_chars = 0
        self.first_turn = self.last_turn = None
        self.first_ts = self.last_ts = None
        self.files: dict[str, None] = {}
        self.failures: Counter = Counter()
        self.failure_error: dict[str, str] = {}
        self.urls: dict[str, None] = {}
        self.preferences: dict[str, list] = {}
        self.commands: dict[str, list] = {}   # command -> [failed_before, last_failed, last_error, turns]
        self.file_turns: dict[str, list] = {}
        self.subagents: list[str] = []
        self.unanswered: list[str] = []
        self.n_unanswered = 0
        self.tail: deque = deque()
        self.unlisted = [0, None, None]       # turns past MAX_SHORT_LINES: count, first, last
        self.vocab: dict[str, list] = {}      # identifier -> [weight, last trace index in the window]
        self.changes: dict[str, list] = {}    # path -> names its edits touched
        self.families: dict[str, bool] = {}   # command family -> its latest run failed
        self.todo = None                      # the latest todo list / plan arguments

    def whole_turn(self, turn_id: str, traces: list, steps: int) -> None:
        """Add a turn that moves whole, from its moved traces."""
        self.add(_TurnDigest.of(Turn(turn_id, traces, steps_only=False, steps=steps, total_steps=steps)))

    def add(self, d: _TurnDigest) -> None:
        self.n_turns += 1
        self.n_traces += d.n_traces
        self.text_chars += d.text_chars
        self.n_calls += d.main.n_calls
        self.n_failed += d.main.failed
        if d.subagents:
            self.n_calls += sum(a.work.n_calls for a in d.subagents.values())
            self.n_failed += sum(a.work.failed for a in d.subagents.values())
        self.first_turn = self.first_turn or d.turn_id
        self.last_turn = d.turn_id
        if d.first_ts is not None:
            self.first_ts = d.first_ts if self.first_ts is None else min(self.first_ts, d.first_ts)
        if d.last_ts is not None:
            self.last_ts = d.last_ts if self.last_ts is None else max(self.last_ts, d.last_ts)
        entry = _Listed(d)
        if len(self.listed) < HEAD_TURNS:
            self.listed.append(entry)
        else:
            tail = self.tail
            tail.append(entry)
            if len(tail) > MAX_LISTED_TURNS - HEAD_TURNS:
                old = tail.popleft()
                if len(self.short_lines) < MAX_SHORT_LINES:
                    self.short_lines.append((old.turn_id, old.digest.asks, old.digest.reply))
                else:
                    unlisted = self.unlisted
                    unlisted[0] += 1
                    unlisted[1] = unlisted[1] or old.turn_id
                    unlisted[2] = old.turn_id
        files, file_turns = self.files, self.file_turns
        for path in d.files:
            files.pop(path, None)
            files[path] = None      # most recent last
            turns_of = file_turns.setdefault(path, [])
            if len(turns_of) < 20 and d.turn_id not in turns_of:
                turns_of.append(d.turn_id)
        base = self.n_traces - d.n_traces
        vocab = self.vocab
        for value, (weight, index) in d.vocab.items():
            entry = vocab.get(value)
            if entry is None:
                vocab[value] = [weight, base + index]
            else:
                entry[0] += weight
                entry[1] = base + index
        if len(vocab) > MAX_VOCAB:   # bounded: the least used (then the oldest) go
            ranked = sorted(vocab.items(), key=lambda kv: (kv[1][0], kv[1][1]), reverse=True)
            self.vocab = dict(ranked[:MAX_VOCAB // 2])
        commands = self.commands
        for work in (d.main, *(a.work for a in d.subagents.values())) if d.subagents else (d.main,):
            if work.todo is not None:
                self.todo = work.todo
            for path, names in work.changes.items():
                known = self.changes.setdefault(path, [])
                known.extend(n for n in names if n not in known and len(known) < 12)
            for family, failed in work.families.items():
                self.families.pop(family, None)
                self.families[family] = failed
            for label, (count, error) in work.failures.items():
                self.failures[label] += count
                self.failure_error[label] = error
            for command, (failed_before, failed, error) in work.commands.items():
                entry_c = commands.setdefault(command, [False, False, "", []])
                entry_c[0] = entry_c[0] or entry_c[1] or failed_before
                entry_c[1], entry_c[2] = failed, error
                if len(entry_c[3]) < 20 and (not entry_c[3] or entry_c[3][-1] != d.turn_id):
                    entry_c[3].append(d.turn_id)
        for agent in d.subagents.values():
            if len(self.subagents) < 50:
                self.subagents.append(agent.line())
        if d.main.open:
            for call in d.main.unanswered():
                self.n_unanswered += 1
                if len(self.unanswered) < MAX_LISTED:
                    self.unanswered.append(f"{call} in {d.turn_id}")
        for url in d.urls:
            if len(self.urls) < 200:
                self.urls[url] = None
        for sentence in d.preferences:
            self.preferences.setdefault(sentence, []).append(d.turn_id)
        if len(commands) > 5000:  # bounded memory on pathological windows
            self.commands = dict(list(commands.items())[-1000:])

    def finish(self, memory: MemoryContext | None = None) -> Summary:
        summary = self.summarizer._finish(self, memory)
        # a compaction that finds the summary over its budget asks for a smaller one
        summary.resize = lambda tokens: self.summarizer._finish(self, _with_budget(memory, tokens))
        return summary


class OfflineSummarizer(Summarizer):
    """Deterministic summaries and facts from the transcript alone (see the module docstring)."""

    name = "offline"

    def __init__(self, max_facts: int = 20):
        self.max_facts = max_facts

    def context_tokens(self) -> int | None:
        return None

    def summarize(self, turns: Iterable[Turn], memory: MemoryContext | None = None) -> Summary:
        """The summary of ``turns``. A compaction's window (it has ``summarize_into``) feeds a
        :class:`WindowSummary` itself: straight from the file, a trace at a time, after the turns
        its plan handed over while reading."""
        summarize_into = getattr(turns, "summarize_into", None)
        if callable(summarize_into):
            return summarize_into(self).finish(memory)
        return self.summarize_digests((_TurnDigest.of(turn) for turn in turns), memory)

    def summarize_digests(self, digests: Iterable[_TurnDigest], memory: MemoryContext | None = None) -> Summary:
        """:meth:`summarize` over turns already digested."""
        window = WindowSummary(self)
        for digest in digests:
            window.add(digest)
        return window.finish(memory)

    def window_summary(self) -> WindowSummary:
        """An empty summary to add the window's digests to, in window order (a compaction feeds
        it while it plans: :class:`memcli.compaction.window.WholeTurnFeed`)."""
        return WindowSummary(self)

    def _finish(self, window: WindowSummary, memory: MemoryContext | None) -> Summary:
        memory = memory or MemoryContext()
        (listed, short_lines, n_turns, n_traces, n_calls, n_failed, text_chars, first_turn, last_turn, first_ts,
         last_ts, files, failures, failure_error, urls, preferences, commands, file_turns, subagents, unanswered,
         n_unanswered, tail, unlisted) = (
            window.listed, window.short_lines, window.n_turns, window.n_traces, window.n_calls, window.n_failed,
            window.text_chars, window.first_turn, window.last_turn, window.first_ts, window.last_ts, window.files,
            window.failures, window.failure_error, window.urls, window.preferences, window.commands,
            window.file_turns, window.subagents, window.unanswered, window.n_unanswered, window.tail,
            window.unlisted)
        if n_turns == 0:
            raise ValueError("nothing to summarize")

        span = first_turn if n_turns == 1 else f"{first_turn}–{last_turn}"
        header = (f"{n_turns} turn{'s' if n_turns != 1 else ''} ({span}), {_fmt_time(first_ts)} → "
                  f"{_fmt_time(last_ts)} UTC: {n_traces} trace{'s' if n_traces != 1 else ''}, "
                  f"{n_calls} tool call{'s' if n_calls != 1 else ''}, {n_failed} failed.")
        footer = []
        if subagents:
            footer.append("Subagents:\n" + "\n".join(subagents))
        if files:
            changes = window.changes
            footer.append(FILES_FACT_PREFIX + ", ".join(
                f"{p} ({', '.join(changes[p])})" if changes.get(p) else p for p in reversed(list(files))))
        if window.todo is not None:
            todo = todo_lines(window.todo)
            if todo:
                footer.append("Plan (latest): " + "; ".join(todo))
        if failures:
            shown = []
            for label, n in failures.most_common(MAX_LISTED):
                later = ""
                if label.startswith("`"):
                    state = next((c for cmd, c in commands.items() if f"`{clip(cmd, 80)}`" == label), None)
                    if state is not None:
                        cmd = next(c for c, v in commands.items() if v is state)
                        family_failed = window.families.get(command_family(cmd), state[1])
                        later = (" — passed later" if not state[1] else
                                 " — still failing" if family_failed else
                                 f" — fixed later (a later `{command_family(cmd)}` passed)")
                shown.append(f"{label} ×{n} ({failure_error[label]}){later}")
            more = len(failures) - len(shown)
            footer.append("Failed: " + "; ".join(shown) + (f"; +{more} more" if more > 0 else ""))
        if n_unanswered:
            footer.append(f"Never answered: {n_unanswered} call{'s' if n_unanswered != 1 else ''} ("
                          + "; ".join(unanswered) + (", …" if n_unanswered > len(unanswered) else "") + ")")
        if urls:
            names = list(urls)
            footer.append("URLs: " + ", ".join(names[:MAX_LISTED])
                          + (f", +{len(names) - MAX_LISTED} more" if len(names) > MAX_LISTED else ""))

        entries = listed + list(tail)
        lines_of: dict[tuple, str] = {}
        ask_chars = [ASK_CHARS]

        def line_of(entry: _Listed) -> str:
            key = (entry.turn_id, entry.short, ask_chars[0])
            text = lines_of.get(key)
            if text is None:
                text = lines_of[key] = entry.digest.line(ask_chars[0], full=not entry.short)
            return text

        short_blocks: dict[int, list] = {}

        def assemble() -> str:
            lines = [header]
            lines.extend(line_of(e) for e in entries[:len(listed)])
            block = short_blocks.get(ask_chars[0])
            if block is None:
                block = short_blocks[ask_chars[0]] = [short_line(*s, ask_chars[0]) for s in short_lines]
            lines.extend(block)
            if unlisted[0]:
                lines.append(f"… {unlisted[0]} more turns ({unlisted[1]}–{unlisted[2]}) not listed "
                             "(`memcli show AGENT --archive --turn ID` shows any of them).")
            lines.extend(line_of(e) for e in entries[len(listed):])
            lines.extend(footer)
            return "\n".join(lines)

        limit = min(max(text_chars // 4, MIN_CHARS), MAX_CHARS)
        hard = HARD_MAX_CHARS
        if memory.summary_tokens is not None:   # the budget the compaction leaves decides
            hard = max(int(memory.summary_tokens * CHARS_PER_TOKEN), MIN_BUDGET_CHARS)
            limit = min(max(text_chars // 4, MIN_CHARS), HARD_MAX_CHARS, hard)
            hard = min(hard, HARD_MAX_CHARS)
        summary = assemble()
        # over the limit: shrink turn lines to their asks, middle turns first (oldest of the recent
        # ones, then the later ones of the first few), keeping the first 3 and the last 3 in full
        order = list(range(len(listed), len(entries) - 3)) + list(range(len(listed) - 1, 2, -1))
        for i in order:
            if len(summary) <= limit:
                break
            if 0 <= i < len(entries):
                entries[i].short = True
                summary = assemble()
        for entry in entries:  # still over: the first and last turns shrink too
            if len(summary) <= limit:
                break
            if not entry.short:
                entry.short = True
                summary = assemble()
        while len(summary) > limit and ask_chars[0] > MIN_ASK_CHARS:
            ask_chars[0] = max(MIN_ASK_CHARS, ask_chars[0] * 2 // 3)
            summary = assemble()
        if len(summary) > hard and short_lines:
            # still too long with every ask at its shortest: stop listing the newest of the middle
            # turns (an honest count says which), down to what fits
            block = short_blocks[ask_chars[0]]
            excess = len(summary) - hard + 200
            keep = len(block)
            while keep and excess > 0:
                keep -= 1
                excess -= len(block[keep]) + 1
            dropped = short_lines[keep:]
            if dropped:
                unlisted[0] += len(dropped)
                unlisted[2] = unlisted[2] or dropped[-1][0]
                unlisted[1] = dropped[0][0]
                del short_lines[keep:]
                short_blocks.clear()
                summary = assemble()
        if len(summary) > hard:
            summary = _squeeze(summary.split("\n"), len(footer), hard)
        elif limit - len(summary) > 40:   # the room left goes to the identifiers needed later
            extra = vocabulary(window.vocab, n_traces, summary, limit - len(summary) - 1)
            if extra:
                summary += "\n" + extra
        return Summary(summary, self._facts(preferences, commands, files, file_turns, memory))

    def _facts(self, preferences, commands, files, file_turns, memory: MemoryContext) -> list[Fact]:
        """Facts, most important first (module docstring)."""
        first: list[Fact] = []
        failing: list[Fact] = []
        fixed: list[Fact] = []
        for sentence in preferences:
            first.append(Fact(f'User preference: "{clip(sentence, 400)}"', ["preference", "user"], 0.9,
                              source_turn_ids=preferences[sentence][:20]))
        existing = memory.facts
        for command, (failed_before, last_failed, error, turns) in commands.items():
            shown = clip(command, 200)
            prefix_failed = f"Command failed: `{shown}`"
            prefix_passed = f"Command passed: `{shown}`"
            older = [f.id for f in existing if f.fact.startswith((prefix_failed, prefix_passed))]
            had_failed = failed_before or any(f.fact.startswith(prefix_failed) for f in existing)
            if last_failed:
                failing.append(Fact(f"{prefix_failed} — {error}", ["command", "failure"], 0.8, older, turns[-5:]))
            elif had_failed:
                fixed.append(Fact(f"{prefix_passed} (it had failed before)", ["command"], 0.8, older, turns[-5:]))
        facts = first + failing + fixed
        if files:
            previous = [f for f in existing if f.fact.startswith(FILES_FACT_PREFIX)]
            names = list(reversed(list(files)))
            for f in previous:
                names.extend(p for p in f.fact[len(FILES_FACT_PREFIX):].split(", ") if p and p not in names)
            text = FILES_FACT_PREFIX + ", ".join(names)
            if len(text) > MAX_FACT_CHARS:
                text = text[:MAX_FACT_CHARS - 20].rsplit(", ", 1)[0] + ", … (see the summaries)"
            sources = [t for path in files for t in file_turns.get(path, [])]
            facts.append(Fact(text, ["file", "modified"], 0.8, [f.id for f in previous],
                              list(dict.fromkeys(sources))[-20:]))
        if len(facts) > self.max_facts and files:   # the files fact always has a place
            facts = facts[:self.max_facts - 1] + [facts[-1]]
        return facts[: self.max_facts]


def _squeeze(lines: list[str], n_footer: int, size: int) -> str:
    """The summary's lines within ``size`` characters, by priority: the header, the files
    modified (always all of them, if need be past ``size``), the plan, the other aggregate lines, then the turn lines newest first; a line that
    does not fit whole is clipped at a word boundary (never inside a path), and the turn lines
    left out are counted."""
    header, body = lines[0], lines[1:len(lines) - n_footer]
    footer = lines[len(lines) - n_footer:] if n_footer else []
    order = sorted(range(len(footer)), key=lambda i: (not footer[i].startswith(FILES_FACT_PREFIX),
                                                      not footer[i].startswith("Plan ("), i))
    room = size - len(header) - 100
    shown_footer = [""] * len(footer)
    for i in order:
        line = footer[i]
        if len(line) + 1 > room and line.startswith(FILES_FACT_PREFIX):   # the names touched go first
            line = _CHANGES.sub("", line)
        if len(line) + 1 <= room or line.startswith(FILES_FACT_PREFIX):   # every file, always (§4)
            shown_footer[i] = line
        elif room > 60:
            shown_footer[i] = clip(line, room - 2)
        room -= len(shown_footer[i]) + 1 if shown_footer[i] else 0
    kept: list[str] = []
    for line in reversed(body):
        if len(line) + 1 > room:
            if room > 120:
                kept.append(clip(line, room - 2))
                room = 0
            break
        kept.append(line)
        room -= len(line) + 1
    kept.reverse()
    left_out = len(body) - len(kept)
    note = [f"… {left_out} earlier turn line{'s' if left_out != 1 else ''} left out at the summary's budget"
            " (`memcli show AGENT --archive` has them)"] if left_out else []
    return "\n".join([header, *note, *kept, *(line for line in shown_footer if line)])


def _with_budget(memory: MemoryContext | None, tokens: int) -> MemoryContext:
    memory = memory or MemoryContext()
    return MemoryContext(memory.episodic, memory.facts, summary_tokens=tokens)


def vocabulary(vocab: dict, total: int, shown: str, room: int) -> str:
    """The identifiers of the window the summary does not show yet, most needed first (used
    often, and lately: weight × (0.5 + how late in the window it was last used)), as one
    ``Vocabulary:`` line of at most ``room`` characters (whole identifiers only)."""
    if room < 40 or not vocab:
        return ""
    total = max(total, 1)
    ranked = sorted(vocab.items(), key=lambda kv: kv[1][0] * (0.5 + kv[1][1] / total), reverse=True)
    head = "Vocabulary (most used, latest first): "
    out: list[str] = []
    size = len(head)
    for value, _ in ranked:
        if value in shown:
            continue
        if size + len(value) + 2 > room:
            if size > room - 8:
                break
            continue
        out.append(value)
        size += len(value) + 2
    return head + ", ".join(out) if out else ""


def condense(summary: str, budget: int) -> str:
    """``summary`` within ``budget`` characters, keeping its line breaks, its header, its asks
    and its aggregate lines: turn lines shrink to their asks first (for rollups)."""
    if len(summary) <= budget:
        return summary
    lines = summary.split("\n")
    out = []
    for line in lines:
        if line.startswith("- turn") or line.startswith("- ["):
            keep = [p for p in line.split(" · ") if p.startswith(("- ", "user:", "then user:", "steps "))]
            line = " · ".join(keep)
        out.append(line)
    text = "\n".join(out)
    if len(text) <= budget:
        return text
    out = [clip(line, 160) if not line.startswith(("- turn", FILES_FACT_PREFIX)) else line for line in out]
    text = "\n".join(out)
    if len(text) <= budget:
        return text
    out = [clip(line, 120) for line in out]
    text = "\n".join(out)
    if len(text) > budget:
        text = text[:budget].rsplit("\n", 1)[0] + "\n…"
    return text
