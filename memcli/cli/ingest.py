"""``memcli ingest AGENT [FILE|-]``."""

from __future__ import annotations

from typing import Optional

import typer

from memcli.api import ingest_formats


def ingest(
    ctx: typer.Context,
    agent: str = typer.Argument(..., help="Agent id."),
    file: Optional[str] = typer.Argument(None, help="Input file; stdin when absent or '-'."),
    from_: str = typer.Option(
        "auto", "--from", help=f"Input format: auto, {', '.join(ingest_formats())}.",
    ),
    split: bool = typer.Option(
        False, "--split", help="A file of many conversations: import each into its own agent AGENT.<id or index>.",
    ),
    stream: bool = typer.Option(
        False, "--stream", help="Persist events as they arrive (for long-lived pipes) instead of all-or-nothing.",
    ),
    skip_invalid: bool = typer.Option(
        False, "--skip-invalid", help="Report and skip invalid events instead of rejecting the whole input.",
    ),
    no_redact: bool = typer.Option(
        False, "--no-redact", help="Keep well-known secret formats (API keys, tokens, private keys) instead of redacting them.",
    ),
) -> None:
    """Append events (NDJSON or a JSON array) to an agent's memory.

    By default the whole input is validated first and nothing is written if any event is bad.
    Events that carry an id the agent already has are skipped, so re-ingesting is safe.
    A file that holds several conversations is refused unless --split is given.
    """
    from memcli.api import Memory

    result = Memory(ctx.obj).agent(agent).ingest("-" if file is None else file, fmt=from_, stream=stream,
                                                 skip_invalid=skip_invalid, redact=not no_redact, split=split)
    from memcli.cli.output import Output

    for note in result.notes:
        Output.note(note)
    for error in result.errors if skip_invalid else ():  # an error may quote the input
        Output.note(f"skipped {error}")
    Output.note(result.summary())


def register(app: typer.Typer) -> None:
    app.command("ingest")(ingest)
