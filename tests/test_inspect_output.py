"""The shared output layer (memcli/cli/output.py) and the streaming pieces under the read commands:
JSON written element by element, stable keys, clipping that says how much is hidden, colour only
on a terminal, the streaming tool pairing and turn grouping."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass

import pytest

from memcli.cli.output import Column, HumanView, Output, clip
from memcli.models import RawTrace, ToolStatus
from memcli.tool_interactions import iter_tool_interactions, iter_tool_pairs, pair_tool_traces


class Stdout(io.StringIO):
    """A text stdout with a bytes buffer behind it, like sys.stdout."""

    def __init__(self, tty=False):
        super().__init__()
        self.buffer = io.BytesIO()
        self.tty = tty

    def isatty(self):
        return self.tty

    def text(self):
        return self.buffer.getvalue().decode() + self.getvalue()



@dataclass
class Row:
    b: int
    a: str
    c: list


def test_json_is_streamed_element_by_element(capsys):
    written_before_second = []

    def rows():
        yield {"z": 1, "a": [1, {"k": None}]}
        written_before_second.append(capsys.readouterr().out)
        yield Row(2, "x", [])

    count = Output("json").records(rows(), human=None)
    assert count == 2
    assert written_before_second[0] == '[\n  {\n    "z": 1,\n    "a": [\n      1,\n      {\n        "k": null\n      }\n    ]\n  }'
    assert written_before_second[0] + capsys.readouterr().out == json.dumps([{"z": 1, "a": [1, {"k": None}]}, {"b": 2, "a": "x", "c": []}], indent=2) + "\n"


def test_ndjson_and_empty_json(capsys):
    Output("ndjson").records(iter([Row(1, "é", [1])]), human=None)
    Output("json").records(iter([]), human=None)
    assert capsys.readouterr().out == '{"b":1,"a":"é","c":[1]}\n[]\n'


def test_document_modes(capsys):
    Output("json").document(Row(1, "a", []), human=None)
    Output("ndjson").document({"k": 1}, human=None)
    assert capsys.readouterr().out == '{\n  "b": 1,\n  "a": "a",\n  "c": []\n}\n{"k":1}\n'


@pytest.mark.parametrize("text, limit, expected", [
    ("short", 10, "short"),
    ("x" * 100, 40, "x" * 26 + "… (+74 chars)"),
    ("x" * 5000, 40, "x" * 24 + "… (+4,976 chars)"),
    ("x" * 100, 20, "x" * 19 + "…"),  # too narrow for the note: a plain cut
    ("é" * 60, 40, "é" * 27 + "… (+33 chars)"),
])
def test_clip(text, limit, expected):
    assert clip(text, limit) == expected
    assert len(clip(text, limit)) <= limit


def test_clip_counts_wide_characters_as_two_cells():
    out = clip("漢" * 50, 40)
    assert out == "漢" * 13 + "… (+37 chars)"  # 26 + 13 cells


COLUMNS = [Column("id", "id", max_width=6), Column("n", "n", align="right"), Column("text", "text", flex=True)]


def test_table_plain_layout_and_clipping():
    out = io.StringIO()
    view = HumanView(out, 40)
    rows = [{"id": "a", "n": 1200, "text": "short"}, {"id": "abcdefghij", "n": 3, "text": "y" * 100},
            {"id": "b", "n": None, "text": "multi\nline\ttext"}]
    assert view.table(rows, COLUMNS) == 3
    assert out.getvalue() == (
        "id          n  text\n"
        "a       1,200  short\n"
        "abcde…      3  " + "y" * 24 + "…\n"  # too narrow for the length note
        "b              multi line text\n"
    )
    out = io.StringIO()
    HumanView(out, 60).table(rows[1:2], COLUMNS)
    assert out.getvalue().splitlines()[1] == "abcde…  3  " + "y" * 35 + "… (+65 chars)"


def test_table_widths_are_fixed_by_the_first_batch(monkeypatch):
    import memcli.cli.output as output

    monkeypatch.setattr(output, "TABLE_BATCH", 2)
    out = io.StringIO()
    rows = [{"id": "a", "n": 1, "text": "t"}, {"id": "b", "n": 2, "text": "u"}, {"id": "cccc", "n": 30, "text": "v"}]
    HumanView(out, 40).table(rows, COLUMNS)
    # a longer cell than the first batch had pushes its row out rather than being cut
    assert out.getvalue().splitlines() == ["id  n  text", "a   1  t", "b   2  u", "cccc  30  v"]


def test_no_clip_shows_everything():
    out = io.StringIO()
    HumanView(out, 20, clip_content=False).table([{"id": "abcdefghij", "n": 1, "text": "z" * 50}], COLUMNS)
    assert out.getvalue().splitlines()[1] == "abcdefghij  1  " + "z" * 50


def test_colour_only_on_a_terminal_without_no_color(monkeypatch):
    tty = Stdout(tty=True)
    monkeypatch.setattr("sys.stdout", tty)
    monkeypatch.delenv("NO_COLOR", raising=False)
    Output("human").records([{"id": "a", "n": 1, "text": "t"}], human=lambda rows, v: v.table(rows, COLUMNS))
    assert "\x1b[" in tty.getvalue()
    plain = Stdout(tty=True)
    monkeypatch.setattr("sys.stdout", plain)
    monkeypatch.setenv("NO_COLOR", "1")
    Output("human").records([{"id": "a", "n": 1, "text": "t"}], human=lambda rows, v: v.table(rows, COLUMNS))
    assert "\x1b[" not in plain.getvalue() and "a   1  t" in plain.getvalue()


def test_every_read_command_takes_the_output_options(cli):
    for name in ("agents", "stats", "turns", "show", "tools", "get", "memory", "doctor"):
        help_text = cli(name, "--help").stdout
        for option in ("--json", "--ndjson", "--width", "--no-clip"):
            assert option in help_text, (name, option)


# ------------------------------------------------------------------------ streaming pairing

def T(i, kind, call_id=None, turn="turn_0001", **kw):
    return RawTrace(id=f"t{i}", ts=float(i), turn_id=turn, seq=i, trace_type=kind, content="",
                    source_event="test", tool_call_id=call_id, **kw)


TRACES = [
    T(1, "tool_call", "x", tool_name="a"),
    T(2, "tool_call", "y", tool_name="b"),
    T(3, "tool_result", "y", tool_result="for b"),
    T(4, "tool_result", "ghost"),
    T(5, "tool_result", "x", tool_error="boom"),
    T(6, "tool_call", "z", tool_name="c"),
]


def test_ordered_pairing_holds_back_only_behind_an_unanswered_call():
    seen = []

    def feed():
        for trace in TRACES:
            seen.append(trace.id)
            yield trace

    out = []
    for interaction in iter_tool_interactions(feed()):
        out.append((interaction.call_trace_id or interaction.result_trace_id, len(seen)))
    # t1 waits for its result (t5); t2 and the orphan wait behind it; t6 is pending at the end
    assert out == [("t1", 5), ("t2", 5), ("t4", 5), ("t6", 6)]


def test_never_answered_calls_do_not_hold_back_the_rest():
    traces = [T(1, "tool_call", "x", tool_name="a"), T(2, "tool_call", "y", tool_name="b"),
              T(3, "tool_result", "y"), T(4, "user")]
    fed = []

    def feed():
        for trace in traces:
            fed.append(trace.id)
            yield trace

    stream = iter_tool_pairs(feed(), never_answered={"t1"})
    first = next(stream)
    assert first.interaction.status is ToolStatus.PENDING and fed == ["t1"]
    second = next(stream)
    assert second.interaction.status is ToolStatus.SUCCESS and fed == ["t1", "t2", "t3"]


def test_unordered_pairing_yields_on_completion_and_pending_last_in_call_order():
    got = [(i.call_trace_id or i.result_trace_id, i.status) for i in iter_tool_interactions(TRACES, ordered=False)]
    assert got == [("t2", ToolStatus.SUCCESS), ("t4", ToolStatus.ORPHAN), ("t1", ToolStatus.ERROR),
                   ("t6", ToolStatus.PENDING)]
    assert sorted(got, key=lambda g: g[0]) == sorted(
        [(i.call_trace_id or i.result_trace_id, i.status) for i in pair_tool_traces(TRACES)], key=lambda g: g[0])


def test_a_result_answers_the_oldest_open_call_of_its_own_turn_first():
    traces = [T(1, "tool_call", "x", turn="turn_0001", tool_name="old"),
              T(2, "tool_call", "x", turn="turn_0002", tool_name="new"),
              T(3, "tool_result", "x", turn="turn_0002", tool_result="r")]
    got = {i.tool_name: i.status for i in pair_tool_traces(traces)}
    assert got == {"old": ToolStatus.PENDING, "new": ToolStatus.SUCCESS}
    # a result from a turn without such a call answers the oldest one (plain FIFO)
    traces[2] = T(3, "tool_result", "x", turn="turn_0009", tool_result="r")
    got = {i.tool_name: i.status for i in pair_tool_traces(traces)}
    assert got == {"old": ToolStatus.SUCCESS, "new": ToolStatus.PENDING}


# ------------------------------------------------------------------------ turns and counting

def test_group_turns_merges_late_results_within_the_window():
    from memcli.inspect.turns import group_turns
    from memcli.store.agent import StoredTrace

    traces = [T(1, "user", turn="turn_0001"), T(2, "tool_call", "c", turn="turn_0001", tool_name="sh"),
              T(3, "user", turn="turn_0002"), T(4, "tool_result", "c", turn="turn_0001"),
              T(5, "user", turn="turn_0003")]
    groups = [(turn, [t.id for t in ts]) for turn, _, ts in group_turns(StoredTrace(t, "active", 0) for t in traces)]
    assert groups == [("turn_0001", ["t1", "t2", "t4"]), ("turn_0002", ["t3"]), ("turn_0003", ["t5"])]
    # beyond the window a straggler starts a second row for the same turn
    groups = [turn for turn, _, _ in group_turns((StoredTrace(t, "active", 0) for t in traces), window=1)]
    assert groups == ["turn_0001", "turn_0002", "turn_0001", "turn_0003"]


def test_turn_set_counts_distinct_turns():
    from memcli.inspect.stats import TurnSet

    turns = TurnSet()
    for turn in ["turn_0001", "turn_0002", "turn_0001", "turn_1", "session-a", "turn_12345678", "turn_0002"]:
        turns.add(turn)
    assert len(turns) == 5  # turn_1 is not turn_0001
