"""The ``memcli`` command: global options, command registration, and the one place where
library errors become a message on stderr and an exit code (CLI.md: 0 ok, 1 failure, 2 usage,
3 not found). ``MEMCLI_DEBUG=1`` re-raises instead, to see the traceback.

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
from memcli.errors import MemcliError


class MemcliGroup(TyperGroup):
    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except MemcliError as exc:
            if os.environ.get("MEMCLI_DEBUG") == "1":
                raise
            message = f"memcli: error: {exc.message}"
            if exc.hint:
                message += f"\n  hint: {exc.hint}"
            print(message, file=sys.stderr)
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            print("memcli: interrupted", file=sys.stderr)
            raise typer.Exit(130) from None


app = typer.Typer(
    cls=MemcliGroup,
    name="memcli",
    help="Keep an AI agent's memory in plain JSONL files: ingest, inspect, compact, snapshot, export.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        print(f"memcli {__version__}")
        raise typer.Exit()


@app.callback()
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
    from memcli.store.layout import resolve_memory_dir

    ctx.obj = resolve_memory_dir(dir)


from memcli.cli import compact as _compact  # noqa: E402
from memcli.cli import export as _export  # noqa: E402
from memcli.cli import ingest as _ingest  # noqa: E402
from memcli.cli import inspect as _inspect  # noqa: E402
from memcli.cli import snapshot as _snapshot  # noqa: E402

for _module in (_ingest, _inspect, _compact, _snapshot, _export):
    _module.register(app)


def main() -> None:
    app()
