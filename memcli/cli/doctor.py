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
    from memcli.errors import IntegrityError, UsageError
    from memcli.store.agent import AgentStore

    if agent is not None and all_:
        raise UsageError("give an agent or --all, not both")
    if agent is None:
        from memcli.store.layout import list_agent_ids

        names = list_agent_ids(ctx.obj)
        if not names:
            out.note(f"no agents in {ctx.obj}")
            return
    else:
        names = [agent]
    several = len(names) > 1
    checks = [(_check_secrets if secrets else _check)(AgentStore(ctx.obj, name), repair, strict, out) for name in names]

    def rows():
        for name, (findings, _, _) in zip(names, checks):
            for f in findings:
                yield f if out.human else ({"agent": name, **f.to_json()} if several else f.to_json())

    out.records(rows(), human=_render_secrets if secrets else _render)
    failed = []
    for name, (_, summary, error) in zip(names, checks):
        if error is not None:
            failed.append(name)
            if not several:
                raise IntegrityError(summary, hint=error)
        out.note(summary)
    if failed:
        what = "doctor --secrets" if secrets else "doctor"
        raise IntegrityError(f"{what}: {len(failed)} of {len(names)} agents have problems: {', '.join(failed)}",
                             hint=f"`memcli doctor AGENT{' --secrets' if secrets else ''}` checks one")


def _check(store, repair: bool, strict: bool, out: Output):
    """(findings, summary, hint when it failed else None) of one agent; a failure's hint is "" when
    there is none to give."""
    from memcli.inspect.doctor import diagnose
    from memcli.inspect.doctor import repair as run_repair

    report = run_repair(store) if repair else diagnose(store)
    for action in report.actions:
        out.note(f"repaired: {action}")
    counts = {s: sum(1 for f in report.findings if f.severity == s and not f.fixed) for s in ("error", "warning", "info")}
    fixed = sum(1 for f in report.findings if f.fixed)
    summary = ", ".join(f"{n} {s}{'s' if n != 1 else ''}" for s, n in counts.items() if n) or "no problems"
    if fixed:
        summary += f" ({fixed} fixed)"
    remaining = report.remaining(strict=strict)
    if remaining:
        fixable = sum(1 for f in remaining if f.fixable)
        hint = "run with --repair to fix what can be fixed" if fixable and not repair else ""
        return report.findings, f"doctor: agent {store.agent_id!r}: {summary}", hint
    if not store.exists():
        summary += "; no agent remains (its first import never finished)"
    return report.findings, f"doctor: agent {store.agent_id!r}: {summary}", None


def _render_secrets(findings, view: HumanView) -> None:
    for f in findings:
        view.line((f"{f.file}:{f.line}: ", "bold"), ("secret", "bold red"), f": {f.describe()}",
                  *(["  ", ("redacted", "bold green")] if f.fixed else []))


def _check_secrets(store, repair: bool, strict: bool, out: Output):
    """:func:`_check` for ``--secrets``."""
    from memcli.inspect import secrets as secret_scan

    store.require()
    if repair:
        findings, actions, remaining = secret_scan.repair(store)
    else:
        findings, actions = secret_scan.scan(store), []
        remaining = findings
    for action in actions:
        out.note(f"repaired: {action}")
    total = sum(sum(f.kinds.values()) for f in findings)
    left = sum(sum(f.kinds.values()) for f in remaining)
    lines = len({(f.file, f.line) for f in findings})
    summary = (f"{total} secret{'s' if total != 1 else ''} on {lines} line{'s' if lines != 1 else ''}"
               + (f" ({total - left} redacted)" if repair else "")) if findings else "no secrets found"
    summary = f"doctor --secrets: agent {store.agent_id!r}: {summary}"
    return findings, summary, (("" if repair else "run with --repair to redact them in place") if remaining else None)


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)
