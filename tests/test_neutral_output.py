"""Stored text never drives the terminal (issue 26, point 1; memcli/neutral.py).

A transcript may hold an OSC title change, a clear screen, cursor moves, a CR that overwrites
the line, BEL, an 8-bit CSI and text that looks like Rich markup. Every human view shows them
(Unicode control pictures), piped and on a pseudo-terminal; on a terminal the only escape
sequences are memcli's own colours (SGR). JSON is unchanged (JSON escapes them itself).
"""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys

import orjson
import pytest

from memcli.neutral import neutral
from tests.events import CALL, RES, A, U
from tests.helpers import CORPORA, needs_corpora, proc_env

OSC_TITLE = "\x1b]0;pwned\x07"
CLEAR = "\x1b[2J\x1b[H"
MOVES = "\x1b[5A\x1b[2K"
CR_OVERWRITE = "all good\rHACKED  "
BEL = "\x07"
CSI8 = "\x9b31m"
MARKUP = "[bold red]markup[/bold red]"

HOSTILE = [
    U(f"hostile ask {OSC_TITLE}{CLEAR} {MARKUP}"),
    CALL("c1", name=f"sh{MOVES}", args={"cmd": f"ls {CR_OVERWRITE}"}),
    RES("c1", f"hostile out {BEL}{CSI8} {MARKUP}"),
    CALL("c2", name="sh", args={"cmd": "false"}),
    RES("c2", None, tool_error=f"hostile failure {CLEAR}{BEL}"),
    A(f"hostile answer {CR_OVERWRITE}{OSC_TITLE}\nsecond line\tafter a tab"),
]

COMMANDS = [
    ("show", "a"), ("show", "a", "--no-clip"), ("turns", "a"), ("tools", "a"), ("tools", "a", "--status", "error"),
    ("search", "a", "hostile"), ("memory", "a"), ("export", "a", "--format", "markdown", "--with-memory"),
    ("stats", "a"), ("agents",),
]
SGR = re.compile(r"\x1b\[[0-9;]*m")
SENT = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _unsent(text: str, *, tty: bool) -> list[str]:
    """Control characters that reached the output (memcli's SGR colours on a terminal and the
    terminal's own CR LF line ends excepted)."""
    if tty:
        text = SGR.sub("", text).replace("\r\n", "\n")
    return sorted(set(SENT.findall(text)))


@pytest.fixture
def hostile(cli, memory_dir):
    assert cli("ingest", "a", input=HOSTILE).exit_code == 0
    assert cli("remember", "a", f"hostile fact {OSC_TITLE}{CLEAR}{BEL} {MARKUP}").exit_code == 0
    return memory_dir


def test_the_one_rule():
    assert neutral("plain [bold]x[/bold] é 🙂") == "plain [bold]x[/bold] é 🙂"
    assert neutral(f"{OSC_TITLE}{CLEAR}") == "␛]0;pwned␇␛[2J␛[H"
    assert neutral("a\r\nb\tc\rd") == "a\nb\tc␍d"
    assert neutral("a\nb\tc", layout=False) == "a␊b␉c"
    assert neutral("\x00\x7f\x9b") == "␀␡\\x9b"


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_piped_views_show_control_characters(cli, hostile, args):
    result = cli(*args)
    assert result.exit_code == 0, result.output
    assert _unsent(result.stdout, tty=False) == []
    assert _unsent(result.stderr, tty=False) == []
    if args[0] in ("show", "search", "memory", "export"):
        assert "␛" in result.stdout
    if args[0] in ("show", "memory", "export"):
        assert MARKUP in result.stdout  # text, never Rich markup


def test_piped_show_keeps_layout(cli, hostile):
    out = cli("show", "a", "--no-clip").stdout
    assert "all good␍HACKED" in out
    assert "\n    second line    after a tab\n" in out  # \n and \t stay layout in a text view


def test_json_is_unchanged(cli, hostile):
    records = orjson.loads(cli("show", "a", "--json").stdout)
    assert records[0]["content"] == f"hostile ask {OSC_TITLE}{CLEAR} {MARKUP}"
    assert records[1]["tool_name"] == f"sh{MOVES}"


def _on_a_pty(args, memory_dir) -> str:
    """stdout and stderr of ``memcli ARGS`` run on a pseudo-terminal (colours on)."""
    master, slave = pty.openpty()
    env = proc_env({"MEMCLI_DIR": str(memory_dir), "TERM": "xterm-256color", "COLUMNS": "100"})
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen([sys.executable, "-m", "memcli", *args], stdin=subprocess.DEVNULL,
                            stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    assert proc.wait(timeout=60) == 0
    return b"".join(chunks).decode("utf-8", "replace")


def test_terminal_views_send_only_memcli_colours(hostile):
    coloured = 0
    for args in COMMANDS:
        out = _on_a_pty(args, hostile)
        assert _unsent(out, tty=True) == [], args
        coloured += bool(SGR.search(out))
        if args[0] in ("show", "memory"):
            assert "␛" in out and MARKUP in out, args
    assert coloured  # the views do use colour on a terminal: only theirs gets through


@needs_corpora
def test_claude_code_local_command_stdout_renders_clean(cli, memory_dir):
    path = CORPORA / "claude-code" / "fasthooks_sample_main_transcript_compaction.jsonl"
    assert b"\\u001b[2m" in path.read_bytes()
    result = cli("ingest", "cc", str(path))
    assert result.exit_code == 0, result.output
    seen = ""
    for args in (("show", "cc", "--no-clip"), ("turns", "cc"), ("tools", "cc"), ("search", "cc", "Compacted"),
                 ("export", "cc", "--format", "markdown")):
        result = cli(*args)
        assert result.exit_code == 0, (args, result.output)
        assert _unsent(result.stdout, tty=False) == [], args
        seen += result.stdout
    assert "␛[2mCompacted" in seen


# --------------------------------------------------------------------------- compact's notes and plan

PROVIDER_TEXT = "\x1b]0;T\x07 \x1b[31mX\x1b[0m"


def test_compact_retry_note_shows_the_providers_control_characters(cli, memory_dir, server, monkeypatch):
    """A provider's error text is quoted in the retry note on stderr: shown, never sent."""
    from tests.compact_fixtures import conversation, error_body, faithful_answer

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-dummy")
    monkeypatch.setenv("MEMCLI_RETRY_BACKOFF", "0")
    assert cli("ingest", "a", input=conversation(8)).exit_code == 0
    model = server(lambda body, i: (500, error_body(500, PROVIDER_TEXT), 0) if i == 0
                   else (200, faithful_answer(body), 0))
    result = cli("compact", "a", "--model", "openai/test-model", "--api-base", model.api_base)
    assert result.exit_code == 0, result.output
    assert _unsent(result.stderr, tty=False) == []
    assert ("memcli: openai/test-model, turn_0001–turn_0004: attempt 1: server error (HTTP 500): "
            "␛]0;T␇ ␛[31mX␛[0m; asked again (attempt 2 of 3)\n") in result.stderr


@pytest.mark.parametrize("with_model", [False, True], ids=["offline", "model"])
def test_compact_dry_run_plan_shows_the_summarys_control_characters(cli, memory_dir, server, monkeypatch, with_model):
    """The plan of ``compact --dry-run`` quotes the summary it would write (offline) or the
    digest the model would condense: an ask's escape sequences are shown, never sent."""
    from tests.compact_fixtures import conversation

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-dummy")
    events = conversation(8)
    events[1]["content"] = f"Where is order A-1001? {PROVIDER_TEXT} {OSC_TITLE}"
    assert cli("ingest", "a", input=events).exit_code == 0
    args = ["--model", "openai/test-model", "--api-base", server(lambda body, i: (500, {}, 0)).api_base] \
        if with_model else []
    result = cli("compact", "a", "--dry-run", *args)
    assert result.exit_code == 0, result.output
    assert _unsent(result.stdout, tty=False) == []
    assert "Where is order A-1001? ␛]0;T␇ ␛[31mX␛[0m ␛]0;pwned␇" in result.stdout


def test_summarize_results_failure_shows_the_providers_control_characters(cli, memory_dir, server, monkeypatch):
    """A failed result's reason quotes the provider's error: on stderr it is shown, never sent."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-dummy")
    events = [U("run it"), CALL("c1", name="Bash", args={"command": "pytest"}), RES("c1", "x" * 3000), A("done"),
              U("and now?")]
    assert cli("ingest", "a", input=events).exit_code == 0
    model = server(lambda body, i: (500, {"error": {"message": PROVIDER_TEXT}}, 0))
    result = cli("summarize-results", "a", "--min-chars", "1000", "--model", "openai/test-model",
                 "--api-base", model.api_base, "--retries", "0")
    assert result.exit_code == 1, result.output
    assert _unsent(result.stderr, tty=False) == []
    assert "␛]0;T␇ ␛[31mX␛[0m" in result.stderr


def test_uncompact_shows_the_stored_turn_ids_it_quotes(cli, memory_dir):
    """uncompact's report quotes the turn ids it restored; it printed them raw, so an OSC title
    change in a stored turn id reached the terminal. With --json, stdout carries the document
    only and the report is a note on stderr."""
    turns = [{"id": f"{kind[0]}{n}", "trace_type": kind, "turn_id": f"turn{n}{OSC_TITLE}",
              "content": f"{kind} {n} about order A-{n} " + "y" * 600}
             for n in range(1, 7) for kind in ("user", "assistant")]
    assert cli("ingest", "a", input=turns).exit_code == 0
    for args in ((), ("--json",)):
        compacted = cli("compact", "a", "--tail-turns", "2")
        assert compacted.exit_code == 0, compacted.stderr
        assert _unsent(compacted.stderr, tty=False) == []
        result = cli("uncompact", "a", *args)
        assert result.exit_code == 0, result.stderr
        assert _unsent(result.stderr, tty=False) == [] and "turn1␛]0;pwned␇" in result.stderr
        assert result.stderr.startswith("memcli: ") and result.stderr.count("\n") == 1
        if args:
            assert orjson.loads(result.stdout)["turn_range"].startswith(f"turn1{OSC_TITLE}") and result.stdout.count("\n") == 1
        else:
            assert result.stdout == ""
