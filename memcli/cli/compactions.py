"""``memcli compactions AGENT`` (the ledger, oldest first) and ``memcli uncompact AGENT [ID]``
(undo the newest compaction not undone). The library side is :mod:`memcli.compaction.undo`."""

from __future__ import annotations

import sys
from typing import Optional

import typer

from memcli.cli.output import Column, Output, fmt_ts, fmt_usd, output_options


def _tokens(entry) -> str:
    if entry.tokens_before is None:
        return "(not recorded)"
    return f"{entry.tokens_before:,} → {entry.tokens_after:,}"


def _model(entry) -> str:
    llm = entry.llm
    if not llm:
        return ""
    cost = "price unknown" if llm.get("cost_usd") is None else fmt_usd(llm["cost_usd"])
    return f"{llm.get('input_tokens', 0):,} in / {llm.get('output_tokens', 0):,} out, {cost}"


COLUMNS = [
    Column("id", "id", id_width=12, prefix=True),
    Column("time", lambda e: fmt_ts(e.ts), drop=3),
    Column("moved", lambda e: e.moved()),
    Column("turns", "turn_range", flex=True, min_width=19),
    Column("tokens", _tokens, align="right"),
    Column("summarizer", lambda e: e.summarizer or e.strategy or "", max_width=30, drop=2),
    Column("model tokens, cost", _model, drop=1),
    Column("undone", lambda e: "yes" if e.undone else ""),
]


@output_options
def compactions(ctx: typer.Context, agent: str = typer.Argument(..., help="Agent id."), *, out: Output) -> None:
    """Every compaction of the agent, oldest first: id, time, what moved, tokens before → after,
    summarizer, the model's input/output tokens and cost, and whether it was undone.

    Compactions made before the ledger existed are listed from the summaries they wrote, without
    token figures.
    """
    from memcli.api import Memory

    entries = Memory(ctx.obj).agent(agent).compactions()
    # JSON: each entry's to_dict(); the human table reads the entries themselves
    out.records([e.to_dict() for e in entries],
                human=lambda _, view: view.table(entries, COLUMNS, empty=f"agent {agent!r} has no compactions"))


def uncompact(
    ctx: typer.Context,
    agent: str = typer.Argument(..., help="Agent id."),
    compaction_id: Optional[str] = typer.Argument(None, help="The compaction to undo (default: the newest not undone)."),
    json_out: bool = typer.Option(False, "--json", help="Print the result as one JSON document."),
) -> None:
    """Undo a compaction: its traces go back to the active file where they were, byte for byte,
    and the summaries and facts it wrote are superseded (what they had replaced comes back).

    Undo goes newest first: an older compaction is refused while a newer one stands. Crash-safe
    like compact: an interrupted uncompact is finished by the next command.
    """
    from memcli.api import Memory

    result = Memory(ctx.obj).agent(agent).uncompact(compaction_id)
    if json_out:
        import orjson

        sys.stdout.buffer.write(orjson.dumps(result.to_dict()) + b"\n")
    Output.note(result.describe())   # it quotes stored turn ids: shown, not sent


def register(app: typer.Typer) -> None:
    app.command("compactions")(compactions)
    app.command("uncompact")(uncompact)
