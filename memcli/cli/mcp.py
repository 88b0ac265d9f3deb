"""``memcli mcp``: serve the store's memory to an MCP client over stdin/stdout.

The SDK is imported inside the command (by :mod:`memcli.mcp.server`), so registering the command
costs nothing to the other commands. stdout carries the protocol only; notes go to stderr, and
the server is quiet there by default (warnings and errors only; ``--log-level info`` shows a line
per request).
"""

from __future__ import annotations

from typing import Optional

import typer


def mcp(
    ctx: typer.Context,
    agent: Optional[str] = typer.Option(
        None, "--agent", metavar="A", help="Serve only this agent (its tools then need no `agent` argument)."),
    remote: Optional[str] = typer.Option(
        None, "--remote", metavar="URL",
        help="Serve the shared PostgreSQL store at URL ('' = $MEMCLI_REMOTE); agents are NAME or STORE/NAME."),
    log_level: str = typer.Option(
        "warning", "--log-level", metavar="LEVEL",
        help="What the server logs on stderr: debug, info (one line per request), warning, error."),
) -> None:
    """Run a stdio MCP server over the store: memory_search, memory_get, memory_recent,
    memory_remember, memory_forget, and memory (the working-memory files).

    Add it to a client, e.g. `claude mcp add memcli -- memcli --dir /path/to/memory mcp --agent coder`.
    """
    from memcli.errors import UsageError

    try:
        from memcli.mcp.server import serve
    except ImportError as exc:  # the SDK missing from this installation
        raise UsageError(f"memcli mcp needs the MCP Python SDK ({exc}); install it with `pip install 'mcp>=1.25,<2'`") from None
    serve(ctx.obj, agent, log_level.lower(), remote)


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp)
