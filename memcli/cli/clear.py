"""``memcli clear AGENT [--keep-memory] [--yes]``."""

from __future__ import annotations

import sys

import typer

from memcli.cli.output import Output


def clear(
    ctx: typer.Context,
    agent: str = typer.Argument(..., help="Agent id."),
    keep_memory: bool = typer.Option(
        False, "--keep-memory", help="Keep the episodic summaries, semantic facts and working memory files; delete the raw traces.",
    ),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation (required when not on a terminal)."),
) -> None:
    """Delete an agent's memory (all its files), under its lock.

    Asks for confirmation on a terminal; scripts pass --yes. With --keep-memory only the raw traces go, and new turns are numbered after the turns the kept memory names.
    """
    import memcli
    from memcli.errors import UsageError

    target = memcli.Memory(ctx.obj).agent(agent)
    plan = target.clear(keep_memory=keep_memory, dry_run=True)  # exit 3 for an unknown agent
    if not yes:
        if not _stdin_is_terminal():
            raise UsageError(
                f"refusing to clear agent {plan.agent_id!r} without confirmation",
                hint="pass --yes to confirm (stdin is not a terminal, so memcli cannot ask)",
            )
        Output.note(plan.describe())
        question = (f"Delete the raw traces of agent {plan.agent_id!r} (memory is kept)?" if keep_memory
                    else f"Delete all memory of agent {plan.agent_id!r}?")
        if not typer.confirm(question, default=False, err=True):
            Output.note("nothing was deleted")
            raise typer.Exit(1)
    result = target.clear(keep_memory=keep_memory)
    Output.note(result.summary())


def _stdin_is_terminal() -> bool:
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False


def register(app: typer.Typer) -> None:
    app.command("clear")(clear)
