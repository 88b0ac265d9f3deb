"""``memcli hooks install|uninstall|status HARNESS`` and ``memcli hook HARNESS EVENT``.

``hooks ...`` are ordinary commands (memcli.hooks.settings). ``hook`` is what a harness runs on
each event, and it must never exit 2: Claude Code reads exit 2 as "block" (Stop: do not stop;
PreCompact: do not compact), Gemini CLI as "retry the turn", and a CLI framework's usage error
exits 2. So it runs without the framework (:mod:`memcli.cli.hook_main`, which imports no typer):
:func:`memcli.cli.main` hands ``memcli [--dir DIR] hook ...`` straight to it. The command
registered here serves ``memcli hook --help`` and the reference docs.
"""

from __future__ import annotations

from typing import Optional

import typer

from memcli.cli.output import Output, output_options

HARNESS_HELP = "claude-code, codex or gemini."


def _memory(ctx: typer.Context):
    from memcli.api import Memory

    return Memory(ctx.obj)


@output_options
def hooks(
    ctx: typer.Context,
    action: str = typer.Argument(..., help="install, uninstall or status."),
    harness: str = typer.Argument(..., help=HARNESS_HELP),
    scope: Optional[str] = typer.Option(
        None, "--scope", help="user (your home; the default), project (.claude/, .codex/ or .gemini/ in the "
                              "current directory) or local (Claude Code's .claude/settings.local.json). "
                              "status: every scope unless given."),
    agent: Optional[str] = typer.Option(None, "--agent", help="install: fill this agent (default: one agent per "
                                                              "session, named as `memcli sync` names it)."),
    *,
    out: Output,
) -> None:
    """Wire memcli into a harness's own hooks: install merges memcli's entries into its settings
    (nothing of yours changes; a backup is kept beside the file), uninstall removes exactly them,
    status says what is installed where and which events the harness has no hook for (--json)."""
    from memcli.errors import UsageError

    memory = _memory(ctx)
    if action == "install":
        change = memory.hooks_install(harness, scope=scope or "user", agent=agent)
        if change.changed:
            Output.note(f"installed {', '.join(change.events)} hooks in {change.path}"
                        + (f" (backup: {change.backup})" if change.backup else ""))
        else:
            Output.note(f"{change.path} already has memcli's hooks: nothing changed")
        Output.note(f"each runs: {change.command}")
        _advise(memory.hooks_harness(harness))
    elif action == "uninstall":
        change = memory.hooks_uninstall(harness, scope=scope or "user")
        if change.changed:
            Output.note(f"removed memcli's {', '.join(change.events)} hooks from {change.path} "
                        f"(backup: {change.backup})")
        else:
            Output.note(f"no memcli hooks in {change.path}: nothing changed")
    elif action == "status":
        h = memory.hooks_harness(harness)
        rows = [{"harness": h.name, "scope": s.scope, "path": str(s.path), "exists": s.exists, "error": s.error,
                 "installed": s.installed,
                 "not_installed": [e.name for e in h.events if e.name not in s.installed],
                 "lacks": list(h.missing), "note": h.note}
                for s in memory.hooks_status(harness, scope=scope)]
        out.records(rows, human=lambda rows, view: _render_status(h, rows, view))
    else:
        raise UsageError(f"unknown action {action!r} (expected install, uninstall or status)")


def _render_status(h, rows, view) -> None:
    for row in rows:
        where = "" if row["exists"] else " (no such file)"
        view.line(f"{h.title}, {row['scope']} scope: {row['path']}{where}")
        if row["error"]:
            view.line(f"  unreadable: {row['error']}")
        elif row["installed"]:
            missing = f"; not installed: {', '.join(row['not_installed'])}" if row["not_installed"] else ""
            view.line(f"  installed: {', '.join(row['installed'])}{missing}")
        else:
            view.line("  not installed")
    view.line(f"What memcli's {h.title} hooks do:")
    for event in h.events:
        view.line(f"  {event.name}{' (' + event.matcher + ')' if event.matcher else ''}: {event.what}")
    for lack in h.missing:
        view.line(f"{h.title} has no hook for this: {lack}")
    if h.note:
        view.line(f"Note: {h.note}")


def _advise(h) -> None:
    for lack in h.missing:
        Output.note(f"note: {h.title}: {lack}")
    if h.note:
        Output.note(f"note: {h.note}")


def hook(
    ctx: typer.Context,
    harness: str = typer.Argument(..., help=HARNESS_HELP),
    event: str = typer.Argument(..., help="The harness's event: Stop, SubagentStop, PreCompact, SessionStart "
                                          "(Claude Code, Codex); AfterAgent, PreCompress, SessionStart (Gemini CLI)."),
    agent: Optional[str] = typer.Option(None, "--agent", help="Fill this agent instead of the session's own."),
    max_chars: int = typer.Option(10_000, "--max-chars", help="SessionStart: at most this many characters of context."),
) -> None:
    """What an installed hook runs: the payload JSON on stdin; imports the transcript, and on
    SessionStart prints the memory to give back. Never exits 2 (that would block the harness)."""
    from memcli.cli.hook_main import run_hook_command

    raise SystemExit(run_hook_command(ctx.obj, harness, event, agent, max_chars))


def register(app: typer.Typer) -> None:
    app.command("hooks")(hooks)
    app.command("hook")(hook)
