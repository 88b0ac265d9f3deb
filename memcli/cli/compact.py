"""``memcli compact AGENT``: summarize old turns (docs/design.md §3–§4).

stdout carries data only: the plan for ``--dry-run`` (human text, or ``--json``), the result
for ``--json``. The human plan quotes the summary, so stored text: it goes through ``neutral``.
The budget verdict of ``--if-needed``, notes, the progress bar of multi-chunk runs and the final
line go to stderr. Every line on stderr goes through ``Output.note``: a note
may quote a provider's error text or stored text, and is shown, never sent (memcli/neutral.py).
"""

from __future__ import annotations

import sys
from typing import Optional

import typer


def _plan_text(result) -> str:
    if not result.turns or result.never_worse:
        return f"{result.reason}\n"
    one = result.pinned_kept == 1
    pinned = (f" ({result.pinned_kept} system/developer trace{'' if one else 's'} stay{'s' if one else ''})"
              if result.pinned_kept else "")
    approx = "≈" if result.tokens_after_estimated else ""
    rows = [
        f"agent {result.agent_id}: would compact {result.what()} ({result.turn_range})",
        f"  traces moved   {result.traces}{pinned}"
        + (f" ({result.abandoned} unanswered call{'s' if result.abandoned != 1 else ''} among them)"
           if result.abandoned else ""),
        f"  turns kept     {result.kept_turns} ({result.stop_reason})",
        f"  tokens         {result.tokens_before:,} → {approx}{result.tokens_after:,} (working snapshot; "
        f"the window holds {result.window_tokens:,}; target {result.target_tokens:,}, trigger at "
        f"{result.threshold:,})",
        f"  strategy       {result.strategy}" + (f" with {result.summarizer}" if result.summarizer else ""),
    ]
    if result.chunks:
        rows.append(f"  chunks         {result.chunks}")
    if result.shortfall:
        rows.append(f"  note           {result.shortfall}")
    estimate = result.estimate
    if estimate:
        cost = (f"≈ ${estimate['cost_usd']:.4f} at most" if estimate["cost_usd"] is not None
                else "cost unknown (LiteLLM has no price for this model)")
        rows.append(f"  model request  {estimate['requests']} to {estimate['model']}: {estimate['input_tokens']:,} "
                    f"input tokens, up to {estimate['max_output_tokens']:,} output tokens; {cost}")
    if result.summary is not None:
        what = "the offline digest the model would condense" if estimate else "the summary it would write"
        rows.append(f"  summary        ({what}):")
        rows += ["    " + line for line in result.summary.splitlines()]
    return "\n".join(rows) + "\n"


def compact(
    ctx: typer.Context,
    agent: str = typer.Argument(..., help="Agent id."),
    model: Optional[str] = typer.Option(
        None, "--model", help="Summarize with this LiteLLM model (e.g. openai/gpt-4o-mini); default: offline."),
    api_base: Optional[str] = typer.Option(None, "--api-base", help="Base URL of the model's API."),
    api_key: Optional[str] = typer.Option(
        None, "--api-key", metavar="KEY",
        help="The model's API key (default: the provider's variable, e.g. OPENAI_API_KEY; a server on this "
             "machine needs none)."),
    api_key_env: Optional[str] = typer.Option(
        None, "--api-key-env", metavar="NAME", help="Read the API key from this environment variable."),
    tail_turns: int = typer.Option(
        4, "--tail-turns", help="Recent turns kept whole, where --target-tokens allows it."),
    target_tokens: Optional[int] = typer.Option(
        None, "--target-tokens",
        help="Keep the working snapshot within N tokens (default: half the input budget). After a provider's "
             "context-overflow error, run compact --target-tokens N with N well under the limit."),
    keep_steps: int = typer.Option(4, "--keep-steps", help="Newest steps (assistant message + its results) that "
                                                           "always stay."),
    if_needed: bool = typer.Option(
        False, "--if-needed", help="Compact only when the budget trigger fires (says why or why not on stderr)."),
    max_context_tokens: Optional[int] = typer.Option(
        None, "--max-context-tokens", min=1,
        help="Context size for the trigger (and for chunking when LiteLLM does not know --model)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print what would move and the tokens; write nothing."),
    concurrency: int = typer.Option(4, "--concurrency", help="Chunks summarized at once."),
    timeout: float = typer.Option(120.0, "--timeout", help="Seconds per model request."),
    retries: int = typer.Option(2, "--retries", help="Retries per chunk after an invalid answer (or one that leaves out an ask or a "
                              "modified file) or a provider error."),
    strategy: str = typer.Option(
        "summarize", "--strategy", help="summarize, or sliding-window (archive old turns without a summary)."),
    force: bool = typer.Option(False, "--force", help="Run even when the circuit breaker is open."),
    max_cost: Optional[float] = typer.Option(
        None, "--max-cost", metavar="USD",
        help="With --model: refuse, before any request, when the estimated cost is above USD; "
             "no retry is sent that could take the run past it."),
    json_out: bool = typer.Option(False, "--json", help="Print the plan or the result as one JSON document."),
) -> None:
    """Summarize old turns and steps into episodic/semantic memory and archive their traces.

    Whole turns older than the last --tail-turns move first; then, while the working snapshot is
    above --target-tokens, the oldest steps of the remaining turns (the open turn included; its
    ask stays). The newest --keep-steps steps always stay. A compaction that would not shrink the
    snapshot writes nothing. One interrupted at any point is finished by the next command.
    """
    import memcli
    from memcli.cli.output import Output, neutral
    from memcli.cli.progress import progress_bar

    # the shared bar (memcli.cli.progress): on a terminal, for runs with several chunks
    with progress_bar("summarizing chunks", unit="items", delay=0) as advance:
        seen = [0]

        def chunks_done(done: int, total: int) -> None:
            if total > 1:
                advance(done - seen[0], total=total)
                seen[0] = done

        result = memcli.Memory(ctx.obj).agent(agent).compact(
            model=model, api_base=api_base, api_key=api_key, api_key_env=api_key_env, tail_turns=tail_turns,
            target_tokens=target_tokens, keep_steps=keep_steps, if_needed=if_needed,
            max_context_tokens=max_context_tokens, dry_run=dry_run, concurrency=concurrency, timeout=timeout,
            retries=retries, strategy=strategy, force=force, max_cost=max_cost, on_progress=chunks_done,
            on_note=Output.note)
    if json_out:
        import orjson

        sys.stdout.buffer.write(orjson.dumps(result.to_dict()) + b"\n")
    elif dry_run:
        sys.stdout.write(neutral(_plan_text(result)))  # the summary quotes stored text
    if not dry_run or json_out:
        Output.note(result.describe())


def register(app: typer.Typer) -> None:
    app.command("compact")(compact)
