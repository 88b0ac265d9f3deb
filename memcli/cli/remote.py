"""``memcli push`` and ``memcli pull``: the shared PostgreSQL store (docs/remote.md).

``push`` prints one row per agent (local name, remote ``STORE/NAME``, records sent, rows added or
changed, files pushed again whole because a compaction rewrote them) and, on stderr, the total with
its rate. ``pull`` prints the restored agent's files with their record counts. The URL is never
printed: messages name the server as ``host:port/db``.
"""

from __future__ import annotations

from typing import List, Optional

import typer

from memcli.cli.output import Column, Output, output_options

URL_HELP = "PostgreSQL URL (postgresql://user@host:port/db); default $MEMCLI_REMOTE. The password comes from " \
           "the URL, $PGPASSWORD or ~/.pgpass and is never printed."


def _progress():
    import sys
    import time

    if not sys.stderr.isatty():
        return None
    started = time.perf_counter()
    total = [0]

    def report(agent: str, n: int) -> None:
        total[0] += n
        rate = total[0] / max(time.perf_counter() - started, 1e-6)
        print(f"\rmemcli: pushing {agent}: {total[0]:,} records ({rate:,.0f}/s)", end="", file=sys.stderr)
    return report


@output_options
def push(
    ctx: typer.Context,
    agents: Optional[List[str]] = typer.Argument(None, metavar="[AGENT]...", help="Agents to push."),
    to: Optional[str] = typer.Option(None, "--to", metavar="URL", help=URL_HELP),
    all: bool = typer.Option(False, "--all", help="Push every agent of the store."),
    store_id: Optional[str] = typer.Option(
        None, "--store-id", metavar="ID",
        help="Push as this store (default: this store's own id, kept in DIR/.store-id). Stores pushing with the "
             "same id share their agents of the same name."),
    as_name: Optional[str] = typer.Option(None, "--as", metavar="NAME", help="Push the one AGENT under this name."),
    *, out: Output,
) -> None:
    """Replicate agents into a shared PostgreSQL store: every record (traces active and archived,
    summaries, facts, working memory), idempotent by record id, resumable, safe from many machines.

    Agents keep their name there, qualified by this store's id (STORE/NAME), so two machines'
    agents of the same name stay apart unless pushed with the same --store-id. Where the server
    has pgvector, the embeddings hybrid search made are sent too (search --remote uses them).
    """
    import sys

    from memcli.api import Memory

    progress = _progress()
    result = Memory(ctx.obj).push(agents, to=to, all=all, store_id=store_id, as_name=as_name, progress=progress)
    if progress:
        print(file=sys.stderr)
    rows = [{"agent": a.agent, "remote": a.remote, "records": a.records, "changed": a.changed,
             "rewritten": a.rewritten, "retries": a.retries, "vectors": a.vectors} for a in result.agents]
    for note in result.notes:
        out.note(f"note: {note}")
    rate = result.records / result.seconds if result.seconds else 0
    out.note(f"pushed {len(rows)} agent{'s' if len(rows) != 1 else ''} to {result.where} as store {result.store_id}: "
             f"{result.records:,} records in {result.seconds:.2f}s ({rate:,.0f}/s)"
             + (f", {sum(a.vectors for a in result.agents):,} vectors" if any(a.vectors for a in result.agents) else ""))
    out.records(rows, human=lambda rs, view: view.table(rs, [
        Column("AGENT", "agent"), Column("REMOTE", "remote", flex=True), Column("RECORDS", "records", align="right"),
        Column("CHANGED", "changed", align="right"),
        Column("REWRITTEN", lambda r: ", ".join(r["rewritten"]) or "-")]))


@output_options
def pull(
    ctx: typer.Context,
    agent: str = typer.Argument(..., metavar="AGENT", help="NAME, or STORE/NAME when several stores pushed NAME."),
    from_: Optional[str] = typer.Option(None, "--from", metavar="URL", help=URL_HELP),
    as_name: Optional[str] = typer.Option(None, "--as", metavar="NAME", help="Restore under this local name."),
    *, out: Output,
) -> None:
    """Restore an agent from a shared PostgreSQL store as a new local agent, file for file as
    pushed (its export is byte-identical to the pushing machine's). An existing agent is never
    overwritten."""
    from memcli.api import Memory

    result = Memory(ctx.obj).pull(agent, from_=from_, as_name=as_name)
    out.note(f"pulled {result.remote} into agent {result.agent!r}: {sum(result.files.values()):,} records")
    rows = [{"file": name, "records": n} for name, n in result.files.items()]
    out.records(rows, human=lambda rs, view: view.table(rs, [Column("FILE", "file"),
                                                                Column("RECORDS", "records", align="right")]))


def register(app: typer.Typer) -> None:
    app.command("push")(push)
    app.command("pull")(pull)


def search_remote(ctx, remote, agent, query, all, limit, kind, since, until, out: Output, render, *,
                  embed_model=None, embed_api_base=None) -> None:
    """``memcli search --remote URL AGENT QUERY`` / ``--remote URL --all QUERY`` (called by
    ``memcli search``): hits shaped as local ones, each naming its agent (STORE/NAME)."""
    from memcli.api import Memory
    from memcli.errors import UsageError

    if all:
        if query is not None:
            raise UsageError("--all: give only QUERY (no AGENT)")
        agent, query = None, agent
    if query is None:
        raise UsageError("Missing argument 'QUERY'.")
    if remote is None:
        raise UsageError("--all: searching every agent needs --remote URL")
    result = Memory(ctx.obj).search_remote(query, remote=remote or None, agent=agent, all=all, limit=limit,
                                           kind=kind, since=since, until=until, embed_model=embed_model,
                                           embed_api_base=embed_api_base)
    from memcli.cli.search import say_how_it_matched

    say_how_it_matched(out, result)
    if out.human:
        def human(hits, view):
            for hit in hits:
                view.line((hit.agent, "dim"))
                render([hit], view)
        out.records(result.hits, human=human)
    else:
        out.records(({**h.to_json(), "agent": h.agent} for h in result.hits), human=None)
