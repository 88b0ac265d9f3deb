"""The Typer CLI: a thin layer that resolves options, calls one library function per command and
hands the result to one output helper. Only this package imports typer and rich."""

from __future__ import annotations


def main() -> None:
    """The ``memcli`` command (the console script and ``python -m memcli``).

    ``memcli [--dir DIR] hook ...`` runs without the CLI framework (:mod:`memcli.cli.hook_main`):
    a harness runs it on every event, and typer alone takes ~25 ms to import, so this module
    imports none of it and the hook path never loads :mod:`memcli.cli.app`.
    """
    import sys

    argv = sys.argv[1:]
    command = command_in(argv)
    if command == "hook" and not {"-h", "--help"} & set(argv):  # never exit 2: memcli.cli.hooks
        from memcli.cli.hook_main import main_hook

        sys.exit(main_hook(argv))
    from memcli.cli.app import build_app

    build_app(command)(prog_name="memcli")


def command_in(argv: list[str]) -> str | None:
    """The command a command line names: its first word that is not an option (nor ``--dir``'s value)."""
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--dir":
            skip = True
        elif not arg.startswith("-"):
            return arg
    return None
