"""``memcli memory-tool AGENT``: answer one Anthropic memory-tool command (``Agent.memory_tool``).

stdin: the ``input`` object of one ``tool_use`` block (JSON). stdout: exactly the text to send
back as the ``tool_result`` — no newline added (on a terminal one is, to end the line). A command the tool refuses prints the refusal's
text on stdout too (the ``tool_result`` to send with ``is_error: true``) and exits 1, so a loop
only needs ``stdout`` and the exit status. memcli's own failures (a bad agent id, a lock timeout,
a corrupt store) are reported on stderr like every other command.
"""

from __future__ import annotations

import sys

import typer


def memory_tool(
    ctx: typer.Context,
    agent: str = typer.Argument(..., help="Agent id."),
) -> None:
    """Answer one memory-tool command (the tool_use input JSON on stdin) from the agent's working memory.

    Commands as in Anthropic's memory tool (memory_20250818): view, create, str_replace, insert,
    delete, rename on the /memories tree. The result text goes to stdout (exit 0); a refused
    command prints its error text (exit 1) and changes nothing.
    """
    from memcli.api import Memory
    from memcli.errors import MemoryToolRefused

    tool = Memory(ctx.obj).agent(agent)
    try:
        result = tool.memory_tool(sys.stdin.buffer.read(), full=True)
    except MemoryToolRefused as exc:
        _write(exc.message)
        raise typer.Exit(1) from None
    if result.redacted:   # (rare: output's import stays off the per-call path)
        from memcli.cli.output import Output

        Output.note(f"note: redacted {result.redacted} secret{'s' if result.redacted != 1 else ''} "
                    f"in {result.record['path']} before storing it")   # the path is the caller's: shown, not sent
    _write(result.text)


def _write(text: str) -> None:
    out = sys.stdout
    if out.isatty():  # a person reading: end the line (a pipe gets the text exactly)
        text += "\n"
    try:
        if hasattr(out, "buffer"):
            out.buffer.write(text.encode("utf-8", "surrogateescape"))
            out.buffer.flush()
        else:
            out.write(text)
            out.flush()
    except BrokenPipeError:
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def register(app: typer.Typer) -> None:
    app.command("memory-tool")(memory_tool)
