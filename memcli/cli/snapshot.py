"""``memcli snapshot AGENT``: print the request payload the agent sends next (stdout: exactly the
payload; a summary, budget steps and notes on stderr)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional

import typer

PROVIDERS = "openai-chat (or openai), openai-responses, anthropic, gemini, text"


def snapshot(
    ctx: typer.Context,
    agent: str = typer.Argument(..., help="Agent id."),
    provider: str = typer.Option("openai-chat", "--provider", "-p", help=f"Payload format: {PROVIDERS}."),
    system: Optional[str] = typer.Option(None, "--system", help="System prompt text (comes first)."),
    system_files: Optional[List[Path]] = typer.Option(None, "--system-file", help="Read the system prompt from a file."),
    memory_files: Optional[List[Path]] = typer.Option(
        None, "--memory-file", help="AGENT.md-style file appended to the system prompt under a heading (repeatable)."),
    no_stored_system: bool = typer.Option(
        False, "--no-stored-system", help="Leave out the system/developer messages kept in the store."),
    no_memory: bool = typer.Option(False, "--no-memory", help="Leave out the episodic/semantic memory bundle."),
    no_working_memory: bool = typer.Option(
        False, "--no-working-memory", help="Leave out the working memory files (/memories) from the system prompt."),
    working_memory_tokens: int = typer.Option(
        4000, "--working-memory-tokens", metavar="N",
        help="Token budget for the working memory files in the system prompt; files beyond it are listed by path."),
    memory_tool: bool = typer.Option(
        False, "--memory-tool", help="Declare Anthropic's memory tool (memory_20250818) in tools (-p anthropic)."),
    tail_turns: Optional[int] = typer.Option(
        None, "--tail-turns", help="Only the last N turns (the compaction snapshot), read from the end of the file."),
    max_tokens: Optional[int] = typer.Option(
        None, "--max-tokens", help="Fit the payload into N tokens: stub older tool results, then drop the oldest turns."),
    max_tool_result_chars: int = typer.Option(
        10_000, "--max-tool-result-chars", help="Clip each tool result to N characters (0: no limit)."),
    expire: Optional[List[str]] = typer.Option(
        None, "--expire", metavar="TOOL=TURNS[:clip=N|:remove|:summary]",
        help="Shorten TOOL's results older than TURNS turns ('*' for every tool; repeatable): clip them, "
             "replace them by a stub, or by the summary memcli summarize-results stored."),
    model: Optional[str] = typer.Option(
        None, "--model", help="Model the payload is for: picks the token encoding (and Gemini's generation)."),
    recall: Optional[str] = typer.Option(
        None, "--recall", metavar="QUERY|auto",
        help="Memory bundle by relevance to QUERY ('auto': the latest user ask) instead of the most recent items."),
    memory_tokens: int = typer.Option(
        2000, "--memory-tokens", metavar="N", help="Token budget of the recalled memory bundle (with --recall)."),
    compact: bool = typer.Option(False, "--compact", "--json", help="One-line JSON instead of indented."),
    ndjson: bool = typer.Option(False, "--ndjson", help="One JSON record per line: the top-level fields, then each item."),
) -> None:
    """Render the agent's memory as the next request's payload for a provider.

    The working snapshot is the system prompt (with the working memory files), the memory bundle
    (pinned facts, then the last 3 episodic summaries and up to 20 semantic facts; with --recall,
    the most relevant ones within --memory-tokens) and every active trace; --tail-turns N gives the
    compaction snapshot.
    Tool calls and results are native structures; every call has a result (a placeholder when it
    is still pending). Nothing in the store changes: shortened results name the trace id that
    `memcli get` expands.
    """
    import memcli

    result = memcli.Memory(ctx.obj).agent(agent).snapshot(
        provider, full=True, system=system, system_files=tuple(system_files or ()), memory_files=tuple(memory_files or ()),
        stored_system=not no_stored_system, include_memory=not no_memory, tail_turns=tail_turns,
        max_tokens=max_tokens, max_tool_result_chars=max_tool_result_chars, expire=tuple(expire or ()), model=model,
        recall=recall, memory_tokens=memory_tokens,
        include_working_memory=not no_working_memory, working_memory_tokens=working_memory_tokens,
        memory_tool=memory_tool)
    _write_payload(result.payload, compact=compact, ndjson=ndjson)
    _report(result)


def _write_payload(payload, *, compact: bool, ndjson: bool) -> None:
    import orjson

    out = sys.stdout.buffer if hasattr(sys.stdout, "buffer") else None
    if isinstance(payload, str):
        if not (compact or ndjson) and sys.stdout.isatty():  # read on a terminal: shown, not sent
            from memcli.api import neutral

            payload = neutral(payload)
        data = payload.encode() if not (compact or ndjson) else orjson.dumps({"text": payload}) + b"\n"
    elif ndjson:
        head = {k: v for k, v in payload.items() if not isinstance(v, list)}
        items = [item for v in payload.values() if isinstance(v, list) for item in v]
        lines = ([orjson.dumps(head)] if head else []) + [orjson.dumps(item) for item in items]
        data = b"".join(line + b"\n" for line in lines)
    else:
        data = orjson.dumps(payload, option=0 if compact else orjson.OPT_INDENT_2) + b"\n"
    if out is not None:  # a closed stdout (`| head`) is handled once for every command: memcli.cli.app
        out.write(data)
        out.flush()
    else:  # a text-only stdout (embedding)
        sys.stdout.write(data.decode())
        sys.stdout.flush()


def _payload_count(result) -> str:
    """How many entries the payload as rendered holds: its ``messages`` (OpenAI Chat, Anthropic:
    the system prompt and memory included as the provider carries them), ``input`` items
    (Responses: each call and result is one) or ``contents`` (Gemini, as messages); the text payload: its
    messages."""
    from memcli.sizes import counted

    payload = result.payload
    if isinstance(payload, dict):
        for key, noun in (("messages", "message"), ("input", "input item"), ("contents", "message")):
            if isinstance(payload.get(key), list):
                return counted(len(payload[key]), noun)
    return counted(sum(1 for m in result.messages if m.kind != "memory"), "message")


def _report(result) -> None:
    from memcli.cli.output import Output
    from memcli.sizes import counted

    Output.note(f"snapshot of {result.agent_id!r} for {result.provider}: {counted(result.turns, 'turn')}, "
                f"{_payload_count(result)}, ~{result.tokens:,} tokens ({result.token_method})")
    for step in result.steps:   # a step, a note may quote stored ids: shown, not sent
        Output.note(f"  {step.describe()}")
    for note in result.notes:
        Output.note(f"note: {note}")


def register(app: typer.Typer) -> None:
    app.command("snapshot")(snapshot)
