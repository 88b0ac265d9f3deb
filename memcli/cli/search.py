"""``memcli search``, ``memcli remember``, ``memcli forget`` (docs/cli.md; docs/memory-as-tools.md).

``search`` prints ranked hits (a table, ``--json`` array or ``--ndjson`` lines: the fields of
:class:`memcli.search.engine.Hit`); whether the best hit has every word goes to stderr. ``remember`` and ``forget`` print the record they appended (``--json``: the record
exactly as stored) and a one-line note on stderr.
"""

from __future__ import annotations

from typing import List, Optional

import typer

from memcli.api import neutral
from memcli.cli.output import HumanView, Output, clip, fmt_age, fmt_ts, one_line, output_options, wrap
from memcli.models import is_pinned

AGENT = typer.Argument(..., help="Agent id.")
SNIPPET_LINES = 4


def _agent(ctx: typer.Context, agent: str):
    """The API's :class:`memcli.api.Agent` the command works on."""
    from memcli.api import Memory

    return Memory(ctx.obj).agent(agent)


def _cells(segments) -> int:
    return sum(len(s if isinstance(s, str) else s[0]) for s in segments)


def _render_hits(hits, view: HumanView) -> None:
    """Per hit: score, id, kind/tier, turn, time, tool; then the snippet, indented and folded to
    the view's width (at most four lines)."""
    for hit in hits:
        head = [(f"{hit.score:6.2f}", "bold"), "  ", (hit.id, "bold cyan"), f"  {hit.kind}"]
        if hit.tier != hit.kind:
            head.append(f" ({hit.tier})")
        if hit.count > 1:
            head += ["  ", (f"x{hit.count} identical", "dim")]
        if hit.status != "live":
            head += ["  ", (f"[{hit.status}" + (f" by {hit.superseded_by}]" if hit.superseded_by else "]"), "yellow")]
        if hit.turn:
            head += ["  ", (hit.turn, "dim")]
        if hit.ts is not None:
            head += ["  ", (fmt_ts(hit.ts), "dim")]
        if hit.trace_type:
            head += ["  ", hit.trace_type]
        if hit.tool_name:
            head += ["  ", (hit.tool_name, "bold")]
        if view.clip_content and _cells(head) > view.width:
            head = [s for s in head if s != f" ({hit.tier})"]  # crowded: the time as an age, no tier
            head = [(fmt_age(hit.ts), "dim") if isinstance(s, tuple) and s[0] == fmt_ts(hit.ts) else s for s in head]
            while _cells(head) > view.width and len(head) > 4:  # then the last fields (tool, type, time)
                head = head[:-2] if head[-2] == "  " else head[:-1]
        view.line(*head)
        room = max(view.width - 8, 20)  # --width / $COLUMNS
        lines = wrap(one_line(neutral(hit.snippet)), room)
        if view.clip_content and len(lines) > SNIPPET_LINES:
            lines = lines[:SNIPPET_LINES - 1] + [clip(" ".join(lines[SNIPPET_LINES - 1:]), room)]
        view.text("\n".join(lines), indent=8, max_lines=None, max_chars=None)


def say_how_it_matched(out: Output, result) -> None:
    """The search's notes on stderr, and what matched: nothing, or only some of the words
    (local and remote searches alike)."""
    for note in result.notes:
        out.note(f"note: {note}")
    terms = ", ".join(t.text for t in result.query.terms)
    if not result.hits:
        out.note(f"no record matches {terms}")
    elif result.mode == "any":
        out.note(f"no record has every word ({terms}); showing records with any of them")


@output_options
def search(
    ctx: typer.Context,
    agent: str = AGENT,
    query: Optional[str] = typer.Argument(None, metavar="QUERY",
                                help='Words to find; "a phrase" in double quotes; word* for a prefix.'),
    limit: int = typer.Option(10, "--limit", "-n", min=1, max=1000, help="At most N hits."),
    kind: Optional[List[str]] = typer.Option(None, "--kind", metavar="K",
                                             help="Only trace, episodic or semantic records (repeatable)."),
    since: Optional[str] = typer.Option(None, "--since", metavar="TIME",
                                        help="Only records from this time on: ISO-8601 or epoch seconds."),
    until: Optional[str] = typer.Option(None, "--until", metavar="TIME",
                                        help="Only records up to this time (inclusive)."),
    history: bool = typer.Option(False, "--history", help="Also superseded and forgotten facts and summaries."),
    recent: bool = typer.Option(False, "--recent", help="Weigh newer records up (half-weight after a week)."),
    embed_model: Optional[str] = typer.Option(None, "--embed-model", metavar="MODEL",
                                              help="Hybrid search with this LiteLLM embedding model "
                                                   "(default: embed_model in the store's config.json)."),
    embed_api_base: Optional[str] = typer.Option(None, "--embed-api-base", metavar="URL",
                                                 help="Endpoint of the embedding model's server."),
    remote: Optional[str] = typer.Option(None, "--remote", metavar="URL",
                                         help="Search the shared PostgreSQL store at URL ('' = $MEMCLI_REMOTE): "
                                              "AGENT is NAME or STORE/NAME, or use --all."),
    all: bool = typer.Option(False, "--all", help="Every agent, this store's or with --remote the shared one's "
                                                  "(the one argument is then QUERY); a synced session's hit says how to resume it."),
    *, out: Output,
) -> None:
    """Ranked hits over every trace (active and archive), summary and fact.

    A question works: common words (what, did, the ...) are left out unless in "quotes", and
    records holding more of the other words, close together, rank first. Identical texts are one
    hit with a count. Each hit's id expands with `memcli get`. The search index
    (agents/AGENT/.search.sqlite) is a cache, caught up with the files on each search.
    """
    if remote is not None:
        from memcli.cli.remote import search_remote

        return search_remote(ctx, remote, agent, query, all, limit, kind, since, until, out, _render_hits,
                             embed_model=embed_model, embed_api_base=embed_api_base)
    if all:
        from memcli.cli.search_all import search_all

        return search_all(ctx, agent, query, out=out, limit=limit, kind=kind, since=since, until=until,
                          history=history, recent=recent, embed_model=embed_model, embed_api_base=embed_api_base)
    if query is None:
        from memcli.errors import UsageError

        raise UsageError("Missing argument 'QUERY'.")
    result = _agent(ctx, agent).search(query, limit=limit, kind=kind, since=since, until=until, history=history,
                                       recent=recent, embed_model=embed_model, embed_api_base=embed_api_base)
    say_how_it_matched(out, result)
    if out.human:
        out.records(result.hits, human=_render_hits)
    else:
        out.records((h.to_json() for h in result.hits), human=None)


@output_options
def remember(
    ctx: typer.Context,
    agent: str = AGENT,
    text: str = typer.Argument(..., metavar="TEXT", help="The fact, in a sentence or two."),
    tag: Optional[List[str]] = typer.Option(None, "--tag", metavar="T", help="Tag the fact (repeatable)."),
    pin: bool = typer.Option(False, "--pin", help="Always put this fact in the snapshot's memory bundle, first."),
    supersedes: Optional[List[str]] = typer.Option(None, "--supersedes", metavar="ID",
                                                   help="The fact this one replaces (repeatable)."),
    *, out: Output,
) -> None:
    """Add a semantic fact (creates the agent if needed). Secrets in it are redacted like ingest's."""
    done = _agent(ctx, agent).remember(text, tags=tag or (), pin=pin, supersedes=supersedes, full=True)
    record = done.record
    note = (f"already remembered as {record['id']} in {agent!r}: nothing written" if done.existing else
            f"remembered {record['id']} in {agent!r}") + (" (pinned)" if is_pinned(record) else "")
    if done.superseded:
        note += f", superseding {', '.join(done.superseded)}"
    if done.redacted:
        note += f"; redacted {done.redacted} secret{'s' if done.redacted != 1 else ''}"
    out.note(note)
    out.document(record, human=lambda r, view: view.line(r["id"]))


@output_options
def forget(
    ctx: typer.Context,
    agent: str = AGENT,
    record_id: str = typer.Argument(..., metavar="ID", help="Id of the fact or summary to take out."),
    reason: Optional[str] = typer.Option(None, "--reason", metavar="TEXT", help="Why (kept in the tombstone)."),
    *, out: Output,
) -> None:
    """Take a fact or summary out of memory with a superseding tombstone; nothing is deleted.

    `memcli memory AGENT --all` still lists it, marked superseded.
    """
    done = _agent(ctx, agent).forget(record_id, reason=reason, full=True)
    if done.tombstone is None:
        out.note(f"{record_id} is already superseded by {done.already_superseded_by}: nothing written")
        out.document({"forgotten": record_id, "tombstone": None, "superseded_by": done.already_superseded_by},
                     human=lambda r, view: None)
        return
    out.note(f"forgot {record_id} ({done.tier}): tombstone {done.tombstone['id']}")
    out.document(done.tombstone, human=lambda r, view: view.line(r["id"]))


def register(app: typer.Typer) -> None:
    app.command("search")(search)
    app.command("remember")(remember)
    app.command("forget")(forget)
