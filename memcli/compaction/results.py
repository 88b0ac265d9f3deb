"""Old tool results summarized once, expanded on demand (``memcli summarize-results``): the
"microcompact" tier of docs/design.md §4, between clipping and whole-turn summaries.

A result is **selected** when it is in the active file, answered, at least ``min_chars`` long, of a
named tool (``tools``; every tool when none is named), more than ``older_than`` turns old (the
newest turn is 0 turns old), and not summarized before. Each selected result gets one summary,
stored through the store (:mod:`memcli.store.result_summaries`) keyed by its trace id; the trace
never changes, so ``memcli get ID`` still gives the original byte for byte.

**The offline summary** keeps what a reader of that tool's output needs, by the kind of tool
(:func:`result_kind`: the tool's name and arguments):

* ``command`` (a shell / bash / run / exec tool, or arguments with ``command``/``cmd``): the
  command, its exit status, the informative error line, the error and failing-test lines, and
  the last lines;
* ``read`` (read / view / cat / open of a ``path``): the file's outline — definitions (``def``,
  ``class``, ``function``, ``fn``, ``func``, ``interface``, ``type`` ...) and markdown headings
  with their line numbers — and the lines around the identifiers the agent used *after* the
  result that the file names in few places (so the function it went on to edit survives);
* ``search`` (grep / glob / find / search / rg): the matched paths with how many hits each;
* ``other``: the first and last lines.

Then, for every kind, the identifiers the agent went on to use that the result holds and the lines
above left out (``names used later:``, in order of appearance, within the summary's size).

Every summary starts with a bracketed header naming the tool and the original's size. A summary
is **valid** when it is not empty, not an error message or a refusal (the one check of it,
:func:`memcli.compaction.summarizer.reads_like_error`), and shorter than the result; an invalid
one is not stored (the result stays as it is, and is reported).

**With a model** (``model``, any LiteLLM model), each result is one request whose prompt names the
tool, its arguments and what the agent was doing (the latest ask and the agent's last note
before the call), with the offline summary as a checklist; ``max_cost`` refuses before the first
request when the estimate is above it (or LiteLLM has no price). The run's spending is one ledger
record (``kind: "result-summaries"``), so ``stats`` counts it with the compactions'; a line of the
ledger that is not a record refuses the run before any request, dry run alike
(:func:`memcli.store.ledger.check_ledger`), and so does a line of ``result_summaries.jsonl`` that
is not a summary, model or not (:func:`memcli.store.result_summaries.check_result_summaries`).
"""

from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Iterable

from memcli.compaction.summarizer import reads_like_error
from memcli.errors import CompactionError, UsageError
from memcli.ids import new_id
from memcli.messages import json_text
from memcli.models import RawTrace
from memcli.store.agent import AgentStore

DEFAULT_MIN_CHARS = 4_000
MAX_SUMMARY_CHARS = 3_000
ANSWER_TOKENS = 600     # a model's answer is capped at this: the cost estimate is a bound
SUMMARIZER_OFFLINE = "offline"

_COMMAND_TOOLS = re.compile(r"bash|shell|terminal|exec|run_command|run_terminal|command|cmd|powershell|local_shell", re.I)
_READ_TOOLS = re.compile(r"read|view|cat|open_file|get_file|file_content", re.I)
_SEARCH_TOOLS = re.compile(r"grep|glob|search|find|rg\b|ripgrep|list_files|ls\b", re.I)
_DEFINITION = re.compile(r"^\s*(?:export\s+)?(?:async\s+)?(?:pub(?:\([^)]*\))?\s+)?"
                         r"(def|defp|defmodule|defmacro|class|function|fn|func|interface|type|struct|enum|impl|trait|"
                         r"module|const|let|var|public|private|protected|static|describe|it|test)\b\s*[\w$(\"']")
# a numbered listing (Claude Code's Read: "    12→text", cat -n: "    12\ttext"): its own line numbers
_NUMBERED = re.compile(r"^\s*(\d+)(?:→|\t)(.*)$")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+\S")
_ERROR_LINE = re.compile(r"error|exception|traceback|failed|failure|fatal|panic|assert|denied|not found|cannot|"
                         r"undefined|refused|timed? ?out", re.I)
_FAILING_TEST = re.compile(r"^(?:FAILED|FAIL|ERROR)\b|::\w+.*\b(?:FAILED|ERROR)\b|^\s*✗|^not ok\b|--- FAIL:")
_EXIT = re.compile(r"(?:exit(?:ed)?(?: with)?(?: status| code)?|return code|exit_code)[:= ]+(-?\d+)", re.I)
_PATH_AT_LINE = re.compile(r"^(?:\./)?([\w.\-/@+]+\.[\w]{1,8}|[\w.\-/@+]+/[\w.\-/@+]*)(?::\d+)?(?::|\s|$)")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{3,}")


@dataclass
class ResultSummary:
    """One result's summary (stored, or that would be with ``dry_run``)."""

    trace_id: str
    tool_name: str
    kind: str
    chars: int
    summary: str
    turn_id: str

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class SummarizeResultsReport:
    """What ``memcli summarize-results`` did: ``summarized`` (stored, or would be with
    ``dry_run``), ``skipped_existing`` (summarized before), ``failed`` (trace id -> why: not stored),
    the model's spending (``llm``: the ledger's object, None offline) and ``estimate`` (a model's,
    before sending)."""

    agent_id: str
    summarizer: str
    dry_run: bool
    summarized: list = field(default_factory=list)
    skipped_existing: int = 0
    failed: dict = field(default_factory=dict)
    chars_before: int = 0
    chars_after: int = 0
    llm: dict | None = None
    estimate: dict | None = None

    def to_dict(self) -> dict:
        data = asdict(self)
        data["summarized"] = [s.to_dict() if hasattr(s, "to_dict") else s for s in self.summarized]
        return data

    def describe(self) -> str:
        verb = "would summarize" if self.dry_run else "summarized"
        line = (f"{self.agent_id}: {verb} {len(self.summarized)} tool result{'s' if len(self.summarized) != 1 else ''} "
                f"({self.chars_before:,} → {self.chars_after:,} characters, {self.summarizer})")
        if self.skipped_existing:
            line += f"; {self.skipped_existing} already summarized"
        if self.failed:
            line += f"; {len(self.failed)} failed"
        if self.llm:
            cost = self.llm.get("cost_usd")
            line += (f"; model {self.llm.get('input_tokens', 0):,} in / {self.llm.get('output_tokens', 0):,} out, "
                     + ("price unknown" if cost is None else f"${cost:.4f}"))
        return line


# --------------------------------------------------------------------------- the offline summary

def result_kind(tool_name: str | None, args) -> str:
    """``command``, ``read``, ``search`` or ``other`` (module docstring)."""
    name = tool_name or ""
    keys = set(args) if isinstance(args, dict) else set()
    if _COMMAND_TOOLS.search(name) or keys & {"command", "cmd"}:
        return "command"
    if _SEARCH_TOOLS.search(name) or keys & {"pattern", "query", "regex", "glob"}:
        return "search"
    if _READ_TOOLS.search(name) or keys & {"path", "file_path", "filename", "file"}:
        return "read"
    return "other"


def _arg(args, *names: str) -> str:
    if isinstance(args, dict):
        for name in names:
            value = args.get(name)
            if isinstance(value, str) and value.strip():
                return value.strip()
            if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
                return " ".join(value)
    return ""


def _lines(text: str) -> list[str]:
    return text.splitlines()


def _clip_line(line: str, limit: int = 240) -> str:
    line = line.rstrip()
    return line if len(line) <= limit else line[:limit] + "…"


def _command_summary(text: str, error: str | None, args) -> list[str]:
    from memcli.compaction.offline import informative_line

    lines = _lines(text)
    out = []
    command = _arg(args, "command", "cmd", "script", "input")
    if command:
        out.append(f"command: {_clip_line(command, 300)}")
    status = None
    for source in (error or "", text[-2000:]):
        m = _EXIT.search(source)
        if m:
            status = m.group(1)
            break
    if status is not None:
        out.append(f"exit status: {status}")
    elif error:
        out.append(f"error: {_clip_line(error)}")
    key = informative_line("\n".join(t for t in (error or "", text) if t)) if (error or _ERROR_LINE.search(text)) else ""
    if key:
        out.append(f"key line: {_clip_line(key)}")
    failing = [_clip_line(line) for line in lines if _FAILING_TEST.search(line)]
    if failing:
        out.append(f"failing tests ({len(failing)}):")
        out += [f"  {line}" for line in dict.fromkeys(failing).keys()][:15]
    errors = [_clip_line(line) for line in lines if _ERROR_LINE.search(line) and not _FAILING_TEST.search(line)]
    errors = list(dict.fromkeys(e for e in errors if e.strip() and e != key))
    if errors:
        out.append(f"error lines ({len(errors)}):")
        out += [f"  {line}" for line in errors[:12]]
    tail = [_clip_line(line) for line in lines if line.strip()][-8:]
    if tail:
        out.append("last lines:")
        out += [f"  {line}" for line in tail]
    return out


def _read_summary(text: str, args, later: set[str]) -> list[str]:
    raw = _lines(text)
    numbered = [_NUMBERED.match(line) for line in raw]
    if raw and sum(1 for m in numbered if m) * 2 >= len(raw):       # a numbered listing: its numbers
        lines = [(int(m.group(1)), m.group(2)) if m else (i + 1, line) for i, (m, line) in enumerate(zip(numbered, raw))]
    else:
        lines = [(i + 1, line) for i, line in enumerate(raw)]
    out = []
    path = _arg(args, "path", "file_path", "filename", "file", "target_file")
    if path:
        out.append(f"file: {path} ({len(lines):,} lines)")
    outline = [(n, line) for n, line in lines if _DEFINITION.match(line) or _HEADING.match(line)]
    if outline:
        out.append(f"outline ({len(outline)}):")
        out += [f"  L{n}: {_clip_line(line.strip(), 160)}" for n, line in outline[:60]]
        if len(outline) > 60:
            out.append(f"  … {len(outline) - 60} more definitions")
    if later:
        # the identifiers the agent used later that this result names in few places: the lines it was after
        where: dict[str, list[int]] = {}
        for i, (_, line) in enumerate(lines):
            for name in set(_IDENTIFIER.findall(line)) & later:
                where.setdefault(name, []).append(i)
        wanted = sorted({i for spots in where.values() if len(spots) <= 3 for i in spots})
        shown: set[int] = {i for i, (n, line) in enumerate(lines) if (n, line) in set(outline)}
        blocks = []
        for i in wanted:
            if len(blocks) >= 12:
                break
            span = [j for j in range(max(0, i - 1), min(len(lines), i + 2)) if j not in shown]
            if not span:
                continue
            shown.update(span)
            blocks.append("\n".join(f"  L{lines[j][0]}: {_clip_line(lines[j][1], 200)}" for j in span))
        if blocks:
            out.append("lines the agent used later:")
            out += blocks
    return out


def _search_summary(text: str, args) -> list[str]:
    out = []
    pattern = _arg(args, "pattern", "query", "regex", "glob", "q", "command")
    if pattern:
        out.append(f"pattern: {_clip_line(pattern, 200)}")
    hits: Counter = Counter()
    for line in _lines(text):
        m = _PATH_AT_LINE.match(line.strip())
        if m:
            hits[m.group(1)] += 1
    if hits:
        out.append(f"matches in {len(hits)} path{'s' if len(hits) != 1 else ''}:")
        out += [f"  {path}" + (f" ({n})" if n > 1 else "") for path, n in hits.most_common(60)]
        if len(hits) > 60:
            out.append(f"  … {len(hits) - 60} more paths")
    return out


def _other_summary(text: str) -> list[str]:
    lines = [line for line in _lines(text) if line.strip()]
    if len(lines) <= 18:
        return [_clip_line(line) for line in lines]
    return ([_clip_line(line) for line in lines[:12]] + [f"… {len(lines) - 18:,} lines …"]
            + [_clip_line(line) for line in lines[-6:]])


def offline_result_summary(tool_name: str | None, args, text: str, error: str | None = None,
                           later: Iterable[str] = ()) -> str:
    """The offline summary of one result (module docstring); ``later``: identifiers the agent
    used after it."""
    kind = result_kind(tool_name, args)
    later = set(later)
    header = f"[summary of a {tool_name or 'tool'} result ({kind}), {len(text):,} characters]"
    if kind == "command":
        body = _command_summary(text, error, args)
    elif kind == "read":
        body = _read_summary(text, args, later)
        if len(body) <= 1:
            body += _other_summary(text)
    elif kind == "search":
        body = _search_summary(text, args) or _other_summary(text)
    else:
        body = _other_summary(text)
    summary = "\n".join([header, *body])
    if later:     # the names the agent went on to use that the lines above left out, in order of appearance
        present = set(_IDENTIFIER.findall(summary))
        missing = [n for n in dict.fromkeys(_IDENTIFIER.findall(text)) if n in later and n not in present]
        line, room = [], max(0, MAX_SUMMARY_CHARS - len(summary) - 40)
        for name in missing:
            if sum(len(n) + 2 for n in line) + len(name) > min(room, 1_200):
                break
            line.append(name)
        if line:
            summary += "\nnames used later: " + ", ".join(line)
    if len(summary) > MAX_SUMMARY_CHARS:
        summary = summary[:MAX_SUMMARY_CHARS].rsplit("\n", 1)[0] + "\n…"
    return summary


def valid_summary(summary: str | None, original: str) -> str | None:
    """Why ``summary`` must not be stored, or None when it may."""
    if summary is None or not summary.strip():
        return "empty summary"
    if len(summary) >= len(original):
        return f"the summary ({len(summary):,} characters) is not shorter than the result ({len(original):,})"
    if reads_like_error(summary.strip()):
        return "the answer is an error or a refusal, not a summary"
    return None


# --------------------------------------------------------------------------- selection

@dataclass
class _Candidate:
    call: RawTrace | None
    result: RawTrace
    text: str
    age: int
    context: str          # the latest ask and the agent's last note before the call
    later: set


def _select(store: AgentStore, *, tools: set[str], older_than: int, min_chars: int, done: set[str]) -> tuple[list, int]:
    from memcli.tool_interactions import iter_tool_pairs

    traces = [s.trace for s in store.iter_traces()]
    turn_order = list(dict.fromkeys(t.turn_id for t in traces))
    age_of = {turn: len(turn_order) - 1 - i for i, turn in enumerate(turn_order)}
    position = {t.id: i for i, t in enumerate(traces)}
    # identifiers the agent used from each position on (assistant notes and call arguments)
    used_after: list[set] = [set() for _ in range(len(traces) + 1)]
    for i in range(len(traces) - 1, -1, -1):
        t = traces[i]
        used = used_after[i + 1]
        if t.trace_type == "assistant" and t.content:
            used = used | set(_IDENTIFIER.findall(t.content))
        elif t.trace_type == "tool_call" and t.tool_args:
            used = used | set(_IDENTIFIER.findall(json_text(t.tool_args)))
        used_after[i] = used
    candidates, existing = [], 0
    for pair in iter_tool_pairs(traces, ordered=False):
        result = pair.result
        if result is None or pair.call is None:
            continue
        name = pair.interaction.tool_name or ""
        if tools and name not in tools:
            continue
        if age_of.get(result.turn_id, 0) <= older_than:
            continue
        text = result.tool_result if isinstance(result.tool_result, str) else json_text(result.tool_result)
        if len(text) < min_chars:
            continue
        if result.id in done:
            existing += 1
            continue
        at = position[pair.call.id]
        ask = note = ""
        for t in reversed(traces[:at]):
            if not note and t.trace_type == "assistant" and t.content:
                note = t.content
            if t.trace_type == "user" and not t.is_context and t.content:
                ask = t.content
                break
        context = "\n".join(x for x in (f"the user asked: {ask[:1000]}" if ask else "",
                                        f"the agent said: {note[:1000]}" if note else "") if x)
        candidates.append(_Candidate(pair.call, result, text, age_of.get(result.turn_id, 0), context,
                                     used_after[position[result.id] + 1]))
    return candidates, existing


# --------------------------------------------------------------------------- with a model

SYSTEM_PROMPT = """You summarize one tool result for an AI coding agent's memory. The agent will see your summary
instead of the result, and can ask for the original by id. Keep what the agent will need next:
for a command, its exit status, the error and failing-test lines, and the last lines that matter;
for a file read, its outline (definitions and headings with line numbers) and the parts the agent
was after; for a search, the matched paths. Keep identifiers, paths, numbers and error messages
exactly as written. Plain text, no preamble, at most 300 words."""


def _model_messages(candidate: _Candidate, offline: str, limit: int = 24_000) -> list[dict]:
    text = candidate.text
    if len(text) > limit:
        text = text[: limit * 3 // 4] + f"\n[… {len(text) - limit:,} characters left out …]\n" + text[-limit // 4:]
    call = candidate.call
    user = (f"Tool: {call.tool_name if call else '?'}\nArguments: {json_text(call.tool_args) if call and call.tool_args else '{}'}\n"
            + (f"What the agent was doing:\n{candidate.context}\n" if candidate.context else "")
            + (f"Error: {candidate.result.tool_error}\n" if candidate.result.tool_error else "")
            + f"\nChecklist (an extractive summary; keep what matters of it):\n{offline}\n"
            + f"\n<result chars=\"{len(candidate.text)}\">\n{text}\n</result>\n\nWrite the summary now.")
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def _offline(candidate: _Candidate) -> str:
    call, result = candidate.call, candidate.result
    return offline_result_summary(call.tool_name if call else result.tool_name, call.tool_args if call else None,
                                  candidate.text, result.tool_error, candidate.later)


def summarize_results(memory_dir, agent_id: str, *, tool: str | Iterable[str] | None = None, older_than: int = 0,
                      min_chars: int = DEFAULT_MIN_CHARS, model: str | None = None, api_base: str | None = None,
                      api_key: str | None = None, api_key_env: str | None = None, timeout: float = 120.0,
                      retries: int = 2, max_cost: float | None = None, dry_run: bool = False) -> SummarizeResultsReport:
    """Summarize the selected tool results of ``agent_id`` once each (module docstring).

    Raises AgentNotFoundError, UsageError (bad option), CompactionError (``max_cost`` exceeded or
    unbounded; nothing sent or written), CorruptStoreError (a bad line of the ledger or of the
    summaries; nothing sent or written). A model failure on one result is reported in ``failed``
    and the others are still summarized."""
    from memcli.store.ledger import check_ledger
    from memcli.store.result_summaries import append_result_summaries, check_result_summaries

    if older_than < 0:
        raise UsageError("{older_than} must be 0 or more turns", param="older_than")
    if min_chars < 1:
        raise UsageError("{min_chars} must be at least 1", param="min_chars")
    if max_cost is not None and not max_cost >= 0:
        raise UsageError("{max_cost} must be 0 or more (US dollars)", param="max_cost")
    tools = {tool} if isinstance(tool, str) else set(tool or ())
    store = AgentStore(memory_dir, agent_id)
    store.require()
    # it appends there: a bad line refuses before anything is selected, requested or written, dry run alike
    done = set(check_result_summaries(store.paths.result_summaries, store.agent_id, "summarize-results"))
    candidates, existing = _select(store, tools=tools, older_than=older_than, min_chars=min_chars, done=done)
    report = SummarizeResultsReport(agent_id, model or SUMMARIZER_OFFLINE, dry_run, skipped_existing=existing)
    offlines = [_offline(c) for c in candidates]     # the offline summary, or the model's checklist
    summarizer = None
    if model:
        from memcli.compaction.llm import LiteLLMSummarizer
        from memcli.tokens import import_litellm

        summarizer = LiteLLMSummarizer(model, api_base=api_base, timeout=timeout, retries=retries,
                                       api_key=api_key, api_key_env=api_key_env)
        if candidates:
            # a model's spending goes to the ledger: a bad line of it refuses before any request, dry run alike
            check_ledger(store.paths.ledger, store.agent_id, "summarize-results")
            summarizer.preflight()
            litellm = import_litellm()
            input_tokens = sum(summarizer.counter.count("\n".join(m["content"] for m in _model_messages(c, offline)))
                               for c, offline in zip(candidates, offlines))   # the requests as sent, checklist included
            output_tokens = ANSWER_TOKENS * len(candidates)
            cost = summarizer.price(litellm, input_tokens, output_tokens)
            report.estimate = {"model": model, "requests": len(candidates), "input_tokens": input_tokens,
                               "max_output_tokens": output_tokens, "cost_usd": cost}
            if max_cost is not None and not dry_run:
                if cost is None:
                    raise CompactionError(f"{{max_cost}} {max_cost:g}: LiteLLM has no price for {model}, so the cost of "
                                          f"{len(candidates)} requests cannot be bounded; nothing was sent or written",
                                          param="max_cost")
                if cost > max_cost:
                    raise CompactionError(f"{{max_cost}} {max_cost:g}: summarizing {len(candidates)} results with {model} "
                                          f"would cost up to ${cost:.4f} ({input_tokens:,} input tokens); nothing was "
                                          "sent or written", param="max_cost")
    records = []
    for candidate, offline in zip(candidates, offlines):
        call, result = candidate.call, candidate.result
        summary = offline
        if summarizer is not None and not dry_run:
            try:
                summary = summarizer.ask(_model_messages(candidate, offline), max_tokens=ANSWER_TOKENS)
            except Exception as exc:     # one failure: reported, the others still summarized
                report.failed[result.id] = f"{type(exc).__name__}: {str(exc)[:200]}"
                continue
            why = valid_summary(summary, candidate.text)     # the model's own answer: not hidden behind the header
            if why is None:
                summary = f"[summary of a {call.tool_name or 'tool'} result by {model}, {len(candidate.text):,} characters]\n{summary.strip()}"
        else:
            why = None
        why = why or valid_summary(summary, candidate.text)
        if why is not None:
            report.failed[result.id] = why
            continue
        kind = result_kind(call.tool_name if call else None, call.tool_args if call else None)
        report.summarized.append(ResultSummary(result.id, call.tool_name or "", kind, len(candidate.text), summary,
                                               result.turn_id))
        report.chars_before += len(candidate.text)
        report.chars_after += len(summary)
        records.append({"id": new_id("rsum"), "ts": time.time(), "trace_id": result.id,
                        "tool_name": call.tool_name or "", "kind": kind, "chars": len(candidate.text),
                        "summary": summary, "summarizer": model or SUMMARIZER_OFFLINE})
    if summarizer is not None and summarizer.spent.requests:
        from memcli.compaction.llm import Spending

        report.llm = summarizer.spent.since(Spending(), model)   # the ledger's ``llm``, as a compaction's
    ledger = None
    if report.llm is not None:      # spent is spent: recorded even when no summary of the run was stored
        ledger = {"kind": "result-summaries", "id": new_id("rsr"), "ts": time.time(), "results": len(records),
                  "llm": report.llm}
    if dry_run or not (records or ledger):
        return report
    with store.writer() as session:
        added = append_result_summaries(session, records, ledger)
    if len(added) < len(records):       # another run stored some first: they are its, not ours
        late = [s for s in report.summarized if s.trace_id not in added]
        report.summarized = [s for s in report.summarized if s.trace_id in added]
        report.skipped_existing += len(late)
        report.chars_before -= sum(s.chars for s in late)
        report.chars_after -= sum(len(s.summary) for s in late)
    return report
