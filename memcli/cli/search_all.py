"""``memcli search --all QUERY``: ranked hits over every agent (docs/sync.md).

Human view: per hit a line with score, agent, id, kind, turn and time, the snippet, and for a
synced session the command that resumes it. ``--json`` / ``--ndjson``: the per-agent hit fields
plus ``agent`` and, for synced sessions, ``source``, ``title`` and ``resume``.
"""

from __future__ import annotations

import typer

from memcli.cli.output import HumanView, Output, fmt_ts
from memcli.errors import UsageError


def _render(hits, view: HumanView) -> None:
    for h in hits:
        hit = h.hit
        head = [(f"{hit.score:6.2f}", "bold"), "  ", (h.agent, "bold green"), "  ", (hit.id, "cyan"),
                f"  {hit.kind}"]
        if hit.turn:
            head += ["  ", (hit.turn, "dim")]
        if hit.ts is not None:
            head += ["  ", (fmt_ts(hit.ts), "dim")]
        view.line(*head)
        if h.title:
            view.text(f"session: {h.title}", indent=8, max_lines=1)
        view.text(hit.snippet, indent=8, max_lines=4)
        if h.resume:
            view.text(f"resume: {h.resume}", indent=8, max_lines=1)


def search_all(ctx: typer.Context, first: str, query: str | None, *, out: Output, limit: int, kind, since,
               until, **options) -> None:
    import memcli

    if query is not None:
        raise UsageError("search --all takes one QUERY and no agent (quote a query of several words)")
    result = memcli.Memory(ctx.obj).search_all(first, limit=limit, kind=kind, since=since, until=until, **options)
    for note in result.notes:
        out.note(f"note: {note}")
    if not result.hits:
        out.note(f"no record matches in {result.agents} agent{'s' if result.agents != 1 else ''}")
    if out.human:
        out.records(result.hits, human=_render)
    else:
        out.records((h.to_json() for h in result.hits), human=None)
