"""``memcli sync``: import every agent session found on this machine (docs/sync.md).

stdout: one row per session imported (or, with ``--dry-run``, that would be), ``--json`` one
document ``{"sessions": [...], "summary": {...}}`` with every session found. stderr: a progress
bar on long runs, each session that failed (path, line, reason), and the summary line. Exit 1 when
any session failed (the others were imported).
"""

from __future__ import annotations

from typing import Optional

import typer

from memcli.cli.output import Column, Output, output_options

SYNC_COLUMNS = [
    Column("agent", "agent", max_width=60, id_width=12),
    Column("status", "status"),
    Column("events", "events", align="right"),
    Column("path", "path", flex=True, drop=1),
]


@output_options
def sync(
    ctx: typer.Context,
    home: Optional[str] = typer.Option(None, "--home", metavar="DIR", help="Home directory to look in (default: ~)."),
    source: Optional[str] = typer.Option(
        None, "--source", metavar="NAMES",
        help="Only these sources, comma-separated: claude-code, codex, gemini, copilot, goose, opencode, cursor, aider, chatgpt, claude-ai (default: all)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="List what would be imported; write nothing."),
    path: Optional[list[str]] = typer.Option(
        None, "--path", metavar="PATH",
        help="Also import this file kept elsewhere (repeatable): a ChatGPT or Claude.ai conversations.json,"
             " an .aider.chat.history.md, or a directory holding one."),
    *, out: Output,
) -> None:
    """Find every agent session on this machine and import what is new: one agent per session,
    named <source>.<project>.<session>.

    An unchanged session is not read again; one that grew is read from where the last sync
    stopped. A session that cannot be read is reported and skipped (exit 1 at the end).
    """
    import memcli
    from memcli.cli.progress import progress_bar

    with progress_bar("sync", unit="items", enabled=out.human) as advance:
        report = memcli.Memory(ctx.obj).sync(home=home, source=source, dry_run=dry_run, progress=advance,
                                             path=path)
    for failed in report.failed:
        out.note(f"sync: skipped {failed.error}")
    changed = [s for s in report.sessions if s.status != "unchanged"]
    if out.mode == "ndjson":
        out.records((s.to_json() for s in report.sessions), human=None)
    elif out.mode == "json":
        out.document({"sessions": [s.to_json() for s in report.sessions],
                      "summary": {"found": len(report.sessions), "imported": len(changed) - len(report.failed),
                                  "failed": len(report.failed), "dry_run": dry_run,
                                  "events_added": sum(s.events for s in report.sessions)}}, human=None)
    else:
        rows = [{"agent": s.agent or "", "status": s.status, "events": s.events, "path": s.path}
                for s in changed if s.status != "failed"]
        out.records(rows, human=lambda rows, view: view.table(rows, SYNC_COLUMNS, empty=""))
    out.note(report.summary())
    if report.failed:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("sync")(sync)
