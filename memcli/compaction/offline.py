"""The offline summarizer: deterministic, no network, no key — the default of ``memcli compact``.

It writes what an agent needs to continue from the window it replaces (docs/design.md §4)::

    37 turns (turn_0001–turn_0037), 2026-03-02 08:41 → 09:30 UTC: 184 traces, 61 tool calls, 9 failed.
    - turn_0001 · user: "The order total endpoint returns 100.0 for order 1042 …" (full: t-1-u) · tools: Bash ×3,
      Edit ×1 [Bash `pytest -q`] (1 failed; last: `pytest -q`) ·
      assistant: "The endpoint never applies the discount: …"
    - turn_0002 · steps 1–120 of 130 (its ask stays in the active file) · tools: … · never answered: Bash `sleep 999`
    Subagents:
    - agent a1b2 (turn_0003): task "Review the API layer …" · changed: app/api.py · concluded: "…"
    Files modified: app/api.py (total, apply_discount, DISCOUNT_RATE), tests/test_orders.py
    Latest notes: "The discount is never applied; I fix app/api.py next." → "…"
    Commands (latest outcome): `pytest -q`: 42 passed in 3.3s; `git commit -am "Fix totals"`: [main 9f8e7d6] Fix totals
    Failed: `make lint` ×1 (E501 line too long) — still failing; `pytest -q tests/test_orders.py` ×4
      (FAILED tests/test_orders.py::test_total - assert …) — passed later
    Never answered: 1 call (Bash `sleep 999` in turn_0002)
    URLs: https://help.acme.example/returns
    Vocabulary: OrderTotal, DISCOUNT_RATE, orders.apply_discount, …

* **Every user ask** of a moved turn, verbatim up to ``ASK_CHARS`` (2,000) characters; a longer
  one names the trace id that expands it (``memcli get ID``). Asks are clipped below that only
  when the summary is over its budget (not the quarter of the window it aims at) and they take
  more than half of it — the first (the request) and the newest (the latest intent) no shorter
  than an eighth of the summary (``END_ASK_SHARE``): first the sentences that say least go,
  wherever they are (:func:`sentence_floor`, :func:`condense_message`: information per character,
  by :class:`Rarity`; an ask keeps its most telling one), then what is left is clipped, never
  inside a word or a quoted span (:func:`clip_ask`: a path or an identifier stays whole or goes
  whole). A turn of conversation only (no tool call) is listed with its reply too, ranked with
  the asks' sentences in the room its asks alone would take. Subagent prompts and injected
  context are not asks.
* **Every file** the agent or a subagent modified — Edit/Write/MultiEdit/NotebookEdit, ``create``
  and the writing commands of ``str_replace_editor``-style tools, ``apply_patch`` headers (also
  inside a shell command), a shell command's here-document into a file or ``sed -i`` on it
  (:func:`shell_written`), any tool whose name says it writes and whose arguments name a path —
  all of them, newest first, each with what its edits touched (:func:`changed_names`: the names
  they define, then the identifiers their new text brings in — a key, an env var, a call), each
  name once. Paths stay as the session's tools spelled them (an agent's next call copies them).
* **Failures** by their informative line: the failing test (``FAILED …``, with the message
  printed after it or, when none, the error printed before it), a Rust panic's message, the
  exception's last line, an ``error:`` line (the first that says where, over a summary line) —
  never a warning (``npm warn …``, ``DeprecationWarning``), a colour code, a log level, the
  harness's own lines around an output — after the exit status. A result is a failure when the
  importer says so, when its object has a non-zero exit code, or when the harness wrote one into
  its text (Codex ``Exit code: 1`` / ``Process exited with code 1``, Copilot CLI ``<exited with
  exit code 1>``, Gemini CLI ``Exit Code: 1``: :func:`memcli.tool_interactions.stated_exit`), or,
  with no exit code known, when it begins by saying so (tau-bench's ``Error: not enough seats``):
  :func:`memcli.tool_interactions.result_failure`, the one rule ``tools`` and ``stats`` use too. The unresolved ones first,
  newest first; "passed later" (the same command, or a later call of another tool with the same
  label: ``update_reservation_flights``, ``Read app/x.py``),
  "fixed later" (a later command of the same *family*, :func:`command_family`) or "still failing".
* Each turn's **final assistant message**, up to ``REPLY_CHARS`` (600) characters, and the
  agent's **latest notes** before it (its status and next-step lines, ``NOTES_KEPT``, each once).
* **Subagents** (sidechain traces, one line per ``agent_id`` — the importers tell parallel
  subagents apart): the task, files changed, failures, the conclusion (their last message); the
  newest ``MAX_SUBAGENT_LINES`` (50), and at a small budget the newest that fit, the earlier ones
  counted (``(+41 earlier)``).
* A **harness's own summary** (a ``compact_summary`` trace: Claude Code, Codex, Copilot, opencode)
  that moves is not an ask: its turn line points at it by trace id with the harness's mark, and
  its names join the vocabulary (it is what the agent worked from).
* **Calls never answered** (abandoned calls that moved with their step), by tool and argument.
* **URLs** the window used that no other line of the summary shows (an ask's, a PR's).
* **Commands that matter** with their latest outcome, one per command family, newest first
  (:func:`outcome_line`: the runner's last line of test counts, a commit, a push, a PR/issue
  URL, a finished build); a
  family whose latest run failed is under the failures instead.
* The latest **todo list / plan** (``TodoWrite``, ``update_plan`` …) in full.
* **Vocabulary**: the window's identifiers the summary does not show yet, most needed first
  (:func:`_needs`: each use weighted — ask 3, the agent's text and arguments 2, results 1 — and
  halved every ``VOCAB_HALF_LIFE`` traces since, so the working set at the end of the window
  leads; plus a small share of all uses), whole identifiers only, not CSS utility classes
  (``text-gray-500``, ``items-center``) nor CSS's own words (``font-size``, ``sans-serif``, also
  among the names an edit touched), prose (``and/or``), file permissions, markup tags
  (``<system-reminder>``) nor the parts of a URL. It replaces the per-turn ``refs:`` lists.

Size: without a budget, a quarter of the window's text within [``MIN_CHARS``, ``MAX_CHARS``].
With one (``MemoryContext.summary_tokens``: what the compaction's target leaves), that budget at
``CHARS_PER_TOKEN``, at most a quarter of the window (of its text's characters; under a target
the user set, the room the plan set aside for its summary when that says more —
``MemoryContext.window_room``, a quarter of its tokens in the working snapshot, which count its
messages' ids and JSON too — at the characters per token the text is made at) and ``HARD_MAX_CHARS`` (a harness
summary's usual size), or ``TARGET_MAX_CHARS`` when the user set the target
(``MemoryContext.target_given``: ``--target-tokens``, the budget alone sizes it), then made
again at the characters per token the text turned out to have (:func:`_fill`), so
that it fills the budget; the compaction checks the result with the real counter and asks
:attr:`Summary.resize` for less when needed. Over the size, the turn lines of the middle turns
(oldest of the recent ones first) shrink to their asks, asks are clipped only while they take
more than half of it, then :func:`_squeeze` ranks what is kept by what is needed next (the
header — under :data:`TINY_SUMMARY_CHARS` only the counts: the lines under it name the turns —, every file,
the vocabulary's share set aside, the asks, the plan, the latest notes, the failures (a failing
test's line alone when it names what its command ran and the whole entry does not fit), the
subagents, the names touched in the newest files, the turn lines whole, the vocabulary: each
within a share, then growing into what is left), never cutting inside an identifier or a path.

Facts (``semantic_facts``): only what the summary does not carry into the same snapshot — user
preferences (a sentence of an ask with "always", "never", "I prefer", "from now on" …; in a window
of conversation only one said as an instruction — "Always run …", not "it always amazes me" —), and the
new state of a command an existing fact is about (``Command passed: `cmd` (it had failed
before)`` superseding a ``Command failed`` fact once it, or its family, passes; ``Command failed``
superseding a ``Command passed`` one). The files and failures of the window are in the summary
only: the snapshot carries each once.

Memory is flat in the number of turns: turns are consumed one at a time; only the listed ones
keep their digest.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
import zlib
from collections import Counter, deque
from datetime import datetime, timezone
from functools import lru_cache
from types import MappingProxyType
from typing import Callable, Iterable, Iterator

import orjson

from memcli.compaction.summarizer import Fact, MemoryContext, Summarizer, Summary, Turn
from memcli.ids import format_turn
from memcli.messages import value_text
from memcli.models import NON_OPENING_TAGS, TAG_COMPACT_SUMMARY, TAG_REASONING, TAG_SIDECHAIN
from memcli.neutral import readable_text
from memcli.pairing import pop_open_call
from memcli.store.state import turn_number
from memcli.tool_interactions import exec_output, result_failure

MAX_LISTED_TURNS = 40
HEAD_TURNS = 10
MAX_CHARS = 12_000
MIN_CHARS = 300           # the cap is a quarter of the window's text, within [MIN_CHARS, MAX_CHARS]
HARD_MAX_CHARS = 19_000   # asks and aggregates may push past MAX_CHARS, never past this
TARGET_MAX_CHARS = 80_000  # … nor, with a target the user set, past this (~20,000 tokens: the budget sizes it)
ASK_CHARS = 2_000
MIN_ASK_CHARS = 40
FRAME_CHARS = 300         # an ask over its room keeps its first and last sentences first, up to this long
REPLY_CHARS = 600
TASK_CHARS = 600          # a subagent's task (the prompt it was given), on its line
SHORT_REPLY_CHARS = 200   # a turn line shrunk to fit
NOTE_CHARS = 100          # the last assistant note of steps whose turn goes on
NOTE_TEXT_CHARS = 300     # each of the latest notes
NOTES_KEPT = 6            # the agent's latest notes a window keeps
ERROR_CHARS = 220
END_ASK_SHARE = 8         # the first and the newest asks are clipped no shorter than this share of the summary
MAX_SUBAGENT_LINES = 50   # the newest subagents a window lists; the earlier ones are counted
MAX_SHORT_LINES = 2_000   # the newest turns listed by their asks only (and the first 250); between, counted
FIRST_SHORT_LINES = 250
MAX_LISTED = 15           # failures, URLs, unanswered calls in the aggregate lines
MAX_COMMITS = 50          # the commits a window keeps (the newest)
COMMITS_HEAD, COMMITS_SEP = "Commits: ", " · "   # the commits made, newest first (a subject may hold "; ")
MAX_URLS = 200            # the URLs a window keeps (the most recently seen)
MAX_NAME_CHARS = 64         # a vocabulary name longer than this, no path, is a token unless its parts are names
MAX_SCOPES = 2_000         # run scopes a window remembers the latest outcome of (the oldest go first)
FILES_FACT_PREFIX = "Files modified: "
FILES_UNDER_HEAD = "Files modified in "   # + the directory every path is under, ": ", the paths from it
_FILES_HEADS = (FILES_FACT_PREFIX, FILES_UNDER_HEAD)
_COMMAND_FACT_PREFIXES = ("Command failed: `", "Command passed: `")

_URL_CHAR = r"[^\s\"'<>()\[\]{}`\\]"   # what a URL goes on with (where it ends: what is not)
_URL = re.compile(r"https?://" + _URL_CHAR + "+")
# how a preference is said, besides "always"/"never" (both regexes below hold it)
_STATED = (r"i(?: would|['’]d) (?:prefer|rather)|i prefer|prefer to|from now on|going forward|do not ever|"
           r"don['’]?t ever|remember to|please (?:always|never)")
_PREFERENCE = re.compile(rf"\b(?:always|never|i (?:always|never)|make sure (?:to|you) always|{_STATED})\b",
                         re.IGNORECASE)
_PREFERENCE_WORDS = ("always", "ever", "prefer", "rather", "from now on", "going forward", "remember to")
# … in a window of conversation, only a sentence that says it as an instruction: "Always run the
# linter" (after a list marker, a quote or a lead-in — "- Never book …", "Also, always …", "Note:
# always …" — too), "You must always ask first", "I want you to never …", "from now on …".
# "always" or "never" inside a sentence otherwise is how people talk ("it always amazes me", "you
# never know"), and so is one that opens an idiom ("Never mind", "Never again", "Always a
# pleasure", "Oh never, I hate flying"): not a preference to keep
_INSTRUCTION = re.compile(
    r"^[\s\-*•>\d.)(\"'“‘]*(?:(?:and|also|so|but|ok|okay|note|remember|please|just|oh)\b[,:]?\s+)*(?:always|never)\b"
    r"(?!\s+(?:mind|again|a|an|the)\b|\s*[,.!?;:])|"
    r"\b(?:you|we) (?:should|must|need to|have to|are to) (?:always|never)\b|"
    r"\bi (?:want|need|would like|['’]d like) you to (?:always|never)\b|"
    rf"\b(?:make sure (?:to|you) (?:always|never)|{_STATED})\b",
    re.IGNORECASE)
_WRITE_TOOL = re.compile(r"(?:^|[_\-.])(?:edit|write|create|patch|apply_patch|str_replace|replace|insert|"
                         r"delete|remove|rm|mv|move|rename|save|multiedit|notebookedit|append)(?:$|[_\-.])",
                         re.IGNORECASE)   # (Edit, Write, MultiEdit, NotebookEdit, apply_patch: whole names)
_EDITOR_WRITES = {"create", "write", "str_replace", "insert", "undo_edit", "delete", "rename"}   # (Goose: write)
_EDITOR_COMMANDS = _EDITOR_WRITES | {"view"}
_PATH_KEYS = ("path", "file_path", "filepath", "filePath", "file", "filename", "target_file", "notebook_path", "dest",
              "destination")
# a file a patch writes (``*** Move to:``: a rename's new path)
_PATCH_FILE = re.compile(r"^\*\*\* (?:(?:Update|Add|Delete) File|Move to): (.+)$", re.MULTILINE)
_COMMAND_KEYS = ("command", "cmd", "commands", "script")
_WARNING = re.compile(r"^\s*(?:npm\s+warn|yarn\s+warn|warn(?:ing)?\b|\[warn|\S*warning:|\S*Warning\b)", re.IGNORECASE)
_EXIT_LINE = re.compile(r"^(?:exit (?:status|code)|process exited with code|exited with|command failed with exit)"
                        r"\b.*", re.IGNORECASE)
# a failing test as test runners print it: pytest/go/jest ``FAILED x``/``FAIL x``/``--- FAIL: TestX``,
# ExUnit and mocha ``1) test …``, jest ``● Suite › test``, RSpec ``rspec ./spec/x_spec.rb:12``, cargo
# ``test x ... FAILED``
_FAILING_TEST = re.compile(r"^(?:(?:FAILED|FAIL|ERROR)\b\s*\S|--- FAIL:|\d{1,4}\) \S|● \S|rspec \./\S|test \S+ \.\.\. FAILED)")
# an exception's message: Python/JS/Java ``TypeError: …``, ``Uncaught …``, ``Exception in thread …``,
# ``Caused by: …``, Elixir ``** (RuntimeError) …``
_EXCEPTION = re.compile(r"^(?:(?:Uncaught |Unhandled )?(?:[\w.$]+\.)?\w*(?:Error|Exception|Exit|Interrupt|Failure)\b(?::|$)"
                        r"|\*\* \([\w.]+\)|Exception in thread\b|Caused by:)")
# an error line: pytest ``E   …``, compilers and linters ``error:``/``error[E0308]:``, with or without a
# ``file:line:col`` in front (gcc, rustc, tsc ``x.ts:3:5 - error TS2322``, mypy), ``fatal:``,
# ``npm ERR!``, ``panic:``, an assertion, a check mark of failure
_ERROR_LINE = re.compile(r"^(?:E\s+\S|(?:\S+(?::\d+(?::\d+)?|\(\d+,\d+\)):?\s*(?:-\s*)?)?(?:error|fatal)(?:\[\w+\]|\s+TS\d+)?:"
                         r"|npm ERR!|npm error\s|panic:|Traceback|✗|×|✘|Assertion\b|assert(?:ion)?\s"
                         r"|[a-z]+ error:|Module not found:)", re.IGNORECASE)   # Next.js ``Type error: …``, webpack
# a script runner's own lines around the tool it ran (npm, yarn, pnpm, bun): what the tool printed
# before them says what failed; npm's ``code``/``errno``/``path`` lines say least even alone
_SCRIPT_RUNNER = re.compile(r'^(?:npm (?:ERR!|error)|yarn (?:error|run v)|error Command failed with exit code|'
                            r'(?:ERR_PNPM_\w+|ELIFECYCLE)\b|error: script "[^"]*" exited with code)', re.IGNORECASE)
_RUNNER_DETAIL = re.compile(r"^npm (?:ERR!|error) (?:code|errno|path|syscall|command|signal|Exit status|Failed at|"
                            r"A complete log|Lifecycle|This is probably|\S+@\S+ \S+: `)", re.IGNORECASE)
# a test runner's tally (pytest's ``1 error in 0.21s``, jest's ``Tests: 1 failed``): a count, not why
_TALLY = re.compile(r"^(?:(?:\d+ (?:passed|failed|errors?|skipped|deselected|xfailed|xpassed|warnings?|rerun)"
                    r"\b,?\s*)+(?:in [\d.]+s\b.*)?$|(?:Tests|Test Suites|Snapshots|Time):\s)", re.IGNORECASE)
# a line that says something went wrong somewhere in it (the last resort before the first line)
_ERRORISH = re.compile(r"\b(?:error|errors|failed|failure|cannot|can't|could not|unable to|not found|no such|"
                       r"undefined|is not a function|is not defined|denied|refused|invalid|missing|timed? ?out|"
                       r"unexpected|mismatch|expected)\b", re.IGNORECASE)
# ``file:line: message`` (a test runner's own words on why it failed), not a bare location
_LOCATED_MESSAGE = re.compile(r"^\S+:\d+(?::\d+)?:\s+\S")
# progress banners of build tools and shells (and pytest's ``=== … ===`` / ``!!! … !!!`` frames,
# cargo's ``---- x stdout ----``): never the informative line
_BANNER = re.compile(r"^(?:==>|>|\$ |\+ |#|[│├└┌─^~|=*\-]+$|(?:={3,}|!{3,}|_{3,}|-{4,})\s"
                     r"|(?:Compiling|Building|Built|Generated|Running|Downloading|"
                     r"Installing|Installed|Resolving|Fetching|Collecting|Checking|Getting|Finished|Starting|"
                     r"Using|Loading|Requirement already|Successfully|Creating|Updating|Preparing)\b)")
# colour and cursor codes of a terminal (ANSI CSI sequences): not text
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
# … in a word of the vocabulary, sent or as a string literal writes it (``\x1b[31m``, ``\033[0m``)
_ANSI_IN_WORD = re.compile(r"(?:\x1b|\\+(?:x1[bB]|u001[bB]|033))\[[0-9;?]*[!-/]*[@-~]")
# a newline or tab written as its escape in a string literal, before a capital (``"…\\nSELECT id"``,
# ``\\nError:``): a break between words, not the start of a name (``nSELECT``); a path's ``C:\\new``
# (a small letter after it) stays as it is
_ESCAPE_IN_WORD = re.compile(r"\\[nrt](?=[A-Z])")
_ERROR_TAG = re.compile(r"</?[a-z_]*error>")
# a log level in front of a line: ``[ERROR] x`` says x (Maven); ``[INFO] …`` says nothing went wrong
_LOG_LEVEL = re.compile(r"^\[(?:ERROR|FATAL|SEVERE)\]\s+")
_NOT_AN_ERROR = re.compile(r"^\[(?:INFO|DEBUG|TRACE)\]")
# a Rust panic (its message on the line after, since Rust 1.73)
_PANIC = re.compile(r"^thread '[^']*' panicked at ")
# where in a file: ``x.py:12``, ``x.ts(14,7)``, ``Cart.java:[42,17]``
_LOCATION = re.compile(r"\w\.\w+(?::\d+|\(\d+,\d+\)|:\[\d+,\d+\])")
# the extensions of the files a name without a directory is taken for (``app.py``, ``useTodos.ts``)
_FILE_EXTENSIONS = (r"py|pyi|js|mjs|ts|tsx|jsx|json|jsonl|md|toml|yaml|yml|go|rs|ex|exs|heex|java|kt|rb|php|sh|sql|"
                    r"css|scss|html|vue|svelte|c|h|cc|cpp|lock|cfg|ini|txt|xml|proto|tf|swift")
_FILE_NAME = re.compile(r"[\w.-]+\.(?:" + _FILE_EXTENSIONS + r")")
# the project's vocabulary: paths, dotted names, CamelCase, snake_case, camelCase, ENV_VARS, ids with digits
_VOCAB = re.compile(   # each alternative starts only where its run starts (linear time, no backtracking)
    r"(?<![\w.@+-])[\w.+-]++@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?![\w/@-])"   # an email address
    # (whole; its domain ends in letters: npm's "web@1.0.0" banner is none)
    r"|(?<![\w.@/~+-])(?:~?/|\.{1,2}/)?(?:[\w.@+-]++/)+[\w.@+-]*\w"   # (pnpm's .pnpm/@scope+name@1.2/…)
    r"|(?<![\w./-])[\w-]++\.(?:" + _FILE_EXTENSIONS + r")\b"
    r"|(?<![\w.])[A-Za-z_]\w*+(?:\.[A-Za-z_]\w*+)+"
    r"|(?<![\w<-])(?<!</)[A-Za-z0-9]++(?:-[A-Za-z0-9]++)+"   # (not a markup tag: <system-reminder>)
    r"|(?<!\w)(?!(?<=<)[a-z_]+>)(?!(?<=</)[a-z_]+>)\w*?(?:[a-z0-9]_|[a-z][A-Z]|[A-Z][a-z0-9]+[A-Z]|_[A-Z0-9])\w*+"
    r"|(?<!\w)[0-9a-f]{7,40}(?!\w)")
# what every _VOCAB match holds: a "/", ".", "-" or "_", a capital after a lowercase letter or a digit,
# or 7 hex digits in a row; a word without any is not scanned (most words of prose)
_VOCAB_HINT = re.compile(r"[/._-]|[a-z0-9][A-Z]|[0-9a-f]{7}")
# a definition: a line that begins (after its indentation, attributes and modifiers) with a
# keyword that defines a name — not a comment's prose ("# this function returns", " * Todo
# interface with"), an attribute (Elixir's "@impl true") nor an anonymous function's parameter
# (Elixir's "fn msg ->"). A type keyword's name is followed by what ends a declaration's head
# (``class Foo(Base):``, ``struct Node {``, ``class A < B``, ``defmodule M do``, the line's end),
# not by a next word ("class that wraps"); fn, func, fun and function define a name only when a
# parameter list or generics follow it (a Go method's receiver and a Lua method's colon allowed),
# and a named function expression after "=", "(", "," or ":" too (``module.exports = function app(``).
_DEFINED = re.compile(
    r"^[ \t]*(?:(?:@[\w.]+(?:\([^()\n]*\))?|\[[^\]\n]*\]|template[ \t]*<[^<>\n]*>"
    r"|(?:export|default|pub(?:\([^()\n]*\))?|async|public|private|protected|internal|static|abstract|final"
    r"|sealed|non-sealed|open|override|unsafe|extern(?:[ \t]+\"\w+\")?|declare|data|inline|partial|case|typedef"
    r"|local|const|readonly|inner|value|annotation|implicit|lazy|mutating|nonmutating|fileprivate|nonisolated"
    r"|indirect|record|ref|expect|actual|private\[\w+\]|protected\[\w+\]|class(?=[ \t]+(?:func|var)\b)))[ \t]+)*"
    r"(?:(?:class|(?:fun[ \t]+)?interface|struct|enum(?:[ \t]+(?:class|struct))?|trait|impl(?:<[^<>\n]*>)?|module"
    r"|defmodule|defprotocol|defimpl|object|@interface|@implementation|@protocol|type)[ \t]+([A-Za-z_][\w.]*)"
    r"(?=[ \t]*(?:[:({<\[;=,]|$|extends\b|implements\b|do\b|where\b|for\b|with\b|derives\b|struct\b"
    r"|interface\b))"
    # a function or component bound to a name: ``export const TodoApp: React.FC = () =>``
    r"|(?:const|let|var)[ \t]+([A-Za-z_$][\w$]*)(?=[^=\n]*=[ \t]*(?:async[ \t]+)?(?:function\b|\([^)\n]*\)[^=\n]*=>"
    r"|[A-Za-z_$][\w$]*[ \t]*=>))"
    r"|(?:def|defp|defmacrop?)[ \t]+([A-Za-z_][\w.]*[?!]?)"
    r"|(?:fn|func|fun|function\*?)[ \t]+(?:\([^()\n]*\)[ \t]*)?([A-Za-z_][\w.:]*)(?=[ \t]*[(<\[]))"
    r"|[=(,:][ \t]*(?:async[ \t]+)?function\*?[ \t]+([A-Za-z_$][\w$]*)(?=[ \t]*\()", re.MULTILINE)
_HUNK_HEAD = re.compile(r"^@@(?:[ \t]*-[\d,]+[ \t]+\+[\d,]+[ \t]*@@)?[ \t]*")   # a patch anchor's marks
_CHANGES = re.compile(r" \([^()]*\)(?=, |$)")   # "path (fn, Class)" in the files line
# the todo list / plan tools (Goose's is its todo extension's: ``todo__todo_write``, a checklist in ``content``)
_TODO_TOOLS = frozenset({"TodoWrite", "todo_write", "update_plan", "todowrite", "write_todos", "update_todo",
                         "todo__todo_write"})
VOCAB_TEXT_CHARS = 8_000      # of each text, scanned for the vocabulary
MAX_VOCAB = 20_000            # distinct identifiers a window tracks (the least used go first)
MIN_BUDGET_CHARS = 200       # a summary is never asked to be smaller
# a squeezed summary this small (~400 tokens: a terse harness handoff) has a header of counts
# only: no dates, trace count nor turn range (~25 tokens, room for the plan's next item or a failure)
TINY_SUMMARY_CHARS = 1_500
PLAN_HEAD = "Plan: "   # the latest todo list / plan (it said "Plan (latest): ")
CHARS_PER_TOKEN = 3.0         # a conservative guess, checked by the compaction with the real counter


# characters of scripts written without spaces (CJK ideographs and punctuation, kana, fullwidth
# forms; Hangul too): each is a word boundary, as a space is elsewhere
_WIDE = re.compile(r"[\u2e80-\u2fdf\u3000-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
                   r"\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef]")


def _breaks_at(text: str, i: int) -> bool:
    """A word boundary before ``text[i]``: a space, or a wide character on either side."""
    return i >= len(text) or text[i] == " " or (
        _WIDE.match(text, i) is not None or (i > 0 and _WIDE.match(text, i - 1) is not None))


def _break_before(text: str, limit: int) -> int:
    """The last word boundary at or before ``limit`` (-1: none)."""
    space = text.rfind(" ", 0, limit + 1)
    if _WIDE.search(text, space + 1, limit + 1) is None:
        return space
    return next(i for i in range(limit, space, -1) if _breaks_at(text, i))


def _break_after(text: str, limit: int) -> int:
    """The first word boundary at or after ``limit`` (``len(text)``: none)."""
    space = text.find(" ", limit)
    space = len(text) if space < 0 else space
    if _WIDE.search(text, max(limit - 1, 0), space) is None:
        return space
    return next(i for i in range(limit, space + 1) if _breaks_at(text, i))


def clip(text: str, limit: int) -> str:
    """``text`` on one line, cut at a word boundary to at most ``limit`` characters (plus "…"; in
    CJK text each character is a word). A single word longer than the limit is kept whole up to 3×
    the limit: identifiers stay intact."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = _break_before(text, limit)
    if cut <= 0:
        end = _break_after(text, 0)
        if end <= limit * 3:
            return text[:end] + ("…" if end < len(text) else "")
        return text[:limit] + "…"
    return text[:cut].rstrip(",;: ") + " …"


def clip_ask(text: str, limit: int) -> str:
    """A user ask on one line: verbatim up to ``limit`` characters, to the end of the word that
    crosses it — or, when that word is long (a path, an identifier: more than 60 characters past
    the limit), up to the space before it: never cut inside a word (a single word longer than 3×
    the limit excepted), nor inside a quoted span (``"my dir/a.py"``, a `` `command` ``). In CJK
    text each character is a word."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = _break_after(text, limit)
    if cut > limit + 60:
        before = _break_before(text, limit)
        cut = before if before > 0 else min(cut, limit * 3)
    for mark in ('"', "`"):   # a quoted span (a path with spaces, a command) is one word too
        if text.count(mark, 0, cut) % 2:
            end = text.find(mark, cut)
            if 0 <= end <= limit + 60:
                after = text.find(" ", end)
                cut = len(text) if after < 0 else after
            elif text.rfind(mark, 0, cut) > limit // 2:
                cut = text.rfind(mark, 0, cut) - 1
    return text if cut >= len(text) else text[:cut].rstrip(",;: ") + " …"


# where a message splits into sentences: after . ! ? and a space, after 。！？, and at a line break
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])\s*|\s*\n\s*")
_CJK = "\u2e80-\u2fdf\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_WORD = re.compile(f"[{_CJK}]|[^\\W_{_CJK}]+")   # (a Chinese or Japanese character is a word)
RARITY_TEXTS = 1_000      # messages of a window (evenly spread) that say how rare each word is
RARITY_TEXT_CHARS = 2_000  # … read up to this many characters each
ALL_GO = 1e9               # a floor above every sentence's information: all that may go goes
FLOOR_TRIES = 8           # summaries made to lower an estimated floor to the lowest that fits
QUOTED_SPAN_CHARS = 600   # a quote or backtick not closed this soon is a stray one (an inch mark): no span


def sentences(text: str) -> list[str]:
    """``text``'s sentences (and lines), each on one line; a quoted span (``"a. b"``, a
    `` `command` ``) stays inside one when it closes within :data:`QUOTED_SPAN_CHARS` (else the
    quote was a stray one: an inch mark)."""
    pieces = [piece for piece in (" ".join(p.split()) for p in _SENTENCE_BREAK.split(text.strip())) if piece]
    out: list[str] = []
    k = 0
    while k < len(pieces):
        sentence, k = pieces[k], k + 1
        while k < len(pieces) and (mark := _open_mark(sentence)):
            size, end = len(sentence), k
            while end < len(pieces) and size < QUOTED_SPAN_CHARS and not pieces[end].count(mark) % 2:
                size += len(pieces[end]) + 1
                end += 1
            if end == len(pieces) or size >= QUOTED_SPAN_CHARS:
                break   # (never closed near: a stray mark)
            sentence, k = " ".join([sentence, *pieces[k:end + 1]]), end + 1
        out.append(sentence)
    return out


def _open_mark(sentence: str) -> str:
    """The quote mark (``"`` or a backtick) ``sentence`` leaves open, or ""."""
    return '"' if sentence.count('"') % 2 else "`" if sentence.count("`") % 2 else ""


class Rarity:
    """How rare each word is among a window's messages (its asks and replies: inverse document
    frequency): what :func:`condense_message` ranks a long message's sentences by. A sentence every turn
    repeats ("Sounds good!") says little; one with a name, a number or a path few messages hold
    says what a later question needs. Each message is split and scored once (:meth:`analysed`)."""

    def __init__(self, texts):
        """``texts``: the messages, or a function that gives them (called on the first use: most
        summaries condense nothing)."""
        self._texts = texts
        self.n, self.df = 0, None
        self.speakers: Counter = Counter()   # the messages each Name: starts
        self._weight: dict[str, float] = {}
        self._analysed: dict[str, tuple[list[str], list[float]]] = {}
        self._said_by: dict[str, list | None] = {}   # a message -> who says each sentence (:meth:`said_by`)

    def _count(self) -> None:
        df: Counter = Counter()
        n = 0
        speakers = self.speakers
        for text in self._texts() if callable(self._texts) else self._texts:
            n += 1
            df.update(set(_WORD.findall(text[:RARITY_TEXT_CHARS].lower())))
            if ": " in text[:70]:
                speaker = _speaker_of(text)
                if speaker:
                    speakers[speaker] += 1
        self.n, self.df, self._texts = n, df, ()

    def speaker(self, text: str) -> str | None:
        """The ``Name: `` ``text`` starts with, when several of the messages start with it: who
        speaks in a chat imported so (``Caroline: …``), not a word that heads one message."""
        if self.df is None:
            self._count()
        speaker = _speaker_of(text)
        return speaker if speaker and self.speakers[speaker] >= 2 else None

    def said_by(self, text: str) -> list | None:
        """Who says each of ``text``'s sentences (:meth:`analysed`) in a message of several
        speakers' lines (a chat's session imported as one message: ``Caroline: …`` then
        ``Melanie: …``, line after line): (the label of the last sentence at or before it that
        starts with one, whether it starts with it itself). A label counts when it starts two of
        the message's sentences or several messages (:meth:`speaker`). None when no sentence but
        the first starts with one (the speaker, if any, is the message's: :func:`condense_message`)."""
        if text in self._said_by:
            return self._said_by[text]
        parts = self.analysed(text)[0]
        heads = [_head(part) if ": " in part else None for part in parts]
        for k in range(len(parts) - 1):   # (the sentence split after "Dr.": "Dr." heads "Lee: …" too)
            if heads[k + 1] and not heads[k] and len(parts[k]) <= 20:
                whole = _speaker_of(parts[k] + " " + parts[k + 1])
                if whole and len(whole) > len(heads[k + 1]):
                    heads[k] = heads[k + 1] = whole
        got = None
        if any(heads[1:]):
            if self.df is None:
                self._count()
            counts = Counter(heads)
            valid = {head for head in counts if head and (counts[head] >= 2 or self.speakers[head] >= 2)}
            if any(head in valid for head in heads[1:]):
                got, speaker = [], None
                for head in heads:
                    speaker = head if head in valid else speaker
                    got.append((speaker, speaker is not None and head == speaker))
        return _remember(self._said_by, text, got)

    def of(self, sentence: str) -> float:
        """The information of ``sentence``: the squared rarity of each of its distinct words, summed."""
        if self.df is None:
            self._count()
        weight, total = self._weight, 0.0
        for word in set(_WORD.findall(sentence.lower())):
            w = weight.get(word)
            if w is None:
                w = math.log((self.n + 1) / (self.df.get(word, 0) + 1)) + 0.1
                w = weight[word] = w * w   # (squared: one name or number few messages hold outweighs
                # several common words — a long sentence around it says no less than a short one of small talk)
            total += w
        return total

    def analysed(self, text: str) -> tuple[list[str], list[float]]:
        """``text``'s sentences and what each says per character, no two the same: a tie (the same
        small talk in many messages) is broken by the message and the sentence's place, so a
        floor between them drops some of them, not all."""
        got = self._analysed.get(text)
        if got is None:
            parts = sentences(text)
            seed = zlib.crc32(text.encode("utf-8", "surrogatepass"))
            got = self._analysed[text] = (parts, [
                self.of(part) / (len(part) + 3) + (seed + i * 2654435761) % 1_000_003 * 1e-15
                for i, part in enumerate(parts)])
        return got


def _ask_keep(chat: bool, text: str) -> bool:
    """Whether an ask keeps its most telling sentence whatever the floor (:func:`condense_message`):
    an ask of a turn with tool calls always (what the work was asked to do); in a turn of
    conversation only, an ask that names something (a path, an id, an identifier of the
    vocabulary: a ticket, a file) — the other asks are said like the replies, both sides of a
    chat alike, each sentence by how telling it is (kept whatever the floor, a speaker's long
    small talk crowded the other speaker out). Asked for each ask every time a summary is made
    (a squeezed one is made tens of times), so the answer is remembered by text."""
    if not chat:
        return True
    named = _NAMES_SOMETHING.get(text)
    if named is None:
        named = _remember(_NAMES_SOMETHING, text, bool(_vocabulary_of(_scanned(text), False)))
    return named


_NAMES_SOMETHING: dict[str, bool] = {}   # an ask of conversation -> whether it names something (_ask_keep)


# who speaks, where a chat's messages say it (``Caroline: …``, ``Dr. Lee: …``, ``Łukasz Nowak: …``):
# one to three words, each capitalized, that several of the window's messages start with
# (:meth:`Rarity.speaker`), not a word that heads what follows it (``Note: …``, ``Error: …``)
_SPEAKER = re.compile(r"([^\W\d_][\w.'’-]{0,20}(?: [^\W\d_][\w.'’-]{0,20}){0,2}): (?=\S)")
_NO_SPEAKER = frozenset((
    "Answer Also Assistant Bug Caution Context Done Edit Error Example Examples Exception Fix Goal Hint Idea "
    "Important Info Input Issue Note Notes Now Ok Okay Output Plan Problem Question Reason Reminder Result "
    "Source Status Step Summary Sure Task Then Tip Todo TODO Update Usage User Warning Well Yes No").split())


def _speaker_of(text: str) -> str | None:
    """The ``Name: `` a message starts with, when it reads as one (:data:`_SPEAKER`)."""
    found = _SPEAKER.match(text.lstrip())
    if found is None:
        return None
    words = found[1].split(" ")
    if words[0] in _NO_SPEAKER or not all(w[0].isupper() for w in words):
        return None
    return found[0]


def _head(sentence: str) -> str | None:
    """The speaker's label a sentence starts with — or, in a message condensed already (a summary's,
    condensed again: ``… Melanie: I'm painting a sunset.``), the last one after a "… " in it."""
    at = sentence.rfind("… ")
    while at >= 0:
        label = _speaker_of(sentence[at + 2:at + 72])
        if label:
            return label
        at = sentence.rfind("… ", 0, at)
    return _speaker_of(sentence[:70])


def condense_message(text: str, limit: int, rarity: Rarity | None = None, floor: float = 0.0,
                     keep: bool = True, frame: bool = False) -> str:
    """A message on one line in at most ``limit`` characters (about). With ``rarity``, a message
    of several sentences keeps those that say at least ``floor`` per character (its most telling
    one always), and, over ``limit``, those that say the most per character that fit — in their
    order, "…" where some were left out: whole sentences, so never cut inside a word, a path or a
    quoted span (the most telling one is clipped when alone it does not fit). Without ``rarity``,
    or for one sentence, :func:`clip_ask`'s head. Not ``keep``: a message none of whose sentences
    says ``floor`` is left out ("": asks, :func:`_ask_keep`), and a message that says who speaks
    (``Caroline: …``, :data:`_SPEAKER`) still says it when its first sentence goes — and a message
    of several speakers' lines (a chat's session: :meth:`Rarity.said_by`), before each sentence
    kept whose speaker is not the last one shown (``… Melanie: I'm painting a sunset.``).
    ``frame`` (an ask of work, not of a chat, whose first lines are as often small talk): over
    ``limit``, its first and last sentences (each at most :data:`FRAME_CHARS`) are kept first."""
    said, told = _condensed(text, limit, rarity, floor, keep, frame)
    if not told and said and said.startswith("…") and rarity is not None:   # (its first sentence went)
        speaker = rarity.speaker(text)
        # (not when a part of the name stays: the sentence split after "Dr.")
        if speaker and _name(speaker) + ":" not in said:
            return speaker + said
    return said


def _name(label: str | None) -> str | None:
    """The last word of a speaker's label (``Dr. Lee: `` -> ``Lee``: the sentence split after "Dr.")."""
    return label and label[:-2].rsplit(" ", 1)[-1]


def _condensed(text: str, limit: int, rarity: Rarity | None, floor: float, keep: bool,
               frame: bool = False) -> tuple[str, bool]:
    """:func:`condense_message`, and whether it said who speaks already (a message of several
    speakers' lines: :meth:`Rarity.said_by`)."""
    flat = " ".join(text.split())
    if len(flat) <= limit and not floor:
        return flat, False
    if rarity is None:
        return clip_ask(flat, limit), False
    parts, density = rarity.analysed(text)
    if not parts:
        return clip_ask(flat, limit), False
    if not keep and max(density) < floor:
        return "", False
    if len(parts) < 2:
        return clip_ask(flat, limit), False
    said_by = rarity.said_by(text)
    # the label a sentence needs before it: its speaker's, when it does not start with it (at most)
    label = [None] * len(parts) if said_by is None else [None if shows else who for who, shows in said_by]
    order = sorted(range(len(parts)), key=lambda i: -density[i])
    chosen, used = [], 0
    if frame and len(flat) > limit:
        # an ask over its room (a log pasted into it): its first and last sentences, when short,
        # before the rarest — the request and the question around what was pasted, whose common
        # words say least per character (a stack trace's frames outranked "please find the cause")
        for i in dict.fromkeys((0, len(parts) - 1)):
            cost = len(parts[i]) + 3 + len(label[i] or "")
            if len(parts[i]) <= FRAME_CHARS and used + cost <= limit:
                chosen.append(i)
                used += cost
        order = [i for i in order if i not in chosen]
    for i in order:
        cost = len(parts[i]) + 3 + len(label[i] or "")   # (and the " …" of a gap)
        if chosen and density[i] < floor:
            break
        if used + cost <= limit:
            chosen.append(i)
            used += cost
        elif not chosen:   # the most telling one does not fit: it alone, clipped
            if label[i] is None:   # (it shows its speaker itself, when the message has several)
                return ("… " if i else "") + clip_ask(parts[i], max(limit - 2 * (i > 0), MIN_ASK_CHARS)), \
                    said_by is not None
            clipped = clip_ask(parts[i], max(limit - 2 - len(label[i]), MIN_ASK_CHARS))
            return (label[i] + "… " + clipped if _name(label[i]) == _name(said_by[0][0]) else
                    "… " + label[i] + clipped), True
    if len(chosen) == len(parts):
        return flat, False
    out, previous = [], -1
    shown = None if said_by is None else said_by[0][0]   # (the message's own speaker: condense_message says it)
    for i in sorted(chosen):
        if label[i] is not None and _name(label[i]) != _name(shown):
            out.append("…" if i != previous + 1 else "")
            out.append(label[i] + parts[i])
        else:
            if i != previous + 1:
                out.append("…")
            out.append(parts[i])
        if said_by is not None:
            shown = said_by[i][0]
        previous = i
    if previous != len(parts) - 1:
        out.append("…")
    said = " ".join(piece for piece in out if piece)
    if said_by is not None and said.startswith("…"):   # (its first sentence went)
        who, shows = said_by[min(chosen)]
        if who is not None and not shows and _name(who) == _name(said_by[0][0]):
            said = said_by[0][0] + said   # (the message's speaker, as for a message of one: "Caroline: … ")
    return said, said_by is not None


def sentence_floor(messages: Iterable[tuple], rarity: Rarity, excess: int, fits=None) -> float:
    """The lowest information per character (:func:`condense_message`'s ``floor``) at which the
    messages come out at least ``excess`` characters shorter than they are shown now: the least
    telling sentences go first, wherever they are. :data:`ALL_GO` when all of them do not save
    that much. Each message is (text, keep, limit, gone): shown in at most ``limit`` characters; never
    the most telling sentence of a message to ``keep`` (:func:`condense_message`); one not to keep may
    go whole, which saves ``gone`` characters more (a reply's ``· assistant: ""``, or -1 for an
    ask's "…" that stays). ``fits(floor)``, when given, says whether the whole summary fits at
    that floor: the estimate (each message alone) is then lowered to the lowest floor that does
    (a run of turns that say nothing any more takes one line: the estimate drops more than
    needed), in at most :data:`FLOOR_TRIES` tries."""
    found = []   # (what each says, their lengths, keep, the most telling, the length shown now, least, most, gone)
    for text, keep, limit, gone in messages:
        parts, density = rarity.analysed(text)
        keep = bool(parts) and keep
        if len(parts) > 1 or (parts and not keep):
            best = max(range(len(parts)), key=density.__getitem__)
            found.append((density, [len(part) for part in parts], keep, best,
                          len(condense_message(text, limit, rarity)), min(density), density[best], gone))

    def saved(floor: float) -> int:
        total = 0
        for density, lengths, keep, best, now, least, most, gone in found:
            if floor <= least:   # (all kept: nothing saved)
                continue
            if floor > most and not keep:
                total += now + gone
                continue
            shown, previous = -1, -1
            for i, d in enumerate(density):
                if d >= floor or (keep and i == best):
                    shown += lengths[i] + 1 + (2 if i != previous + 1 else 0)
                    previous = i
            if previous < 0:   # (a message left out)
                total += now + gone
            else:
                shown += 2 if previous != len(lengths) - 1 else 0
                total += max(now - shown, 0)
        return total

    # floor j keeps the sentences from the j-th least telling on: the first j that saves enough
    floors = sorted(d for density, *_ in found for d in density)

    def at(j: int) -> float:   # the j-th floor; past the last: every sentence that may go goes
        return floors[j] if j < len(floors) else ALL_GO

    if not floors:
        return ALL_GO
    if saved(ALL_GO) < excess:   # not enough by the estimate: the summary may still fit (folded runs)
        lo = len(floors)
    else:
        lo, hi = 0, len(floors)
        while lo < hi:
            mid = (lo + hi) // 2
            if saved(floors[mid]) >= excess:
                hi = mid
            else:
                lo = mid + 1
    if fits is None:
        return at(lo)
    if fits(at(lo)):   # the lowest that fits, below the estimate …
        low, high = 0, lo
    else:              # … or above it (a message's limit, a line the estimate did not see)
        low, high = lo + 1, len(floors)
    tries = 0
    # (at(high) fits, or is the last resort: all that may go goes — searched on past FLOOR_TRIES
    # while no floor below it was seen to fit: a window of many sentences is not left to say nothing)
    while low < high and (tries < FLOOR_TRIES or high == len(floors)):
        tries += 1
        mid = (low + high) // 2
        if fits(at(mid)):
            high = mid
        else:
            low = mid + 1
    return at(high)


_PROSE_SLASH = re.compile(r"[A-Za-z]+/[A-Za-z]+")   # and/or, read/write, row/col
_CSS_CLASS = re.compile(r"(?:[a-z]{1,2}|text|bg|border|font|gap|space|grid|col|row|min|max|rounded|shadow|ring|"
                        r"leading|tracking|opacity|z|inset|top|left|right|bottom|flex|order|underline|decoration|"
                        r"outline|divide|aspect|duration|delay|scale|rotate|translate|from|via|to|fill|stroke)"
                        r"(?:-[a-z]+)*-\d+(?:xl)?"
                        r"|transition-(?:colors|all|opacity|transform|shadow)|bg-gradient-to-[trbl]{1,2}"
                        # a theme's colour tokens (shadcn/ui: bg-background, text-muted-foreground, border-input)
                        r"|(?:bg|text|border|ring|fill|stroke|outline|divide|placeholder|from|via|to)-(?:background|"
                        r"foreground|primary|secondary|muted|accent|destructive|card|popover|input|ring|current)"
                        r"(?:-foreground)?"
                        r"|(?:items|justify|content|self|place|text|font|rounded|shadow|flex|bg|border|cursor|m[xytrbl]?|"
                        r"p[xytrbl]?|overflow|whitespace|align|object|leading|tracking|w|h|min-h|min-w|max-w)-(?:center|start|end|"
                        r"between|around|evenly|stretch|baseline|xs|sm|md|lg|xl|2xl|3xl|full|none|auto|bold|semibold|"
                        r"medium|normal|light|white|black|transparent|hidden|visible|pointer|col|row|wrap|nowrap|"
                        r"screen|tight|relaxed|wide|left|right|top|bottom|x|y)")
_PERMISSIONS = re.compile(r"[dlcbps-][rwxsStT-]{9}[.+@]?")   # ``ls -l``'s drwxr-xr-x
# a long name that is no token: dotted or colon-joined identifiers of 40 characters at most each
# (``org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration``); base64 (a JWT, a
# signed session, ``token_urlsafe``) has longer parts, or ``-`` in them
_LONG_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,39}(?:(?:\.|::?)[A-Za-z_][A-Za-z0-9_]{0,39})*")
# CSS's own hyphenated property names and keyword values: the language's words, not the project's
_CSS_WORDS = frozenset("""
align-content align-items align-self animation-delay animation-duration animation-name background-color
background-image background-position background-repeat background-size border-bottom border-box border-collapse
border-color border-left border-radius border-right border-spacing border-style border-top border-width
box-shadow box-sizing column-gap content-box flex-basis flex-direction flex-grow flex-shrink flex-wrap
font-family font-size font-style font-variant font-weight grid-area grid-column grid-gap grid-row
grid-template-areas grid-template-columns grid-template-rows justify-content justify-items justify-self
letter-spacing line-height list-style list-style-type margin-bottom margin-left margin-right margin-top
max-height max-width min-height min-width object-fit overflow-wrap overflow-x overflow-y padding-bottom
padding-left padding-right padding-top pointer-events row-gap text-align text-decoration text-overflow
text-shadow text-transform transition-duration transition-property user-select vertical-align white-space
word-break word-wrap z-index
flex-end flex-start inline-block inline-flex line-through nowrap pre-line pre-wrap space-around space-between
space-evenly sans-serif ease-in ease-in-out ease-out table-cell all-scroll not-allowed
device-width initial-scale
""".split())


def _is_identifier(value: str) -> bool:
    """A vocabulary entry worth showing: not prose with a slash (``and/or``), a utility CSS class
    (``text-gray-500``, ``px-4``, ``items-center``, ``rounded-lg``), a CSS property or keyword
    (``font-size``, ``space-between``: :data:`_CSS_WORDS`), file permissions (``drwxr-xr-x``)
    nor a name longer than :data:`MAX_NAME_CHARS` that is no path and not made of identifiers of
    40 characters at most (:data:`_LONG_NAME`: a signed session token, ``SFMyNTY.g2gDaAJh…`` — 200
    characters a Phoenix page printed —, a JWT: nobody types it again;
    ``org.springframework….DataSourceAutoConfiguration`` stays); ids such as ``msg-1`` and refs
    such as ``origin/spotter-gqc`` stay."""
    return not (_PROSE_SLASH.fullmatch(value) or _CSS_CLASS.fullmatch(value) or _PERMISSIONS.fullmatch(value)
                or value in _CSS_WORDS or (len(value) > MAX_NAME_CHARS and "/" not in value
                                           and not _LONG_NAME.fullmatch(value)))


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
        if value is None:
            continue
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


_PATCH_KEYS = ("input", "patch", "patchText", "content", "diff", *_COMMAND_KEYS)


def written_paths(tool_name: str | None, args) -> list[str]:
    """Files a tool call writes (module docstring)."""
    if not isinstance(args, dict):
        return []
    paths: list[str] = []
    patch = None
    for key in _PATCH_KEYS:
        value = args.get(key)
        if value is None:
            continue
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
    elif "<<" in (command := command_of(args) or "") or "sed -i" in command or _MOVES.search(command):
        paths.extend(shell_written(command))
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


def _open_file_written(tool_name: str, result) -> list[str]:
    """The file a call of a writing tool that names none wrote: SWE-agent's ``edit`` (``{"search",
    "replace"}``), ``insert``, ``append`` edit the file ``open`` opened, which the end of each
    answer states (``(Open file: /repo/tests/x.py)``, then ``(Current directory: …)``)."""
    if type(result) is not str or "(Open file: " not in result[-600:] or not _writes_by_name(tool_name):
        return []
    start = result.rindex("(Open file: ") + len("(Open file: ")
    end = result.find("\n", start)
    line = result[start:end if end >= 0 else len(result)].rstrip()
    path = line[:-1].strip() if line.endswith(")") else ""
    return [path] if path and path != "n/a" else []


def named_paths(args) -> list[str]:
    """The paths a tool call's arguments name under a path key (read, searched or written)."""
    if not isinstance(args, dict):
        return []
    return [v.strip() for key in _PATH_KEYS if isinstance(v := args.get(key), str) and v.strip()
            and "\n" not in v and len(v) < 400]


_ENV_ASSIGN = re.compile(r"^\w+=\S*$")
# a shell command that writes a file: a here-document into it (``cat > x.py <<'EOF'``, ``cat <<EOF >
# x.py``, ``tee x.py <<EOF``) or ``sed -i`` on it
_Q_PATH = r"(?:\"([^\"\n]+)\"|'([^'\n]+)'|([^\s'\"<>|;&()]+))"   # a path, quoted (with spaces) or not
_SHELL_WRITES = (re.compile(r"\bcat\s*>>?\s*" + _Q_PATH + r"\s*<<"),
                 re.compile(r"\bcat\s*<<-?\s*['\"]?\w+['\"]?\s*>>?\s*" + _Q_PATH),
                 re.compile(r"\btee\s+(?:-a\s+)?" + _Q_PATH + r"\s*(?:>\s*/dev/null\s*)?<<"),
                 re.compile(r"\bsed\s+-i(?:\.\w+|\s+''|\s+\"\")?\s+(?:-e\s+)?(?:'[^']*'|\"[^\"]*\")\s+" + _Q_PATH))


# a shell command that moves, copies or creates a file (``mv a.py b.py``, ``git mv``, ``cp``, ``touch``)
_MOVES = re.compile(r"(?:^|[\s;&|(])(?:git\s+mv|mv|cp|touch)\s")


def shell_written(command: str) -> list[str]:
    """The files a shell command writes by a here-document or ``sed -i`` (:data:`_SHELL_WRITES`),
    moves (both names: ``mv`` and ``git mv``), copies to (``cp``'s target) or creates
    (``touch``), not scratch (``/tmp/…``, ``/dev/…``)."""
    found = [m.group(1) or m.group(2) or m.group(3) for pattern in _SHELL_WRITES for m in pattern.finditer(command)]
    if _MOVES.search(command):
        for words in _working_commands(_line_commands(command)[0]):
            found.extend(_moved(words))
    out = []
    for path in found:
        if path and not path.startswith(("/tmp/", "/dev/", "$")) and not any(c in path for c in "*?{[") \
                and not path.endswith("/") and path not in (".", "..") and path not in out:
            out.append(path)   # (a glob names no one file, nor does a directory)
    return out


def _moved(words: list[str]) -> list[str]:
    """The files one command moves (both names), copies to or creates: ``mv``, ``git mv``, ``cp``,
    ``touch`` — not their options' values (``touch -d "2 days ago"``, ``-r ref``), what a comment
    says, nor a directory they are put in (``mv a.py lib``: ``lib/a.py``; ``cp -t dir a.py``)."""
    while words and words[0] in _PLAIN_WRAPPERS:   # ``sudo mv``
        words = words[1:]
    while len(words) > 3 and words[1] in _PLACE_OPTIONS:   # ``git -C repo mv``
        words = [words[0], *words[3:]]
    if words[:2] == ["git", "mv"]:
        words = words[1:]
    if not words or words[0] not in ("mv", "cp", "touch"):
        return []
    program, names, into, skip = words[0], [], None, False
    for word in words[1:]:
        if word.startswith("#"):   # a comment: the rest is words
            break
        if skip:
            skip = False
            if program != "touch":   # (-t dir of mv and cp)
                into = word
        elif word in ("-t", "--target-directory") or program == "touch" and word in ("-d", "-t", "-r", "--date",
                                                                                     "--reference"):
            skip = True
        elif word.startswith("--target-directory="):
            into = word.split("=", 1)[1]
        elif not word.startswith("-"):
            names.append(word)
    if program == "touch":
        return names
    if into is None:
        if len(names) < 2:
            return []
        *sources, target = names
        # a target named without an extension, for files that have one, is the directory they go in
        if len(sources) > 1 or target in (".", "..") or "." not in target.rsplit("/", 1)[-1] \
                and "." in sources[0].rsplit("/", 1)[-1]:
            into = target
        else:
            return names if program == "mv" else [target]
    else:
        sources = names
    put = [f"{into.rstrip('/')}/{source.rstrip('/').rsplit('/', 1)[-1]}" for source in sources]
    return [*sources, *put] if program == "mv" else put


@lru_cache(maxsize=4096)   # a session runs the same commands again and again (a test, git status)
def command_family(command: str) -> str:
    """What a command line does, for "fixed later" and the commands line: the family of each
    command it runs that does work (:func:`_working_commands`: not ``cd DIR``, ``source
    venv/bin/activate``, ``echo done``, a loop's keywords, nor the filters after ``| tail``), joined
    by `` && `` — a line that failed may have stopped at any of them, so only a later line of the
    same chain answers for it (``cargo build && git push`` failing is not fixed by ``git push``).
    The family of one command (:func:`_words_family`): its program and first word that is not an
    option (``git add -f x`` and ``git add x`` are one family, ``npm run build`` another); a test
    runner or linter given files is its program alone (``pytest tests/a.py`` and ``pytest -q``
    are one family: :data:`_SCOPED_RUNNERS`); a script's own subcommand counts (``python
    manage.py migrate`` and ``python manage.py test`` are two)."""
    commands = _line_commands(command)[0]
    return _line_family(command, commands, [_words_family(words) for words in _working_commands(commands)])


def _line_family(command: str, commands: list[list[str]], families: list[str]) -> str:
    """:func:`command_family` of the line ``command``, from its commands (:func:`_line_commands`)
    and the families of those that do work, in order."""
    if not families:   # (nothing but setup or words: the line's first command, as it is)
        return _words_family(commands[0]) if commands else command.strip()[:200]
    return " && ".join(dict.fromkeys(families))


def _words_family(words: list[str]) -> str:
    """The family of one command, given as its words (:func:`command_family`)."""
    words = [w for w in words[:12] if not _ENV_ASSIGN.match(w)]
    if not words:
        return ""
    program = words[0].rsplit("/", 1)[-1]
    while len(words) > 2 and words[1] in _PLACE_OPTIONS:   # ``git -C /repo push``, ``npm --prefix web test``
        words = [words[0], *words[3:]]
    if len(words) > 2 and (words[1] in ("run", "exec") and program in _COMMAND_RUNNERS
                           or words[1] == "-m" and program.startswith("python")
                           or words[1] == "exec" and program in _SCRIPT_RUNNERS):
        # what it runs is the command: ``uv run ruff check`` and ``uv run ruff format`` are two
        return f"{program} {words[1]} {_words_family(words[2:])}".strip()
    if program in ("npx", "bunx") and len(words) > 1:   # ``npx playwright test`` and ``npx playwright install``
        return f"{program} {_words_family(words[1:])}".strip()
    if program in ("npm", "pnpm", "yarn", "bun", "mix", "cargo", "go") and len(words) > 2 and words[1] in ("run", "x"):
        rest = words[2:]
        program = f"{program} {words[1]}"
    else:
        rest = words[1:]
        if program in _SCOPED_RUNNERS:   # ``pytest tests/a.py``: the paths say where it runs, not what
            return program
    at = next((n for n, w in enumerate(rest) if not w.startswith("-")), None)
    sub = rest[at] if at is not None else ""
    if program in _INTERPRETERS and _SCRIPT.search(sub):   # ``python manage.py migrate``: the script's own command
        then = next((w for w in rest[at + 1:] if not w.startswith("-")), "")
        if then.isidentifier():
            sub = f"{sub} {then}"
    return f"{program} {sub}".strip()


def run_scope(command: str) -> str:
    """What a run covers, for "fixed later": for a line whose one working command is a test runner
    or linter (:data:`_SCOPED_RUNNERS`, or a program's ``test``: ``go test``, ``npm test`` …,
    :data:`_TEST_SUBCOMMANDS`) its name, whatever runs it (``npx``, ``uv run``, ``python -m``,
    ``timeout 60s`` …: :data:`_RUNNER_WRAPPERS`), with the directory a ``cd`` before it went to
    (``pytest@backend``), then after a tab the files and tests it was given and the selections it
    made (``-k=name``, ``--deselect=t``: :func:`_runner_options`), the values of other options
    left out (``-n 4``): ``cd api && uv run pytest -q tests/a.py::test_x | tail`` →
    ``pytest@api\ttests/a.py::test_x``; ``pytest -q`` → ``pytest``, every test. Any other line:
    its :func:`command_family` (a chain such as ``npm run lint && npm test`` may have failed at
    either, so only the same chain answers for it). A later run fixes a failure only when it
    covers the failing one's scope (:func:`scope_covers`): ``pytest tests/b.py`` passing says
    nothing of ``tests/a.py``."""
    return _run_of(command)[0]


@lru_cache(maxsize=4096)
def _run_of(command: str) -> tuple[str, str, tuple, bool]:
    """(:func:`run_scope`, the name to call the run by — the runner's own command past ``timeout
    60s`` and the like, ``npx jest``, ``uv run pytest``, else the line's :func:`command_family`
    —, the scopes and names of the runners of a chain, whether the line passing says its
    commands passed: a line of ``&&`` only, no pipe, that ran its tests (not ``pytest
    --collect-only``, ``cargo test --no-run``); such a chain passing passed each of its runners:
    ``pytest && git commit -m x`` passing covers what ``pytest`` covers), and each of its other
    commands, as a line of it alone: ``cargo fmt && cargo build --release`` passing fixes
    ``cargo build --release``)."""
    commands, all_ran = _line_commands(command)
    where = ""
    runs = []
    working = []
    plain = []   # the working commands that are no runner
    for words in _working_commands(commands, keep_cd=True):
        if words[0] == "cd":
            where = words[1] if len(words) > 1 else ""
            continue
        working.append(words)
        found = _runner_at(words)
        if found is not None:
            runs.append(_runner_scope(words, *found, where))
            if not _NOT_RUNNING.isdisjoint(w.partition("=")[0] for w in words[sum(found):]):
                all_ran = False   # listed or built, not run
        else:
            plain.append(words)
    if len(working) == 1 and len(runs) == 1:
        return runs[0][0], runs[0][1], (), all_ran
    families = [_words_family(words) for words in working]
    family = _line_family(command, commands, families)   # (the line parsed once: not command_family)
    if len(working) < 2:
        return _VERSIONED.sub(r"\1", family), family, (), all_ran
    # a chain: its own scope, equal to no single command's (``pytest a; pytest b`` is not ``pytest``)
    alone = tuple((_VERSIONED.sub(r"\1", f), f) for f in dict.fromkeys(_words_family(words) for words in plain) if f)
    return (_CHAIN + " && ".join(_VERSIONED.sub(r"\1", f) for f in families), family, (*runs, *alone),
            all_ran)


# an interpreter named with its version, as the program a run's scope names: ``python3 gen.py``
# passing fixes ``python gen.py`` failing (``command not found: python``), as ``python3.11 gen.py``
# would (not ``which python3`` a failed ``which python``: there it is what is looked for)
_VERSIONED = re.compile(r"^(python|pip|ruby|perl|php|node|lua)[\d.]+(?= |$)")


@lru_cache(maxsize=8192)   # (per result of a command: a session runs the same ones again and again)
def runs_recorded(command: str, failed: bool) -> tuple:
    """The ``(scope, name)`` pairs a run of ``command`` records, its own first (:func:`_run_of`):
    a failure, its own; a pass only when the line's status is its commands' (``&&`` only, no
    pipe, tests that ran), and then each runner of the chain too."""
    scope, name, also, trusted = _run_of(command)
    if failed:
        return ((scope, name),)
    return ((scope, name), *also) if trusted else ()


def _runner_scope(words: list[str], at: int, width: int, where: str) -> tuple[str, str]:
    """(scope, name) of the runner at ``words[at:at + width]`` (:func:`run_scope`)."""
    runner = " ".join([words[at].rsplit("/", 1)[-1], *words[at + 1:at + width]]).replace(" run test", " test")
    if runner == "vitest" and words[at + 1:at + 2] in (["run"], ["watch"]):   # ``vitest run``: vitest
        width += 1
    picking, leaving_out, valued = _runner_options(runner)
    selecting = picking | leaving_out
    targets: set[str] = set()
    i = at + width
    while i < len(words):
        word = words[i]
        option, eq, value = word.partition("=")
        if word.startswith("-") and len(word) > 1:
            if option in selecting or option in valued:
                if not eq:   # the value is the next word
                    i += 1
                    value = words[i] if i < len(words) else ""
                if option in selecting:
                    targets.add(f"{option}={value.strip(chr(39) + chr(34))}")
            elif runner in _FUSED_RUNNERS and option[:2] in picking and not option.startswith("--") and len(option) > 2:
                targets.add(f"{option[:2]}={word[2:]}")   # ``pytest -kname``
        else:
            targets.add(word)
        i += 1
    start = 0   # the name: past the wrappers that only time, limit or place the run (``timeout 60s``)
    while start < at and (words[start] in _PLAIN_WRAPPERS or words[start].startswith("-")
                          or _DURATION.fullmatch(words[start])):
        start += 1
    scope = runner + (f"@{where}" if where else "")
    return (f"{scope}\t{_TARGETS_SEP.join(sorted(targets))}" if targets else scope), _words_family(words[start:])


_TARGETS_SEP = "\x1f"   # between a scope's targets (a selection may hold spaces: ``-k "a or b"``)
# options with which a test runner lists or builds its tests without running them
_NOT_RUNNING = frozenset({"--no-run", "--co", "--collect-only", "--listTests", "--list-tests", "-list", "--list",
                          "--dry-run", "--dryRun"})
_CHAIN = "\x1e"         # the start of a chain's scope


def _line_commands(command: str, depth: int = 0) -> tuple[list[list[str]], bool]:
    """The commands a command line runs one after another, and whether it joins them with
    ``&&`` only, no pipe (so that its passing says each of them passed: after ``| tail``, ``||
    true`` or ``; echo $?`` the status is another command's). The line is its first one that
    is neither blank nor a comment, with its backslash continuations, within 1,000 characters (a
    here-document's body or a script after it says nothing of what runs); each command is its
    words, quotes honoured and taken off, split at ``&&``, ``||``, ``;`` and ``&``, the filters a
    ``|`` (or ``|&``) pipes into left out (``| tail -5``); redirections (``2>&1``, ``> out.txt``)
    and the ``VAR=value`` assignments before a command's words left out too; ``bash -lc "…"`` is
    the commands of its script. A regular expression, not :mod:`shlex` (5 ms for a 6 KB
    here-document, per distinct command)."""
    text = command[:1_000].replace("\\\n", " ")
    head = next((line for line in text.split("\n") if line.strip() and not line.lstrip().startswith("#")), "")
    if not any(c in head for c in "&|;'\"<>\\"):   # (the usual command: one, unquoted)
        words = head.split()
        while words and _ENV_ASSIGN.match(words[0]):
            del words[0]
        return ([words], True) if words else ([], True)
    if head.count('"') + head.count("'") > 64:   # (odd input: quote pairing would cost a scan per quote)
        head = head.replace('"', " ").replace("'", " ")
    out: list[list[str]] = [[]]
    all_and = True
    piped = False   # in a filter the command before pipes into: its words are not kept
    for token in _SHELL_TOKEN.findall(_REDIRECT.sub(" ", head)):
        if token[0] in "&|;":
            piped = token in ("|", "|&")
            all_and = all_and and token == "&&"   # (a pipe's status is its filter's: ``pytest | tail``)
            out.append([])
        elif not piped and (out[-1] or not _ENV_ASSIGN.match(token)) and token != "\\":
            out[-1].append(_QUOTED.sub(_unquoted, token) if "'" in token or '"' in token else token)
    commands = []
    for words in out:
        if len(words) > 2 and words[0].rsplit("/", 1)[-1] in ("bash", "sh", "zsh") and words[1] in _SHELL_C \
                and depth < 2:   # ``bash -lc "cd x && pytest"``: the script's commands
            inner, inner_and = _line_commands(words[2], depth + 1)
            commands.extend(inner)
            all_and = all_and and inner_and
        elif words:
            commands.append(words)
    return commands, all_and


_SHELL_C = frozenset({"-c", "-lc", "-ic", "-lic", "-ec", "-xc", "-euc"})


def _working_commands(commands: list[list[str]], keep_cd: bool = False) -> list[list[str]]:
    """The commands of a command line (``commands``: :func:`_line_commands`) that do work, without the shell's
    own words around them (``for … in …``, ``do``, ``then``, ``done``, ``fi``, ``{ … }``, ``( … )``;
    the condition of an ``if`` or ``while`` runs, so it stays) nor the ones that only set the
    shell up or say something (``cd``, ``source``, ``export``, ``echo``, ``sleep``, ``break`` …:
    :data:`_AUXILIARY_COMMANDS`; ``keep_cd``: a ``cd`` stays, for where the next one runs)."""
    out = []
    for words in commands:
        if words[0].startswith("(") and len(words[0]) > 1:   # ``(cd api && pytest)``
            words = [words[0][1:], *words[1:]]
        if words[-1].endswith(")") and "(" not in words[-1] and len(words[-1]) > 1:
            words = [*words[:-1], words[-1][:-1]]
        while words and (words[0] in _SHELL_WORDS or words[0] in _SHELL_CONDITIONS):
            words = words[1:]
        if not words or words[0] in _SHELL_HEADERS or words[0] in _SHELL_WORDS:
            continue
        if words[0] in _AUXILIARY_COMMANDS and not (keep_cd and words[0] == "cd"):
            continue
        out.append(words)
    return out


_SHELL_WORDS = frozenset({"do", "then", "else", "done", "fi", "esac", "{", "}", "(", ")", "!", ";;"})
_SHELL_HEADERS = frozenset({"for", "case", "select", "function"})
_SHELL_CONDITIONS = frozenset({"if", "elif", "while", "until", "!"})   # (what follows runs: it stays)
# the wrappers that only time, limit or place a run, left out of its name (``timeout 60s go test``)
_PLAIN_WRAPPERS = frozenset({"timeout", "nice", "env", "time", "sudo", "xvfb-run", "command"})
# package managers whose ``exec`` runs a command (``npm run build`` runs a script: its name is the family)
_SCRIPT_RUNNERS = frozenset({"npm", "pnpm", "yarn", "bun"})
# environment managers whose ``run`` / ``exec`` runs a command (``uv run ruff check``)
_COMMAND_RUNNERS = frozenset({"uv", "poetry", "pipenv", "pdm", "hatch", "rye", "bundle", "conda"})
_AUXILIARY_COMMANDS = frozenset({"cd", "pushd", "popd", "source", ".", "export", "set", "unset", "ulimit", "umask",
                                 "nvm", "workon", "conda", "pyenv", "echo", "printf", "true", "false", ":", "sleep",
                                 "wait", "exit", "clear", "date", "break", "continue", "return"})
# a word (its quoted parts kept whole), or an operator that ends a simple command
_SHELL_TOKEN = re.compile(r"""(?:[^\s'"&|;]+|'[^']*'|"(?:\\.|[^"\\])*")+|&&|\|\||\|&|[|;&]""")
_REDIRECT = re.compile(r"""(?<!\S)\d*(?:>>?|<<-?|<|&>)(?:&\d+|\s*(?:'[^']*'|"[^"]*"|[^\s&|;'"<>]+))""")   # 2>&1, > out, <<'EOF'
_QUOTED = re.compile(r"""'([^']*)'|"((?:\\.|[^"\\])*)\"""")


def _unquoted(match: re.Match) -> str:
    return match.group(1) if match.group(1) is not None else match.group(2)


def _runner_at(words: list[str]) -> tuple[int, int] | None:
    """Where in ``words`` a test runner or linter runs, and its words: the first word of
    :data:`_SCOPED_RUNNERS`, or a program's ``test`` subcommand (``go test``, ``cargo test``, ``mix
    test``, ``npm test``: :data:`_TEST_SUBCOMMANDS`), that only wrappers, their options and numbers
    come before (``timeout 60s uv run --with x pytest``); None when there is none (``git commit -m
    pytest`` names one, runs none)."""
    for at, word in enumerate(words[:8]):
        name = word.rsplit("/", 1)[-1]
        if name in _TEST_SUBCOMMANDS and at + 1 < len(words) and words[at + 1] == "test":
            return at, 2
        if name in _SCRIPT_RUNNERS and words[at + 1:at + 3] == ["run", "test"]:
            return at, 3   # ``npm run test``: ``npm test``
        if name in _SCOPED_RUNNERS:
            return at, 1
        if not (name in _RUNNER_WRAPPERS or word.startswith("-") or _DURATION.fullmatch(word)
                or (at and words[at - 1].startswith("--") and "=" not in words[at - 1])):
            return None
    return None


# programs whose ``test`` subcommand runs the tests it is given (``go test ./pkg/...``, ``cargo test
# name``, ``mix test test/a_test.exs:12``, ``npm test -- src/a.test.ts``)
_TEST_SUBCOMMANDS = frozenset({"go", "cargo", "mix", "npm", "yarn", "pnpm", "bun", "deno", "dotnet", "swift", "rails",
                               "flutter", "dart", "zig", "gradle", "gradlew", "sbt", "lein", "stack", "playwright",
                               "cabal", "elixir"})
# what may run a test runner (``uv run pytest``, ``python -m pytest``, ``timeout 60s npx jest``)
_RUNNER_WRAPPERS = _PLAIN_WRAPPERS | _COMMAND_RUNNERS | _SCRIPT_RUNNERS | {"run", "exec", "dlx", "x", "npx", "bunx",
                                                                        "python", "python3", "-m"}
_DURATION = re.compile(r"\d+(?:\.\d+)?[smhd]?")
# options of test runners whose value picks tests by name (``pytest -k name``, ``jest -t name``, ``go
# test -run TestX``: :data:`_NAME_PICKS`) or otherwise (``pytest -m slow``: a marker), or leaves
# tests out (``pytest --deselect t``): a run with one covers only runs that made the same choice
_NAME_PICKS = frozenset({"-k", "-t", "-g", "-e", "--grep", "--testNamePattern", "--example", "--tests", "--test",
                         "--filter", "-run"})
_PICKING_OPTIONS = _NAME_PICKS | {"-m", "--testPathPattern"}
_LEAVING_OUT_OPTIONS = frozenset({"--deselect", "--ignore", "--ignore-glob", "--exclude", "--testPathIgnorePatterns",
                                  "--invert", "--grep-invert", "-skip"})
# (``--lf``, ``--sw`` take no value: every test that failed runs again, so a run with them passing
# covers the failures as a plain run does)
# options whose value is the next word and no file (``pytest -n 4``, ``--tb short``)
_VALUE_OPTIONS = frozenset({"-n", "-p", "-c", "-o", "-W", "-r", "--tb", "--maxfail", "--rootdir", "--config-file",
                            "--config", "--cov", "--cov-report", "--cov-config", "--junitxml", "--junit-xml",
                            "--timeout", "--durations", "--basetemp", "--reruns", "--maxWorkers", "-w", "--reporter",
                            "--project", "--shard", "--workers", "--import-mode", "--log-level", "--numprocesses",
                            "--dist", "--env", "--format", "--output-format", "--python-version"})
# go's options are one dash and whole words (``-timeout 30s``, ``-tags integration``); cargo picks
# its package (``-p alpha``)
_GO_VALUE_OPTIONS = frozenset({"-timeout", "-tags", "-count", "-parallel", "-cpu", "-coverprofile", "-covermode",
                               "-coverpkg", "-benchtime", "-exec", "-o", "-p", "-ldflags", "-gcflags", "-shuffle",
                               "-fuzztime", "-outputdir", "-vet", "-mod", "-fuzzminimizetime", "-list"})
_RUNNER_OPTIONS = {
    "go test": (frozenset({"-run", "-bench", "-fuzz"}), frozenset({"-skip"}), _GO_VALUE_OPTIONS),
    "cargo test": (frozenset({"-p", "--package", "--test", "--bin", "--example"}), frozenset({"--exclude"}),
                   frozenset({"-j", "--jobs", "--features", "-F", "--target", "--profile", "--manifest-path"})),
}
_FUSED_RUNNERS = frozenset({"pytest", "py.test"})   # whose one-letter picks may be fused: ``-kname``


def _runner_options(runner: str) -> tuple[frozenset, frozenset, frozenset]:
    """(options that pick tests, options that leave tests out, other options that take a value)
    of ``runner`` (``pytest``, ``go test``)."""
    return _RUNNER_OPTIONS.get(runner, (_PICKING_OPTIONS, _LEAVING_OUT_OPTIONS, _VALUE_OPTIONS))


def scope_covers(later: str, earlier: str, failure: str = "") -> bool:
    """Whether a run of scope ``later`` (:func:`run_scope`) covers one of scope ``earlier``: the
    same runner in the same place; ``earlier`` made every selection ``later`` made (``--deselect
    t``), a pick of tests by name excepted when ``failure`` (the failing run's informative line)
    names the test it picked, as a whole name (:func:`_names_the_pick`: ``go test -run
    '^TestX$'`` after ``--- FAIL: TestX``: the failing test ran again; a marker, ``-m slow``, is
    no name); and ``later`` was given no file or test, or each of ``earlier``'s lies in one of
    ``later``'s (the same test or file, a file of its directory, a test of its file)."""
    if later == earlier:
        return True
    family, selections, paths = _scope_parts(later)
    earlier_family, earlier_selections, earlier_paths = _scope_parts(earlier)
    if family != earlier_family:
        return False
    for g in selections - earlier_selections:
        option, _, value = g.partition("=")
        if not (option in _NAME_PICKS and _names_the_pick(failure, value)):
            return False
    if not paths:
        return True
    return bool(earlier_paths) and all(any(_lies_in(t, g) for g in paths) for t in earlier_paths)


@lru_cache(maxsize=8192)
def _scope_parts(scope: str) -> tuple[str, frozenset, tuple]:
    """A :func:`run_scope` as (runner and place, its selections, its files and tests), read once."""
    family, _, targets = scope.partition("\t")
    given = targets.split(_TARGETS_SEP) if targets else []
    return family, frozenset(g for g in given if g.startswith("-")), tuple(g for g in given if not g.startswith("-"))


def _names_the_pick(failure: str, picked: str) -> bool:
    """Whether the test ``picked`` selects (its anchors and quotes off: ``^TestX$``) is, whole,
    every test the informative line ``failure`` says failed (:data:`_FAILED_TEST`: pytest's
    ``file::test``, go's ``--- FAIL: TestX``, jest's ``● Suite › test``) — not any word of the
    line (``pytest -k user`` after ``test_login - KeyError: 'user'`` ran another test), and not
    one of two that failed. (The line is the failure's informative one: a run whose other
    failures it does not name is taken at its word.)"""
    name = picked.strip("'\"^$ ")
    if not failure or len(name) < 3:
        return False
    found = [m for m in _FAILED_TEST.finditer(failure)]
    return bool(found) and all(
        name == (test := m.group(1) or m.group(2) or m.group(3) or "") or name in test.split("::")
        or bool(m.group(3) and name in test) for m in found)


# the tests an informative line says failed: pytest's ``tests/a.py::Class::test_x[1]``, go's
# ``--- FAIL: TestX``, jest's ``● Suite › adds item`` (a pick may name part of its title)
_FAILED_TEST = re.compile(r"[\w./-]+\.py::([\w:\[\].-]+)|--- FAIL: (\S+)|● ([^\n—]+?)(?: —|\n|$)")


def _package_path(path: str) -> str:
    """``./pkg/...`` and ``./pkg`` as ``pkg``; ``./...`` and ``./`` as ``.``."""
    if path.endswith("..."):
        path = path[:-3]
    path = path.removeprefix("./").rstrip("/") if path not in ("/", "") else path
    return path or "."


def _lies_in(target: str, given: str) -> bool:
    """Whether a run given ``given`` ran ``target``: the same, a file or directory under it (go's
    ``./pkg/...`` is everything under ``./pkg``, ``.`` everything here), a test of its file
    (``a.py::test_x``, ``a_test.exs:12``), a module of its package (``tests.test_a`` under
    ``tests``)."""
    target, given = _package_path(target), _package_path(given)
    if given == ".":   # the working directory: everything under it
        return target == "." or not target.startswith(("/", "../"))
    return (target == given or target.startswith(given.rstrip("/") + "/") or target.startswith(given + "::")
            or target.startswith(given + ":") or ("/" not in given and target.startswith(given + ".")))


MAX_COVER_CHECKS = 200   # later runs of its runner a failure is checked against (the newest first)


class _Fixes:
    """Which failing commands a later run fixed, worked out once per command for runs that are
    all in (``scopes``: run scope -> (its latest run failed, the name of that run:
    :func:`runs_recorded`), in the order of those runs): the
    latest run of the command's own scope passed, or a later one that covers it
    (:func:`scope_covers`) passed — the newest such run is the one named. A scope no longer held
    (a bounded window) is not fixed."""

    def __init__(self, scopes: dict):
        self.scopes = scopes
        self.position = {scope: i for i, scope in enumerate(scopes)}
        self.passed: dict[str, list] = {}   # runner (and place) -> [(position, scope)] of its passing runs, in order
        for i, (scope, (failed, _family)) in enumerate(scopes.items()):
            if not failed:
                self.passed.setdefault(scope.partition("\t")[0], []).append((i, scope))
        self.memo: dict[str, str | None] = {}

    def by(self, command: str, failure: str = "", before: bool = False) -> str | None:
        """The run that fixed the failing ``command`` (its family, and the files, tests and
        selections it was given: ``git add``, ``uv run pytest tests/api/``, ``go test -run TestX
        ./...``), or None; ``failure``: its informative line (:func:`scope_covers`). ``before``: it
        failed before these runs (an earlier summary says it is still failing), so any passing run
        of its family covering it is later — unless it ran here itself: its own runs say."""
        key = (command, failure, before)
        if key in self.memo:
            return self.memo[key]
        scope = run_scope(command)
        found = None
        position = self.position.get(scope, -1 if before else None)
        if position is not None:
            if position >= 0 and not self.scopes[scope][0]:
                found = scope
            else:
                later = [other for i, other in self.passed.get(scope.partition("\t")[0], ()) if i > position]
                found = next((other for other in reversed(later[-MAX_COVER_CHECKS:])
                              if scope_covers(other, scope, failure)), None)
        if found is not None:   # the family of the run, with what it was given
            targets = found.partition("\t")[2]
            found = " ".join([self.scopes[found][1], *(t.replace("=", " ", 1) if t[0] == "-" else t
                                                       for t in targets.split(_TARGETS_SEP) if t)])
        self.memo[key] = found
        return found


def _seq_of(run: tuple) -> int:
    """The seq of a ``(scope, (seq, failed, family))`` run: where in its turn it ran."""
    return run[1][0]


_INTERPRETERS = frozenset({"python", "python3", "node", "ruby", "php", "perl", "bash", "sh", "deno"})
# options that only say where a command works, with their value (left out of its family)
_PLACE_OPTIONS = frozenset({"-C", "--prefix", "--filter", "--workspace", "--cwd", "--dir", "--git-dir", "--work-tree"})
_SCRIPT = re.compile(r"\.(?:py|js|mjs|cjs|ts|rb|php|pl|sh)$")

# test runners, linters and type checkers whose arguments are the files or tests they run on (one
# family whatever they are given; those that take a subcommand first, ``ruff check``, ``biome lint``,
# ``golangci-lint run``, are not here: their program and subcommand are their family already)
_SCOPED_RUNNERS = frozenset({"pytest", "py.test", "jest", "vitest", "mocha", "rspec", "phpunit", "eslint", "mypy",
                             "pyright", "tsc", "flake8", "pylint", "black", "prettier", "rubocop", "tox", "nox",
                             "unittest"})


def changed_names(args, paths: list[str]) -> dict[str, list[str]]:
    """What an edit touched in each file it wrote: the functions, classes, modules... its new (or
    replaced) text defines, then the identifiers its new text brings in that the old text did
    not have (a key, an env var, a call) — by file for a patch, else for every path of the call."""
    out: dict[str, list[str]] = {}
    if not isinstance(args, dict):
        return out
    patch = next((v for k in _PATCH_KEYS for v in [args.get(k)] if isinstance(v, str) and "*** Begin Patch" in v), None)
    if patch is not None:
        marks = list(_PATCH_FILE.finditer(patch))
        for i, m in enumerate(marks):
            body = patch[m.end(): marks[i + 1].start() if i + 1 < len(marks) else len(patch)][:20_000]
            lines = body.splitlines()
            added = "\n".join(line for line in lines if line.startswith("+"))
            removed = "\n".join(line for line in lines if line.startswith("-"))
            # its code without the diff's marks: a line's +, - or space, and an anchor's "@@ " (Codex's
            # ``@@ class Billing:``, a unified hunk's ``@@ -10,3 +10,4 @@ def handler(e):``: the scope
            # the change is in)
            code = "\n".join(_HUNK_HEAD.sub("", line) if line.startswith("@@") else
                             line[1:] if line[:1] in "+- " else line for line in lines)
            out.setdefault(m.group(1).strip(), []).extend(_touched([code], added, removed))
        return out
    texts = [args.get(k) for k in ("new_string", "old_string", "content", "new_str", "old_str", "file_text", "text",
                                   "source", "new_source", "newString", "oldString", "contents", "code_edit",
                                   "replace", "search")]   # (SWE-agent's edit)
    pairs = [(args.get(new), args.get(old)) for new, old in (("new_string", "old_string"), ("new_str", "old_str"),
                                                             ("newString", "oldString"), ("replace", "search"))]
    command = command_of(args)
    if command and "<<" in command:   # a here-document: the text it writes
        texts.append(command)
    edits = args.get("edits")
    if isinstance(edits, list):
        texts.extend(e.get(k) for e in edits if isinstance(e, dict) for k in ("new_string", "old_string"))
        pairs.extend((e.get("new_string"), e.get("old_string")) for e in edits if isinstance(e, dict))
    names: list[str] = []
    for new, old in pairs:
        if isinstance(new, str) and isinstance(old, str):
            names.extend(n for n in _touched((), new[:20_000], old[:20_000]) if n not in names)
    names = list(dict.fromkeys([*_touched([t for t in texts if isinstance(t, str)], "", ""), *names]))
    return {path: names for path in paths} if names else out


MAX_REMOVED_NAMES = 8   # of an edit's identifiers it took out, the first named (a deleted function: not its body)


def _touched(texts, added: str, removed: str) -> list[str]:
    """The names ``texts`` define, then the identifiers of ``added`` that ``removed`` lacks, then
    the first :data:`MAX_REMOVED_NAMES` of ``removed`` that ``added`` lacks — what the edit took
    out changed too (``raise LedgerSchema38Error(url)`` replaced: a harness's summary says the
    file "no longer raises LedgerSchema38Error", and the test that fails with it is run again) —
    (not the words of CSS or the like: :func:`_is_identifier`)."""
    names = list(dict.fromkeys(next(filter(None, m)) for text in texts for m in _DEFINED.findall(text[:20_000])))
    if added:
        brought, gone = _VOCAB.findall(added), _VOCAB.findall(removed) if removed else []

        def new_names(found: list[str], other: set) -> list[str]:
            return [v for v in dict.fromkeys(found) if v not in other and v not in names and len(v) >= 4
                    and not v.isdigit() and "/" not in v and _is_identifier(v)]

        names.extend(new_names(brought, set(gone)))
        names.extend(new_names(gone, set(brought))[:MAX_REMOVED_NAMES])
    return names


_CHECKLIST = re.compile(r"^\s*[-*]\s*\[([ xX~-])\]\s*(.+)$", re.MULTILINE)
_CHECKED = {" ": "pending", "x": "completed", "X": "completed", "~": "in_progress", "-": "in_progress"}
_DONE_ITEMS = ("[completed]", "[done]", "[cancelled]", "[canceled]", "[skipped]")   # plan items no longer to do


def todo_lines(args) -> list[str]:
    """A todo list / plan tool's arguments (``todos`` of TodoWrite and opencode, ``plan`` of
    update_plan, Gemini CLI's ``description``s, a markdown checklist ``- [x] …`` given as one
    string) as ``[status] text`` lines, each on one line."""
    items = None
    for key in ("todos", "plan", "items", "tasks"):
        if isinstance(args.get(key), list):
            items = args[key]
            break
    if items is None:
        for key in ("todos", "plan", "content", "markdown", "checklist"):
            value = args.get(key)
            if isinstance(value, str) and _CHECKLIST.search(value):
                items = [{"status": _CHECKED[mark], "content": text} for mark, text in _CHECKLIST.findall(value)]
                break
    out = []
    for item in items or ():
        if isinstance(item, dict):
            text = (item.get("content") or item.get("step") or item.get("task") or item.get("title")
                    or item.get("description") or "")
            status = item.get("status") or ""
            if isinstance(text, str) and text.strip():
                text = " ".join(text.split())
                out.append(f"[{status}] {text}" if isinstance(status, str) and status else text)
        elif isinstance(item, str) and item.strip():
            out.append(" ".join(item.split()))
    explanation = args.get("explanation")
    if isinstance(explanation, str) and explanation.strip():
        out.insert(0, " ".join(explanation.split()))
    return out


# the harness's own lines around an output (the exit status, times, ids, empty fields): not output
_WRAPPER_LINE = re.compile(r"^(?:(?:Chunk ID|Wall time|Original token count|Background PIDs|Process Group PGID|"
                           r"Directory|Command): .*|(?:Error|Signal|Exit Code): \(none\)|"
                           r"(?:Output|Stdout|Stderr): \(empty\)|Output:|<exited with exit code -?\d+>|"
                           r"Command executed in terminal .*|"
                           r"Process exited with code -?\d+|Exit [Cc]ode:? -?\d+)$")


_OUTPUT_LABEL = re.compile(r"^(?:Output|Stdout|Stderr): ")   # Codex's and Gemini CLI's labels before the output


def informative_line(text: str) -> str:
    """The line of an error output that says what went wrong (module docstring): the failing test
    (with the message that follows it, when the line does not carry one), else the exception's last
    message, else the first error line, else the first line that says something failed; never a
    warning, a progress banner (``==> dep``, ``Compiling …``, ``> build``) or the exit status."""
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if "error>" in text:   # Claude Code's ``<tool_use_error>…</tool_use_error>``: markup, not the message
        text = _ERROR_TAG.sub("", text)
    stopped = _STOPPED.search(text)
    if stopped:   # the person said no: the sentence that says so, not the harness's instructions after it
        dot = text.rfind(". ", 0, stopped.start())
        start = max(dot + 2 if dot >= 0 else 0, text.rfind("\n", 0, stopped.start()) + 1)
        ends = [e for e in (text.find(". ", stopped.end()) + 1, text.find("\n", stopped.end())) if e > 0]
        return text[start:min(ends) if ends else len(text)].strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    lines = [_OUTPUT_LABEL.sub("", line) for line in lines if not _WRAPPER_LINE.match(line)] \
        or [line for line in lines if _EXIT_LINE.match(line)] or lines
    useful = [_LOG_LEVEL.sub("", line) for line in lines if not _WARNING.match(line) and not _NOT_AN_ERROR.match(line)]
    if not useful:
        return lines[0] if lines else text.strip()
    first_test = None
    for at, line in enumerate(useful):
        m = _FAILING_TEST.match(line)
        if m is None:
            continue
        rest = line[m.end():]
        if " - " in rest or ": " in rest:               # pytest's ``FAILED x - AssertionError: …``
            return line
        block = list(itertools.takewhile(lambda after: not _FAILING_TEST.match(after), useful[at + 1:at + 12]))
        for n, after in enumerate(block):
            if _PANIC.match(after):                     # Rust: the message is on the panic's next line
                return f"{line} — {_panic(after, block[n + 1:n + 2])}"
            if _EXCEPTION.match(after) or _ERROR_LINE.match(after):
                return f"{line} — {after}"
        for after in block[:5]:                         # else the runner's own words on why (go, jest)
            if _LOCATED_MESSAGE.match(after) or (_ERRORISH.search(after) and not _BANNER.match(after)
                                                 and not _TALLY.match(after)):
                return f"{line} — {after}"
        if first_test is None:                          # else what the runner printed before it (pytest's
            first_test = line                           # collection errors, go's build errors)
            before = [b for b in useful[max(0, at - 40):at] if not _FAILING_TEST.match(b)
                      and (_EXCEPTION.match(b) or _ERROR_LINE.match(b) or _LOCATED_MESSAGE.match(b))
                      and not b.startswith("Traceback")]
            if before:
                first_test = f"{line} — {before[-1]}"
    if first_test:
        return first_test
    for n, line in enumerate(useful):
        if _PANIC.match(line):
            return _panic(line, useful[n + 1:n + 2])
    exceptions = [line for line in useful if _EXCEPTION.match(line)]
    if exceptions:
        return exceptions[-1]
    errors = [line for line in useful if _ERROR_LINE.match(line) and not line.startswith("Traceback")]
    own = [line for line in errors if not _SCRIPT_RUNNER.match(line)]
    if own:   # the first, or the first that says where (a compiler's file:line over its summary)
        return next((line for line in own if _LOCATION.search(line)), own[0])
    quiet = [line for line in useful if not _EXIT_LINE.match(line) and not _BANNER.match(line)]
    tool = [line for line in quiet if not _SCRIPT_RUNNER.match(line) and not _TALLY.match(line)]
    located = [line for line in tool if _LOCATION.search(line)]
    for line in (*(line for line in located if _ERRORISH.search(line)), *(line for line in located if
                 _LOCATED_MESSAGE.match(line)), *(line for line in tool if _ERRORISH.search(line))):
        return line
    if errors:   # only the script runner's lines: the one that says most (not npm's code, errno, path …)
        return next((line for line in errors if not _RUNNER_DETAIL.match(line)), errors[0])
    # (yarn's "error Command failed with exit code 1.", not its "yarn run v1.22" banner)
    return next((line for line in quiet if _ERRORISH.search(line)), quiet[0] if quiet else useful[0])


def _panic(line: str, after: list[str]) -> str:
    """A Rust panic as ``panicked at LOCATION: message`` (the message from the line after, when
    the panic's line ends at its location)."""
    said = line.split(" panicked at ", 1)[1]
    if said.endswith(":") and after:
        said = f"{said} {after[0]}"
    return f"panicked at {said}"


def error_brief(text: str) -> str:
    """The exit status line (when there is one) and the informative line, clipped."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    info = informative_line(text)
    first = lines[0] if lines else ""
    if _EXIT_LINE.match(first) and info != first:
        first = first.split(":", 1)[0] if len(first) > 40 else first
        # (a runner's numbered failure, ExUnit's "1) test …", after a colon: not "Exit code 2 1) test")
        return clip(f"{first}{':' if info[:1].isdigit() and not first.endswith(':') else ''} {info}", ERROR_CHARS)
    return clip(info, ERROR_CHARS)


def _may_state_preference(text: str) -> bool:
    """False when ``text`` holds none of the words every :data:`_PREFERENCE` match contains
    (a substring test, 20× cheaper than the regex; asks are checked one by one)."""
    folded = text.casefold()
    for word in _PREFERENCE_WORDS:   # (a loop: cheaper than any(map(...)) for 7 words)
        if word in folded:
            return _PREFERENCE.search(text) is not None
    return False


def _command_label(command: str) -> str:
    """How the summary names a command (a call's brief, a failure's label, an outcome's command):
    ``failures_line`` finds a failure's command again by it."""
    return f"`{clip(command, 80)}`"


def _arg_brief(args) -> str:
    """A call's argument in brief: its command, else its path, URL, query … , else the files its patch names."""
    command = command_of(args)
    if command:
        return _command_label(command)
    if isinstance(args, dict):
        for key in (*_PATH_KEYS, "url", "query", "pattern", "description", "order_id", "id", "name"):
            value = args.get(key)
            if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value).strip():
                return clip(str(value), 80)
        for key in _PATCH_KEYS:   # a patch (Codex apply_patch): the files it names
            value = args.get(key)
            if isinstance(value, str) and "*** Begin Patch" in value:
                files = list(dict.fromkeys(m.strip() for m in _PATCH_FILE.findall(value)))
                return clip(", ".join(files), 80) if files else ""
    return ""


_VOCAB_CACHE: dict[str, tuple] = {}
# a hyphenated word of letters only, lowercase after its first (auto-generated, Per-project):
# in the person's or the agent's prose an English compound, not a name (lucide-react, a branch
# spotter-gqc, a CSS class empty-state count where a command, code, a result or a `code span` of
# the prose uses them)
_PROSE_COMPOUND = re.compile(r"[A-Za-z][a-z]*(?:-[a-z]+)+")
# a number, a range, a date or a time of one (1_000, 97-179, 2026-02-11, 2025-09-03T01): no name
_NUMBERISH = re.compile(r"[\d_.-]+(?:T[\d:._]*Z?)?")
_VOCAB_COMPOUNDS: dict[str, tuple] = {}   # a remembered word whose matches hold such compounds -> the others
_VOCAB_WORDS: dict[str, tuple] = {}


def _vocabulary_of(text: str, remember: bool = True) -> tuple | list:
    """The vocabulary identifiers of ``text`` (4 characters or more); the same texts come back
    often in a session (results, commands), so the last 4,096 are remembered (``remember=False``:
    a text that does not come back, an ask or a message, is neither looked up nor kept, and its
    identifiers come as a list, without the English compounds of prose: :data:`_PROSE_COMPOUND`).

    No :data:`_VOCAB` match spans or borders on whitespace in a way a word boundary would not
    (whitespace is in none of its classes and fails all its lookarounds as the start or end of
    the text does), so the matches of a text are those of its whitespace-separated words, in
    order: each word is scanned once and remembered (the last 16,384), which makes a new text
    made of known words cost a few lookups instead of a regex scan (a test checks the two agree)."""
    found = _VOCAB_CACHE.get(text) if remember else None
    if found is None:
        words, compounds = _VOCAB_WORDS, _VOCAB_COMPOUNDS
        out: list = []
        for word in text.split():
            hits = words.get(word)
            if hits is None:   # (a word under 4 characters holds no match of 4 or more: not scanned)
                # (a terminal's colour codes, sent or written in a string literal: no part of a name)
                read = _ANSI_IN_WORD.sub("", word) if "[" in word and ("1b[" in word or "1B[" in word or "\x1b" in word
                                                                        or "033[" in word) else word
                if "\\" in read:
                    read = _ESCAPE_IN_WORD.sub(" ", read)
                hits = tuple([v for v in _VOCAB.findall(read) if len(v) >= 4
                              and not (v[0] in "0123456789_.-" and _NUMBERISH.fullmatch(v))]) \
                    if len(read) >= 4 and _VOCAB_HINT.search(read) else ()
                if len(words) >= 16_384:
                    words.clear()
                    compounds.clear()
                words[word] = hits
                dash = word.find("-")
                if dash >= 0 and word[dash + 1:dash + 2].islower() and "`" not in word \
                        and any(_PROSE_COMPOUND.fullmatch(v) for v in hits):   # (its first "-" before a letter)
                    compounds[word] = tuple([v for v in hits if not _PROSE_COMPOUND.fullmatch(v)])
            if hits:
                # (prose: an English compound, single-quoted or Per-project, is no name)
                out.extend(hits if remember or not compounds or word not in compounds else compounds[word])
        if not remember:
            return out
        found = _remember(_VOCAB_CACHE, text, tuple(out))
    return found


def _scanned(text: str) -> str:
    """The part of ``text`` scanned for the vocabulary: its first ``VOCAB_TEXT_CHARS`` characters,
    back to a whitespace (the word cut there is no identifier: ``unwrap_or_defaul``), without its
    URLs (they are listed as URLs; their query keys, ``utm_source``, are no vocabulary)."""
    if len(text) > VOCAB_TEXT_CHARS:
        head = text[:VOCAB_TEXT_CHARS]
        if not text[VOCAB_TEXT_CHARS].isspace():
            cut = max(head.rfind(" "), head.rfind("\n"))
            head = head[:cut] if cut > 0 else head
        text = head
    return _URL.sub(" ", text) if "://" in text else text


def _strings(value, room: int = VOCAB_TEXT_CHARS) -> list[str]:
    """The strings inside a parsed JSON value (arguments, results), up to about ``room`` characters."""
    if isinstance(value, dict) and room > 0:   # a flat dict of strings (most arguments and results): its values
        out = []
        for v in value.values():
            if isinstance(v, str):
                out.append(v)
                room -= len(v)
                if room <= 0:
                    return out
            elif isinstance(v, (dict, list)):
                break
        else:
            return out
        room += sum(map(len, out))   # nested: the general walk below, from the start
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


def _urls_of(text: str, limit: int | None = None) -> tuple:
    """The URLs of ``text`` (of its first ``limit`` characters: no copy is made without a URL), as
    the summary lists them."""
    if ("://" in text) if limit is None or len(text) <= limit else text.find("://", 0, limit) >= 0:
        return tuple(url.rstrip(".,;:!?$") for url in _URL.findall(text if limit is None else text[:limit]))
    return ()


# Tool arguments and results are JSON values (each trace is a line of JSON), so two with the same
# JSON text say the same: what a call's arguments or a result object says is worked out once per
# distinct text (sessions run the same commands and get the same outputs again and again) and
# remembered, the last 4,096 of each, texts of up to MEMO_CHARS characters only.
MEMO_CHARS = 2_000
_CALLS: dict[str, _Call] = {}
_RESULTS: dict[str, _Result] = {}


class _Call:
    """What a tool call's arguments say, whatever the call: its shell command (:func:`command_of`)
    and the command's family, its brief (:func:`_arg_brief`), its identifiers (:func:`_vocabulary_of`
    of its strings), its URLs, and the files a call of a tool with them writes (by tool name)."""

    __slots__ = ("command", "family", "brief", "vocab", "urls", "writes")

    def __init__(self, args, args_text: str):
        self.command = command = command_of(args)
        self.family = command_family(command) if command else None
        self.brief = _arg_brief(args)
        text = args if isinstance(args, str) else "\n".join(_strings(args))
        self.vocab = _vocabulary_of(_scanned(text)) if text else ()
        self.urls = _urls_of(args_text, 2000)
        self.writes: dict[str, list] = {}

    def written(self, tool_name: str, args) -> list[str]:
        """:func:`written_paths` of a ``tool_name`` call with these arguments (``args``)."""
        paths = self.writes.get(tool_name)
        if paths is None:
            paths = self.writes[tool_name] = written_paths(tool_name, args)
        return paths


def _call_of(args, args_text: str | None = None) -> _Call:
    """The :class:`_Call` of ``args`` (``args_text``: their JSON text, when known)."""
    if args_text is None:
        args_text = value_text(args)
    if type(args) is not dict or len(args_text) > MEMO_CHARS:
        return _Call(args, args_text)
    return _CALLS.get(args_text) or _remember(_CALLS, args_text, _Call(args, args_text))


def _remember(memo: dict, text: str, said):
    """``said`` remembered in ``memo`` for ``text`` (``memo`` starts again past 4,096 texts)."""
    if len(memo) >= 4096:
        memo.clear()
    memo[text] = said
    return said


class _Result:
    """What a tool result object says (a trace without ``tool_error``): failed or not and its error
    text (:func:`memcli.tool_interactions.result_failure`), the error's brief, its identifiers (of the error text when it
    failed, else of its strings), its URLs (of the same text, else of its JSON), and — asked for
    the first time it is needed — its :func:`outcome_line`."""

    __slots__ = ("failed", "error", "brief", "vocab", "urls", "result", "_outcome")

    def __init__(self, t, result_text: str):
        self.failed, self.error = failed, error = result_failure(t)
        self.brief = error_brief(error) if failed else ""
        self.result = result = t.tool_result
        text = error if failed else "\n".join(_strings(result))
        self.vocab = _vocabulary_of(_scanned(text)) if text else ()
        self.urls = _urls_of(error if failed else result_text, 2000)
        self._outcome = None

    def outcome(self) -> str:
        if self._outcome is None:
            self._outcome = outcome_line(self.result)
        return self._outcome


def _result_of(t, result_text: str) -> _Result | None:
    """The :class:`_Result` of ``t``'s result object (``result_text``: its JSON text); None for
    another result (a string, an error, a longer text)."""
    if type(t.tool_result) is not dict or len(result_text) > MEMO_CHARS or t.tool_error:
        return None
    return _RESULTS.get(result_text) or _remember(_RESULTS, result_text, _Result(t, result_text))


def _trace_turn(trace) -> str | None:
    return trace.turn_id


def _turn_key(turn_id: str) -> tuple:
    n = turn_number(turn_id or "")
    return (0, n, "") if n is not None else (1, 0, turn_id or "")


def _fmt_time(ts: float | None) -> str:
    if ts is None:
        return "?"
    return datetime.fromtimestamp(ts, tz=timezone.utc).strftime("%Y-%m-%d %H:%M")


def _quote(text: str, limit: int) -> str:
    return '"' + clip(text, limit) + '"'


# the empty, read-only mapping a digest starts with where most turns have nothing: replaced by a
# dict on the first write (a write to it fails loudly); any empty mapping is taken for it (a digest
# sent back by the compaction's read-ahead child comes with a copy)
_NONE = MappingProxyType({})


class _Work:
    """Tool activity of the main agent or of one subagent inside a turn, folded as it streams in
    (memory grows with the distinct commands, labels and files, not with the calls)."""

    __slots__ = ("calls", "n_calls", "call_args", "failed", "last_failure", "failures", "commands", "files", "changes",
                 "open", "todo", "families", "scopes", "outcomes", "last_call", "last_said", "pending", "fixed",
                 "passed", "commits")

    def __init__(self):
        self.calls: dict[str, int] = {}                   # tool name -> calls
        self.n_calls = 0
        self.call_args: list[str] = []
        self.failed = 0                                    # failed results
        self.last_failure: tuple[str, str] | None = None   # (label, error brief)
        self.failures: dict[str, list] = _NONE             # label -> [count, distinct error briefs]
        self.commands: dict[str, list] = {}                # command -> [failed before, last failed, last error]
        self.files: dict[str, None] = _NONE                # most recently modified last
        self.changes: dict[str, list] = _NONE              # path -> names defined/touched in its edits
        self.open: dict[str, list] = {}                    # call id -> unanswered calls, oldest first
        self.todo = None                                   # the latest todo list / plan (its arguments)
        self.families: dict[str, bool] = {}                # command family -> its latest run failed
        self.scopes: dict[str, tuple] = {}                 # run scope -> (its latest run's seq, failed, its name)
        self.outcomes: dict[str, tuple] = {}               # command family -> (command, outcome line), latest last
        self.last_call = self.last_said = None             # the latest call and its _Call, until its result
        self.pending: dict[str, tuple] = _NONE             # label of a failed write -> its paths, none redone
        self.fixed: dict[str, str] = _NONE                 # label of a failed write -> the path written later
        # labels of the calls of other tools (no command, no write) whose latest call passed:
        # ``update_reservation_flights``, ``Read app/x.py``; one that failed before passed later
        self.passed: dict[str, None] = _NONE
        self.commits: list[str] | tuple = ()               # the lines of the commits it made ("[main 1a2b3c4] msg")

    def call(self, t, args_text: str | None = None) -> _Call:
        """Count the call ``t`` (``args_text``: its arguments' JSON text, when known); what its
        arguments say."""
        args = t.tool_args
        said = _call_of(args, args_text)
        name = t.tool_name or "tool"
        self.calls[name] = self.calls.get(name, 0) + 1
        self.n_calls += 1
        if name in _TODO_TOOLS and isinstance(args, dict):
            self.todo = args
        if len(self.call_args) < 4:
            brief = said.brief
            if brief:
                self.call_args.append(f"{name} {brief}")
        self.open.setdefault(t.tool_call_id or "", []).append(t)
        self.last_call, self.last_said = t, said
        return said

    def result(self, t, failed: bool, error: str, result: _Result | None = None) -> None:
        """Count the result ``t`` (``result``: what it says, when known)."""
        call = pop_open_call(self.open, t.tool_call_id or "", t.turn_id, _trace_turn)
        if call is None:
            name, args = t.tool_name or "tool", t.tool_args
            said = _call_of(args)
        else:
            name, args = call.tool_name or t.tool_name or "tool", call.tool_args
            if call is self.last_call:
                said = self.last_said
                self.last_call = self.last_said = None
            else:
                said = _call_of(args)
        command = said.command
        brief = (error_brief(error) if result is None else result.brief) if failed else ""
        # (a tool that is no command is named with its argument: ``Edit app/x.py``)
        label = said.brief if command else f"{name} {said.brief}" if said.brief else name
        if failed:
            self.failed += 1
            self.last_failure = (label, brief)
            if not self.failures:   # (read-only and empty until the first: see _NONE)
                self.failures = {}
            known = self.failures.pop(label, None)   # the latest failure last
            self.failures[label] = [1, [brief]] if known is None else [known[0] + 1, _distinct(known[1], brief)]
            if not command:
                self._failed_write(label, said.written(name, args) or _open_file_written(name, t.tool_error or t.tool_result))
                if label in self.passed:
                    del self.passed[label]
        if command:
            family = said.family
            # (each dict keeps its entries in the order of their latest run: popped, then set again)
            self.families.pop(family, None)
            self.families[family] = failed
            seq = t.seq if type(t.seq) is int else 0
            for scope, name in runs_recorded(command, failed):
                self.scopes.pop(scope, None)
                self.scopes[scope] = (seq, failed, name)
            outcome = None if failed else outcome_line(t.tool_result) if result is None else result.outcome()
            if outcome and not (outcome[0] == "[" and _COMMIT_MADE.match(outcome)):   # (commits: their own line)
                self.outcomes.pop(family, None)
                self.outcomes[family] = (command, outcome)
            if "git" in command and ("commit" in command or "cherry-pick" in command or "revert" in command):
                made = commits_made(t.tool_result if t.tool_error is None else t.tool_error)
                if made:   # each commit is said, and one made before a later command of its line failed
                    if not self.commits:
                        self.commits = []
                    self.commits.extend(made)
            known = self.commands.get(command)
            if known is None:
                self.commands[command] = [False, failed, brief]
            else:
                known[0] = known[0] or known[1]
                known[1], known[2] = failed, brief
        if not failed:
            paths = said.written(name, args)
            if not paths and not command:
                paths = _open_file_written(name, t.tool_result)
                if not paths:   # another tool's call: what a failure of its label waits for
                    if not self.passed:
                        self.passed = {}
                    self.passed[label] = None
            if paths:
                if self.pending:
                    self._written(paths)
                files, changes = self.files or {}, self.changes or {}   # (see _NONE)
                self.files, self.changes = files, changes
                for path in paths:
                    files.pop(path, None)
                    files[path] = None
                for path, names in changed_names(args, paths).items():
                    known = changes.setdefault(path, [])
                    known.extend(n for n in names if n not in known and len(known) < 12)

    def _failed_write(self, label: str, paths: list[str]) -> None:
        """A write to ``paths`` (``label``) failed: pending until a later write to one passes
        (keyed by label: two failed writes of one file, ``Edit a.py`` and ``Write a.py``, are
        both pending; one overwrote the other, which then said nothing)."""
        if paths:
            if not self.pending:
                self.pending = {}
            self.pending[label] = tuple(paths)
        if label in self.fixed:
            del self.fixed[label]

    def _written(self, paths: list[str]) -> None:
        """``paths`` were written: the failed writes pending on them are fixed."""
        for label, path in written_pending(self.pending, paths):
            if not self.fixed:
                self.fixed = {}
            self.fixed[label] = path

    def unanswered(self) -> list[str]:
        out = []
        for queue in self.open.values():
            for call in queue:
                brief = _arg_brief(call.tool_args)
                out.append(f"{call.tool_name or 'tool'}" + (f" {brief}" if brief else ""))
        return out


class _Subagent:
    __slots__ = ("name", "turn_id", "task", "conclusion", "work")

    def __init__(self, name: str, turn_id: str):
        self.name = name
        self.turn_id = turn_id
        self.task = ""
        self.conclusion = ""
        self.work = _Work()

    def line(self) -> str:
        parts = [f"- {self.name} ({self.turn_id})"]
        if self.task:
            parts.append(f"task {_quote(self.task, TASK_CHARS)}")
        if self.work.files:
            parts.append("changed: " + ", ".join(self.work.files))
        if self.work.last_failure:
            label, error = self.work.last_failure
            parts.append(f"{self.work.failed} failed (last: {label}: {error})")
        elif self.work.calls:
            parts.append(f"{self.work.n_calls} tool call{'s' if self.work.n_calls != 1 else ''}")
        if self.conclusion:
            parts.append(f"concluded: {_quote(self.conclusion, 300)}")
        return " · ".join(parts)


class _TurnDigest:
    """What one turn of the window contributes (module docstring), fed one trace at a time
    (:meth:`add`), so a turn of any length is summarized without holding its traces. Its
    identifiers go to the window's vocabulary (ranked by need), not to a list on its line."""

    __slots__ = ("turn_id", "steps_only", "steps", "total_steps", "asks", "reply", "notes", "earlier", "main",
                 "subagents", "preferences", "n_traces", "text_chars", "first_ts", "last_ts", "urls", "vocab", "harness",
                 "short", "reply_ts")

    def __init__(self, turn_id: str, steps_only: bool = False, steps: int = 0, total_steps: int = 0):
        self.turn_id = turn_id
        self.steps_only = steps_only
        self.steps, self.total_steps = steps, total_steps
        self.asks: list[tuple[str, str]] = []   # (text, trace id)
        self.reply = ""
        # what most turns never get is made on its first use (until then: empty and read-only)
        self.notes: deque | tuple = ()              # the main agent's texts before its latest (a deque)
        self.earlier: list | tuple = ()             # … whole, while the turn made no call (a list)
        self.main = _Work()
        self.subagents: dict[str, _Subagent] = _NONE
        self.preferences: list[str] | tuple = ()
        self.n_traces = 0
        self.text_chars = 0
        self.first_ts = self.last_ts = None
        self.urls: dict[str, None] = _NONE
        self.vocab: dict[str, list] = {}         # identifier -> [decayed weight, index of its last trace, weight]
        self.harness: list[str] | tuple = ()      # the harness's own compactions in the turn, as pointers
        self.short = False                         # listed in a summary: shown by its asks only (for now)
        self.reply_ts: tuple | None = None         # when its assistant messages were said: (first, last)

    @classmethod
    def of(cls, turn: Turn) -> _TurnDigest:
        return cls.fed(cls(turn.turn_id, turn.steps_only, turn.steps, turn.total_steps), turn.traces)

    @staticmethod
    def fed(digest: _TurnDigest, traces) -> _TurnDigest:
        """``digest`` with ``traces`` added, in order."""
        add = digest.add
        for trace in traces:
            add(trace)
        return digest

    def _text(self, text: str, limit: int | None = None) -> None:
        """Note the URLs of ``text`` (of its first ``limit`` characters: :func:`_urls_of`)."""
        found = _urls_of(text, limit)
        if found:
            self._urls(found)

    def _urls(self, found: tuple) -> None:
        urls = self.urls
        if not urls:
            urls = self.urls = {}
        for url in found:   # most recently seen last
            urls.pop(url, None)
            urls[url] = None

    def _vocab(self, text, weight: int, remember: bool = True) -> None:
        """Count the identifiers of ``text`` (a string, or the strings of arguments/results;
        ``remember``: see :func:`_vocabulary_of`)."""
        if not isinstance(text, str):
            text = "\n".join(_strings(text))
        if text:
            self._count(_vocabulary_of(_scanned(text), remember), weight)

    def _count(self, found, weight: int) -> None:
        """Count a use of each identifier of ``found`` (with repeats), at the latest trace."""
        vocab, index, decay, far = self.vocab, self.n_traces, _DECAY, len(_DECAY)
        for value in found:
            entry = vocab.get(value)
            if entry is None:
                vocab[value] = [weight, index, weight]
            else:   # a use at index: the weight so far decays by the gap, then adds (inlined: it runs per identifier)
                gap = index - entry[1]
                entry[0] = (entry[0] * decay[gap] if gap < far else 0.0) + weight
                entry[1] = index
                entry[2] += weight

    def add(self, t) -> None:
        self.n_traces += 1
        ts = t.ts
        if isinstance(ts, (float, int)):
            if self.first_ts is None:
                self.first_ts = self.last_ts = ts
            elif ts < self.first_ts:
                self.first_ts = ts
            elif ts > self.last_ts:
                self.last_ts = ts
        content = t.content or ""
        args = t.tool_args
        # value_text, inlined: it runs twice per trace
        args_text = "" if args is None else args if isinstance(args, str) else orjson.dumps(args).decode()
        error = t.tool_error
        if error:
            result_text = None
            self.text_chars += len(content) + len(args_text) + len(error)
        else:
            result = t.tool_result
            result_text = "" if result is None else result if isinstance(result, str) else orjson.dumps(result).decode()
            self.text_chars += len(content) + len(args_text) + len(result_text)
        tags = t.tags
        if tags and TAG_SIDECHAIN in tags:
            self._vocab(content or args or error or t.tool_result, 1)
            self._sidechain(t)
            return
        kind = t.trace_type
        if kind == "tool_result":
            said = _result_of(t, result_text) if result_text else None
            if said is not None:   # (what the plain way below finds, worked out once per distinct result)
                self.main.result(t, said.failed, said.error, said)
                if said.urls:
                    self._urls(said.urls)
                if said.vocab:
                    self._count(said.vocab, 1)
                return
            failed, failure = result_failure(t)
            self.main.result(t, failed, failure)
            if failed:
                self._text(failure, 2000)
                self._vocab(failure, 1)
            else:
                self._text(result_text, 2000)
                result = t.tool_result
                self._vocab(exec_output(result) if isinstance(result, str) else result, 1)
        elif kind == "tool_call":
            said = self.main.call(t, args_text)
            if said.urls:
                self._urls(said.urls)
            if said.vocab:
                self._count(said.vocab, 2)
        elif kind == "assistant":   # (not content.strip(), without the copy: not content or content.isspace())
            if tags and (TAG_REASONING in tags or not NON_OPENING_TAGS.isdisjoint(tags)) or not content or \
                    content.isspace():
                return
            if self.reply and self.reply != content:
                notes = self.notes
                if not notes:
                    notes = self.notes = deque(maxlen=NOTES_KEPT)
                _push_note(notes, self.reply)
                if not self.main.n_calls and not self.subagents:   # (conversation so far: :meth:`said`)
                    if not self.earlier:
                        self.earlier = []
                    self.earlier.append(self.reply)
            self.reply = content
            if isinstance(ts, (float, int)):
                self.reply_ts = (self.reply_ts[0] if self.reply_ts else ts, ts)
            if "://" in content:
                self._text(content)
            self._count(_vocabulary_of(_scanned(content), False), 2)   # (_vocab of a text)
        elif kind == "user":
            if tags and TAG_COMPACT_SUMMARY in tags and content.strip():
                self._harness(t, content)
                return
            if tags and not NON_OPENING_TAGS.isdisjoint(tags) or not content or content.isspace():
                return
            if "<command-" in content:   # Claude Code's slash-command wrapper: as typed, ``/review src/``
                content = readable_text(content)
            self.asks.append((content, t.id))
            if "://" in content:
                self._text(content)
            self._count(_vocabulary_of(_scanned(content), False), 3)
            if _may_state_preference(content):
                for sentence in sentences(content):   # (whole: "always run tests/x.py first." is one)
                    if _PREFERENCE.search(sentence) and len(sentence) >= 8:
                        preferences = self.preferences
                        if not preferences:
                            preferences = self.preferences = []
                        preferences.append(sentence)

    def said(self) -> None:
        """A turn of conversation only whose speaker answered in several messages in a row: they
        are its reply, together (the earlier ones were taken for notes — the agent's, between its
        calls — and went with the notes line, what they said lost even where everything fitted)."""
        if self.earlier and self.chat and not self.steps_only:
            self.reply = "\n".join([*self.earlier, self.reply])
            self.earlier, self.notes = (), ()

    def _harness(self, t, content: str) -> None:
        """A summary written by the harness's own compaction (or an earlier tool's): its names join
        the vocabulary as the agent's own words (it is what the agent worked from), and the turn
        line points at it (``memcli get ID`` gives it whole; ``memcli memory`` lists it)."""
        self._text(content)
        self._vocab(content, 2)
        mark = t.extra.get("harness_compaction")
        mark = mark if isinstance(mark, dict) else {}
        about = ", ".join(str(v) for v in (mark.get("harness"), mark.get("trigger")) if isinstance(v, str) and v)
        tokens = mark.get("pre_tokens")
        if isinstance(tokens, int) and not isinstance(tokens, bool):
            about += f"{', ' if about else ''}{tokens:,} tokens before"
        if not self.harness:
            self.harness = []
        self.harness.append(f"earlier summary{f' ({about})' if about else ''}: {t.id}")

    def _sidechain(self, t) -> None:
        name = (t.extra or {}).get("agent_id") or t.correlation_id or "subagent"
        agent = self.subagents.get(name)
        if agent is None:
            if not self.subagents:
                self.subagents = {}
            agent = self.subagents[name] = _Subagent(f"agent {name}" if name != "subagent" else name, self.turn_id)
            started = self.main.open.get(name)   # named by the call that started it (Copilot CLI)
            if started:
                args = started[-1].tool_args
                task = next((args[k] for k in ("prompt", "description", "task") if isinstance(args, dict)
                             and isinstance(args.get(k), str) and args[k].strip()), "")
                agent.task = task
        kind = t.trace_type
        if kind == "user" and t.content.strip() and not agent.task:
            agent.task = t.content
        elif kind == "assistant" and t.content.strip() and TAG_REASONING not in (t.tags or ()):
            agent.conclusion = t.content
        elif kind == "tool_call":
            agent.work.call(t)
        elif kind == "tool_result":
            agent.work.result(t, *result_failure(t))

    @property
    def files(self) -> list[str]:
        out = list(self.main.files)
        for agent in self.subagents.values():
            out.extend(p for p in agent.work.files if p not in out)
        return out

    @property
    def chat(self) -> bool:
        """A turn of conversation only: no tool call, no subagent (its reply says what it did)."""
        return not self.main.n_calls and not self.subagents

    def reply_day(self) -> str | None:
        """The day its reply was said, when that is one day and not the day of its ask: a chat
        imported speaker by speaker whose session starts with the other speaker answers, in the
        turn of the last session's ask, on the day of its own session."""
        span = self.reply_ts
        if span is None or self.first_ts is None:
            return None
        day = span[0] // 86_400   # (the UTC day :func:`_fmt_time` writes: compared first, written when it differs)
        return _fmt_time(span[0])[:10] if day == span[1] // 86_400 and day != self.first_ts // 86_400 else None

    def line(self, ask_chars: int = ASK_CHARS, full: bool = True, rarity: Rarity | None = None,
             floor: float = 0.0, talk: bool = True, reply_floor: float | None = None,
             chat: bool | None = None, keep_asks: bool = False, latest: bool = False) -> str:
        """The turn's line (``full``: its work too, else :func:`short_line`; ``talk``: its reply
        there when the turn is conversation — ``chat``, of conversation only unless said — or the
        window's newest, ``latest``; ``floor`` and ``reply_floor``, its asks' and its reply's:
        :func:`condense_message`)."""
        reply_floor = floor if reply_floor is None else reply_floor
        chat = self.chat if chat is None else chat
        if not full:
            return short_line(self.turn_id, self.asks, self.reply, ask_chars, self.steps_only and
                              f"steps 1–{self.steps} of {self.total_steps} (its ask stays in the active file)",
                              chat=chat and talk, rarity=rarity, floor=floor, reply_floor=reply_floor,
                              reply_day=self.reply_day(), keep_asks=keep_asks, latest=latest)
        parts = [f"- {self.turn_id}"]
        for n, (text, trace_id) in enumerate(self.asks):
            shown = condense_message(text, ask_chars, rarity, floor, keep=keep_asks or _ask_keep(chat, text),
                                     frame=not chat) or "…"
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
            if work.last_failure:   # (its informative line is in the window's Failed: line, once)
                label = work.last_failure[0]   # (the one call shown, or its tool's name alone: said already)
                part += f" ({work.failed} failed)" if len(work.calls) == 1 and label in (shown, *work.calls) else \
                    f" ({work.failed} failed; last: {label})"
            parts.append(part)
        if self.subagents:
            parts.append(f"subagents: {', '.join(a.name for a in self.subagents.values())}")
        parts.extend(self.harness)
        unanswered = work.unanswered()
        if unanswered:
            parts.append("never answered: " + "; ".join(unanswered[:3])
                         + (f" (+{len(unanswered) - 3} more)" if len(unanswered) > 3 else ""))
        if self.reply and self.steps_only:  # the turn's final answer is still to come, in the active file
            parts.append(f"last note: {_quote(self.reply, SHORT_REPLY_CHARS)}")
        elif self.reply:
            said = condense_message(self.reply, REPLY_CHARS, rarity, reply_floor, keep=not chat)
            if said:
                day = self.reply_day()
                parts.append(f"assistant{f' ({day})' if day else ''}: \"{said}\"")
        elif not work.calls and not self.asks and not self.harness:
            parts.append(f"{self.n_traces} context trace{'s' if self.n_traces != 1 else ''}")
        return " · ".join(parts)


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


def short_line(turn_id: str, asks: list, reply: str, ask_chars: int, note: str | None = None, *,
               chat: bool = False, rarity: Rarity | None = None, floor: float = 0.0,
               reply_floor: float | None = None, reply_day: str | None = None, keep_asks: bool = False,
               latest: bool = False) -> str:
    """A turn listed by its asks only (``memcli show AGENT --archive --turn ID`` expands it) —
    and, in a turn of conversation (``chat``), its reply as long as an ask: the other half of
    what was said (``reply_day``: the day it was said, when not its ask's); so does the window's
    newest turn (``latest``): its final message is where the agent said what it found and what
    it does next. Long ones are condensed to their most telling sentences (:func:`condense_message`)."""
    parts = [f"- {turn_id}"]   # (a clipped ask names no trace here: the turn id finds it, in less room)
    for n, (text, _trace_id) in enumerate(asks):
        said = condense_message(text, ask_chars, rarity, floor, keep=keep_asks or _ask_keep(chat, text),
                                frame=not chat) or "…"
        parts.append(f"{'user' if n == 0 else 'then user'}: \"{said}\"")
    if note:
        parts.append(note)
        if reply:
            parts.append(f"last note: {_quote(reply, NOTE_CHARS)}")
    elif reply and (chat or not asks or latest):
        said = condense_message(reply, ask_chars if asks else SHORT_REPLY_CHARS, rarity,
                                floor if reply_floor is None else reply_floor, keep=not chat)
        if said:   # (a chat reply that says nothing the floor keeps: left out)
            parts.append(f"assistant{f' ({reply_day})' if reply_day else ''}: \"{said}\"")
    return " · ".join(parts)


def written_pending(pending: dict, written) -> list[tuple[str, str]]:
    """The failed writes of ``pending`` (label -> paths) that a write of one of ``written`` (paths)
    fixed, each ``(label, the path written)``, taken out of ``pending``. A path written is the
    file also when one of the two is the end of the other (an edit tool's ``/repo/types/a.ts``
    failed, a shell's ``cat > types/a.ts`` then wrote it)."""
    done = []
    for label, paths in pending.items():
        path = next((p for p in paths if p in written), None)
        if path is None:   # (the exact path first: a dict lookup, and the path it names)
            path = next((w for p in paths for w in written if _one_file(p, w)), None)
        if path is not None:
            done.append((label, path))
    for label, _ in done:
        del pending[label]
    return done


def _one_file(a: str, b: str) -> bool:
    """Whether paths ``a`` and ``b`` name one file as far as a transcript can tell: the same, or
    one a shorter spelling of the other with a directory in it (:func:`_spellings`:
    ``types/a.ts``, ``/repo/types/a.ts``; a bare ``package.json`` may be another directory's)."""
    return a == b or ("/" in b and b in _spellings(a)) or ("/" in a and a in _spellings(b))


def _keep_newest(mapping: dict, limit: int) -> None:
    """Bound ``mapping`` (its entries oldest first) to its newest ``limit`` entries."""
    if len(mapping) > limit:
        for key in list(mapping)[:len(mapping) - limit]:
            del mapping[key]


class WindowSummary:
    """The offline summary of a window in the making: digests are added one turn at a time, in
    window order (memory stays flat: only the listed turns keep their digest); :meth:`finish`
    writes the text and the facts."""

    def __init__(self, summarizer: OfflineSummarizer):
        self.summarizer = summarizer
        self.listed: list[_TurnDigest] = []   # the first turns, then (tail) the latest, listed in full
        self.short_lines: list[tuple] = []   # (turn id, [(ask, id)], reply, chat, first ts) of the turns after the head
        self.recent_lines: deque = deque(maxlen=MAX_SHORT_LINES)   # … and of the newest before the tail
        self.n_turns = self.n_traces = self.n_calls = self.n_failed = 0
        self.n_talk = 0   # turns of conversation only that say something (their asks not small talk)
        self.text_chars = 0
        self.first_turn = self.last_turn = None
        self.first_ts = self.last_ts = None
        self.files: dict[str, None] = {}
        self.failures: Counter = Counter()
        self.failure_error: dict[str, list[str]] = {}   # label -> its distinct error briefs, newest last
        self.urls: dict[str, None] = {}
        self.preferences: dict[str, list] = {}
        self.reply_days: dict[str, str] = {}  # turn id -> the day its reply was said, when not its ask's
        self.commands: dict[str, list] = {}   # command -> [failed_before, last_failed, last_error, turns]
        self.subagents: deque = deque(maxlen=MAX_SUBAGENT_LINES)   # the newest subagents' lines
        self.n_subagents = 0
        self.unanswered: list[str] = []
        self.n_unanswered = 0
        self.tail: deque = deque()
        self.unlisted = [0, None, None]       # the turns between those: count, first, last
        self.vocab: dict[str, list] = {}      # identifier -> [decayed weight, its last trace in the window, weight]
        self.changes: dict[str, list] = {}    # path -> names its edits touched
        self.families: dict[str, bool] = {}   # command family -> its latest run failed
        self.scopes: dict[str, tuple] = {}    # run scope -> (its latest run failed, its name), in the order of those runs
        self.pending: dict[str, tuple] = {}   # label of a failed write (a tool, no command) -> its paths
        self.fixed: dict[str, str] = {}       # label of a failed write -> the path written after it
        self.passed: dict[str, None] = {}     # label of a failed call of another tool -> None: a later one passed
        self.outcomes: dict[str, tuple] = {}  # command family -> (command, outcome line) of its latest telling run
        self.commits: dict[str, None] = {}    # the commits made (their git commit lines), newest last
        self.todo = None                      # the latest todo list / plan arguments
        self.notes: deque = deque(maxlen=NOTES_KEPT)   # the agent's latest notes, oldest first
        self._rarity: Rarity | None = None

    @property
    def talking(self) -> bool:
        """Whether the window is mostly conversation: at least half its turns say something and
        call no tool. Then each of its turns is taken as conversation (a call is a lookup, its
        reply the answer; a coding window's turns of work report what the files, commands and
        failures lines say), and only a preference said as an instruction is a fact."""
        return self.n_talk * 2 >= self.n_turns

    def whole_turn(self, turn_id: str, traces: list, steps: int) -> None:
        """Add a turn that moves whole, from its moved traces."""
        digest = _TurnDigest(turn_id, False, steps, steps)
        add = digest.add
        for trace in traces:   # (_TurnDigest.fed, inlined: it runs per turn)
            add(trace)
        self.add(digest)

    def add(self, d: _TurnDigest) -> None:
        d.said()
        self.n_turns += 1
        if d.chat and sum(len(text) for text, _ in d.asks) >= MIN_ASK_CHARS:
            self.n_talk += 1
        n_traces = self.n_traces = self.n_traces + d.n_traces
        self.text_chars += d.text_chars
        main, subagents, turn_id = d.main, d.subagents, d.turn_id
        self.n_calls += main.n_calls
        self.n_failed += main.failed
        if subagents:
            self.n_calls += sum(a.work.n_calls for a in subagents.values())
            self.n_failed += sum(a.work.failed for a in subagents.values())
        if not self.first_turn:
            self.first_turn = turn_id
        self.last_turn = turn_id
        ts = d.first_ts   # (min and max, spelled out)
        if ts is not None and (self.first_ts is None or ts < self.first_ts):
            self.first_ts = ts
        ts = d.last_ts
        if ts is not None and (self.last_ts is None or ts > self.last_ts):
            self.last_ts = ts
        d.short = False
        if len(self.listed) < HEAD_TURNS:
            self.listed.append(d)
        else:
            tail = self.tail
            tail.append(d)
            if len(tail) > MAX_LISTED_TURNS - HEAD_TURNS:
                old = tail.popleft()
                day = old.reply_day()
                if day:
                    self.reply_days[old.turn_id] = day
                if len(self.short_lines) < FIRST_SHORT_LINES:
                    self.short_lines.append((old.turn_id, old.asks, old.reply, old.chat, old.first_ts))
                else:
                    recent = self.recent_lines
                    if len(recent) == MAX_SHORT_LINES:   # its oldest goes: counted, no line (nor day) kept
                        self.reply_days.pop(recent[0][0], None)
                        unlisted = self.unlisted
                        unlisted[0] += 1
                        unlisted[1] = unlisted[1] or recent[0][0]
                        unlisted[2] = recent[0][0]
                    recent.append((old.turn_id, old.asks, old.reply, old.chat, old.first_ts))
        if main.files or subagents:
            files = self.files
            for path in d.files:
                files.pop(path, None)
                files[path] = None      # most recent last
        base = n_traces - d.n_traces
        vocab = self.vocab
        decay, far = _DECAY, len(_DECAY)
        for value, (score, index, weight) in d.vocab.items():
            entry = vocab.get(value)
            index += base
            if entry is None:
                vocab[value] = [score, index, weight]
            else:   # the two decayed weights, valued at the later index
                gap = index - entry[1]
                entry[0] = (entry[0] * decay[gap] if gap < far else 0.0) + score
                entry[1] = index
                entry[2] += weight
        if len(vocab) > MAX_VOCAB:   # bounded: the least needed go
            self.vocab = {value: vocab[value] for value in _by_need(vocab, n_traces)[:MAX_VOCAB // 2]}
        for note in d.notes:
            _push_note(self.notes, note)
        commands = self.commands
        if main.todo is not None:   # the plan is the main agent's: a subagent's list is its own task's
            self.todo = main.todo
        for work in (main, *(a.work for a in subagents.values())) if subagents else (main,):
            if work.changes:
                for path, names in work.changes.items():
                    known = self.changes.setdefault(path, [])
                    known.extend(n for n in names if n not in known and len(known) < 12)
            if work.families:
                families = self.families
                for family, failed in work.families.items():
                    families.pop(family, None)
                    families[family] = failed
            if work.commits:
                made = self.commits
                for line in work.commits:
                    made.pop(line, None)
                    made[line] = None
                _keep_newest(made, MAX_COMMITS)
            if work.outcomes:
                outcomes = self.outcomes
                for family, outcome in work.outcomes.items():
                    outcomes.pop(family, None)
                    outcomes[family] = outcome
            if self.pending and work.files:   # failed writes of earlier turns, written in this one
                for label, path in written_pending(self.pending, work.files):
                    self.fixed[label] = path
            if work.pending or work.fixed:
                for label, paths in work.pending.items():
                    self.pending[label] = paths
                    self.fixed.pop(label, None)
                self.fixed.update(work.fixed)
            if work.failures:
                for label, (count, briefs) in work.failures.items():
                    self.failures[label] = self.failures.pop(label, 0) + count   # the latest failure last
                    for brief in briefs:
                        self.failure_error[label] = _distinct(self.failure_error.get(label, []), brief)
                    self.passed.pop(label, None)
            if work.passed and self.failures:   # (its latest call in the turn passed, after any failure there)
                for label in work.passed:
                    if label in self.failures:
                        self.passed[label] = None
            for command, (failed_before, failed, error) in work.commands.items():
                entry_c = commands.get(command)
                if entry_c is None:
                    entry_c = commands[command] = [False, False, "", []]
                entry_c[0] = entry_c[0] or entry_c[1] or failed_before
                entry_c[1], entry_c[2] = failed, error
                turns = entry_c[3]
                if len(turns) < 20 and (not turns or turns[-1] != turn_id):
                    turns.append(turn_id)
        if main.scopes or subagents:   # the runs of the turn, in the order of its traces (the main
            # agent's and its subagents' interleave), each scope at its latest run
            scopes = self.scopes
            runs = main.scopes.items() if not subagents else sorted(
                ((scope, run) for work in (main, *(a.work for a in subagents.values())) for scope, run in
                 work.scopes.items()), key=_seq_of)   # (the usual turn: the main agent's runs, in order already)
            for scope, (_seq, failed, family) in runs:
                scopes.pop(scope, None)
                scopes[scope] = (failed, family)
            _keep_newest(scopes, MAX_SCOPES)   # (the oldest runs' failures then count as open)
        if subagents:
            self.n_subagents += len(subagents)
            self.subagents.extend(agent.line() for agent in subagents.values())
        if main.open:
            for call in main.unanswered():
                self.n_unanswered += 1
                if len(self.unanswered) < MAX_LISTED:
                    self.unanswered.append(f"{call} in {turn_id}")
        if d.urls:   # most recently seen last; bounded: the least recent go
            urls = self.urls
            for url in d.urls:
                urls.pop(url, None)
                urls[url] = None
            _keep_newest(urls, MAX_URLS)
        for sentence in d.preferences:
            self.preferences.setdefault(sentence, []).append(turn_id)
        if len(commands) > 5000:  # bounded memory on pathological windows
            self.commands = dict(list(commands.items())[-1000:])

    def rarity(self, short_lines: list[tuple]) -> Rarity:
        """How rare each word is among the messages of the turns listed (:class:`Rarity`; made once:
        every try of the text asks it again)."""
        if self._rarity is None:
            def texts():
                out = [text for entry in (*self.listed, *self.tail) for text, _ in entry.asks]
                out += [entry.reply for entry in (*self.listed, *self.tail) if entry.reply]
                step = max(1, len(short_lines) // RARITY_TEXTS)
                for _turn, asks, reply, *_ in short_lines[::step]:
                    out.extend(text for text, _ in asks)
                    if reply:
                        out.append(reply)
                return out
            self._rarity = Rarity(texts)
        return self._rarity

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
        a read-ahead child summarized while the window was planned."""
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
        budget = memory.summary_tokens
        # (under a target the user set: what it leaves the summary is less than the window, so
        # the room never makes the snapshot larger; else a quarter of the text decides, as before)
        room = memory.window_room if memory.target_given else None
        cap = TARGET_MAX_CHARS if memory.target_given else HARD_MAX_CHARS
        fixes = _Fixes(window.scopes)   # (once: every try of the text asks it again)
        text = self._text(window, budget, CHARS_PER_TOKEN, cap, fixes, room)
        if budget is not None:
            text = _fill(text, budget, lambda ratio: self._text(window, budget, ratio, cap, fixes, room))
        preferences = window.preferences
        if window.talking:   # a conversation (as the text takes it): its small talk
            # with "always" in it was a fact each (20 of them in one chat: a quarter of 1,500 tokens)
            preferences = {s: turns for s, turns in preferences.items() if _INSTRUCTION.search(s)}
        return Summary(text, self._facts(preferences, window.commands, fixes, memory, text))

    def _text(self, window: WindowSummary, budget: int | None, chars_per_token: float, cap: int,
              fixes: _Fixes, room: int | None = None) -> str:
        """The summary's text, within ``budget`` tokens at ``chars_per_token`` and ``cap``
        characters (the window is left as it was: the text can be made again at another size)."""
        for entry in window.listed:
            entry.short = False
        for entry in window.tail:
            entry.short = False
        (listed, short_lines, n_turns, n_traces, n_calls, n_failed, text_chars, first_turn, last_turn, first_ts,
         last_ts, files, failures, failure_error, urls, commands, subagents, unanswered,
         n_unanswered, tail, unlisted) = (
            window.listed, window.short_lines, window.n_turns, window.n_traces, window.n_calls, window.n_failed,
            window.text_chars, window.first_turn, window.last_turn, window.first_ts, window.last_ts, window.files,
            window.failures, window.failure_error, window.urls, window.commands,
            window.subagents, window.unanswered, window.n_unanswered, window.tail,
            window.unlisted)
        first_short = len(short_lines)
        talking = window.talking

        def conversation(chat: bool) -> bool:
            """Whether a turn (of conversation only: ``chat``) is taken as conversation."""
            return chat or talking

        short_lines = [(turn, asks, reply, conversation(chat), ts)
                       for turn, asks, reply, chat, ts in (*short_lines, *window.recent_lines)]
        if n_turns == 0:
            raise ValueError("nothing to summarize")

        span = first_turn if n_turns == 1 else f"{first_turn}–{last_turn}"
        start, end = _fmt_time(first_ts), _fmt_time(last_ts)
        if end[:11] == start[:11] and end != "?":   # the same day: its date once (module docstring)
            end = end[11:]
        turns_said = f"{n_turns} turn{'s' if n_turns != 1 else ''} ({span})"
        calls_said = f"{n_calls} tool call{'s' if n_calls != 1 else ''}, {n_failed} failed."
        # a conversation piped in with its speakers named ("Caroline: …" each ask): said once
        said_asks = [text for e in (*listed, *tail) for text, _ in e.asks] + [text for s in short_lines for text, _ in s[1]]
        said_replies = [e.reply for e in (*listed, *tail)] + [s[2] for s in short_lines]
        named = speakers(said_asks, said_replies)
        # (else several people in one role: each quote under its speaker's name)
        speaking = {} if named else speaking_roles(said_asks, said_replies)
        speakers_said = f"\n{SPEAKERS_HEAD}" + ", ".join(f"{role} {name}" for role, name in named.items()) + "." \
            if named else ""
        header = (f"{turns_said}, {start} → {end} UTC: {n_traces} trace{'s' if n_traces != 1 else ''}, {calls_said}"
                  + speakers_said)
        footer: list[tuple[str, str]] = []   # (kind, text), in the order shown
        if subagents:
            earlier = window.n_subagents - len(subagents)
            footer.append(("subagents", "Subagents:\n" + (f"(+{earlier} earlier)\n" if earlier else "")
                           + "\n".join(subagents)))
        newest_first, changes = one_spelling(list(reversed(list(files))), window.changes)
        if files:
            footer.append(("files", files_line(newest_first, changes)))
        if window.todo is not None:
            todo = todo_lines(window.todo)
            if todo:
                footer.append(("plan", PLAN_HEAD + "; ".join(todo)))
        replies = {e.reply for e in (*listed, *tail)}   # shown on their turn's line
        notes = [n for n in window.notes if n not in replies]
        if notes:
            footer.append(("notes", notes_line(notes)))
        outcomes = commands_line(window.outcomes, window.families, failures)
        if outcomes:
            footer.append(("commands", outcomes))
        if window.commits:
            commits = list(reversed(window.commits))
            footer.append(("commits", COMMITS_HEAD + COMMITS_SEP.join(commits[:MAX_LISTED])
                           + (f"{COMMITS_SEP}+{len(commits) - MAX_LISTED} more" if len(commits) > MAX_LISTED else "")))
        if failures:
            footer.append(("failed", failures_line(failures, failure_error, commands, fixes, window.fixed,
                                                   window.pending, window.passed)))
        if n_unanswered:
            footer.append(("unanswered", f"Never answered: {n_unanswered} call{'s' if n_unanswered != 1 else ''} ("
                           + "; ".join(unanswered) + (", …" if n_unanswered > len(unanswered) else "") + ")"))
        if urls:
            names = list(reversed(urls))   # newest first: a PR just opened before the docs read at the start
            footer.append(("urls", "URLs: " + ", ".join(names[:MAX_LISTED])
                           + (f", +{len(names) - MAX_LISTED} more" if len(names) > MAX_LISTED else "")))

        entries = listed + list(tail)
        rarity = window.rarity(short_lines)
        lines_of: dict[tuple, str] = {}
        ask_chars = [ASK_CHARS]
        # the least telling sentences of long messages go first (:func:`sentence_floor`): the floor
        # of the replies and of the asks of turns of conversation only, and of the other asks (0
        # while the asks fit)
        floor, tools_floor = [0.0], [0.0]
        talk = [True]   # a turn of conversation shows its reply on its asks-only line too
        latest_reply = [True]   # ... and so does the window's newest turn, while the summary can hold it

        def chars_of(entry: _TurnDigest) -> int:
            if entry is entries[0] or entry is entries[-1]:   # the request, the latest intent
                return max(ask_chars[0], min(ASK_CHARS, hard // END_ASK_SHARE))
            return ask_chars[0]

        def line_of(entry: _TurnDigest, short: bool | None = None) -> str:
            short = entry.short if short is None else short
            chat = conversation(entry.chat)
            chars, least = chars_of(entry), floor[0] if chat else tools_floor[0]
            # (the request and the latest intent: their asks whole while they fit — in a window of
            # conversation, condensed like the others, each keeping its most telling sentence: a chat
            # imported a session a turn kept 25 sentences of small talk on its first line)
            if (entry is entries[0] or entry is entries[-1]) and not talking:
                least = 0.0
            key = (entry.turn_id, short, chars, least, talk[0], floor[0], latest_reply[0])
            text = lines_of.get(key)
            if text is None:
                text = lines_of[key] = entry.line(chars, full=not short, rarity=rarity, floor=least, talk=talk[0],
                                                  reply_floor=floor[0], chat=chat,
                                                  keep_asks=entry is entries[0] or entry is entries[-1],
                                                  latest=latest_reply[0] and entry is entries[-1])
            return text

        short_blocks: dict[tuple, list] = {}
        # the turns of conversation whose lines may join (_joined_talk)
        talking_turns = {turn for turn, *_rest, chat, _ts in short_lines if chat} | \
            {e.turn_id for e in entries if conversation(e.chat)}

        def body(whole: bool | None = None) -> list[tuple[str, str, tuple]]:
            """The turn lines as shown now (``whole``: in full), each with its asks-only form and
            the turns it stands for (first id, last id, count: a turn's line one, the note of
            turns not listed its count)."""
            short = None if whole is None else not whole
            out = [(line_of(e, short), line_of(e, True), (e.turn_id, e.turn_id, 1)) for e in entries[:len(listed)]]
            block = short_blocks.get((ask_chars[0], floor[0], talk[0], tools_floor[0]))
            if block is None:
                block = short_blocks[ask_chars[0], floor[0], talk[0], tools_floor[0]] = [
                    short_line(turn, asks, reply, ask_chars[0], chat=chat and talk[0], rarity=rarity,
                               floor=floor[0] if chat else tools_floor[0], reply_floor=floor[0],
                               reply_day=window.reply_days.get(turn))
                    for turn, asks, reply, chat, _ts in short_lines]
            out.extend((line, line, (s[0], s[0], 1)) for line, s in zip(block[:first_short], short_lines))
            if unlisted[0]:
                note = (f"… {unlisted[0]} more turns ({unlisted[1]}–{unlisted[2]}) not listed "
                        "(`memcli show AGENT --archive --turn ID` shows any of them).")
                out.append((note, note, (unlisted[1], unlisted[2], unlisted[0])))
            out.extend((line, line, (s[0], s[0], 1)) for line, s in zip(block[first_short:], short_lines[first_short:]))
            out.extend((line_of(e, short), line_of(e, True), (e.turn_id, e.turn_id, 1)) for e in entries[len(listed):])
            line_days = days or [None] * len(out)
            if floor[0]:   # a run of turns whose asks were all condensed away: one line; a run of
                # turns of conversation, what they said on one line (a day's, the turns of that day
                # that say nothing in it: a run folded across days broke the days' lines apart and
                # said nothing on a line of its own); then days that say nothing, on one line
                out, line_days = _fold_emptied(out, line_days, one_day=bool(days))
                out, line_days = _joined_talk(out, line_days, talking_turns)
                if days:
                    out, line_days = _fold_emptied(out, line_days)
            if days:   # a window of several days: each line whose day is not the line's before says it
                previous = None
                for k, day in enumerate(line_days):
                    if day and day != previous:
                        line, short_form, span = out[k]
                        head = _line_head(span)
                        out[k] = (_dated(line, head, day), _dated(short_form, head, day), span)
                    previous = day or previous
            if named:
                out = [(_unnamed(line, named), _unnamed(short_form, named), span) for line, short_form, span in out]
            elif speaking:
                out = [(_by_speaker(line, speaking), _by_speaker(short_form, speaking), span)
                       for line, short_form, span in out]
            return out

        def assemble() -> str:
            return "\n".join([header, *(line for line, *_ in body()), *(text for _, text in footer)])

        # the day of each turn (day_of) and of each line of the body, in its order (the note of
        # turns not listed has none), when the window spans days (a conversation over weeks:
        # "when" is asked of it)
        days: list = []
        day_of: dict = {}
        if first_ts is not None and last_ts is not None and _fmt_time(first_ts)[:10] != _fmt_time(last_ts)[:10]:
            day_of = {turn: _fmt_time(ts)[:10] if ts is not None else None for turn, ts in
                      [*((e.turn_id, e.first_ts) for e in entries), *((s[0], s[4]) for s in short_lines)]}
            days = [day_of[e.turn_id] for e in entries[:len(listed)]] + [day_of[s[0]] for s in short_lines[:first_short]]
            days += [None] if unlisted[0] else []
            days += [day_of[s[0]] for s in short_lines[first_short:]] + [day_of[e.turn_id] for e in entries[len(listed):]]

        limit = min(max(text_chars // 4, MIN_CHARS), MAX_CHARS)
        hard = HARD_MAX_CHARS
        if budget is not None:   # the budget the compaction leaves decides
            hard = max(int(budget * chars_per_token), MIN_BUDGET_CHARS)
            # a quarter of the window: of its text's characters, or of its tokens when they say more
            # (``room``: its messages' JSON and ids count too, and the plan set that room aside)
            quarter = max(text_chars // 4, int((room or 0) * chars_per_token))
            limit = min(max(quarter, MIN_CHARS), cap, hard)
            hard = min(hard, cap)
        summary = assemble()
        ranked_footer = list(footer)   # what the ranking (_squeeze) chooses from
        if len(summary) > limit and any(kind == "notes" for kind, _ in footer):
            footer[:] = [(kind, text) for kind, text in footer if kind != "notes"]   # the turns' own messages first
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
        # still over, and by more than the window's text leaves room for (two thirds of it: a
        # few-line window's summary had grown past the window, and nothing was written): the
        # newest turn's last message goes too
        if len(summary) > max(limit, text_chars * 2 // 3) and entries and entries[-1].short and latest_reply[0]:
            latest_reply[0] = False
            summary = assemble()

        def asks_size() -> int:
            return sum(len(line) + 1 for line, *_ in body())

        # the asks are cut only when the summary is over its budget (``hard``: the size it may
        # grow to for its asks, not the quarter it aims at) and they alone take more than half of
        # it: first the least telling sentences of the messages of several, wherever they are,
        # then what is left of each is clipped. The replies of turns of conversation only are
        # said in the room their asks alone would take (or the quarter), the two ranked together.
        aim = hard
        if any(conversation(e.chat) and e.reply and e.asks for e in entries) or \
                any(chat and reply and asks for _turn, asks, reply, chat, _ts in short_lines):
            talk[0] = False
            aim = max(limit, min(hard, len(assemble())))
            talk[0] = True
        if len(summary) > aim and (aim < hard or asks_size() > hard // 2):
            # (text, keep, limit, what it saves beyond its text when it goes: its ' · assistant: ""')
            replies = [(e.reply, not chat, (chars_of(e) if e.asks else SHORT_REPLY_CHARS) if e.short else REPLY_CHARS, 16)
                       for e, chat in ((e, conversation(e.chat)) for e in entries)
                       if e.reply and not e.steps_only and (chat or not e.short)]
            replies += [(reply, not chat, ask_chars[0] if asks else SHORT_REPLY_CHARS, 16)
                        for _turn, asks, reply, chat, _ts in short_lines if reply and (chat or not asks)]
            # a conversation turn's asks, ranked with the replies alike (an ask condensed away:
            # its "…" stays); the asks of turns with tool calls only when the asks alone are
            # over the budget (each keeps its most telling sentence: :func:`_ask_keep`) —
            # while they fit, no reply cuts them
            asks = [(text, _ask_keep(chat, text), ask_chars[0], -1) for chat, turn_asks in
                    [*((conversation(e.chat), e.asks) for e in entries[1:-1]), *((s[3], s[1]) for s in short_lines)]
                    if chat or aim == hard for text, _ in turn_asks]

            def fits(value: float) -> bool:
                floor[0] = value
                tools_floor[0] = value if aim == hard else 0.0
                return len(assemble()) <= aim

            fits(sentence_floor(asks + replies, rarity, len(summary) - aim, fits))
            summary = assemble()
        while len(summary) > hard and ask_chars[0] > MIN_ASK_CHARS and asks_size() > hard // 2:
            ask_chars[0] = max(MIN_ASK_CHARS, ask_chars[0] * 2 // 3)
            summary = assemble()
        size = limit
        # with a budget, a summary that leaves the vocabulary less than its share is ranked too
        if len(summary) > hard or (budget is not None and len(summary) > hard * (1 - VOCAB_SHARE)
                                   and len(window.vocab) > 8):
            if hard < TINY_SUMMARY_CHARS:   # the header says how much the window holds, not when nor
                # which turns (the turn lines and the note of those left out under it name them)
                header = f"{n_turns} turn{'s' if n_turns != 1 else ''}: {calls_said}{speakers_said}"
            briefer = {"failed": failures_line(failures, failure_error, commands, fixes, window.fixed, window.pending,
                                               window.passed, brief=True)} \
                if failures else {}   # (the squeezed summary's shorter forms: made only for it)
            vocab_chars = len(VOCAB_HEAD) + sum(len(name) + 2 for name in window.vocab)

            def files_named(k: int) -> str:
                return files_line(newest_first, changes, k)

            summary = _squeeze(header, body(whole=True), ranked_footer, hard, files_named, briefer, vocab_chars)
            # few names (their line at most four shares long): the share may be held for names the
            # summary shows already; then squeezed again with the room the line can use
            if vocab_chars < 4 * hard * VOCAB_SHARE:
                sayable = len(vocabulary(window.vocab, n_traces, summary, vocab_chars + 1))
                if sayable < vocab_chars:
                    summary = _squeeze(header, body(whole=True), ranked_footer, hard, files_named, briefer, sayable)
            size = hard
        if days and "\n… " in summary:   # the first line after turns left out says its day (its first turn's)
            # (the heads of the lines as shown, and as squeezed: whole lines join no run)
            summary = _after_left_out(summary, {_line_head(span): day_of.get(span[0])
                                                for *_, span in (*body(), *body(whole=True))})
        if urls:
            summary = _urls_once(summary)
        if size - len(summary) > 40:   # the room left goes to the identifiers needed later
            extra = vocabulary(window.vocab, n_traces, summary, size - len(summary) - 1)
            if extra:
                summary += "\n" + extra
        return summary

    def _facts(self, preferences, commands, fixes: _Fixes, memory: MemoryContext, summary: str = "") -> list[Fact]:
        """Facts, most important first — only what the summary (``summary``) does not carry into
        the same snapshot (module docstring): user preferences, and the new state of a command an
        existing fact is about (it passes now, or fails again after a fact said it passed)."""
        facts: list[Fact] = []
        for sentence in preferences:
            facts.append(Fact(f'User preference: "{clip(sentence, 400)}"', ["preference", "user"], 0.9,
                              source_turn_ids=preferences[sentence][:20]))
        existing = [f for f in memory.facts if f.fact.startswith(_COMMAND_FACT_PREFIXES)]
        # a command an earlier summary left failing that a run of this window fixed (its family:
        # ``ruff check --fix app`` after ``ruff check app``): said once, as a fact, for the earlier
        # summary goes on saying "still failing" until a rollup reads them together
        told = {f.fact.split("`", 2)[1] for f in existing if f.fact.count("`") >= 2}
        outcomes = next((line for line in summary.split("\n") if line.startswith(COMMANDS_HEAD)), "")
        for command, failure in _still_failing_before(memory.episodic):
            shown = clip(command, 200)
            if shown in told:
                continue
            ran = commands.get(command)
            if ran is not None:   # run here: failed here too, this summary's Failed line says how it
                # ended; only passed, its Commands line does when it names it — not when its family's
                # latest outcome is another command's (``mix test 2>&1 | tail -5``): the fact does
                if ran[0] or ran[1] or _command_label(command) in outcomes:
                    continue
                told.add(shown)
                facts.append(Fact(f"Command passed: `{shown}` (it had failed before)", ["command"], 0.8))
                continue
            by = fixes.by(command, failure, before=True)
            if by is not None:
                told.add(shown)
                facts.append(Fact(f"Command passed: `{shown}` (it had failed before, a later `{by}` passed)",
                                  ["command"], 0.8))
        if existing:
            fixed: list[Fact] = []
            for command, (_failed_before, last_failed, error, turns) in commands.items():
                shown = clip(command, 200)
                prefix_failed, prefix_passed = f"Command failed: `{shown}`", f"Command passed: `{shown}`"
                older = [f for f in existing if f.fact.startswith((prefix_failed, prefix_passed))]
                if not older:
                    continue
                ids = [f.id for f in older]
                by = fixes.by(command, error) if last_failed else None
                if not last_failed or by is not None:
                    if any(f.fact.startswith(prefix_failed) for f in older):
                        later = "" if not last_failed else f", a later `{by}` passed"
                        fixed.append(Fact(f"{prefix_passed} (it had failed before{later})", ["command"], 0.8, ids,
                                          turns[-5:]))
                elif any(f.fact.startswith(prefix_passed) for f in older):
                    fixed.append(Fact(f"{prefix_failed} — {error}", ["command", "failure"], 0.8, ids, turns[-5:]))
            facts.extend(fixed)
        return facts[: self.max_facts]


def _still_failing_before(episodic: list) -> Iterator[tuple[str, str]]:
    """``(command, its informative line)`` of each failure the live summaries ``episodic`` leave
    "still failing" (their ``Failed:`` lines, in a rollup's sections too), newest summary first."""
    seen: set = set()
    for item in reversed(episodic):
        for line in (item.summary or "").split("\n"):
            if not line.startswith("Failed: "):
                continue
            for entry in _entries(line[len("Failed: "):], "; ")[0]:
                if not entry.endswith(_STILL_FAILING):
                    continue
                commands, failure = _failing(entry)
                for command in commands:
                    if command not in seen:
                        seen.add(command)
                        yield command, failure


def files_line(paths: list[str], changes: dict, named: int | None = None) -> str:
    """``Files modified: path (names), …``, newest first; each name touched is given once, with
    the newest file it was touched in (only for the newest ``named`` files, when given)."""
    seen: set = set()
    parts = []
    for i, path in enumerate(paths):
        names = [n for n in changes.get(path, ()) if n not in seen] if named is None or i < named else []
        seen.update(names)
        parts.append(f"{path} ({', '.join(names)})" if names else path)
    return FILES_FACT_PREFIX + ", ".join(parts)


def one_spelling(paths: list[str], changes: dict) -> tuple[list[str], dict]:
    """``paths`` (newest first) and ``changes`` (path -> names touched) with each file once: a
    path that is the end of one other path of the list (``types/todo.ts`` written by a shell in
    the project's directory, ``/repo/types/todo.ts`` by an edit tool; transcripts keep no
    directory to tell them apart by) goes into it, at the newer of their places, its names added
    to the other's; into the longest, when the paths it ends each end one another (``src/a.py``,
    ``pkg/src/a.py``, ``/repo/pkg/src/a.py``). One that ends two other files stays as it is
    (``types/index.ts`` of ``/repo/types/index.ts`` and ``/repo/app/types/index.ts``): which it
    is, no one can tell; so does a bare file name (``package.json`` written at the project's
    root, ``/repo/web/package.json`` edited: two files, as likely as one)."""
    if len(paths) < 2:
        return paths, changes
    listed = set(paths)
    ends: dict[str, set] = {}   # path -> the other paths that end with it
    for path in paths:
        for spelling in _spellings(path) if "/" in path else ():
            if "/" in spelling and spelling in listed:
                ends.setdefault(spelling, set()).add(path)
    into: dict[str, str] = {}
    for short, longer in ends.items():   # (a.py, src/a.py, /repo/src/a.py: one file, the longest)
        longest = [path for path in longer if not ends.get(path, set()) & longer]
        if len(longest) == 1:
            into[short] = longest[0]
    if not into:
        return paths, changes
    out: dict[str, None] = {}
    merged = dict(changes)
    for path in paths:
        long = into.get(path)
        if long is None:
            out.setdefault(path, None)
            continue
        out.setdefault(long, None)   # (at the newer of the two places)
        names = merged.pop(path, ())
        if names:
            known = merged[long] = list(merged.get(long, ()))
            known.extend(n for n in names if n not in known)
    return list(out), merged


def _push_note(notes: deque, text: str) -> None:
    """Append ``text`` to the latest notes, each distinct text once (at its latest place)."""
    if text in notes:
        notes.remove(text)
    notes.append(text)


def notes_line(notes: list[str]) -> str:
    """The agent's latest notes before each turn's final message (its status and next steps),
    oldest first."""
    return "Latest notes: " + " → ".join(_quote(n, NOTE_TEXT_CHARS) for n in notes)


_OUTCOMES = tuple(re.compile(p, re.MULTILINE) for p in (   # in order of preference
    r"^.*(?<![\w.])\d{1,5} (?:passed|failed|tests?|examples?|failures?|errors?|skipped|specs?)(?![\w/.]).*$"
    r"|^.*\bTests run: \d+, Failures: \d+.*$|^ok\s+\S+\s+(?:\d+(?:\.\d+)?m?s|\(cached\)).*$",   # tests (Maven, go)
    r"^\[[^\]\s]+(?: \([^)]*\))? [0-9a-f]{7,40}\] .*$",                                   # git commit
    r"^\s*(?:\+ )?[0-9a-f]{7,40}\.\.\.?[0-9a-f]{7,40}\s+\S+ -> \S+.*$",                     # git push
    r"https?://\S+/(?:pull|merge_requests|issues)/\d+",                                        # PR / issue
    r"^.*\b(?:Successfully|Compiled|Built|Deployed|BUILD SUCCESS(?:FUL)?)\b.*$|^.*\bApply complete!.*$"   # builds,
    r"|^\s*Finished\b.*\btarget\(s\) in .*$|^.*✓ built in .*$"))                     # deploys (terraform), cargo, vite


_COMMIT_MADE = _OUTCOMES[1]   # git commit's "[branch 1a2b3c4] subject"
_ANY_OUTCOME = re.compile("|".join(f"(?:{p.pattern})" for p in _OUTCOMES), re.MULTILINE)


def outcome_line(result) -> str:
    """What a successful command's output says it did, when it says it in a line worth keeping
    (test counts, a commit, a push, a PR or issue URL, a build that finished); "" otherwise. Its
    first 1,000 and last 2,000 characters are read (a commit says it first, a test run last)."""
    return _outcome_of(_outcome_text(result))


def commits_made(result) -> list[str]:
    """The ``[branch 1a2b3c4] subject`` lines of the commits a command's output says it made (its
    first 1,000 and last 2,000 characters, as :func:`outcome_line` reads), as written (the Commits
    line parts them with :data:`COMMITS_SEP`, not the ``; `` a subject may hold)."""
    text = _outcome_text(result)
    return [m.group(0).strip() for m in _COMMIT_MADE.finditer(text)] if "] " in text else []


def _outcome_text(result) -> str:
    """The part of a command's result an outcome is read in (:func:`outcome_line`)."""
    if isinstance(result, dict) and isinstance(result.get("stdout") or result.get("output"), str):
        result = result.get("stdout") or result.get("output")
    text = exec_output(result) if isinstance(result, str) else "\n".join(_strings(result, 8_000))
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    return text[:1_000] + "\n" + text[-2_000:] if len(text) > 3_000 else text


_RESULT_COUNTS = re.compile(r"(?<![\w.])[1-9]\d{0,4} (?:passed|failed|failures?|errors?)(?![\w/.])")


@lru_cache(maxsize=1024)   # outputs repeat (the same test run, the same status)
def _outcome_of(text: str) -> str:
    if _ANY_OUTCOME.search(text) is None:   # one scan for the output that says nothing
        return ""
    counts = [m.group(0) for m in _OUTCOMES[0].finditer(text)]
    if counts:   # a runner's result line comes last (``running 13 tests`` … ``test result: ok. 13 passed``)
        told = [line for line in counts if _RESULT_COUNTS.search(line)]
        return clip(_OUTPUT_LABEL.sub("", (told or counts)[-1].strip(" =-")), 120)   # (not Gemini's "Stdout: ")
    for pattern in _OUTCOMES[1:]:
        m = pattern.search(text)
        if m:
            return clip(_OUTPUT_LABEL.sub("", m.group(0).strip(" =-")), 120)
    return ""


COMMANDS_HEAD = "Commands (latest outcome): "


def commands_line(outcomes: dict, families: dict, failed: Iterable[str] = ()) -> str:
    """``Commands (latest outcome): `cmd`: 42 passed; …``, newest first: the latest telling
    passing run of each command family, an outcome line once, after the commands that told it
    (``bd sync && bd ready`` and ``bd sync`` both told the sync's) — of a family whose latest run
    failed too, unless that command failed in the window (``failed``: the failures' labels; the
    ``Failed:`` line says its state): `pytest tests/a.py` passing, then `pytest tests/b.py`
    failing, says both, so that a rollup tells an earlier summary's "still failing" a.py passed
    since (:func:`merge_summary_texts`)."""
    labels: dict[str, list[str]] = {}   # outcome line -> its commands, newest first
    failed = set(failed)
    for family, (cmd, line) in reversed(list(outcomes.items())):
        if families.get(family) and _command_label(cmd) in failed:
            continue
        if line in labels or len(labels) < MAX_LISTED:
            labels.setdefault(line, []).append(_command_label(cmd))
    shown = [f"{', '.join(commands)}: {line}" for line, commands in labels.items()]
    return COMMANDS_HEAD + "; ".join(shown) if shown else ""


def _urls_once(summary: str) -> str:
    """``summary`` without the entries of its ``URLs:`` line that another line shows already (an
    ask, a PR a command opened), and without the line when none is left."""
    at = summary.find("\nURLs: ")
    if at < 0:
        return summary
    end = summary.find("\n", at + 1)
    end = len(summary) if end < 0 else end
    rest = summary[:at] + summary[end:]
    entries = summary[at + 7:end].split(", ")
    more = entries.pop() if entries[-1].startswith("+") and entries[-1].endswith(" more") else None
    # (shown: where it ends there too — at a character no URL goes on with, or at a mark that
    # ends a sentence or an entry: ``…/pull/42;``)
    kept = [url for url in entries
            if re.search(re.escape(url) + f"(?:(?!{_URL_CHAR})|(?=[.,;:!?](?!{_URL_CHAR})))", rest) is None]
    if len(kept) == len(entries):
        return summary
    line = ", ".join(kept + ([more] if more else []))
    return summary[:at] + (f"\nURLs: {line}" if line else "") + summary[end:]


def _briefs(briefs: list[str]) -> str:
    latest, earlier = _balanced(briefs[-1]), [_balanced(b) for b in briefs[-2::-1]]
    return latest + (f"; before: {'; '.join(earlier)}" if earlier else "")


def _balanced(text: str) -> str:
    """A failure's informative line as the failures line shows it: its brackets and backticks
    balanced, so that a reader of the line (:func:`_entries`: a squeeze, a rollup) finds its
    entries where they are — an ExUnit ``1) test …`` or a line clipped inside ``foo(a, …``
    would end or extend the entry holding it. A closer without its opener gets one at the start
    of its word (``(1) test …``), an opener without its closer one at the end, a lone backtick
    its pair at the end."""
    if not any(c in text for c in "()[]`"):
        return text
    depth = 0
    opened: list[tuple[int, str]] = []   # the start of the word of a closer without an opener, and its opener
    for i, c, depth in _bracketed(text):
        if depth < 0:
            opened.append((text.rfind(" ", 0, i) + 1, "(" if c == ")" else "["))
    for at, opener in reversed(opened):
        text = text[:at] + opener + text[at:]
    return text + "`" * (text.count("`") % 2) + ")" * max(depth, 0)


def _bracketed(text: str) -> Iterator[tuple[int, str, int]]:
    """``(index, character, depth)`` of each character of ``text`` outside backticks, ``depth``
    the brackets open around it once it is read (-1: a closer without its opener; the depth
    stays 0): the one rule by which an entry of a list line holds its brackets and commands
    (:func:`_entries` splits outside them, :func:`_balanced` balances a line to it)."""
    depth, tick = 0, False
    for i, c in enumerate(text):
        if c == "`":
            tick = not tick
        elif not tick:
            if c in "([":
                depth += 1
            elif c in ")]":
                if not depth:
                    yield i, c, -1
                    continue
                depth -= 1
            yield i, c, depth


def _distinct(briefs: list[str], brief: str, keep: int = 3) -> list[str]:
    """``briefs`` with ``brief`` last (once), at most ``keep`` of them: a command that failed
    several times for different reasons keeps each reason (the fixes made between runs)."""
    return [*(b for b in briefs if b != brief), brief][-keep:]


# a call the person refused or interrupted (Claude Code, Cline, Codex, Gemini CLI wordings)
_STOPPED = re.compile(r"user doesn't want to proceed|user denied|denied this operation|rejected by the user|"
                      r"interrupted by (?:the )?user|cancelled by (?:the )?user|aborted by (?:the )?user",
                      re.IGNORECASE)


_FILE_WORD = re.compile(r"\w\.\w{1,5}$")   # a file name: app.py, main.go
_EXIT_SAID = re.compile(r"^(?:exit (?:code|status)|process exited with code):? -?\d+:? ", re.IGNORECASE)   # (its exit line first)


def _runs_named(label: str, line: str) -> bool:
    """Whether the failure ``line`` is a failing test's line (``FAILED tests/a.py::t - E``,
    ``--- FAIL: TestX`` …) that names what the command ``label`` ran: a path or test of its
    arguments, whole (``tests/a.py`` of `` `pytest -q tests/a.py` ``; ``build.js`` is not named by
    ``prebuild.js``). Not for a line with ``"; "`` or unbalanced brackets: said alone it would read
    as two entries of the list."""
    if not label.startswith("`") or not _FAILING_TEST.match(_EXIT_SAID.sub("", line, 1)) or "; " in line \
            or any(line.count(a) != line.count(b) for a, b in ("()", "[]")) or line.count("`") % 2:
        return False
    for word in label.strip("`").split():
        if ("/" in word or "::" in word or _FILE_WORD.search(word)) and not word.startswith("-") \
                and re.search(rf"(?<![\w./-]){re.escape(word)}(?![\w-]|\.\w)", line):
            return True
    return False


# how a failure's entry says it needs nothing more (and :data:`_RESOLVED` finds it again in a summary)
_PASSED_LATER, _FIXED_LATER, _STOPPED_BY_USER = " — passed later", " — fixed later", " — stopped by the user"
_STILL_FAILING = " — still failing"
_FAILURE_STATES = (_PASSED_LATER, _FIXED_LATER, _STOPPED_BY_USER, _STILL_FAILING)   # how an entry of the failures line ends
_RESOLVED = re.compile("|".join(map(re.escape, (_PASSED_LATER, _FIXED_LATER, _STOPPED_BY_USER))))


def failures_line(failures: dict, failure_error: dict, commands: dict, fixes: _Fixes, fixed=_NONE,
                  pending=_NONE, passed=_NONE, brief: bool = False) -> str:
    """``Failed: `cmd` ×n (informative line; before: an earlier one) — still failing; …``: the
    failures still unresolved first, then the resolved ones, newest first in each (``failures`` is
    in the order of their latest failure); each with its latest informative line and the earlier
    distinct ones, said once for the commands of a family (or the tools that are no command) that
    failed alike (```pytest a` ×1, `pytest b` ×2 (…) — still failing``); a failed write (``Edit
    app/x.py``) is fixed when a later write of its file passed (``fixed``: label -> path), still
    failing while none has (``pending``: label -> paths), a call of another tool passed when its
    label's latest call passed (``passed``: ``update_reservation_flights``, ``Read app/x.py``), a command
    when a later run of its family covering it passed (``fixes``: :class:`_Fixes`, which names it); a call
    the person refused or interrupted (its latest failure) is "stopped by the user", not "still
    failing", and comes after the failures still open. Commands whose labels are one (the same
    first 80 characters) answer together: passed or fixed only when each of them is. ``brief``
    (a squeezed summary): an entry whose latest informative line names what its commands ran
    (``FAILED tests/a.py::t - E`` after `` `pytest -q tests/a.py` ``) is that line alone, with the
    count (and without the exit line before it): ``FAILED tests/a.py::t - E ×4 — still failing``."""
    labels: dict[str, list] = {}   # label -> the commands it names
    pending_writes = pending or ()
    if any(k.startswith("`") for k in failures):
        for cmd in commands:
            labels.setdefault(_command_label(cmd), []).append(cmd)
    open_: dict[tuple, list] = {}
    resolved: dict[tuple, list] = {}
    for label in reversed(list(failures)):
        later, unresolved, family = "", False, None
        cmds = labels.get(label)
        if cmds is not None:
            family = command_family(cmds[-1])
            bys = [fixes.by(cmd, failure_error[label][-1]) if commands[cmd][1] else "" for cmd in cmds]
            if all(by == "" for by in bys):
                later = _PASSED_LATER
            elif _STOPPED.search(failure_error[label][-1]):   # the person said no: nothing to fix
                later = _STOPPED_BY_USER
            elif any(by is None for by in bys):
                later, unresolved = _STILL_FAILING, True
            else:
                later = f"{_FIXED_LATER} (a later `{next(by for by in reversed(bys) if by)}` passed)"
        elif label in fixed:
            later = f"{_FIXED_LATER} (a later write of {fixed[label]} passed)"
        elif label in passed:
            later = _PASSED_LATER
        elif _STOPPED.search(failure_error[label][-1]):
            later = _STOPPED_BY_USER
        elif label in pending_writes:   # a failed write no later write of its file mended
            later, unresolved = _STILL_FAILING, True
        # the commands of one family that failed with the same lines and fared the same: one entry
        # (the other tools' failures alike too: ``Edit a.py ×1, Write a.py ×2 (File has not been read yet.)``)
        key = (family, _briefs(failure_error[label]), later)
        (open_ if unresolved or not later else resolved).setdefault(key, []).append(label)
    entries, listed = [], 0
    for key, group in (*open_.items(), *resolved.items()):
        if len(entries) == MAX_LISTED:
            break
        said = key[1:]
        latest = failure_error[group[0]][-1]
        if brief and all(_runs_named(label, latest) for label in group):   # (its exit line goes too: the state says it)
            entries.append(f"{_balanced(_EXIT_SAID.sub('', latest, 1))} ×{sum(failures[label] for label in group)}{said[1]}")
        else:
            entries.append(", ".join(f"{label} ×{failures[label]}" for label in group) + f" ({said[0]}){said[1]}")
        listed += len(group)
    more = len(failures) - listed
    return "Failed: " + "; ".join(entries) + (f"; +{more} more" if more > 0 else "")


# the aggregate lines after the files and the asks, with the share of the room each may take
# before the names touched in the files (its second pass lets each grow into what is left)
FIRST_ASKS_WEIGHT = 8   # a squeezed summary keeps the window's first asks (the request it started from)
                        # and its newest: the first turn ranks with the newest, the next with the 8th newest …
_SQUEEZE_ORDER = (("plan", 0.2), ("notes", 0.15), ("failed", 0.2), ("commands", 0.1), ("commits", 0.05), ("subagents", 0.2),
                  ("unanswered", 0.05), ("urls", 0.05))


def _squeeze(header: str, body: list[tuple[str, str]], footer: list[tuple[str, str]], size: int,
             files_named=None, briefer: dict | None = None, vocab_chars: int | None = None) -> str:
    """The summary within ``size`` characters, by what is needed next: the header; every file
    modified (always all of them, if need be past ``size``); :data:`VOCAB_SHARE` of the room kept
    for the vocabulary line the summary ends with (at most ``vocab_chars``, that line's full
    length); the newest turn line whole (in at most
    a sixth of the asks' room: the work the kept traces go on with); the asks, from both ends of the window
    inward — the first (the request the work started from), then the newest, the next first one
    with the 8th newest … (:data:`FIRST_ASKS_WEIGHT`; each turn line in its asks-only form) — in
    at most 3/5 of the room; the plan (its next steps whole, :func:`_open_plan_chars`, in what
    the other lines' shares leave), the latest notes, the
    failures, the subagents, the other aggregate lines, each within a share of the room (a line
    of ``briefer`` in that shorter form when its first entry does not fit whole otherwise); the
    names touched in the files, newest files first (``files_named(k)``: the files line with the
    names of the newest ``k``); then each aggregate line in full where it fits, older asks, and
    the newest turn lines whole. A line that does not fit is clipped at a word boundary (never
    inside a path), a list keeps its newest entries and counts the others, and the turns left out
    (one run in the middle, the turns not listed before included) are counted where they were."""
    room = size - len(header) - 1
    texts = dict(footer)
    full = dict(footer)   # (a line of ``texts`` may turn brief)
    shown: dict[str, str] = {}
    files = texts.get("files")
    if files is not None:
        shown["files"] = files_named(0) if files_named else _CHANGES.sub("", files)
        room -= len(shown["files"]) + 1
    spans = [span for *_, span in body]
    ahead = list(itertools.accumulate((n for *_, n in spans), initial=0))   # the turns before each line
    total = ahead[-1]
    reserve = max(len(_left_out(spans[0][0], spans[-1][1], total)) + 1, 110) if body else 0
    kept: dict[int, str] = {}

    def take_asks(budget: int) -> int:
        """The asks from both ends of the window inward (:data:`FIRST_ASKS_WEIGHT`), each end
        while its next line fits: what is left out is one run of middle turns."""
        lo, hi = 0, len(body) - 1
        if hi >= 0 and hi not in kept and len(body[hi][0]) + 1 <= budget // 6 - reserve:
            kept[hi] = body[hi][0]   # the newest turn whole: the work the kept traces go on with
            budget -= len(body[hi][0]) + 1
        while lo in kept:
            lo += 1
        while hi in kept:
            hi -= 1
        start = end = True
        while lo <= hi and (start or end):
            # which end, not which line: when one line is left (lo == hi) both ends point at it
            first = start and (not end or FIRST_ASKS_WEIGHT * ahead[lo] <= total - ahead[hi + 1])
            i = lo if first else hi
            line = body[i][1]
            if len(line) + 1 > budget - reserve:
                if first:
                    start = False
                else:
                    end = False
                continue
            kept[i] = line
            budget -= len(line) + 1
            if first:
                lo += 1
            else:
                hi -= 1
        return budget

    # the vocabulary's share, kept for the line the summary ends with (no more than that line's
    # full length: a window with few names does not hold room it cannot use)
    vocab_room = int((room - reserve) * VOCAB_SHARE)
    if vocab_chars is not None:
        vocab_room = min(vocab_room, vocab_chars)
    asks_room = room * 3 // 5
    room -= asks_room - take_asks(asks_room)
    share_of = room - reserve - vocab_room
    for kind, share in _SQUEEZE_ORDER:
        if kind in texts:
            # (never in the vocabulary's share: the shares add up to less than the room, but the
            # plan may take more than its own)
            allowed = min(room - reserve - vocab_room, int(share_of * share))
            if kind == "plan":   # its next steps whole, in what the other lines' shares leave (those
                # that hold a line: at least MIN_LINE_CHARS): they are what the work goes on with
                others = sum(other_share for other, other_share in _SQUEEZE_ORDER if other != kind and other in texts
                             and share_of * other_share >= MIN_LINE_CHARS)
                need = _open_plan_chars(texts[kind])
                if need <= share_of * (1 - others):
                    allowed = max(allowed, need)
            text = _fit_block(kind, texts[kind], allowed)
            if briefer and kind in briefer and not _first_whole(text, texts[kind]):
                texts[kind] = briefer[kind]   # (and so it grows later: the shorter form)
                text = _fit_block(kind, texts[kind], allowed)
            if text:
                shown[kind] = text
                room -= len(text) + 1
    def name_files(budget: int) -> int:   # the names touched, newest files first
        if files is None or files == shown["files"]:
            return budget
        if files_named is None:
            candidates = [files]
        else:
            n = files.count(", ") + 1
            candidates = [files_named(k) for k in (n, n * 3 // 4, n // 2, n // 3, n // 4, 4, 2, 1) if k > 0]
        for text in candidates:
            if len(shown["files"]) < len(text) and len(text) - len(shown["files"]) <= budget:
                budget -= len(text) - len(shown["files"])
                shown["files"] = text
                break
        return budget

    room -= int(share_of * 0.3) - name_files(min(room - reserve, int(share_of * 0.3)))
    room -= vocab_room
    for kind, _ in _SQUEEZE_ORDER:   # each aggregate line grows into what is left
        if kind in texts and shown.get(kind, "") != full[kind]:
            before = len(shown[kind]) + 1 if kind in shown else 0
            text = _fit_block(kind, texts[kind], room - reserve + before)
            if texts[kind] != full[kind]:   # brief so far: in full when its first entry fits whole now
                whole = _fit_block(kind, full[kind], room - reserve + before)
                if _first_whole(whole, full[kind]) and (not text or _shown_count(whole) >= _shown_count(text)):
                    text = whole
            if text and len(text) + 1 > before:
                shown[kind] = text
                room -= len(text) + 1 - before
    room -= (room - reserve) - name_files(room - reserve)
    room = take_asks(room)
    for i in range(len(body) - 1, -1, -1):   # the newest turn lines whole, while they fit
        if i in kept and body[i][0] != kept[i] and len(body[i][0]) - len(kept[i]) <= room - reserve:
            room -= len(body[i][0]) - len(kept[i])
            kept[i] = body[i][0]
    lines = [header]
    gap = [i for i in range(len(body)) if i not in kept]   # one run of middle turns
    for i in range(len(body)):
        if i in kept:
            lines.append(kept[i])
        elif i == gap[0]:
            lines.append(_left_out(spans[i][0], spans[gap[-1]][1], ahead[gap[-1] + 1] - ahead[i],
                                   size < TINY_SUMMARY_CHARS))
    lines.extend(shown[kind] for kind, _ in footer if kind in shown)
    return "\n".join(lines)


FOLDED_TURNS = "turns, their short asks condensed away"   # a run of such turns on one line


_FOLDED = re.compile(r"^- (\S+)–(\S+) · (\d+) " + re.escape(FOLDED_TURNS) + "$")


SPEAKER_SHARE = 0.9   # of a role's messages in a window beginning with one speaker's name: it is said once
SPEAKER_MIN = 4       # messages of a role, at least, for that
SPEAKERS_HEAD = "Speakers: "   # the line under a summary's header that says them


def speakers(asks: list[str], replies: list[str]) -> dict[str, str]:
    """{role: name} when the messages of each role (``user``: the ``asks``, ``assistant``: the
    ``replies``) nearly all (:data:`SPEAKER_SHARE`, at least :data:`SPEAKER_MIN`) begin with one
    speaker's name and a colon, the two names different — a conversation of two people piped in
    with its speakers named, ``Caroline: …`` —, else {} (one role alone so may be a label every
    ask begins with, ``Task: …``): the summary says it once (``Speakers: user Caroline, assistant
    Melanie.`` under its header) and quotes each message without it (:func:`_unnamed`): the
    names took a tenth of a squeezed chat's summary (the bench's dated chats of two named speakers
    keep 595 of their 876 facts at 3,000 tokens, 514 with the names in every quote and runs of
    silent turns folded across days)."""
    out = {}
    for role, texts in (("user", asks), ("assistant", replies)):
        said = _names_said(texts)
        if said is None:
            return {}
        name, n = said[0].most_common(1)[0]
        if n < SPEAKER_SHARE * said[1]:
            return {}
        out[role] = name
    return out if out["user"] != out["assistant"] else {}


def speaking_roles(asks: list[str], replies: list[str]) -> dict[str, frozenset]:
    """{role: its speakers' names} for the roles whose messages nearly all (:data:`SPEAKER_SHARE`,
    at least :data:`SPEAKER_MIN`) begin with the name of a speaker who begins several — a
    conversation of two or more people piped in as one role, ``user``, each message ``Maya: …``
    or ``Theo: …`` (not labels each message has its own: ``Ticket T-7: …``): the summary quotes
    each such message under its speaker's name instead of its role (``Maya: "…"``,
    :func:`_by_speaker`). The bench's dated chats so imported kept 561 of their 876 facts at
    3,000 tokens, 618 so."""
    out = {}
    for role, texts in (("user", asks), ("assistant", replies)):
        said = _names_said(texts)
        if said is None:
            continue
        names, total = said
        recurring = frozenset(name for name, n in names.items() if n >= 2)
        if sum(names[name] for name in recurring) >= SPEAKER_SHARE * total:
            out[role] = recurring
    return out


def _names_said(texts: list[str]) -> tuple[Counter, int] | None:
    """(how many of ``texts`` each speaker's name begins, :func:`_speaker_of`; how many texts), when
    nearly all begin with one (:data:`SPEAKER_SHARE`, at least :data:`SPEAKER_MIN` texts); else
    None — as soon as a tenth are named by nobody (a window of work: over after a tenth of its asks)."""
    texts = [text for text in texts if text]
    if len(texts) < SPEAKER_MIN:
        return None
    unnamed_allowed = len(texts) - math.ceil(SPEAKER_SHARE * len(texts))
    names: Counter = Counter()
    for text in texts:
        label = _speaker_of(text)
        if label:
            names[label[:-2]] += 1
        else:
            unnamed_allowed -= 1
            if unnamed_allowed < 0:
                return None
    return names, len(texts)


# a quote of a role's message that begins with a speaker's name (``user: "Maya: …``, ``then user:
# "Maya: …``; a reply said on another day: ``assistant (2026-03-03): "Theo: …``): (then, role, day, name)
_ROLE_QUOTE = re.compile(r"""\b(then )?(user|assistant)( \(\d{4}-\d\d-\d\d\))?: "([^"\n]{1,70}?): (?=\S)""")


def _by_speaker(line: str, roles: dict[str, frozenset]) -> str:
    """A summary line whose quotes of ``roles``' messages begun by one of their speakers
    (:func:`speaking_roles`) are under the speaker's name, not the role: ``Maya: "…"`` for
    ``user: "Maya: …"``."""
    def named(m: re.Match) -> str:
        return f'{m[4]}{m[3] or ""}: "' if m[4] in roles.get(m[2], ()) else m[0]

    return _ROLE_QUOTE.sub(named, line) if roles else line


def _said_part(part: str) -> tuple[str, bool] | None:
    """(what a summary line's part quotes, whether it is an ask) — ``user: "…"``, ``then user: "…"``,
    ``assistant: "…"``, or a speaker's ``Maya: "…"`` (:func:`_by_speaker`, read as an ask) —, else None."""
    said = _SAID.match(part)
    if said:
        return said[2], said[1] != "assistant"
    label = _speaker_of(part) if part.endswith('"') else None
    if label and part.startswith(label[:-1] + ' "'):
        return part[len(label) + 1:-1], True
    return None


def _unnamed(line: str, named: dict[str, str]) -> str:
    """A summary line whose quotes of ``named`` roles' messages go without the speaker's name
    they begin with (:func:`speakers`): ``user: "…"``, ``then user: "…"``, and a reply said on
    another day than its ask, ``assistant (2026-03-03): "…"``."""
    def unnamed(m: re.Match) -> str:
        return f'{m[1] or ""}{m[2]}{m[3] or ""}: "' if named.get(m[2]) == m[4] else m[0]

    return _ROLE_QUOTE.sub(unnamed, line)


def _span_of(line: str) -> tuple:
    """The turns a summary's line stands for (first, last, how many): a turn line's one, a folded
    run's count; ("", "", 0) for any other line."""
    folded = _FOLDED.match(line)
    if folded:
        return folded[1], folded[2], int(folded[3])
    if line.startswith("- turn"):
        head = line[2:].split(" ", 1)[0]
        first, dash, last = head.partition("–")
        if dash and last:   # a run of turns of conversation on one line (_joined_talk): its count is
            # not on the line — that of numbered turns (turn_0011–turn_0016: 6), else 0 (never folded)
            a, b = turn_number(first), turn_number(last)
            return first, last, b - a + 1 if a is not None and b is not None and b >= a else 0
        return head, head, 1
    return "", "", 0


def _emptied(body_line: tuple) -> bool:
    """Whether a body line says nothing any more: its asks-only form ``- ID · user: "…"``, and its
    full form that or that with the pointer to the ask (a harness summary's pointer stays); a run
    of such turns already on one line too."""
    line, short_form, span = body_line
    if span[2] > 1 and (_FOLDED.match(line) or line == _line_head(span)):   # (a run whose every quote went)
        return True
    if short_form != f'- {span[0]} · user: "…"':
        return False
    return line == short_form or (line.startswith(short_form + " (full: ") and line.count(" · ") == 1)


def _runs_on_one_line(out: list[tuple], days: list, joins: Callable[[int], bool], said: Callable[[int], list],
                      line_of: Callable[[str, str, int, list], str | None],
                      room: int | None = None, one_day: bool = True) -> tuple[list[tuple], list]:
    """The body's lines (line, its asks-only form, (first turn, last turn, turns)) with each run of
    two or more consecutive lines ``joins`` takes, of one day (unless not ``one_day``), as the one
    line ``line_of(first, last, turns, parts)`` makes of what they say (``said(k)``: at most
    ``room`` characters of it; None: the run stays as it was); and the day of each line (its first
    turn's; None for a run of several days: it says nothing to date)."""
    merged, merged_days = [], []
    k = 0
    while k < len(out):
        j, parts, size = k, [], 0
        while j < len(out) and joins(j) and (days[j] == days[k] or not one_day):
            more = said(j)
            grow = sum(len(p) + 3 for p in more)
            if room is not None and j > k and size + grow > room:
                break
            parts += more
            size += grow
            j += 1
        if j - k >= 2:
            first, last, n = out[k][2][0], out[j - 1][2][1], sum(span[2] for *_, span in out[k:j])
            text = line_of(first, last, n, parts)
            if text is not None:
                merged.append((text, text, (first, last, n)))
                merged_days.append(days[k] if days[j - 1] == days[k] else None)
                k = j
                continue
        merged.append(out[k])
        merged_days.append(days[k])
        k += 1
    return merged, merged_days


def _fold_emptied(out: list[tuple], days: list, one_day: bool = False) -> tuple[list[tuple], list]:
    """The body's lines with each run of two or more turns whose line says nothing any more (its
    asks condensed away: small talk) as one line that counts them (:func:`_runs_on_one_line`),
    of one day when ``one_day`` (the line of that day's talk may then take it in), else
    whatever their days: a run that says nothing has nothing to date (a line a day of a
    conversation over weeks took a quarter of 1,500 tokens to say nothing), and the line after it
    says its own day."""
    return _runs_on_one_line(out, days, lambda k: _emptied(out[k]), lambda k: [],
                             lambda first, last, n, _parts: f"- {first}–{last} · {n} {FOLDED_TURNS}", one_day=one_day)


JOINED_LINE_CHARS = 400   # a run of conversation turns joined on one line: at most this long


def _joined_talk(out: list[tuple], days: list, talking: set) -> tuple[list[tuple], list]:
    """The body's lines (as :func:`_fold_emptied` takes them) with each run of two or more lines
    of turns of conversation (``talking``) shown by their asks-only form, neither the first line
    (the request) nor the last (the latest intent) — or of such turns
    folded for saying nothing —, the same day, as one line of at most :data:`JOINED_LINE_CHARS`:
    the run's turns, then what each said in order (an ask condensed away, ``user: "…"``, left
    out). A squeezed conversation then spends its room on what was said, not on a turn id a
    line; the turn ids of the run still find each turn (``memcli show AGENT --archive --turn ID``)."""

    def joinable(k: int) -> bool:
        if k == 0 or k == len(out) - 1:   # the request, the latest intent: lines of their own
            return False
        line, short_form, span = out[k]
        if span[2] > 1:
            return bool(_FOLDED.match(line))
        return span[0] in talking and line == short_form

    def said(k: int) -> list:
        line, _, span = out[k]
        return [] if span[2] > 1 else [p for p in line.split(" · ")[1:] if p != 'user: "…"']

    return _runs_on_one_line(out, days, joinable, said,
                             lambda first, last, _n, parts: " · ".join([f"- {first}–{last}", *parts]) if parts else None,
                             JOINED_LINE_CHARS)


def _line_head(span: tuple) -> str:
    """How the body line of ``span`` (first turn, last turn, turns) starts: ``- turn_0007``, or
    for a run of turns on one line ``- turn_0011–turn_0014``."""
    return f"- {span[0]}" if span[0] == span[1] else f"- {span[0]}–{span[1]}"


def _dated(line: str, head: str, day: str) -> str:
    """``line`` (starting with ``head``) with its day after the head."""
    return f"{head} ({day}){line[len(head):]}" if line.startswith(head + " ") else line


def _after_left_out(summary: str, days: dict) -> str:
    """``summary`` with the day (``days``: line head -> day) on each turn line right after a note
    of turns left out, where it says none."""
    lines = summary.split("\n")
    for n in range(1, len(lines)):
        if lines[n - 1].startswith("… ") and lines[n].startswith("- "):
            head = lines[n].split(" · ", 1)[0]
            if days.get(head):
                lines[n] = _dated(lines[n], head, days[head])
    return "\n".join(lines)


def _shown_count(shown: str) -> int:
    """How many entries a fitted list line shows (its ``+N more`` aside)."""
    return len(_entries(shown.partition(": ")[2], "; ")[0])


def _first_whole(shown: str, line: str) -> bool:
    """Whether ``shown`` (``line`` fitted by :func:`_fit_block`) holds the line's first entry whole."""
    if not shown:
        return False
    head, _, rest = line.partition(": ")
    items, _ = _entries(rest, "; ")
    return not items or shown[len(head) + 2:].startswith(items[0])


def _left_out(first: str, last: str, turns: int, tiny: bool = False) -> str:
    """The line that counts the turns :func:`_squeeze` leaves out; in a summary of a few hundred
    tokens (``tiny``) without the command that shows them (``memcli show``, ``get`` and ``search``
    still do)."""
    span = first if first == last else f"{first}–{last}"
    said = f"… {turns} turn{'s' if turns != 1 else ''} ({span}) left out"
    return said if tiny else f"{said} (`memcli show AGENT --archive --turn ID`)"


def _fit_block(kind: str, text: str, room: int) -> str:
    """An aggregate line (or block) within ``room`` characters: a list keeps its first entries
    (the notes their last ones, the plan its items not done yet), whole, in their order, and says
    how many it leaves out; "" when nothing fits. A first entry that does not fit whole is clipped
    at a word, never inside its backquoted command, and kept only if the clip names something."""
    if len(text) + 1 <= room:
        return text
    if room < MIN_LINE_CHARS:
        return ""
    if kind == "subagents":
        return _fit_subagents(text, room)
    head, _, rest = text.partition(": ")
    sep = " → " if kind == "notes" else COMMITS_SEP if kind == "commits" else "; "
    items, counted = _entries(rest, sep)
    order = list(range(len(items)))
    if kind == "notes":
        order.reverse()   # the latest notes stay
    elif kind == "plan":   # what is left to do stays: the items done are the first to go
        order.sort(key=lambda i: items[i].startswith(_DONE_ITEMS))
    kept: list[int] = []
    used = len(head) + 2 + _MORE_ROOM
    for i in order:
        item = items[i]
        if used + len(item) + len(sep) > room:
            if not kept and room - used > 40:
                clipped = _clipped_entry(kind, item, room - used - 2)
                if clipped:
                    items[i] = clipped
                    kept.append(i)
            break
        kept.append(i)
        used += len(item) + len(sep)
    if not kept:
        return ""
    more = len(items) - len(kept) + counted
    return f"{head}: " + sep.join(items[i] for i in sorted(kept)) + (f"{sep}+{more} more" if more else "")


MIN_SUBAGENT_CHARS = 160   # a subagent's line clipped to fit, at least (in less, its line goes: counted)


def _fit_subagents(text: str, room: int) -> str:
    """The subagents block within ``room`` characters, each subagent on its own line: every line
    whole when they fit; else each line longer than an equal cap clipped to it
    (:func:`_clipped_subagent`; the cap as high as the room allows, the short lines whole), and
    when even :data:`MIN_SUBAGENT_CHARS` each is too much, the newest that fit so — the ones the
    work goes on from — and the others counted (``(+N earlier)``). The newest took all the room
    and left the others their first word ("task \"Create …\""), or no line."""
    head, *lines = text.split("\n")
    counted = _EARLIER.fullmatch(lines[0]) if lines else None
    if counted:
        lines.pop(0)
    earlier = int(counted[1]) if counted else 0
    budget = room - len(head) - 1 - 30   # (30: the "(+N earlier)" line)
    keep = used = 0   # the newest lines that fit at MIN_SUBAGENT_CHARS each at most
    for line in reversed(lines):
        used += min(len(line), MIN_SUBAGENT_CHARS) + 1
        if used > budget:
            break
        keep += 1
    chosen = lines[len(lines) - keep:]
    kept = chosen
    if sum(len(line) + 1 for line in chosen) > budget:
        cap, rest, left = MIN_SUBAGENT_CHARS, budget, len(chosen)   # the highest cap the budget holds:
        for size in sorted(len(line) + 1 for line in chosen):        # the short lines whole, the rest an equal share
            if size > rest // left:
                cap = max(cap, rest // left - 1)
                break
            rest, left = rest - size, left - 1
        for _ in range(4):   # (a clip may run a little over its cap: the cap comes down by as much)
            kept = [line if len(line) <= cap else _clipped_subagent(line, cap) for line in chosen]
            over = sum(len(line) + 1 for line in kept) - budget
            if over <= 0:
                break
            cap -= over // max(sum(1 for line in chosen if len(line) > cap), 1) + 1
        while kept and sum(len(line) + 1 for line in kept) > budget:
            kept.pop(0)
    earlier += len(lines) - len(kept)
    return "\n".join([head, *([f"(+{earlier} earlier)"] if earlier else []), *kept]) if kept else ""


def _clipped_subagent(line: str, limit: int) -> str:
    """A subagent's line (:meth:`_Subagent.line`) in about ``limit`` characters: its name whole,
    each of its parts (task, files changed, failure, conclusion) clipped to its share of the rest
    — the room a short part leaves goes to the others — so the conclusion, last on the line,
    stays; a quote keeps its closing mark, a failure its bracket and its command uncut. Its files
    changed go first: the summary's files line names every file a subagent changed too, and the
    room they took left the task its first word."""
    head, *parts = line.split(" · ")
    if len(line) <= limit or not parts:
        return clip(line, limit)
    if len(parts) > 1:
        parts = [part for part in parts if not part.startswith("changed: ")]
        if len(head) + sum(len(part) + 3 for part in parts) <= limit:
            return " · ".join([head, *parts])
    room = max(limit - len(head) - 3 * len(parts), 20 * len(parts))
    weights = [_PART_WEIGHTS.get(part.split(" ", 1)[0], 3) for part in parts]
    shares = {}
    for k in sorted(range(len(parts)), key=lambda k: len(parts[k]) / weights[k]):   # the short ones whole first
        left = sum(weights[j] for j in range(len(parts)) if j not in shares)
        shares[k] = min(len(parts[k]), room * weights[k] // left)
        room -= shares[k]
    return " · ".join([head, *(_clipped_part(part, shares[k]) for k, part in enumerate(parts))])


def _clipped_part(part: str, room: int) -> str:
    """One part of a subagent's line clipped to ``room`` characters (:func:`_clipped_subagent`)."""
    if len(part) <= room:
        return part
    quoted = _QUOTED_PART.fullmatch(part)
    if quoted:
        return f'{quoted[1]}"{clip(quoted[2], max(room - len(quoted[1]) - 2, 10))}"'
    failed = _FAILED_PART.fullmatch(part)
    if failed:   # the error says more than the command that met it
        return f"{failed[1]} (last: {clip(_EXIT_SAID.sub('', failed[2], 1), max(room - len(failed[1]) - 8, 10))})"
    if part.startswith("changed: "):   # whole paths, the first ones
        files, counted = part[len("changed: "):].split(", "), 0
        while len(files) > 1 and len(", ".join(files)) + 18 > room:
            files.pop()
            counted += 1
        return "changed: " + ", ".join(files) + (f", +{counted} more" if counted else "")
    clipped = _before_command(clip(part, room)) or " …"
    return clipped + ")" * (clipped.count("(") - clipped.count(")"))


def _before_command(clipped: str) -> str:
    """A clip that cut inside a backquoted command (`pytest -q …`) up to it, not into it ("" when
    nothing is left before it); another clip as it is."""
    if clipped.count("`") % 2:
        clipped = clipped[:clipped.rindex("`")].rstrip(",;:( ")
        return f"{clipped} …" if clipped else ""
    return clipped


_PART_WEIGHTS = {"concluded:": 4, "task": 1, "changed:": 1}   # a subagent part's share of a clipped line (a failure: 3)
_QUOTED_PART = re.compile(r'((?:task|concluded:) )"(.*)"', re.DOTALL)
_FAILED_PART = re.compile(r"(\d+ failed) \(last: `[^`]*`: (.*)\)", re.DOTALL)


def _clipped_entry(kind: str, item: str, room: int) -> str:
    """A list line's entry clipped at a word to ``room`` characters, still saying what it is, or
    "" when the clip names nothing (one word and "…": ``FAILED …``): never cut inside its
    backquoted command; a quoted note keeps its closing quote; a failure keeps its state — the
    end a reader acts on (``— passed later``, ``— still failing``) — its informative line is cut
    instead, and its bracket closed."""
    state = ""
    if kind == "failed":
        at = max(item.rfind(mark) for mark in _FAILURE_STATES)
        if at > 0:
            item, state = item[:at], item[at:]
            if len(state) > room // 3:   # "— fixed later (a later `…` passed)": the state alone
                state = state.split(" (", 1)[0]
    quoted = kind == "notes" and len(item) > 1 and item[0] == item[-1] == '"'
    if quoted:
        item = item[1:-1]
    clipped = _before_command(clip(item, room - len(state) - (2 if quoted else 0)))
    if not (" " in clipped[:-2] or "/" in clipped):   # (one word and "…" says nothing)
        # (an entry without its state reads as still failing: that state alone may go for the room)
        return _clipped_entry(kind, item, room) if state == _STILL_FAILING else ""
    if state and clipped.count("(") > clipped.count(")"):
        clipped += ")"
    return f'"{clipped}"' if quoted else clipped + state


NEXT_STEPS = 3   # the plan's steps still to do a squeezed summary makes room for first


def _open_plan_chars(plan: str) -> int:
    """The room :func:`_fit_block` needs to show the plan line ``plan`` with its next steps (its
    first :data:`NEXT_STEPS` items with a status, not done) and the count of the others; 0 when
    no step is left (an explanation, or an item without a status, is no step)."""
    head, _, rest = plan.partition(": ")
    items, _ = _entries(rest, "; ")
    left = [item for item in items if item.startswith("[") and not item.startswith(_DONE_ITEMS)][:NEXT_STEPS]
    return len(head) + 2 + _MORE_ROOM + sum(len(item) + 2 for item in left) if left else 0


def _entries(body: str, sep: str, nested: bool | None = None) -> tuple[list[str], int]:
    """The entries of a list line's ``body`` joined by ``sep``, and how many a ``+N more`` entry
    at either end stood for. A ``"; "`` list (or any, ``nested``) is split only outside brackets
    and backticks: a failure's ``(latest; before: earlier)``, a command's own ``;``, the files
    line's ``path (name, Name)`` stay in their entry."""
    if not (sep == "; " if nested is None else nested) or not any(c in body for c in "([`"):
        out = body.split(sep)
    else:
        out, start, first = [], 0, sep[0]
        for i, c, depth in _bracketed(body):
            if c == first and not depth and i >= start and body.startswith(sep, i):
                out.append(body[start:i])
                start = i + len(sep)
        out.append(body[start:])
    counted = 0
    for end in (-1, 0):
        more = _MORE.fullmatch(out[end]) if len(out) > 1 else None
        if more:
            counted += int(more[1])
            out.pop(end)
    return out, counted


_MORE = re.compile(r"\+(\d+) more")
_MORE_ROOM = 16   # what a fitted list line holds for its "; +N more"
MIN_LINE_CHARS = 60   # a fitted aggregate line's room at least (in less it is left out)


@lru_cache(maxsize=1)
def _counter():
    from memcli.snapshot.assemble import working_counter

    return working_counter()


FILL_TRIES = 5   # texts a summary is made again at most, to fill its budget


def _fill(text: str, budget: int, make) -> str:
    """``text`` made again (``make(chars_per_token)``) at the characters per token it turned out
    to have, so that it fills ``budget`` tokens (95% or more) and does not pass it:
    :data:`CHARS_PER_TOKEN` is a guess (paths and identifiers take fewer tokens than it says;
    hashes and redacted ids more). At most :data:`FILL_TRIES` times. The tries bracket the
    answer: the largest text that fits so far (``low``) and the smallest ratio whose text passed
    the budget (``high``). Under the budget only, the next try is made at the ratio the fitting
    text had; over it only, at the ratio the smallest text had, a little less (a text shorter than
    its limit shrinks only once the limit is under it); between the two, at the lower of where
    the tokens of both point and the passing one scaled down to the budget, when that is above
    the fitting one (the tokens a character adds grow with the size: the vocabulary that fills
    the room is token-dense, so a straight line from a text 24% under the budget lands over it
    again). A try that grows nothing, or shrinks nothing, ends it. The result is the largest text
    that fits; when none does, the smallest made (the compaction counts it and asks for less)."""
    count = _counter().count
    tokens = count(text)
    ratio = CHARS_PER_TOKEN
    fits = tokens <= budget
    best = (text, tokens) if fits else None      # the largest text that fits, its tokens
    low = ratio if fits else None                # the ratio it was made at
    high = None if fits else (ratio, tokens)     # the smallest ratio whose text passed the budget, its tokens
    smallest = (text, tokens)                    # of the texts that passed (used when none fits)
    aim = budget * 0.99
    for _ in range(FILL_TRIES):
        if best is not None and best[1] >= budget * 0.95:
            break
        if high is None:
            seen = len(best[0]) / best[1] * 0.98 if best[1] else 0.0
            if seen <= low * 1.02:
                break
        elif best is None:   # at the ratio the smallest text had (a text shorter than its limit shrinks
            # only once the limit is under it), and below the ratio that passed
            seen = min(len(smallest[0]) / smallest[1] * 0.97, high[0] * 0.97)
        else:
            seen = low + (high[0] - low) * (aim - best[1]) / (high[1] - best[1])
            scaled = high[0] * aim / high[1]
            if scaled > low * 1.005:
                seen = min(seen, scaled)
            if seen <= low * 1.005:
                break
        other = make(seen)
        more = count(other)
        if more > budget:
            if best is None and more >= smallest[1]:
                break   # no smaller: the text is as short as it gets (the header, every file)
            if high is None or seen < high[0]:
                high = (seen, more)
            if more < smallest[1]:
                smallest = (other, more)
        elif best is not None and len(other) <= len(best[0]):
            break   # no larger: the window has no more to say
        else:
            best, low = (other, more), seen
    return best[0] if best is not None else smallest[0]


def _with_budget(memory: MemoryContext | None, tokens: int) -> MemoryContext:
    """``memory`` with another summary budget, all else as it was (a field spelled out here
    again was once forgotten: ``target_given``)."""
    return dataclasses.replace(memory or MemoryContext(), summary_tokens=tokens)


VOCAB_HEAD = "Vocabulary: "   # (it said "(most used lately first)" too: 25 characters of a 600-character summary)
VOCAB_SHARE = 0.15           # of a squeezed summary's room, kept for the vocabulary
VOCAB_HALF_LIFE = 256        # traces: a use counts half as much this many traces later
VOCAB_FLOOR = 1 / 64         # of the undecayed weight: the project's core names keep a place
_DECAY = [2 ** (-d / VOCAB_HALF_LIFE) for d in range(VOCAB_HALF_LIFE * 16)]


def _needs(entries, total: int) -> list[float]:
    """How much each identifier (its vocabulary entry) will be needed after the window's ``total``
    traces: its uses, each halved every :data:`VOCAB_HALF_LIFE` traces since (the agent's working
    set at the end of the window weighs most), plus :data:`VOCAB_FLOOR` of all its uses."""
    decay, far, floor = _DECAY, len(_DECAY), VOCAB_FLOOR
    out = []
    for weight, index, uses in entries:
        distance = total - index
        if distance < 0:
            distance = 0
        out.append(weight * (decay[distance] if distance < far else 0.0) + floor * uses)
    return out


def _by_need(vocab: dict, total: int) -> list[str]:
    """The identifiers of ``vocab``, most needed after ``total`` traces first (:func:`_needs`; of
    equal need, in their order)."""
    needs = _needs(vocab.values(), total)
    names = list(vocab)
    return [names[i] for i in sorted(range(len(names)), key=needs.__getitem__, reverse=True)]


def vocabulary(vocab: dict, total: int, shown: str, room: int) -> str:
    """The identifiers of the window the summary does not show yet, most needed first
    (:func:`_needs`: used often, and lately), as one ``Vocabulary:`` line of at most ``room``
    characters (whole identifiers only)."""
    if room < 40 or not vocab:
        return ""
    head = VOCAB_HEAD
    out: list[str] = []
    listed: set[str] = set()
    held: set[str] = set()   # the shorter spellings of the names listed (:func:`_spellings`)
    size = len(head)
    for value in _by_need(vocab, total):
        if value in shown or value in held or not _is_identifier(value):
            continue
        if size + len(value) + 2 > room:
            if size > room - 8:
                break
            continue
        spellings = _spellings(value)
        shorter = [part for part in spellings if part in listed]
        if shorter:   # a longer spelling of names listed (src/a.py, then /repo/src/a.py): it takes their place
            size += len(value) - sum(len(name) + 2 for name in shorter) + 2
            place = min(out.index(name) for name in shorter)
            out = [name for name in out if name not in shorter]
            out.insert(place, value)
            listed = set(out)
            held = {part for name in out for part in _spellings(name)}
            continue
        out.append(value)
        listed.add(value)
        held.update(spellings)
        size += len(value) + 2
    return head + ", ".join(out) if out else ""


def _spellings(name: str) -> set[str]:
    """The shorter spellings of the same name a name holds: a path's trailing parts (``src/a.py``
    of ``/repo/src/a.py``; not its directories), a dotted name's leading and trailing parts
    (``ExUnit`` and ``Case`` of ``ExUnit.Case``) — not a file name's stem (``useTodos`` is no
    spelling of ``useTodos.ts``: a function is not its file)."""
    if "/" in name or _FILE_NAME.fullmatch(name):
        return {name[i + 1:] for i, c in enumerate(name) if c == "/" and i + 1 < len(name)}
    return {part for i, c in enumerate(name) if c == "." for part in (name[:i], name[i + 1:]) if part}


# --------------------------------------------------------------------------- a rollup's merge

# a summary's first line, as _text writes it (the full form, or a tiny summary's)
_SUMMARY_HEADER = re.compile(
    r"^(\d+) turns?(?: \(([^()\n]+)\)(?:, (.+?) → (.+?) UTC)?: (?:(\d+) traces?, )?|: )(\d+) tool calls?, (\d+) failed\.$")
_STEPS_ONLY = re.compile(r"^steps (\d+)–(\d+) of \d+ \(its ask stays in the active file\)$")
_STEPS_MERGED = re.compile(r"^(\d+) steps?, moved in (\d+) compactions?(?: \(its ask stays in the active file\))?$")
# the list lines: (kind, the heads its line starts with — as written now, then as earlier summaries
# said them —, the separator of its entries), in the order a summary shows them
_LIST_LINES = (
    ("files", (FILES_FACT_PREFIX, FILES_UNDER_HEAD), ", "), ("plan", (PLAN_HEAD, "Plan (latest): "), "; "),
    ("notes", ("Latest notes: ",), " → "), ("commands", (COMMANDS_HEAD,), "; "),
    ("commits", (COMMITS_HEAD,), COMMITS_SEP), ("failed", ("Failed: ",), "; "),
    ("unanswered", ("Never answered: ",), "; "), ("urls", ("URLs: ",), ", "),
    ("vocab", (VOCAB_HEAD, "Vocabulary (most used lately first): "), ", "))
_NEWEST_ONLY = frozenset({"plan", "notes"})   # a state, not a record: the newest summary's says it


def _entry_key(kind: str, entry: str) -> str:
    """What makes two entries of a list line one thing, the newer taking the older's place: a
    file by its path, a command's outcome by its commands, a failure by what failed."""
    if kind == "files":
        return entry.split(" (", 1)[0]
    if kind == "commands" and "`: " in entry:
        return entry.split("`: ", 1)[0]
    if kind == "failed" and " ×" in entry:
        return entry.split(" ×", 1)[0]
    return entry


_RELATIVE_PATH = re.compile(r"(?<![\w./~-])(?:[\w.-]+/)+[\w.-]+")   # src/a.py, not /repo/src/a.py


def files_under_directory(line: str, text: str) -> str:
    """A files line (``Files modified: /repo/src/a.py (f), /repo/b.py``) saying the project's
    directory once (``Files modified in /repo/: src/a.py (f), b.py``) when every path is under it
    and that is shorter; else as it was. The project's directory is the one ``text`` (the rest of
    the summary: a plan step, a test run) names a modified file from (``src/a.py``; the highest
    such): the paths stay as the agent's next calls name them, from there or whole. A condensed
    rollup says it so before its vocabulary goes; a full summary keeps the paths whole."""
    entries, counted = _entries(line[len(FILES_FACT_PREFIX):], ", ", nested=True)
    paths = [entry.partition(" (")[0] for entry in entries]
    if counted or len(paths) < 2 or not all(p.startswith("/") for p in paths):
        return line
    named = set(_RELATIVE_PATH.findall(text))
    roots = [path[:-len(rel)] for path in paths for rel in _spellings(path) if rel in named]
    roots = [root for root in roots
             if root.count("/") >= 3 and ": " not in root and all(path.startswith(root) for path in paths)]
    if not roots:
        return line
    directory = min(roots, key=len)
    shorter = FILES_UNDER_HEAD + directory + ": " + ", ".join(entry[len(directory):] for entry in entries)
    return shorter if len(shorter) < len(line) else line


def _merged_files(entries: list[list[str]]) -> str:
    """One files line of the files lines' entries (newest summary first, each newest file
    first): each file once, where it was newest, with every name touched in it."""
    names: dict[str, list[str]] = {}
    for part in entries:
        for entry in part:
            path, _, rest = entry.partition(" (")
            held = names.setdefault(path, [])
            if rest.endswith(")"):
                held.extend(n for n in rest[:-1].split(", ") if n not in held)
    paths, names = one_spelling(list(names), names)   # (one summary's shell spelled it short, another's edit whole)
    return FILES_FACT_PREFIX + ", ".join(f"{p} ({', '.join(names[p])})" if names.get(p) else p for p in paths)


def _moved_steps(part: str) -> tuple[int, int] | None:
    """(steps, compactions) a turn line's part says moved: ``steps 1–6 of 14 (its ask stays in the
    active file)`` (one compaction's), ``46 steps, moved in 7 compactions`` (a merge's); else None."""
    moved = _STEPS_ONLY.match(part)
    if moved:
        return int(moved[2]) - int(moved[1]) + 1, 1
    merged = _STEPS_MERGED.match(part)
    return (int(merged[1]), int(merged[2])) if merged else None


def _steps_folded(lines: list[str]) -> list[str]:
    """Turn lines with the lines of one turn's steps that moved in several compactions (``- turn_0002 ·
    steps 1–6 of 14 (its ask stays in the active file) · …``, each compaction counting the steps
    the file held then) as one line where the first was, saying how many moved in how many
    compactions, with the newest one's other parts (its tools, its last note); its ask "stays in
    the active file" only while no line of the turn moved whole."""
    steps: dict[str, list[tuple[int, int, list[str]]]] = {}   # turn -> (steps, compactions, other parts)
    whole: set[str] = set()
    for line in lines:
        if line.startswith("- turn"):
            head, _, rest = line.partition(" · ")
            first, _, others = rest.partition(" · ")
            moved = _moved_steps(first)
            if moved:
                steps.setdefault(head, []).append((*moved, others.split(" · ") if others else []))
            else:
                whole.add(head)
    def folded(head: str) -> str:
        parts = steps[head]
        n, k = sum(p[0] for p in parts), sum(p[1] for p in parts)
        stays = "" if head in whole else " (its ask stays in the active file)"
        return " · ".join([head, f"{n} step{'s' if n != 1 else ''}, moved in {k} compaction{'s' if k != 1 else ''}{stays}",
                           *parts[-1][2]])

    heads = {line.partition(" · ")[0] for line in lines if line.startswith("- turn")}
    out, done = [], set()
    for line in lines:
        head, _, rest = line.partition(" · ")
        left_out = _LEFT_OUT_TURN.match(line)
        if left_out and f"- {left_out[1]}" in heads:   # a turn an older summary left out, another one shows
            continue
        if head not in steps or len(steps[head]) < 2 and head not in whole:
            out.append(line)
        elif not _moved_steps(rest.partition(" · ")[0]):
            out.append(line)   # the turn's line with its ask: its steps moved before follow it
            if head not in done:
                done.add(head)
                out.append(folded(head))
        elif head not in done and head not in whole:
            done.add(head)
            out.append(folded(head))
    return out


_LEFT_OUT_TURN = re.compile(r"^… 1 turn \((\S+)\) left out")   # a squeezed summary's note of one turn left out
# a squeezed summary's note of the turns it left out (_left_out), or a condensed one's (condense)
_LEFT_OUT_NOTE = re.compile(r"^… \d+ turns? \((turn_\d+)(?:–(turn_\d+))?\) left out|^… \d+ turn lines? left out")


def _left_out_folded(lines: list[str]) -> list[str]:
    """``lines`` (a merge's body) with each run of notes counting turns left out as one: the
    summaries a hook wrote round after round each said theirs (a rollup of seven had four in a
    row, turn_0002 in three of them). Notes that name their turns become one over all of them
    (each turn once), :func:`_left_out`'s short form; a condensed summary's count of its turn
    lines left out (its turns not named) stays beside it, once."""
    out: list[str] = []
    run: list[re.Match] = []   # the notes in a row

    def flush() -> None:
        named = [m for m in run if m[1]]
        if len(run) > 1 and named:
            numbers = {n for m in named for n in range(turn_number(m[1]) or 0, (turn_number(m[2] or m[1]) or 0) + 1)}
            out.append(_left_out(format_turn(min(numbers)), format_turn(max(numbers)), len(numbers), tiny=True))
            out.extend(dict.fromkeys(m.string for m in run if not m[1]))
        else:
            out.extend(m.string for m in run)
        run.clear()

    for line in lines:
        note = _LEFT_OUT_NOTE.match(line)
        if note:
            run.append(note)
            continue
        flush()
        out.append(line)
    flush()
    return out


_BACKTICKED = re.compile(r"`([^`]+)`")


def _passed_since(entry: str, age: int, passed_by: dict[str, int]) -> str:
    """A failure entry of the summary ``age`` summaries back that says "still failing", as
    "passed later" when a newer summary's Commands line (passing runs only) shows each of its
    commands passing since, or "fixed later (a later `pytest -q` passed)" when it shows a run that
    covers each — read by the rule a window reads its own later runs by (another command's pass
    counts only when the line's status is its commands', :func:`runs_recorded`: ``pytest -q |
    tail`` or ``pytest --collect-only`` none; :func:`scope_covers`: the whole suite covers one
    file's tests). A command clipped in its label (``…``) covers nothing: what it ran is not all
    there."""
    if not entry.endswith(_STILL_FAILING):
        return entry
    commands, failure = _failing(entry)
    newer = [(p, scopes) for p, when in passed_by.items() if when < age and not p.endswith("…")
             for scopes in [[scope for scope, _ in runs_recorded(p, False)]] if scopes]
    fixed_by = []
    for command in commands:
        if passed_by.get(command, age) < age:   # its own run passed since (as a window says it of its own)
            fixed_by.append(command)
            continue
        scope = None if command.endswith("…") else run_scope(command)
        by = scope and next((p for p, scopes in newer if any(scope_covers(s, scope, failure) for s in scopes)), None)
        if not by:
            return entry
        fixed_by.append(by)
    if not fixed_by:
        return entry
    if fixed_by == commands:
        return entry[:-len(_STILL_FAILING)] + _PASSED_LATER
    return entry[:-len(_STILL_FAILING)] + f"{_FIXED_LATER} (a later `{fixed_by[-1]}` passed)"


def _failing(entry: str) -> tuple[list[str], str]:
    """The commands a failure entry names (backquoted, before its bracket) and its latest
    informative line (the bracket's first)."""
    label, _, said = entry.partition(" (")
    return _BACKTICKED.findall(label), said.rsplit(")", 1)[0].split("; before: ", 1)[0]


def summary_turns(text: str) -> int | None:
    """The turns an offline summary ``text`` says it stands for (its header), None when it is
    not one (a model's summary, a note)."""
    header = _SUMMARY_HEADER.match(text.split("\n", 1)[0])
    return int(header[1]) if header else None


def is_work_summary(text: str) -> bool:
    """Whether an offline summary's header counts tool calls (a summary of work, not of talk)."""
    header = _SUMMARY_HEADER.match(text.split("\n", 1)[0])
    return bool(header) and int(header[6]) > 0


def merge_summary_texts(texts: list[str], span: str, turns: int) -> str | None:
    """One summary of the offline summaries ``texts`` (oldest first; each as :class:`OfflineSummarizer`
    writes it) of ``turns`` turns (``span``), in the same form — so a rollup of rollups merges
    again: a header adding up their traces, tool calls and failures (from the first summary's
    start to the last one's end); every turn line, in order (each once); then one line of each
    list: every file modified once, at its newest place, with every name touched in it; the
    latest plan and the latest notes; each command's latest outcome; each failure's latest state
    (a newer summary's entry for what failed replaces the older's: "still failing" then "passed
    later" says "passed later"; a newer summary's passing run of it, or one covering it, makes it
    "passed later" or "fixed later": :func:`_passed_since`); the commits, URLs, calls never answered and vocabulary, newest
    first, each once. None when a text is not in that form (a model's summary): the rollup then
    keeps it as its own section. A rollup of 23 summaries of one session used to repeat the
    files line 23 times and left out the oldest summaries, the request among them."""
    headers = [_SUMMARY_HEADER.match(text.split("\n", 1)[0]) for text in texts]
    if len(texts) < 2 or not all(headers):
        return None
    # (a tiny summary's header says no traces: the sum is then unknown, and not said)
    traces = sum(int(h[5]) for h in headers) if all(h[5] for h in headers) else 0
    calls = sum(int(h[6]) for h in headers)
    failed = sum(int(h[7]) for h in headers)
    timed = [h for h in headers if h[3]]   # (a tiny summary's says no time either)
    start, end = (timed[0][3], timed[-1][4]) if timed else (None, None)
    if start and end and len(end) < len(start):   # (the last one's end on its own day: that day)
        end = timed[-1][3][:len(start) - len(end)] + end
    if start and end and end[:11] == start[:11] and end != "?":   # the same day: its date once (as _text says it)
        end = end[11:]
    when = f", {start} → {end} UTC" if start and end else ""
    header = (f"{turns} turn{'s' if turns != 1 else ''} ({span}){when}: "
              + (f"{traces} trace{'s' if traces != 1 else ''}, " if traces else "")
              + f"{calls} tool call{'s' if calls != 1 else ''}, {failed} failed.")
    body: dict[str, None] = {}
    subagents: list[list[str]] = []   # each summary's agent lines (in its order), newest summary first
    earlier_agents = 0   # the agents the summaries counted without their lines ("(+N earlier)")
    lists: dict[str, list[list[str]]] = {kind: [] for kind, *_ in _LIST_LINES}
    passed_by: dict[str, int] = {}   # a command whose latest outcome a summary said -> the newest such summary (0: newest)
    for age, text in enumerate(reversed(texts)):   # newest first: a list keeps an entry where it was newest
        lines = text.split("\n")[1:]
        in_subagents = False
        own_body: list[str] = []
        subagents.append([])
        for line in lines:
            if line == "Subagents:":
                in_subagents = True
                continue
            if in_subagents and line.startswith(("- ", "(+")):
                earlier = _EARLIER.fullmatch(line)
                if earlier:
                    earlier_agents += int(earlier[1])
                else:
                    subagents[-1].append(line)
                continue
            in_subagents = False
            for kind, heads, sep in _LIST_LINES:
                head = next((h for h in heads if line.startswith(h)), None)
                if head is not None:
                    rest = line[len(head):]
                    directory = ""
                    if head == FILES_UNDER_HEAD:   # (a condensed files line: its paths whole again)
                        directory, _, rest = rest.partition(": ")
                    entries = [directory + e for e in _entries(rest, sep, nested=True)[0] if e and not _MORE.fullmatch(e)]
                    lists[kind].append(entries)
                    if kind == "commands":
                        for entry in entries:
                            for command in _BACKTICKED.findall(entry.split("`: ", 1)[0] + "`"):
                                passed_by.setdefault(command, age)
                    elif kind == "failed":
                        entries[:] = [_passed_since(entry, age, passed_by) for entry in entries]
                    break
            else:
                own_body.append(line)
        body = {**dict.fromkeys(own_body), **body}   # (older first, each line once)
    said_by = [line for line in body if line.startswith(SPEAKERS_HEAD)]   # (under the header, each once)
    out = [header, *said_by, *_left_out_folded(_steps_folded([line for line in body if line and line not in said_by]))]
    by_agent: dict[str, str] = {}   # an agent's id -> its newest line, where that line was (oldest first)
    for line in (line for lines in reversed(subagents) for line in lines):
        key = line.split(" · ", 1)[0]   # ("- agent a1060 (turn_0002) · task …": one line per agent)
        by_agent.pop(key, None)
        by_agent[key] = line
    agents = list(by_agent.values())
    if agents:
        out += ["Subagents:", *([f"(+{earlier_agents} earlier)"] if earlier_agents else []), *agents]
    for kind, heads, sep in _LIST_LINES:
        parts = [p for p in lists[kind] if p]
        if not parts:
            continue
        if kind == "files":
            out.append(_merged_files(parts))
            continue
        if kind in _NEWEST_ONLY:
            out.append(heads[0] + sep.join(parts[0]))
            continue
        seen: dict[str, str] = {}
        times: dict[str, int] = {}   # a failure's count in each summary (their windows are apart): the sum
        for part in parts:
            for entry in part:
                key = _entry_key(kind, entry)
                seen.setdefault(key, entry)
                if kind == "failed":
                    counted = _FAILED_TIMES.match(entry.partition(" ×")[2])
                    times[key] = times.get(key, 0) + (int(counted[1]) if counted else 0)
        if times:   # the newest entry says how it ended, with every time it failed
            for key, entry in seen.items():
                head, mark, tail = entry.partition(" ×")
                counted = _FAILED_TIMES.match(tail)
                if mark and counted and times[key] > int(counted[1]):
                    seen[key] = f"{head} ×{times[key]}{tail[counted.end():]}"
        entries = list(seen.values())
        if kind == "unanswered":   # "N calls (a; b)" of each: their sum, and what each names
            said = [_UNANSWERED.match(entry) for entry in entries]
            if all(said):
                listed = [e for m in said for e in _entries(m[2].removesuffix(", …"), "; ")[0]]
                named = dict.fromkeys(listed)
                calls = sum(int(m[1]) for m in said) - (len(listed) - len(named))   # (a call two of them list: once)
                entries = [f"{calls} call{'s' if calls != 1 else ''} ({'; '.join(named)}"
                           f"{', …' if calls > len(named) else ''})"]
        out.append(heads[0] + sep.join(entries))
    return "\n".join(out)


_UNANSWERED = re.compile(r"^(\d+) calls? \((.*)\)$", re.DOTALL)
_FAILED_TIMES = re.compile(r"(\d+)(?= \(| —|,|$)")   # a failure entry's count, after its " ×"
_EARLIER = re.compile(r"\(\+(\d+) earlier\)")   # a Subagents block's count of the agents it has no line for


# what a condensed summary gives up, the first first: a list line's last entries, or a step of
# its own (_CONDENSE_STEPS: the subagents block, the files' directory, the counts of moved steps)
_CONDENSE_ORDER = ("notes", "urls", "commands", "subagents", "directory", "counts", "vocab", "commits", "unanswered",
                   "failed", "plan")
_AGENT_LINE = ("- agent", "- subagent")


def condense(summary: str, budget: int) -> str:
    """``summary`` within ``budget`` characters for a rollup, keeping its line breaks, its header,
    its asks and its files: turn lines shrink to their asks first (a turn of conversation only
    keeps its reply when the summary then fits, or when dropping the least telling sentences of
    the asks and replies quoted makes it fit: :func:`_said_condensed`); then list lines lose their
    last (least needed) entries — the notes, URLs, the commands' outcomes, the subagents' lines
    (the oldest agents', counted: :func:`_drop_agents`); the files line then says the project's
    directory once (:func:`files_under_directory`), the lines that only count a turn's moved
    steps under its ask go; then the vocabulary, calls never answered,
    failures, the plan lose theirs — and the files the names touched in them (the oldest files' first); then
    asks are clipped at a word boundary;
    then the oldest turn lines go, counted. Nothing is cut inside an identifier or a path."""
    if len(summary) <= budget:
        return summary
    asks_only = ("- ", "user:", "then user:", "steps ")
    # a turn of conversation only (no tools) keeps its reply, the other half of what was said,
    # when the summary then fits; else it shrinks to its asks too
    for kept in ((*asks_only, "assistant:"), asks_only):
        lines = summary.split("\n")
        for n, line in enumerate(lines):
            if line.startswith(("- turn", "- [")):
                parts = line.split(" · ")
                lines[n] = " · ".join(p for p in parts if p.startswith(asks_only if _did_work(parts) else kept)
                                      or (_said_part(p) or ("", False))[1]   # (a speaker's quote: Maya: "…")
                                      or p.endswith(FOLDED_TURNS)   # (a run of turns: its count)
                                      or _STEPS_MERGED.match(p))    # (a turn's steps a merge counted)
        if sum(len(line) + 1 for line in lines) - 1 <= budget:
            return "\n".join(lines)
        if kept is not asks_only and any(' · assistant: "' in line for line in lines):
            # replies kept: their least telling sentences, and those of their turns' asks, go first
            said = _said_condensed(lines, budget)
            if said is not None:
                return said
    excess = sum(len(line) + 1 for line in lines) - 1 - budget
    for kind in _CONDENSE_ORDER:
        step = _CONDENSE_STEPS.get(kind)
        if step is not None:
            excess = step(lines, excess)
            continue
        heads, sep = _LIST_HEADS[kind]
        for n, line in enumerate(lines):
            if excess <= 0:
                return "\n".join(line for line in lines if line)   # (a list emptied: its line gone)
            if line.startswith(heads):
                shorter = _drop_entries(line, heads[0], sep, excess)
                excess -= len(line) - len(shorter) + (1 if not shorter else 0)
                lines[n] = shorter
        lines = [line for line in lines if line]
    for n, line in enumerate(lines):
        if excess <= 0:
            break
        if line.startswith(_FILES_HEADS):   # the names touched go, the oldest files' first (the line is newest first)
            names = list(_CHANGES.finditer(line))
            shorter = line
            while names and excess > len(line) - len(shorter):
                last = names.pop()
                shorter = shorter[:last.start()] + shorter[last.end():]
            excess -= len(line) - len(shorter)
            lines[n] = shorter
    for n, line in enumerate(lines):
        if excess <= 0:
            break
        if line.startswith(("- turn", "- [")) and len(line) > 120:
            shorter = clip(line, max(120, len(line) - excess))
            excess -= len(line) - len(shorter)
            lines[n] = shorter
    if excess <= 0:
        return "\n".join(lines)
    turn_lines = [n for n, line in enumerate(lines) if line.startswith(("- turn", "- ["))]
    # the oldest turn lines go; in a summary of work, the first of them last: the request it started from
    # (work: the summary as written, its turn lines' tools not taken off yet)
    work = " · tools: " in summary or any(head in summary for head in _FILES_HEADS)
    # (the request: the first line that quotes an ask, else the first turn line)
    first = next((n for n in turn_lines if ' · user: "' in lines[n]),
                 next((n for n in turn_lines if lines[n].startswith(("- turn", "- ["))), None)) if work else None
    # lines that say nothing but their turn go first
    order = sorted((n for n in turn_lines if n != first), key=lambda n: " · " in lines[n]) + \
        ([first] if first is not None else [])
    gone: set[int] = set()
    for n in order:
        if excess <= -60:
            break
        excess -= len(lines[n]) + 1
        gone.add(n)
    out = []
    last = max(gone) if gone else -1
    for n, line in enumerate(lines):
        if n not in gone:
            out.append(line)
        elif n == last:
            out.append(f"… {len(gone)} turn line{'s' if len(gone) != 1 else ''} left out (`memcli show AGENT --archive`)")
    shorter, before = "\n".join(out), "\n".join(lines)
    # (a short turn line is not swapped for the longer note that counts it: that saves nothing)
    return shorter if len(shorter) < len(before) else before


def _say_directory_once(lines: list[str], excess: int) -> int:
    """The files line of ``lines`` (in place) saying the project's directory once
    (:func:`files_under_directory`) while ``excess`` is left; the excess left."""
    for n, line in enumerate(lines):
        if excess > 0 and line.startswith(FILES_FACT_PREFIX):
            shorter = files_under_directory(line, "\n".join(lines[:n] + lines[n + 1:]))
            excess -= len(line) - len(shorter)
            lines[n] = shorter
    return excess


def _drop_step_counts(lines: list[str], excess: int) -> int:
    """``lines`` (in place) without the turn lines that only count a turn's moved steps (``- turn_0001 ·
    34 steps, moved in 2 compactions``) under a line quoting its ask, the oldest first, while
    ``excess`` is left; the excess left."""
    asked = {line.partition(" · ")[0] for line in lines if ' · user: "' in line}
    for n, line in enumerate(lines):
        head, _, rest = line.partition(" · ")
        if excess > 0 and head in asked and _STEPS_MERGED.fullmatch(rest):
            excess -= len(line) + 1
            lines[n] = ""
    lines[:] = [line for line in lines if line]
    return excess


def _drop_agents(lines: list[str], excess: int) -> int:
    """The ``Subagents:`` block of ``lines`` (in place) within ``excess`` characters less, as a
    squeezed summary fits it (:func:`_fit_block`: the newest agents' lines that fit, the others
    counted in its ``(+N earlier)``; the block gone when none fits); the excess left."""
    if excess <= 0 or "Subagents:" not in lines:
        return excess
    start = lines.index("Subagents:")
    end = start + 1
    while end < len(lines) and (lines[end].startswith(_AGENT_LINE) or _EARLIER.fullmatch(lines[end])):
        end += 1
    block = "\n".join(lines[start:end])
    fitted = _fit_block("subagents", block, len(block) - excess)
    lines[start:end] = fitted.split("\n") if fitted else []
    return excess - (len(block) - len(fitted)) - (0 if fitted else 1)


_CONDENSE_STEPS = {"subagents": _drop_agents, "directory": _say_directory_once, "counts": _drop_step_counts}
_LIST_HEADS = {kind: (heads, sep) for kind, heads, sep in _LIST_LINES}


_SAID = re.compile(r'^((?:then )?user|assistant): "(.*)"$', re.DOTALL)


def _did_work(parts: list[str]) -> bool:
    """Whether a summary's turn line (its parts) is a turn with tool calls, not conversation only."""
    return any(part.startswith("tools:") for part in parts)


UNLIMITED = 1 << 30   # a :func:`condense_message` limit every message fits: only the floor leaves sentences out


def _said_condensed(lines: list[str], budget: int) -> str | None:
    """``lines`` (a summary's, its turn lines quoting what was said) within ``budget`` characters
    by their least telling sentences (:func:`sentence_floor` over the asks and replies quoted on
    the lines of turns of conversation only — those with tool calls stay as they are —, ranked by
    their rarity among them): an ask keeps its most telling sentence when it names something
    (:func:`_ask_keep`; "…" when none is left), a reply may go whole. None when even all that may go does not make it fit."""
    quoted: dict[tuple[int, int], tuple[str, bool]] = {}   # (line, part) -> (text, whether it is an ask)
    split = {}
    for n, line in enumerate(lines):
        if line.startswith(("- turn", "- [")):
            parts = line.split(" · ")
            if _did_work(parts):
                continue
            split[n] = parts
            for k, part in enumerate(parts):
                said = _said_part(part)
                if said:
                    quoted[n, k] = said   # (text, whether it is an ask)
    if not quoted:
        return None
    rarity = Rarity([text for text, _ in quoted.values()])

    def shown(floor: float) -> str:
        out = list(lines)
        for n, parts in split.items():
            new = []
            run = "–" in parts[0]   # a run of turns on one line (_joined_talk): an ask condensed away is left out
            for k, part in enumerate(parts):
                if (n, k) in quoted:
                    text, ask = quoted[n, k]
                    text = condense_message(text, UNLIMITED, rarity, floor, keep=ask and _ask_keep(True, text)) \
                        or ("…" if ask and not run else "")
                    if not text:
                        continue
                    part = part[:part.index('"') + 1] + text + '"'
                new.append(part)
            out[n] = " · ".join(new)
        spans = [_span_of(line) for line in out]   # runs of turns that say nothing any more: one line
        return "\n".join(line for line, *_ in _fold_emptied([(line, line, span) for line, span in zip(out, spans)],
                                                            [None] * len(out))[0])

    messages = [(text, ask and _ask_keep(True, text), UNLIMITED, -1 if ask else 16) for text, ask in quoted.values()]
    excess = sum(len(line) + 1 for line in lines) - 1 - budget
    floor = sentence_floor(messages, rarity, excess, lambda value: len(shown(value)) <= budget)
    text = shown(floor)
    return text if len(text) <= budget else None


def _drop_entries(line: str, head: str, sep: str, excess: int) -> str:
    """``line`` (a line of the list ``head`` — its head, then entries joined by ``sep``) without
    its last entries, at least ``excess`` characters shorter if it can be: "" when no entry would
    be left."""
    body = line[line.index(": ") + 2:]   # (every head's first ": " ends it)
    prefix = line[:len(line) - len(body)]
    entries, counted = _entries(body, sep)
    n = len(entries)
    # the plan's next step, the newest commit, the latest failure still open (the resolved need nothing)
    least = 1 if head in (PLAN_HEAD, COMMITS_HEAD) or head == "Failed: " and any(
        not _RESOLVED.search(entry) for entry in entries) else 0
    while len(entries) > least and len(line) - len(prefix + sep.join(entries)) - 12 < excess:
        if head == "Latest notes: ":   # the notes keep their latest
            entries.pop(0)
        elif head in (PLAN_HEAD, "Failed: "):   # the last step done, the oldest failure resolved go first
            done = [i for i, entry in enumerate(entries) if (entry.startswith(_DONE_ITEMS) if head == PLAN_HEAD
                                                             else _RESOLVED.search(entry))]
            entries.pop(done[-1] if done else -1)
        else:
            entries.pop()
    if len(entries) == n:
        return line
    if not entries:
        return ""
    more = f"+{n - len(entries) + counted} more"
    if head == "Latest notes: ":
        return f"{prefix}{more}{sep}{sep.join(entries)}"
    return f"{prefix}{sep.join(entries)}{sep}{more}"
