"""One closed-pipe policy for every command (memcli.cli.app): when the reader goes away
(``memcli show A | head -1``) the command stops quietly — exit 0, no traceback, no error, no
"Exception ignored" from flushing at exit (notes a command prints before writing may stay)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.helpers import proc_env, run_memcli

# enough output that writing it fills the pipe (64 KiB) after the reader has gone
EVENTS = [e for t in range(150) for e in (
    {"trace_type": "user", "content": f"question {t} " + "x" * 400},
    {"trace_type": "tool_call", "tool_call_id": f"c{t}", "tool_name": "read", "tool_args": {"p": "y" * 300}},
    {"trace_type": "tool_result", "tool_call_id": f"c{t}", "tool_result": "z" * 400},
    {"trace_type": "assistant", "content": f"answer {t} " + "w" * 400},
)]

COMMANDS = [
    ("show", "a", "--no-clip"),
    ("show", "a", "--ndjson"),
    ("tools", "a", "--json"),
    ("turns", "a"),
    ("export", "a"),
    ("export", "a", "-f", "markdown"),
    ("snapshot", "a", "--provider", "text"),
]


@pytest.fixture(scope="module")
def memory_with_output(tmp_path_factory):
    root = tmp_path_factory.mktemp("pipe") / "memory"
    done = run_memcli("ingest", "a", input=EVENTS, env={"MEMCLI_DIR": str(root)})
    assert done.returncode == 0, done.stderr
    return root


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a))
def test_a_reader_that_goes_away_ends_the_command_quietly_with_exit_0(memory_with_output, args):
    proc = subprocess.Popen([sys.executable, "-m", "memcli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=proc_env({"MEMCLI_DIR": str(memory_with_output)}))
    assert proc.stdout.read(10)
    proc.stdout.close()  # like `| head -c 10`
    stderr = proc.stderr.read()
    proc.wait(timeout=60)
    assert proc.returncode == 0, stderr
    for noise in (b"Traceback", b"error", b"Broken pipe", b"Exception ignored"):
        assert noise not in stderr
