"""``memcli doctor [AGENT | --all] [--repair] [--strict] [--secrets]``: integrity check with file
and line; without an agent, every agent of the store is checked (exit 1 when any has a problem)."""

from __future__ import annotations

from typing import Optional

import typer

from memcli.cli.output import HumanView, Output, output_options

_SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def _render(findings, view: HumanView) -> None:
    for f in findings:
        where = f.location()
        head = [(where + ": ", "bold")] if where else []  # the file's path names the agent
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
    agent: Optional[str] = typer.Argument(None, help="Agent id (default: every agent, as --all)."),
    all_: bool = typer.Option(False, "--all", help="Check every agent in the store (the default without AGENT)."),
    repair: bool = typer.Option(False, "--repair", help="Fix what can be fixed without losing data, then check again."),
    strict: bool = typer.Option(False, "--strict", help="Exit 1 on warnings too (orphan results, stale pending calls)."),
    secrets: bool = typer.Option(False, "--secrets", help="Look for secrets (API keys, tokens, private keys, passwords) "
                                 "in every data file instead; with --repair, redact them in place."),
    *, out: Output,
) -> None:
    """Check an agent's files (every agent's without AGENT): bad lines, torn tails, duplicate ids,
    ids in both active and archive, unfinished compaction or ingest, seq going backwards, orphan
    results, stale pending calls.

    Every finding names its file and line (and, over several agents, the agent). --repair works
    under the agent lock: bad lines move to <file>.corrupt-lines, byte-identical duplicates are
    dropped, interrupted work is recovered, the cache is rebuilt. Exit 1 while an error remains
    (--strict: or a warning) in any agent, else 0.

    --secrets scans traces, memory items and working-memory files for the formats ingest redacts
    (file:line and kinds, never the secret); --secrets --repair replaces them with
    [REDACTED:<kind>] in place, every other line byte for byte. Exit 1 while a secret remains.
    """
    from memcli.api import Memory
    from memcli.errors import IntegrityError

    memory = Memory(ctx.obj)
    reports = memory.doctor(agent, all=all_, repair=repair, secrets=secrets)
    if not reports:
        out.note(f"no agents in {ctx.obj}")
        return
    names = [report.agent for report in reports]
    several = len(names) > 1
    for report in reports:
        for action in report.actions:
            out.note(f"repaired: {action}")
    checks = [(_secrets_summary if secrets else _summary)(report, memory, strict) for report in reports]

    def rows():
        for report in reports:
            for f in report.findings:
                yield f if out.human else ({"agent": report.agent, **f.to_json()} if several else f.to_json())

    out.records(rows(), human=_render_secrets if secrets else _render)
    failed = []
    for name, (summary, error) in zip(names, checks):
        if error is not None:
            failed.append(name)
            if not several:
                raise IntegrityError(summary, hint=error)
        out.note(summary)
    if failed:
        what = "doctor --secrets" if secrets else "doctor"
        raise IntegrityError(f"{what}: {len(failed)} of {len(names)} agents have problems: {', '.join(failed)}",
                             hint=f"`memcli doctor AGENT{' --secrets' if secrets else ''}` checks one")


def _summary(report, memory, strict: bool):
    """(summary, hint when it failed else None) of one agent's report; a failure's hint is ""
    when there is none to give."""
    counts = {s: sum(1 for f in report.findings if f.severity == s and not f.fixed) for s in ("error", "warning", "info")}
    fixed = sum(1 for f in report.findings if f.fixed)
    summary = ", ".join(f"{n} {s}{'s' if n != 1 else ''}" for s, n in counts.items() if n) or "no problems"
    if fixed:
        summary += f" ({fixed} fixed)"
    remaining = report.remaining(strict=strict)
    if remaining:
        fixable = sum(1 for f in remaining if f.fixable)
        hint = "run with --repair to fix what can be fixed" if fixable and not report.repaired else ""
        return f"doctor: agent {report.agent!r}: {summary}", hint
    if not memory.agent(report.agent).exists():
        summary += "; no agent remains (its first import never finished)"
    return f"doctor: agent {report.agent!r}: {summary}", None


def _render_secrets(findings, view: HumanView) -> None:
    for f in findings:
        view.line((f"{f.file}:{f.line}: ", "bold"), ("secret", "bold red"), f": {f.describe()}",
                  *(["  ", ("redacted", "bold green")] if f.fixed else []))


def _secrets_summary(report, memory, strict: bool):
    """:func:`_summary` for ``--secrets``."""
    findings, remaining = report.findings, report.remaining()
    total = sum(sum(f.kinds.values()) for f in findings)
    left = sum(sum(f.kinds.values()) for f in remaining)
    lines = len({(f.file, f.line) for f in findings})
    summary = (f"{total} secret{'s' if total != 1 else ''} on {lines} line{'s' if lines != 1 else ''}"
               + (f" ({total - left} redacted)" if report.repaired else "")) if findings else "no secrets found"
    summary = f"doctor --secrets: agent {report.agent!r}: {summary}"
    return summary, (("" if report.repaired else "run with --repair to redact them in place") if remaining else None)


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)
