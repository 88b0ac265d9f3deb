"""``memcli doctor AGENT [--repair] [--strict]``: integrity check with file and line."""

from __future__ import annotations

import typer

from memcli.cli.output import HumanView, Output, output_options

_SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def _render(findings, view: HumanView) -> None:
    for f in findings:
        where = f.location()
        head = [(where + ": ", "bold")] if where else []
        head += [(f.severity, _SEVERITY_STYLE.get(f.severity)), f": {f.message} [{f.code}]"]
        if f.fixed:
            head += ["  ", ("fixed", "bold green")]
        view.line(*head)
        if f.action:
            verb = "repaired" if f.fixed else "--repair would" if f.fixable else "fix"
            view.line("    ", (f"{verb}: {f.action}", "dim"))


@output_options
def doctor(
    ctx: typer.Context,
    agent: str = typer.Argument(..., help="Agent id."),
    repair: bool = typer.Option(False, "--repair", help="Fix what can be fixed without losing data, then check again."),
    strict: bool = typer.Option(False, "--strict", help="Exit 1 on warnings too (orphan results, stale pending calls)."),
    *, out: Output,
) -> None:
    """Check an agent's files: bad lines, torn tails, duplicate ids, ids in both active and archive,
    unfinished compaction or ingest, seq going backwards, orphan results, stale pending calls.

    Every finding names its file and line. --repair works under the agent lock: bad lines move to
    <file>.corrupt-lines, byte-identical duplicates are dropped, interrupted work is recovered,
    the cache is rebuilt. Exit 1 while an error remains (--strict: or a warning), else 0.
    """
    from memcli.errors import IntegrityError
    from memcli.inspect.doctor import diagnose
    from memcli.inspect.doctor import repair as run_repair
    from memcli.store.agent import AgentStore

    store = AgentStore(ctx.obj, agent)
    report = run_repair(store) if repair else diagnose(store)
    for action in report.actions:
        out.note(f"repaired: {action}")
    if out.human:
        out.records(report.findings, human=_render)
    else:
        out.records((f.to_json() for f in report.findings), human=_render)
    counts = {s: sum(1 for f in report.findings if f.severity == s and not f.fixed) for s in ("error", "warning", "info")}
    fixed = sum(1 for f in report.findings if f.fixed)
    summary = ", ".join(f"{n} {s}{'s' if n != 1 else ''}" for s, n in counts.items() if n) or "no problems"
    if fixed:
        summary += f" ({fixed} fixed)"
    remaining = report.remaining(strict=strict)
    if remaining:
        fixable = sum(1 for f in remaining if f.fixable)
        hint = "run with --repair to fix what can be fixed" if fixable and not repair else None
        raise IntegrityError(f"doctor: agent {agent!r}: {summary}", hint=hint)
    if not store.exists():
        summary += "; no agent remains (its first import never finished)"
    out.note(f"doctor: agent {agent!r}: {summary}")


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)
