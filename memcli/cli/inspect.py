"""Read commands: ``agents``, ``stats``, ``turns``, ``show``, ``tools``, ``get``, ``memory``
(and ``doctor``, registered from :mod:`memcli.cli.doctor`).

Each resolves its options, calls one function of :mod:`memcli.inspect`, and hands the result to
the shared output layer (:mod:`memcli.cli.output`): a human view, ``--json`` or ``--ndjson``.
The human views are defined here; the library does not know about them.
"""

from __future__ import annotations

import re
from typing import List, Optional

import typer

from memcli.cli.output import (
    Column,
    HumanView,
    Output,
    fmt_age,
    fmt_bytes,
    fmt_int,
    fmt_ts,
    fmt_usd,
    one_line,
    output_options,
)
from memcli.sizes import counted

AGENT = typer.Argument(..., help="Agent id.")
ARCHIVE_HELP = "Include archived (compacted) traces, oldest first."
SINCE_HELP = "Only from this time on: ISO-8601 (UTC unless an offset is given) or epoch seconds."
UNTIL_HELP = "Only up to this time (inclusive): ISO-8601 or epoch seconds."
TAG_HELP = "Only traces with this tag (repeatable: any of them)."


def _agent(ctx: typer.Context, agent: str):
    """The API's :class:`memcli.api.Agent` the command works on."""
    from memcli.api import Memory

    return Memory(ctx.obj).agent(agent)


def _json_text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    import orjson

    return orjson.dumps(value).decode()


# ---------------------------------------------------------------------------- agents

AGENT_COLUMNS = [
    Column("agent", "agent", max_width=40, id_width=12),
    Column("active", "active", align="right"),
    Column("archived", "archive", align="right"),
    Column("turns", "turns", align="right"),
    Column("episodic", "episodic", align="right", drop=3),
    Column("semantic", "semantic", align="right", drop=2),
    Column("size", lambda a: fmt_bytes(a.bytes), align="right", drop=4),
    Column("last activity", lambda a: fmt_ts(a.last_activity), narrow=lambda a: fmt_age(a.last_activity)),
    Column("title", "title", flex=True, drop=1),
    Column("problem", "problem", flex=True, style="red", drop=1),
]


@output_options
def agents(ctx: typer.Context, *, out: Output) -> None:
    """List every agent in the store: traces (active, archived), turns, memory items, size, last activity.

    An agent that cannot be read is listed with the problem (and a warning on stderr).
    """
    from memcli.api import Memory

    def rows():
        for summary in Memory(ctx.obj).agents():
            if summary.problem:
                out.note(f"warning: agent {summary.agent!r}: {summary.problem}")
            yield summary

    count = out.records(rows(), human=lambda rows, view: view.table(rows, AGENT_COLUMNS, empty=""))
    if count == 0:
        out.note(f"no agents in {ctx.obj}")


# ---------------------------------------------------------------------------- stats

@output_options
def stats(
    ctx: typer.Context,
    agent: str = AGENT,
    model: Optional[str] = typer.Option(
        None, "--model", help="Model whose context window sets the budget (any LiteLLM model name)."),
    max_context_tokens: Optional[int] = typer.Option(
        None, "--max-context-tokens", min=1, help="Context window in tokens (overrides the model's)."),
    *, out: Output,
) -> None:
    """Counts per tier and trace type, turns, tool calls by status, tokens, file sizes, last compaction.

    Tokens: memcli's estimate of the working snapshot (tiktoken, offline) and the last
    provider-reported prompt_tokens. With --model or --max-context-tokens, also the input budget
    and whether compaction is due (the same decision `compact --if-needed` takes).
    """
    result = _agent(ctx, agent).stats(model=model, max_context_tokens=max_context_tokens)
    out.document(result, human=_render_stats)


def _render_stats(s, view: HumanView) -> None:
    def types(c):
        return f"{c.total:,}  (user {c.user:,}, assistant {c.assistant:,}, tool_call {c.tool_call:,}, tool_result {c.tool_result:,})"

    t = s.tool_calls
    tok = s.tokens
    files = ", ".join(f"{f.file} {fmt_bytes(f.bytes)}" for f in s.files.values() if f.bytes)
    compaction = "none"
    if s.last_compaction is not None:
        c = s.last_compaction
        compaction = (f"{fmt_ts(c.ts)}  {c.compaction_id or c.episodic_id}: {c.moved or counted(c.turns, 'turn')}, "
                      f"{counted(c.traces, 'trace')}" + (f", model {c.model}" if c.model else ""))
    m = s.memory
    view.line((s.agent, "bold"))
    view.fields([
        ("active traces", types(s.traces["active"])),
        ("archived traces", types(s.traces["archive"])),
        ("turns", _turns_text(s.turns)),
        ("tool calls", f"{t.calls:,} calls, {t.results:,} results: {t.success:,} success, {t.error:,} error, "
                       f"{t.pending:,} pending, {t.orphan:,} orphan"),
        ("episodic", f"{m.episodic:,} ({m.episodic_live:,} live)"),
        ("semantic", f"{m.semantic:,} ({m.semantic_live:,} live)"),
        ("tokens", f"{tok.estimate:,} estimated for the working snapshot ({tok.counter})"),
        ("prompt_tokens", f"{tok.last_prompt_tokens:,} (last provider-reported)"
         if tok.last_prompt_tokens is not None else "none reported"),
        ("files", files or "none"),
        ("last activity", fmt_ts(s.last_activity) or "never"),
        ("last compaction", compaction),
        ("model spending", _spending(s.compaction_cost)),
        ("budget", s.budget["explanation"] if s.budget else None),
        ("result summaries", f"{s.result_summaries['count']:,} tool results summarized "
                             f"({s.result_summaries['chars_before']:,} → {s.result_summaries['chars_after']:,} characters; "
                             "snapshot --expire TOOL=TURNS:summary)" if s.result_summaries else None),
        ("embeddings", f"{s.embeddings['tokens']:,} tokens embedded with {s.embeddings['model']} "
                       f"({s.embeddings['dimensions'] or '?'} dimensions; hybrid search)" if s.embeddings else None),
    ])


def _spending(cost: dict | None) -> str | None:
    """The ledger's model spending: ``2 requests, 20 input + 20 output tokens, $0.000008``."""
    if not cost or not cost["records"]:
        return None
    text = (f"{cost['requests']:,} request{'s' if cost['requests'] != 1 else ''}, {cost['input_tokens']:,} input + "
            f"{cost['output_tokens']:,} output tokens, "
            f"{'price unknown' if cost['cost_usd'] is None else fmt_usd(cost['cost_usd'])}")
    if cost["unpriced"] and cost["cost_usd"] is not None:
        text += f" ({cost['unpriced']:,} without a known price)"
    return text


def _turns_text(t) -> str:
    """``3 active, 2 archived, 5 in all``; with split turns, each turn counted once:
    ``1 in all: 0 active, 0 archived, 1 split (...)``."""
    if not t.split:
        return f"{t.active:,} active, {t.archive:,} archived, {t.total:,} in all"
    return (f"{t.total:,} in all: {t.active - t.split:,} active, {t.archive - t.split:,} archived, {t.split:,} split "
            "(older steps archived, the ask and newer steps active)")


# ---------------------------------------------------------------------------- turns

def _turn_columns(archive: bool):
    cols = [Column("turn", "turn_id", max_width=24, id_width=9, prefix=True)]
    if archive:
        cols.append(Column("tier", "tier"))
    cols += [
        Column("started", lambda t: fmt_ts(t.started), narrow=lambda t: fmt_age(t.started)),
        Column("traces", "traces", align="right", drop=1),
        Column("ask", "ask", flex=True, min_width=16),
        Column("tools", lambda t: ", ".join(t.tools), flex=True, min_width=10, max_width=40),
        Column("calls", "tool_calls", align="right", drop=2),
        Column("errors", lambda t: t.errors or "", align="right", style="red"),
        Column("pending", lambda t: t.pending or "", align="right", style="yellow", drop=3),
    ]
    return cols


@output_options
def turns(
    ctx: typer.Context,
    agent: str = AGENT,
    last: Optional[int] = typer.Option(None, "--last", min=1, metavar="N",
                                       help="Only the last N turns (read from the end of the file)."),
    archive: bool = typer.Option(False, "--archive", help=ARCHIVE_HELP),
    since: Optional[str] = typer.Option(None, "--since", metavar="TIME",
                                        help="Only turns with time from then on: " + SINCE_HELP.split(": ", 1)[1]),
    until: Optional[str] = typer.Option(None, "--until", metavar="TIME",
                                        help="Only turns that started by then (a bare date: the end of that day)."),
    *, out: Output,
) -> None:
    """One row per turn: id, time, the user's ask (clipped), tools used, calls, errors, pending calls."""
    rows = _agent(ctx, agent).turns(last=last, archive=archive, since=since, until=until, stream=True)
    out.records(rows, human=lambda rows, view: view.table(rows, _turn_columns(archive), empty="no turns"))


# ---------------------------------------------------------------------------- show

def trace_body(trace) -> str:
    """What a trace says, as text: content, tool arguments, result or error."""
    kind = trace.trace_type
    if kind == "tool_call":
        args = _json_text(trace.tool_args) if trace.tool_args is not None else ""
        return "\n".join(p for p in (trace.content, args) if p)
    if kind == "tool_result":
        if trace.tool_error:
            return "\n".join(p for p in (trace.content, f"ERROR: {trace.tool_error}") if p)
        result = _json_text(trace.tool_result)
        return "\n".join(p for p in (trace.content, result) if p)
    if kind == "user" and trace.content:
        from memcli.api import readable_text

        return readable_text(trace.content)  # a slash command reads /name args
    return trace.content or ""


_TYPE_STYLE = {"user": "bold cyan", "assistant": "bold green", "tool_call": "bold magenta", "tool_result": "bold blue"}


def _render_traces(traces, view: HumanView) -> None:
    count = 0
    for trace in traces:
        count += 1
        head = [(trace.turn_id, "dim"), f" #{trace.seq}  ", (fmt_ts(trace.ts), "dim"), "  ",
                (trace.trace_type, _TYPE_STYLE.get(trace.trace_type))]
        if trace.tool_name:
            head += ["  ", (trace.tool_name, "bold")]
        if trace.tool_call_id:
            head += [f"  [{trace.tool_call_id}]"]
        if trace.trace_type == "tool_result":
            head += ["  ", ("ERROR", "bold red") if trace.tool_error else ("ok", "green")]
        if trace.tags:
            head += ["  ", ("{" + ",".join(trace.tags) + "}", "yellow")]
        if trace.usage and isinstance(trace.usage, dict) and trace.usage.get("prompt_tokens") is not None:
            head += [f"  prompt_tokens={trace.usage['prompt_tokens']:,}"]
        head += ["  ", (trace.id, "dim")]
        view.line(*head)
        view.text(trace_body(trace), indent=4, max_chars=max(view.width * 4, 200))
    if count == 0:
        Output.note("no traces matched")


@output_options
def show(
    ctx: typer.Context,
    agent: str = AGENT,
    turn: Optional[List[str]] = typer.Option(None, "--turn", metavar="ID",
                                             help="Only this turn (repeatable; 7 means turn_0007)."),
    last: Optional[int] = typer.Option(None, "--last", min=1, metavar="N",
                                       help="Only the last N turns (read from the end of the file)."),
    type_: Optional[List[str]] = typer.Option(None, "--type", metavar="T",
                                              help="Only traces of this type: user, assistant, tool_call, tool_result "
                                                   "(repeatable)."),
    tag: Optional[List[str]] = typer.Option(None, "--tag", metavar="TAG", help=TAG_HELP),
    since: Optional[str] = typer.Option(None, "--since", metavar="TIME", help=SINCE_HELP),
    until: Optional[str] = typer.Option(None, "--until", metavar="TIME", help=UNTIL_HELP),
    archive: bool = typer.Option(False, "--archive", help=ARCHIVE_HELP),
    *, out: Output,
) -> None:
    """Print the traces themselves, in store order; long content is clipped (--no-clip shows it all).

    --json/--ndjson print the records exactly as stored, so `show --ndjson` can be ingested again.
    """
    traces = _agent(ctx, agent).show(turn=turn, last=last, type=type_, tag=tag, since=since, until=until,
                                     archive=archive)
    out.records(traces, human=_render_traces)


# ---------------------------------------------------------------------------- tools

_STATUS_STYLE = {"SUCCESS": "green", "ERROR": "bold red", "PENDING": "yellow", "ORPHAN": "magenta"}


_ERROR_WRAPPER = re.compile(r"^\s*<(tool_use_error|error)>(.*)</\1>\s*$", re.S)
_ERROR_PREFIX = re.compile(r"^\s*(?:error|ERROR|Error)\s*:\s*")
_EXIT_CODE = re.compile(r"^\s*Exit code (-?\d+)\s*\n", re.S)


def error_gist(error: str) -> str:
    """The informative part of a tool error first, for a table cell (the status column already
    says ERROR): wrappers (``<tool_use_error>``) and a leading ``Error:`` dropped, a leading
    ``Exit code N`` line moved to the end, a Python traceback led by its last line."""
    text = str(error)
    wrapped = _ERROR_WRAPPER.match(text)
    if wrapped:
        text = wrapped.group(2)
    exit_code = _EXIT_CODE.match(text)
    if exit_code:
        text = text[exit_code.end():]
    if "Traceback (most recent call last)" in text:
        last = [line for line in text.strip().splitlines() if line.strip()][-1:]
        text = (last[0].strip() + " — " + text.strip()) if last else text
    text = _ERROR_PREFIX.sub("", text.strip(), count=1)
    return text + (f" (exit {exit_code.group(1)})" if exit_code else "")


def _result_text(i) -> str:
    if i.error:
        return error_gist(i.error)
    if i.status.value == "PENDING":
        return ""
    return _json_text(i.result)


TOOL_COLUMNS = [
    Column("turn", "turn_id", max_width=24, id_width=9, drop=1, prefix=True),
    Column("call id", "tool_call_id", max_width=28, id_width=10, prefix=True),
    Column("tool", "tool_name", max_width=24, id_width=10),
    Column("status", lambda i: i.status.value, style=_STATUS_STYLE.get),
    Column("arguments", lambda i: _json_text(i.arguments), flex=True, min_width=16),
    Column("result", _result_text, flex=True, min_width=16),
]


# with --status error the error is what the user came for: the arguments give it the room
ERROR_COLUMNS = [Column("arguments", c.value, flex=True, min_width=12, max_width=16) if c.header == "arguments" else
                 Column("result", c.value, flex=True, min_width=32) if c.header == "result" else c
                 for c in TOOL_COLUMNS]


def _render_tools(rows, view: HumanView, columns=None) -> None:
    view.table(rows, columns or TOOL_COLUMNS, empty="no tool interactions matched")


@output_options
def tools(
    ctx: typer.Context,
    agent: str = AGENT,
    status: Optional[List[str]] = typer.Option(None, "--status", metavar="S",
                                               help="Only this status: pending, success, error, orphan (repeatable)."),
    name: Optional[List[str]] = typer.Option(None, "--name", metavar="NAME", help="Only this tool (repeatable)."),
    turn: Optional[List[str]] = typer.Option(None, "--turn", metavar="ID",
                                             help="Only calls of this turn (repeatable; 7 means turn_0007)."),
    last: Optional[int] = typer.Option(None, "--last", min=1, metavar="N", help="Only the last N turns."),
    tag: Optional[List[str]] = typer.Option(None, "--tag", metavar="TAG",
                                            help="Only interactions whose call or result has this tag (repeatable)."),
    since: Optional[str] = typer.Option(None, "--since", metavar="TIME", help=SINCE_HELP),
    until: Optional[str] = typer.Option(None, "--until", metavar="TIME", help=UNTIL_HELP),
    archive: bool = typer.Option(False, "--archive", help=ARCHIVE_HELP),
    *, out: Output,
) -> None:
    """Tool interactions: each call with its result, paired first-in-first-out per tool_call_id.

    Status is PENDING (no result yet), SUCCESS, ERROR, or ORPHAN (a result without a call).
    `--status pending` reads the unanswered calls from the state cache: no scan.
    """
    rows = _agent(ctx, agent).tools(status=status, name=name, turn=turn, last=last, tag=tag, since=since, until=until,
                                    archive=archive, stream=True)
    errors_only = {s.strip().lower() for value in status or () for s in value.split(",") if s.strip()} == {"error"}
    out.records(rows, human=lambda rows, view: _render_tools(rows, view, ERROR_COLUMNS if errors_only else None))


# ---------------------------------------------------------------------------- get

@output_options
def get(
    ctx: typer.Context,
    agent: str = AGENT,
    record_id: str = typer.Argument(..., metavar="ID", help="Record id (a trace, episodic or semantic item) or a tool_call_id."),
    *, out: Output,
) -> None:
    """Print one record in full, wherever it lives: active, archive, episodic or semantic.

    A tool_call_id prints the call with its result (every one, when a source reused the id).

    This is how something a snapshot clipped or a compaction archived is expanded. stdout is
    the record exactly; where it was found (tier, file and line) goes to stderr.
    """
    found = _agent(ctx, agent).locate(record_id)
    if not hasattr(found, "record"):     # a tool call id: the call(s) and their results
        calls = found
        n = len(calls.interactions)
        record_id = calls.tool_call_id  # a prefix: the id it expanded to
        if calls.ambiguous:
            out.note(f"{record_id} is a tool call id used by {n} calls (the source reused it): all {n} are shown, "
                     "in store order")
        else:
            out.note(f"{record_id} is a tool call id: its call and result")
        out.document(calls.to_json(), human=lambda doc, view: view.json(doc))
        return
    shown = getattr(found.record, "id", None) or (found.record.get("id") if isinstance(found.record, dict) else None)
    out.note(f"{shown or record_id} is in {found.tier} ({found.path}:{found.line})")
    out.document(found.record, human=lambda record, view: view.json(record))


# ---------------------------------------------------------------------------- memory

def _render_memory(entries, view: HumanView) -> None:
    count = 0
    for entry in entries:
        count += 1
        item = entry.item
        head = [(entry.tier, "bold cyan" if entry.tier == "episodic" else "bold green"), "  ",
                (fmt_ts(item.ts), "dim"), "  ", (item.id, "dim")]
        if entry.tier == "episodic":
            turns_ = item.turn_ids or []
            if turns_:
                span = turns_[0] if len(turns_) == 1 else f"{turns_[0]}..{turns_[-1]}"
                head += [f"  {span} ({len(turns_):,} turn{'s' if len(turns_) != 1 else ''})"]
            if item.model:
                head += [f"  model {item.model}"]
            if entry.harness:
                head += ["  ", (f"by the harness: {entry.harness}", "magenta")]
        else:
            head += [f"  confidence {item.confidence:g}"]
        if item.tags:
            head += ["  ", ("{" + ",".join(map(str, item.tags)) + "}", "yellow")]
        if entry.superseded_by:
            head += ["  ", (f"superseded by {entry.superseded_by}", "bold red")]
        view.line(*head)
        view.text(item.summary if entry.tier == "episodic" else item.fact, indent=4,
                  max_chars=max(view.width * 6, 300), max_lines=12)
    if count == 0:
        Output.note("no memory items (episodic summaries and semantic facts are written by `memcli compact`)")


def _render_working_memory(entries, view: HumanView) -> None:
    count = 0
    for entry in entries:
        if entry["kind"] == "file":
            count += 1
        size = fmt_bytes(entry["bytes"]) if entry["kind"] == "file" else ""
        view.line((f"{size:>9}", "dim"), "  ", (entry["path"] + ("/" if entry["kind"] == "dir" else ""),
                                              "bold" if entry["kind"] == "dir" else None))
    if count == 0:
        Output.note("no working memory files (the agent writes them with the memory tool: `memcli memory-tool`)")


@output_options
def memory(
    ctx: typer.Context,
    agent: str = AGENT,
    all_: bool = typer.Option(False, "--all", help="Include superseded items (marked with what replaced them)."),
    tier: Optional[str] = typer.Option(None, "--tier", metavar="T", help="Only episodic or only semantic items."),
    files: bool = typer.Option(False, "--files", help="The working memory files (/memories) instead: the tree, with sizes."),
    *, out: Output,
) -> None:
    """Episodic summaries and semantic facts, oldest first; superseded ones only with --all.

    In JSON each item is the stored record with `tier` and `superseded_by` in front. With --files,
    the working memory tree the agent edits through the memory tool (`memcli memory-tool`): one
    entry per directory and file in path order (JSON: path, kind, bytes, and each file's content).
    """
    entries = _agent(ctx, agent).memory(include_superseded=all_, tier=tier, files=files)
    if files:
        out.records(entries, human=_render_working_memory)
        return
    if out.human:
        out.records(entries, human=_render_memory)
    else:
        out.records((e.to_json() for e in entries), human=_render_memory)


def register(app: typer.Typer) -> None:
    app.command("agents")(agents)
    app.command("stats")(stats)
    app.command("turns")(turns)
    app.command("show")(show)
    app.command("tools")(tools)
    app.command("get")(get)
    app.command("memory")(memory)
    from memcli.cli import doctor

    doctor.register(app)


__all__ = ["register", "trace_body", "fmt_int", "one_line"]
