"""``memcli view AGENT``: one self-contained HTML page of the agent's memory (:mod:`memcli.view`).

stdout carries the page's path (data a script can use: ``open "$(memcli view a)"``), or the page
itself with ``-o -``; the one-line summary goes to stderr.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from memcli.cli.output import Output
from memcli.sizes import counted


def view(
    ctx: typer.Context,
    agent: str = typer.Argument(..., help="Agent id."),
    output: Optional[str] = typer.Option(None, "-o", "--output",
                                         help="Where to write the page (default ./AGENT.html; - for stdout)."),
    open_page: bool = typer.Option(False, "--open", help="Open the page in the default browser."),
    model: Optional[str] = typer.Option(None, "--model", help="Count tokens and draw the trigger for this model."),
    max_context_tokens: Optional[int] = typer.Option(None, "--max-context-tokens", min=1,
                                                     help="Context size for the trigger line (else the model's, else 200000)."),
) -> None:
    """Write one self-contained HTML page of the agent's memory: a timeline of turns and steps
    (asks, notes, tool calls by status with each error's informative line, subagents as nested
    lanes), compactions as boundaries with their summary beside the archived range (expands on
    click), a chart of tokens over time, facts and working-memory files, and a search box.

    The page needs no network (no CDN, nothing fetched) and works from file://. Stored text is
    escaped: nothing a transcript holds runs in the page.
    """
    from memcli.api import Memory

    agent_api = Memory(ctx.obj).agent(agent)
    if output == "-":
        result = agent_api.view(stream=sys.stdout.buffer, model=model, max_context_tokens=max_context_tokens)
    else:
        result = agent_api.view(output, model=model, max_context_tokens=max_context_tokens)
        print(result.path)
    Output.note(f"{agent}: {counted(result.turns, 'turn')}, {counted(result.traces, 'trace')}, "
                f"{counted(result.compactions, 'compaction')} -> {result.path or 'stdout'} ({result.bytes:,} bytes)")
    if open_page and result.path:
        import webbrowser

        webbrowser.open(Path(result.path).resolve().as_uri())


def register(app: typer.Typer) -> None:
    app.command("view")(view)
