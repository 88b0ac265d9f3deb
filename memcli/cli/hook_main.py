"""The fast, framework-free path of ``memcli hook HARNESS EVENT`` (see :mod:`memcli.cli.hooks`).

Imports no typer, click or rich: a harness runs this on every turn. Exit status 0, or 1 with one
line on stderr (``memcli hook: ...``) for any failure at all, usage errors included; never 2.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def run_hook_command(memory_dir, harness: str, event: str, agent: str | None, max_chars: int) -> int:
    """Run one hook; the exit status (0, or 1 with one line on stderr)."""
    try:
        from memcli.api import Memory

        result = Memory(memory_dir).hook(harness, event, sys.stdin.buffer.read(), agent=agent, max_chars=max_chars)
        if result.output:
            sys.stdout.write(result.output)
            sys.stdout.flush()
        return 0
    except KeyboardInterrupt:
        _fail("interrupted")
    except BaseException as exc:  # noqa: BLE001 — a hook must fail softly, whatever went wrong
        message = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
        if os.environ.get("MEMCLI_DEBUG") == "1":
            raise
        _fail(message)
    return 1


def _fail(message: str) -> None:
    try:
        from memcli.api import neutral

        print(f"memcli hook: {neutral(' '.join(str(message).split()))}", file=sys.stderr)   # it may quote stored text
    except Exception:  # noqa: BLE001
        pass


def main_hook(argv: list[str]) -> int:
    """``memcli [--dir DIR] hook HARNESS EVENT [--agent NAME] [--max-chars N]`` without the CLI
    framework (module docstring): the exit status, 0 or 1."""
    memory_dir = os.environ.get("MEMCLI_DIR") or None
    rest: list[str] = []
    options = {"--agent": None, "--max-chars": None, "--dir": None}
    args = list(argv)
    seen_hook = False
    while args:
        arg = args.pop(0)
        name, eq, value = arg.partition("=")
        if name in options and (eq or args):
            options[name] = value if eq else args.pop(0)
        elif arg == "hook" and not seen_hook:
            seen_hook = True
        elif arg.startswith("-"):
            _fail(f"unknown option {arg} (usage: memcli [--dir DIR] hook HARNESS EVENT [--agent NAME] [--max-chars N])")
            return 1
        else:
            rest.append(arg)
    if len(rest) != 2:
        _fail("usage: memcli [--dir DIR] hook HARNESS EVENT [--agent NAME] [--max-chars N]")
        return 1
    if options["--dir"] is not None:
        memory_dir = options["--dir"]
    try:
        max_chars = int(options["--max-chars"]) if options["--max-chars"] is not None else 10_000
    except ValueError:
        _fail(f"--max-chars takes a number, got {options['--max-chars']!r}")
        return 1
    try:
        from memcli.api import Memory  # run_hook_command needs it too

        resolved = Memory(Path(memory_dir) if memory_dir else None).path
    except BaseException as exc:  # noqa: BLE001
        _fail(getattr(exc, "message", None) or str(exc))
        return 1
    return run_hook_command(resolved, rest[0], rest[1], options["--agent"], max_chars)
