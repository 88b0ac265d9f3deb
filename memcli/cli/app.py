"""The ``memcli`` command: global options, command registration, and the one place where
library errors become a message on stderr and an exit code (docs/cli.md: 0 ok, 1 failure, 2 usage,
3 not found). ``MEMCLI_DEBUG=1`` re-raises instead, to see the traceback.

It is also the one place for a closed stdout (``memcli export A | head``): the reader has what it
wanted, so every command stops quietly with exit 0 — no traceback, no message, as ``head`` users
expect (:func:`_closed_pipe`).

Command modules are imported at start-up but keep their heavy imports inside the command
functions: ``memcli ingest`` runs once per event in shell scripts, so start-up time matters.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Optional

import typer
from typer.core import TyperGroup

from memcli import __version__
from memcli.cli import main  # noqa: F401  (the entry point; it lives there so that hooks skip typer)
from memcli.errors import MemcliError


class MemcliGroup(TyperGroup):
    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except MemcliError as exc:
            if os.environ.get("MEMCLI_DEBUG") == "1":
                raise
            from memcli.api import neutral

            message = f"memcli: error: {exc.worded(_flags(self, ctx))}"
            if exc.hint:
                message += f"\n  hint: {exc.hint}"
            print(neutral(message), file=sys.stderr)  # a message may quote stored text
            raise typer.Exit(exc.exit_code) from None
        except BrokenPipeError:
            _closed_pipe()
            raise typer.Exit(0) from None
        except KeyboardInterrupt:
            print("memcli: interrupted", file=sys.stderr)
            raise typer.Exit(130) from None


def _flags(group: TyperGroup, ctx):
    """How this command line spells an error's parameter: the flag of the command's option of
    that name (``fmt`` -> ``--from`` for ingest), else ``--`` and the name with dashes."""
    from memcli.errors import as_flag

    command = group.get_command(ctx, ctx.invoked_subcommand) if ctx.invoked_subcommand else None
    while command is not None:
        flags = {p.name: next((o for o in p.opts if o.startswith("--")), None) for p in command.params}
        sub = getattr(command, "commands", None)
        if not sub:
            break
        # a group (``hooks install``): the subcommand named on the command line
        names = [a for a in ctx.protected_args + ctx.args if a in sub]
        command = sub.get(names[0]) if names else None
    else:
        flags = {}
    return lambda param: flags.get(param) or as_flag(param)


def _closed_pipe() -> None:
    """Point stdout at /dev/null, so that flushing what is still buffered at exit cannot fail."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def _new_app() -> typer.Typer:
    return typer.Typer(
        cls=MemcliGroup,
        name="memcli",
        help="Keep an AI agent's memory in plain JSONL files: ingest, inspect, compact, snapshot, export.",
        no_args_is_help=True,
        add_completion=True,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
        context_settings={"help_option_names": ["-h", "--help"]},
    )


def _version(value: bool) -> None:
    if value:
        print(f"memcli {__version__}")
        raise typer.Exit()


def _global(
    ctx: typer.Context,
    dir: Optional[Path] = typer.Option(
        None, "--dir", envvar="MEMCLI_DIR", show_envvar=True,
        help="Memory directory (default: ./memory).",
    ),
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Keep an AI agent's memory in plain JSONL files."""
    from memcli.api import Memory  # every command reaches the library through it anyway

    ctx.obj = Memory(dir).path


# command -> the module that registers it (a module may register several)
COMMAND_MODULES = {
    "ingest": "ingest",
    "agents": "inspect", "stats": "inspect", "turns": "inspect", "show": "inspect", "tools": "inspect",
    "get": "inspect", "memory": "inspect", "doctor": "inspect",
    "compact": "compact", "compactions": "compactions", "uncompact": "compactions",
    "snapshot": "snapshot",
    "export": "export", "clear": "export",
    "search": "search", "remember": "search", "forget": "search",
    "mcp": "mcp",
    "memory-tool": "memory_tool",
    "sync": "sync",
    "push": "remote", "pull": "remote",
    "hooks": "hooks", "hook": "hooks",
    "view": "view",
    "summarize-results": "summarize_results",
}


def build_app(only: str | None = None) -> typer.Typer:
    """The CLI with every command, or with only the module that registers ``only``.

    Typer inspects every registered command's signature before it parses anything (~3 ms per
    command); a shell script calling ``memcli ingest`` once per event should not pay for the
    other twelve, so :func:`memcli.cli.main` builds only the command it is asked for. Help without a
    command, and anything unrecognised, get the whole CLI.
    """
    import importlib

    new = _new_app()
    new.callback()(_global)
    modules = [COMMAND_MODULES[only]] if only in COMMAND_MODULES else list(dict.fromkeys(COMMAND_MODULES.values()))
    for name in modules:
        importlib.import_module(f"memcli.cli.{name}").register(new)
    return new


def __getattr__(name: str):
    """``memcli.cli.app.app``: the whole CLI (tests, tools), built on first use."""
    if name == "app":
        globals()["app"] = full = build_app()
        return full
    raise AttributeError(name)
