"""The offline summary of long sessions under budget pressure (docs/compaction.md, "Ranked
within the budget"): when the window's turns do not all fit, the first asks (the request the
work started from) and the newest stay, the middle goes as one run, counted where it was, and
the counts add up to the window's turns. Sessions are built by rule: native events through
``memcli ingest``."""

from __future__ import annotations

import re

from tests.helpers import agent_dir, read_jsonl


def _asks(n: int) -> list[dict]:
    """``n`` turns: an ask naming its order and module, a check, its result, the answer."""
    events = []
    for t in range(1, n + 1):
        events += [
            {"trace_type": "user", "content": f"Please check order A-{t} and fix src/module_{t % 97}.py"},
            {"trace_type": "tool_call", "tool_name": "run_command", "tool_call_id": f"c{t}",
             "tool_args": {"command": f"pytest -q tests/test_{t % 13}.py"}},
            {"trace_type": "tool_result", "tool_name": "run_command", "tool_call_id": f"c{t}",
             "tool_result": {"exit_code": 0, "stdout": "12 passed in 0.8s"}},
            {"trace_type": "assistant", "content": f"Order A-{t} is fine; src/module_{t % 97}.py updated."},
        ]
    for k, event in enumerate(events):
        event["ts"] = 1772442000.5 + k
    return events


def _summary(memory_dir, agent: str = "a") -> str:
    return read_jsonl(agent_dir(memory_dir, agent) / "episodic.jsonl")[-1]["summary"]


def _turn_list(summary: str) -> list[str]:
    """The turn ids listed, in order, and the left-out line as ``gap:N:first–last``."""
    out = []
    for line in summary.split("\n"):
        if line.startswith("- turn_"):
            out.append(line[2:].split(" ", 1)[0])
        elif " left out at the summary's budget" in line:
            n, first, last = re.match(r"… (\d+) turns? \((turn_\d+)(?:–(turn_\d+))?\)", line).groups()
            out.append(f"gap:{n}:{first}–{last or first}")
    return out


def test_a_long_session_keeps_its_first_asks_and_its_newest(cli, memory_dir):
    """1,000 turns at the default target: the first ask (the session's request) used to be the
    first dropped (the asks were taken newest first, down to the oldest of a middle block)."""
    cli("ingest", "a", input=_asks(1000))
    result = cli("compact", "a")
    assert result.exit_code == 0, result.stderr
    summary = _summary(memory_dir)
    assert summary.startswith("996 turns (turn_0001–turn_0996)")
    listed = _turn_list(summary)
    assert listed == ([f"turn_{t:04d}" for t in range(1, 29)] + ["gap:752:turn_0029–turn_0780"]
                      + [f"turn_{t:04d}" for t in range(781, 997)])
    assert summary.split("\n")[1] == '- turn_0001 · user: "Please check order A-1 and fix src/module_1.py"'
    assert ("\n… 752 turns (turn_0029–turn_0780) left out at the summary's budget "
            "(`memcli show AGENT --archive --turn ID` shows any of them)\n") in summary
    assert "not listed" not in summary   # the turns never listed are in that one count


def test_a_small_target_keeps_the_first_ask_and_counts_the_rest(cli, memory_dir):
    """--target-tokens 2000 on 300 turns: the first ask, the newest, one counted run between."""
    cli("ingest", "a", input=_asks(300))
    result = cli("compact", "a", "--target-tokens", "2000")
    assert result.exit_code == 0, result.stderr
    summary = _summary(memory_dir)
    moved = int(summary.split(" ", 1)[0])
    assert summary.startswith(f"{moved} turns (turn_0001–turn_{moved:04d})") and moved > 280
    listed = _turn_list(summary)
    gaps = [n for n, x in enumerate(listed) if x.startswith("gap:")]
    assert len(gaps) == 1 and listed[0] == "turn_0001" and listed[-1] == f"turn_{moved:04d}"
    n_gap = int(listed[gaps[0]].split(":")[1])
    assert len(listed) - 1 + n_gap == moved   # every moved turn listed or counted, once
    first, last = listed[gaps[0]].split(":")[2].split("–")
    assert first == f"turn_{int(listed[gaps[0] - 1][5:]) + 1:04d}" and last == f"turn_{int(listed[gaps[0] + 1][5:]) - 1:04d}"
    assert gaps[0] < len(listed) - gaps[0]   # more of the newest than of the first
