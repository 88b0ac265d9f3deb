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
    secrets: bool = typer.Option(False, "--secrets", help="Look for secrets (API keys, tokens, private keys, passwords) "
                                 "in every data file instead; with --repair, redact them in place."),
    *, out: Output,
) -> None:
    """Check an agent's files: bad lines, torn tails, duplicate ids, ids in both active and archive,
    unfinished compaction or ingest, seq going backwards, orphan results, stale pending calls.

    Every finding names its file and line. --repair works under the agent lock: bad lines move to
    <file>.corrupt-lines, byte-identical duplicates are dropped, interrupted work is recovered,
    the cache is rebuilt. Exit 1 while an error remains (--strict: or a warning), else 0.

    --secrets scans traces, memory items and working-memory files for the formats ingest redacts
    (file:line and kinds, never the secret); --secrets --repair replaces them with
    [REDACTED:<kind>] in place, every other line byte for byte. Exit 1 while a secret remains.
    """
    from memcli.errors import IntegrityError
    from memcli.store.agent import AgentStore

    if secrets:
        return _doctor_secrets(AgentStore(ctx.obj, agent).require(), repair, out)
    from memcli.inspect.doctor import diagnose
    from memcli.inspect.doctor import repair as run_repair

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


def _render_secrets(findings, view: HumanView) -> None:
    for f in findings:
        view.line((f"{f.file}:{f.line}: ", "bold"), ("secret", "bold red"), f": {f.describe()}",
                  *(["  ", ("redacted", "bold green")] if f.fixed else []))


def _doctor_secrets(store, repair: bool, out: Output) -> None:
    from memcli.errors import IntegrityError
    from memcli.inspect import secrets as secret_scan

    if repair:
        findings, actions, remaining = secret_scan.repair(store)
    else:
        findings, actions = secret_scan.scan(store), []
        remaining = findings
    for action in actions:
        out.note(f"repaired: {action}")
    if out.human:
        out.records(findings, human=_render_secrets)
    else:
        out.records((f.to_json() for f in findings), human=_render_secrets)
    total = sum(sum(f.kinds.values()) for f in findings)
    left = sum(sum(f.kinds.values()) for f in remaining)
    lines = len({(f.file, f.line) for f in findings})
    summary = (f"{total} secret{'s' if total != 1 else ''} on {lines} line{'s' if lines != 1 else ''}"
               + (f" ({total - left} redacted)" if repair else "")) if findings else "no secrets found"
    if remaining:
        raise IntegrityError(f"doctor --secrets: agent {store.agent_id!r}: {summary}",
                             hint=None if repair else "run with --repair to redact them in place")
    out.note(f"doctor --secrets: agent {store.agent_id!r}: {summary}")


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)
