"""The everyday CLI (issue 17): tables and help that fit the terminal, one meaning per flag.

* Every human table fits its width: at 80 columns no line is wider than 80 (columns shrink, ids
  shorten in the middle with ``…``, low-value columns drop), and a wider terminal gets more.
* Status cells are coloured by their value on a terminal.
* ``--help`` at 80 columns never cuts an option name.
* ``--turn`` takes ``7`` and ``turn_0007`` in every command; an unknown turn is exit 3 with one
  message; ``snapshot -p openai`` is ``openai-chat``.
"""

from __future__ import annotations

import io
import shutil

import orjson
import pytest
import typer

from memcli.cli.output import Column, HumanView, cut_middle, wrap
from tests.helpers import CORPORA, REPO, needs_corpora, ok

TABLE_COMMANDS = [("agents",), ("turns", "coder"), ("turns", "coder", "--archive"), ("tools", "coder"),
                  ("stats", "coder"), ("tools", "coder", "--status", "error")]


@pytest.fixture
def sample(memory_dir):
    shutil.copytree(REPO / "sample_memory", memory_dir)
    return memory_dir


def widest(text: str) -> int:
    return max((len(line) for line in text.splitlines()), default=0)


# ------------------------------------------------------------------------------- tables

@pytest.mark.parametrize("args", TABLE_COMMANDS, ids=" ".join)
def test_human_views_fit_80_columns(cli, sample, args):
    assert widest(ok(cli(*args, "--width", "80")).stdout) <= 80
    assert widest(ok(cli(*args, env={"COLUMNS": "80"})).stdout) <= 80


@pytest.mark.parametrize("width", [40, 60, 100, 132])
def test_tables_fit_any_width(cli, sample, width):
    for args in TABLE_COMMANDS:
        assert widest(ok(cli(*args, "--width", str(width))).stdout) <= width, args


def test_a_wider_terminal_gets_more(cli, sample):
    narrow = ok(cli("turns", "coder", "--width", "80")).stdout.splitlines()
    wide = ok(cli("turns", "coder", "--width", "160")).stdout.splitlines()
    assert narrow[0].split() == ["turn", "started", "ask", "tools", "errors", "pending"]  # traces, calls dropped
    assert narrow[1].split()[1] == "2026-03-02"  # a date where the ISO stamp does not fit
    assert wide[0].split() == ["turn", "started", "traces", "ask", "tools", "calls", "errors", "pending"]
    assert widest("\n".join(wide)) > 100
    assert ok(cli("agents", "--width", "80")).stdout.splitlines()[0].split() == [
        "agent", "active", "archived", "turns", "episodic", "semantic", "size", "last", "activity"]  # a date: room
    assert "semantic" in ok(cli("agents", "--width", "120")).stdout.splitlines()[0]


def test_stats_wraps_long_values_under_their_field(cli, sample):
    lines = ok(cli("stats", "coder", "--width", "80")).stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("  tool calls"))
    assert lines[at] == "  tool calls       99 calls, 98 results: 94 success, 4 error, 1 pending, 0"
    assert lines[at + 1] == "                   orphan"


def test_ids_shorten_in_the_middle():
    assert cut_middle("toolu_01ABCDEFGHIJKLMNOP", 11) == "toolu…LMNOP"
    assert cut_middle("toolu_01ABCDEFGHIJKLMNOP", 12) == "toolu_…LMNOP"
    assert cut_middle("short", 10) == "short"
    rows = [{"id": "toolu_01ABCDEFGHIJKLMNOPQRSTUV", "text": "x" * 200}]
    out = io.StringIO()
    HumanView(out, 40).table(rows, [Column("id", "id", max_width=28, id_width=12), Column("text", "text", flex=True, min_width=26)])
    header, row = out.getvalue().splitlines()
    assert row.startswith("toolu_…RSTUV  ") and len(row) == 40


def test_empty_and_low_value_columns_drop_first():
    columns = [Column("id", "id"), Column("extra", "extra", drop=1), Column("blank", "blank"),
               Column("text", "text", flex=True, min_width=30)]
    out = io.StringIO()
    HumanView(out, 50).table([{"id": "a", "extra": "e" * 10, "blank": "", "text": "t" * 60}], columns)
    header = out.getvalue().splitlines()[0].split()
    assert header == ["id", "extra", "text"]  # the empty column went first; then it fits
    out = io.StringIO()
    HumanView(out, 36).table([{"id": "a", "extra": "e" * 10, "blank": "", "text": "t" * 60}], columns)
    assert out.getvalue().splitlines()[0].split() == ["id", "text"]


def test_wrap_folds_at_spaces():
    assert wrap("aa bb cc dd", 5) == ["aa bb cc dd"]  # too narrow to be worth folding
    assert wrap("alpha beta gamma delta", 11) == ["alpha beta", "gamma delta"]
    assert wrap("x" * 25, 10) == ["x" * 10, "x" * 10, "x" * 5]


def test_status_cells_are_coloured_by_value(monkeypatch):
    from memcli.cli.inspect import TOOL_COLUMNS

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    rows = [{"turn_id": "turn_0001", "tool_call_id": "c1", "tool_name": "sh", "status": s} for s in
            ("ERROR", "ORPHAN", "SUCCESS", "PENDING")]

    class Row:
        def __init__(self, d):
            self.__dict__.update(d)
            self.status = type("S", (), {"value": d["status"]})()
            self.arguments, self.result, self.error = {}, None, None

    out = io.StringIO()
    HumanView(out, 80, colour=True).table([Row(r) for r in rows], TOOL_COLUMNS)
    lines = out.getvalue().splitlines()
    assert "\x1b[1;31mERROR" in lines[1]      # bold red, although the cell is padded to "ERROR  "
    assert "\x1b[35mORPHAN" in lines[2]
    assert "\x1b[32mSUCCESS" in lines[3]
    assert "\x1b[33mPENDING" in lines[4]


@needs_corpora
@pytest.mark.parametrize("source, args", [
    ("claude-code/ccviewer_fe5e1c67_todo-app_438ev.jsonl", ()),
    ("codex/codex_rollout_localpush_019c8a59_2722ev_sanitized.jsonl", ()),
])
def test_real_transcripts_fit_80_columns(cli, source, args):
    ok(cli("ingest", "real", str(CORPORA / source), *args))
    for command in (("agents",), ("turns", "real"), ("tools", "real"), ("stats", "real")):
        assert widest(ok(cli(*command, "--width", "80")).stdout) <= 80, command
    table = ok(cli("tools", "real", "--width", "80")).stdout.splitlines()
    at = table[0].index("call id")  # the turn column may give its room to the text columns
    call_ids = [line[at:].split()[0] for line in table[1:]]
    if "claude-code" in source:
        assert all(len(c) <= 28 for c in call_ids) and any("…" in c for c in call_ids)


# ------------------------------------------------------------------------------- help

def _commands():
    from memcli.cli.app import app

    return sorted(typer.main.get_command(app).commands.items())


@pytest.mark.parametrize("name", [name for name, _ in _commands()])
def test_help_is_readable_at_80_columns(cli, name):
    from memcli.cli.app import app

    text = ok(cli(name, "--help", env={"COLUMNS": "80"})).stdout
    assert widest(text) <= 80
    command = typer.main.get_command(app).commands[name]
    for param in command.params:
        for opt in param.opts:
            if opt.startswith("--"):
                assert opt in text, f"{name} --help cuts {opt}"


# ------------------------------------------------------------------------------- --turn

@pytest.mark.parametrize("spelling", ["4", "turn_0004", " 4 ", "0004"])
def test_turn_takes_a_number_or_an_id_in_every_command(cli, sample, spelling):
    shown = [r["id"] for r in orjson.loads(ok(cli("show", "coder", "--turn", spelling, "--json")).stdout)]
    assert shown and shown == [r["id"] for r in orjson.loads(ok(cli("show", "coder", "--turn", "turn_0004",
                                                                        "--json")).stdout)]
    tools = orjson.loads(ok(cli("tools", "coder", "--turn", spelling, "--json")).stdout)
    assert [t["tool_call_id"] for t in tools] == ["call_004"]
    exported = ok(cli("export", "coder", "--turn", spelling)).stdout.splitlines()
    assert [orjson.loads(line)["id"] for line in exported] == shown


@pytest.mark.parametrize("args", [
    ("show", "coder", "--turn", "9999"), ("show", "coder", "--turn", "turn_9999"),
    ("tools", "coder", "--turn", "9999"), ("tools", "coder", "--turn", "turn_9999"),
    ("export", "coder", "--turn", "9999"),
])
def test_an_unknown_turn_is_exit_3_with_one_message(cli, sample, args):
    result = cli(*args)
    assert result.exit_code == 3
    assert "memcli: error: no turn 'turn_9999' in agent 'coder' (looked in its " in result.stderr
    assert "`memcli turns coder" in result.stderr


def test_an_unknown_turn_names_archive_when_it_was_not_searched(cli, sample):
    result = cli("tools", "coder", "--turn", "9999")
    assert "looked in its active traces" in result.stderr and "add --archive" in result.stderr
    result = cli("tools", "coder", "--turn", "9999", "--archive")
    assert result.exit_code == 3 and "active or archived traces" in result.stderr


def test_an_empty_turn_is_a_usage_error(cli, sample):
    for command in ("show", "tools", "export"):
        result = cli(command, "coder", "--turn", " ")
        assert result.exit_code == 2 and "--turn needs a turn id" in result.stderr, command


def test_unknown_id_is_exit_3(cli, sample):
    result = cli("get", "coder", "no-such-id")
    assert result.exit_code == 3 and "no-such-id" in result.stderr


# ------------------------------------------------------------------------------- -p openai

def test_snapshot_provider_openai_is_openai_chat(cli, sample):
    chat = ok(cli("snapshot", "coder", "-p", "openai-chat")).stdout
    assert ok(cli("snapshot", "coder", "-p", "openai")).stdout == chat
    assert ok(cli("snapshot", "coder", "--provider", "openai")).stdout == chat
    for spelling in ("openai-responses", "anthropic", "gemini", "text"):
        ok(cli("snapshot", "coder", "-p", spelling))
    result = cli("snapshot", "coder", "-p", "bogus")
    assert result.exit_code == 2 and "openai means openai-chat" in result.stderr
