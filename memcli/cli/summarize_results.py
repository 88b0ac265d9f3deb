"""``memcli summarize-results AGENT``: old, large tool results summarized once each and stored
beside their traces (:mod:`memcli.compaction.results`), for ``snapshot --expire TOOL=TURNS:summary``.

stdout: with ``--json`` the report (every summary, or what would be with ``--dry-run``); a dry run
without ``--json`` prints each summary it would store. The one-line report goes to stderr. Exit 1
when a summary failed (the others are stored).
"""

from __future__ import annotations

import sys
from typing import List, Optional

import typer


def summarize_results(
    ctx: typer.Context,
    agent: str = typer.Argument(..., help="Agent id."),
    tool: Optional[List[str]] = typer.Option(None, "--tool", metavar="NAME",
                                             help="Only results of this tool (repeatable; default: every tool)."),
    older_than: int = typer.Option(0, "--older-than", metavar="TURNS",
                                   help="Only results more than this many turns old (the newest turn is 0 old)."),
    min_chars: int = typer.Option(4_000, "--min-chars", metavar="C", help="Only results of at least C characters."),
    model: Optional[str] = typer.Option(None, "--model", help="Summarize with this LiteLLM model; default: offline."),
    api_base: Optional[str] = typer.Option(None, "--api-base", help="Base URL of the model's API."),
    api_key: Optional[str] = typer.Option(None, "--api-key", metavar="KEY", help="The model's API key."),
    api_key_env: Optional[str] = typer.Option(None, "--api-key-env", metavar="NAME",
                                              help="Read the API key from this environment variable."),
    timeout: float = typer.Option(120.0, "--timeout", help="Seconds per model request."),
    retries: int = typer.Option(2, "--retries", help="Retries per request after a provider error."),
    max_cost: Optional[float] = typer.Option(None, "--max-cost", metavar="USD",
                                             help="Refuse before the first request when the model's estimate is above USD."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Show the summaries it would store; write nothing."),
    json_out: bool = typer.Option(False, "--json", help="Print the report as one JSON document."),
) -> None:
    """Summarize old, large tool results once each (offline, or with --model), stored beside the
    trace and never changing it. `snapshot --expire TOOL=TURNS:summary` then shows the summary in
    place of the result, with a note naming `memcli get ID`, which expands the original.

    The offline summary keeps, for a command, its exit status, the error and failing-test lines
    and the last lines; for a file read, its outline and the lines around what the agent used
    later; for a search, the matched paths. A result summarized before is skipped.
    """
    from memcli.api import Memory
    from memcli.cli.output import Output

    report = Memory(ctx.obj).agent(agent).summarize_results(
        tool=tool or None, older_than=older_than, min_chars=min_chars, model=model, api_base=api_base,
        api_key=api_key, api_key_env=api_key_env, timeout=timeout, retries=retries, max_cost=max_cost,
        dry_run=dry_run)
    if json_out:
        import orjson

        sys.stdout.buffer.write(orjson.dumps(report.to_dict(), option=orjson.OPT_INDENT_2) + b"\n")
    elif dry_run:
        from memcli.cli.output import neutral

        for item in report.summarized:
            print(neutral(f"== {item.trace_id} ({item.tool_name}, {item.turn_id}, {item.chars:,} characters)"))
            print(neutral(item.summary))
    Output.note(report.describe())
    if report.estimate and dry_run:
        e = report.estimate
        cost = "price unknown" if e["cost_usd"] is None else f"up to ${e['cost_usd']:.4f}"
        Output.note(f"with {e['model']}: {e['requests']} requests, {e['input_tokens']:,} input tokens, {cost}")
    for trace_id, why in report.failed.items():   # why may quote the provider's error text
        Output.note(f"{trace_id}: not summarized: {why}")
    if report.failed:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("summarize-results")(summarize_results)
