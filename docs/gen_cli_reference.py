"""Write docs/cli.md, the command reference, from the commands' own ``--help`` (so it cannot drift
from the code). ``python docs/gen_cli_reference.py`` rewrites it; ``--check`` exits 1 when the
file is not current (tests/test_docs.py runs the check). ``make docs`` runs it.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGET = REPO / "docs" / "cli.md"
WIDTH = "100"

HEADER = """# memcli — command reference

Generated from `memcli COMMAND --help` by `docs/gen_cli_reference.py` (`make docs`); do not
edit by hand — change the command's help text and regenerate (`tests/test_docs.py` fails while
this file is stale). The design behind the commands: [design.md](design.md).

Conventions every command keeps:

- `memcli [--dir DIR] COMMAND ...` (`--dir`, else `$MEMCLI_DIR`, else `./memory`);
  `memcli --version`; `memcli COMMAND --help`.
- stdout carries data only; progress, notes and summaries go to stderr. Read commands take
  `--json` (one JSON document) and `--ndjson` (one record per line) besides the human view.
- Exit codes: 0 ok; 1 failure (bad input, failed compaction, integrity problem); 2 usage error;
  3 agent, turn or id not found. A closed stdout (`| head`) ends a command quietly with exit 0.
- `MEMCLI_DEBUG=1` shows a traceback instead of the one-line error.
"""


def _help(args: list[str]) -> str:
    from typer.testing import CliRunner

    from memcli.cli.app import build_app

    env = {"COLUMNS": WIDTH, "NO_COLOR": "1", "TERM": "dumb", "MEMCLI_DIR": "memory"}
    result = CliRunner().invoke(build_app(), args, env=env, prog_name="memcli")
    if result.exit_code != 0:
        raise SystemExit(f"memcli {' '.join(args)} exited {result.exit_code}: {result.output}")
    return "\n".join(line.rstrip() for line in result.output.splitlines()).strip("\n")


def render() -> str:
    from memcli.cli.app import COMMAND_MODULES, build_app

    commands = [c.name for c in build_app().registered_commands if c.name] or list(COMMAND_MODULES)
    parts = [HEADER, "## memcli\n", "```text", _help(["--help"]), "```\n"]
    for name in commands:
        parts += [f"## memcli {name}\n", "```text", _help([name, "--help"]), "```\n"]
    return "\n".join(parts)


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if not TARGET.exists() or TARGET.read_text() != text:
            print(f"{TARGET.relative_to(REPO)} is stale: run `make docs` "
                  "(python docs/gen_cli_reference.py)", file=sys.stderr)
            return 1
        return 0
    TARGET.parent.mkdir(exist_ok=True)
    TARGET.write_text(text)
    print(f"wrote {TARGET.relative_to(REPO)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    sys.exit(main(sys.argv[1:]))
