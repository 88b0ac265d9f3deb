"""``memcli export AGENT`` (and ``memcli clear AGENT``, registered from here; see clear.py)."""

from __future__ import annotations

import sys
from enum import Enum
from typing import List, Optional

import typer

from memcli.cli.output import Output


class ExportFormat(str, Enum):
    jsonl = "jsonl"
    json = "json"
    markdown = "markdown"
    openai = "openai"
    anthropic = "anthropic"


def export(
    ctx: typer.Context,
    agent: str = typer.Argument(..., help="Agent id."),
    format: ExportFormat = typer.Option(
        ExportFormat.jsonl, "--format", "-f",
        help="jsonl (backup, re-ingestable), json (one array), markdown (for people), "
             "openai / anthropic (provider message list).",
    ),
    with_memory: bool = typer.Option(
        False, "--with-memory", help="Include the episodic summaries and semantic facts.",
    ),
    output: Optional[str] = typer.Option(
        None, "--output", "-o", metavar="FILE",
        help="Write to FILE (it appears only once complete); default stdout.",
    ),
    turn: Optional[List[str]] = typer.Option(
        None, "--turn", metavar="ID", help="Only this turn (repeatable; 7 means turn_0007).",
    ),
    since: Optional[str] = typer.Option(
        None, "--since", metavar="TIME", help="Only traces at or after TIME (ISO-8601 or epoch seconds).",
    ),
    until: Optional[str] = typer.Option(
        None, "--until", metavar="TIME", help="Only traces at or before TIME (a bare date: the end of that day).",
    ),
) -> None:
    """Export an agent's complete history (archive, then active), streamed.

    `memcli export A | memcli ingest B` copies A's traces (and with --with-memory its memory) into B with the same ids, turns and seqs; ingesting the same export again adds nothing.
    """
    import memcli
    from memcli.cli.progress import progress_bar

    to_file = output is not None and output != "-"
    with progress_bar(f"exporting {agent}", enabled=to_file) as advance:  # a closed stdout: memcli.cli.app
        result = memcli.Memory(ctx.obj).agent(agent).export(
            format.value, output if to_file else None, stream=None if to_file else sys.stdout.buffer,
            with_memory=with_memory, turns=turn, since=since, until=until,
            progress=lambda n, total: advance(n, total=total))
    for note in result.notes:
        Output.note(f"note: {note}")
    if to_file:
        Output.note(result.summary())


def register(app: typer.Typer) -> None:
    from memcli.cli import clear

    app.command("export")(export)
    clear.register(app)
