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
        elif " left out (`memcli show AGENT --archive --turn ID`)" in line:
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
    assert listed == ([f"turn_{t:04d}" for t in range(1, 26)] + ["gap:777:turn_0026–turn_0802"]
                      + [f"turn_{t:04d}" for t in range(803, 997)])
    assert summary.split("\n")[1] == '- turn_0001 · user: "Please check order A-1 and fix src/module_1.py"'
    assert "\n… 777 turns (turn_0026–turn_0802) left out (`memcli show AGENT --archive --turn ID`)\n" in summary
    assert summary.split("\n")[len(listed)] == (   # the newest in full: what it ran, its answer
        '- turn_0996 · user: "Please check order A-996 and fix src/module_26.py" · tools: run_command ×1 '
        '[run_command `pytest -q tests/test_8.py`] · assistant: "Order A-996 is fine; src/module_26.py updated."')
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


REQUEST = ("Port the billing service from Flask to FastAPI, keeping every endpoint in app/billing/routes.py "
           "stable, and make `pytest -q` pass.")


def _codex_session(n: int) -> str:
    """A Codex rollout of ``n`` turns: the request, then an ask per invoice case, each turn a
    note, a patch, a test run (every 7th fails first, then passes), the plan, the answer; the
    build fails five turns before the end and is never fixed."""
    from tests.test_compact_harness_sessions import Rollout

    r = Rollout()
    for t in range(1, n + 1):
        m = t % 17
        r.ask(REQUEST if t == 1 else f"Now handle invoice case {t}: InvoiceLine_{t} rounding in app/billing/invoice_{m}.py")
        r.say(f"I will update compute_total_{m} in app/billing/invoice_{m}.py next.")
        r.patch(f"*** Update File: app/billing/invoice_{m}.py\n@@\n-def compute_total_{m}(lines):\n"
                f"+def compute_total_{m}(lines, rounding=ROUND_HALF_EVEN):")
        if t % 7 == 0:
            r.exec(f"pytest -q tests/test_invoice_{m}.py", 1,
                   f"FAILED tests/test_invoice_{m}.py::test_round_{t} - AssertionError: 10.05 != 10.04\n1 failed, 11 passed")
        r.exec(f"pytest -q tests/test_invoice_{m}.py", 0, "12 passed in 0.4s")
        if t == n - 5:
            r.exec("npm run build", 1, "> tsc -p .\nsrc/client.ts(12,5): error TS2339: Property 'totalCents' does not "
                                       "exist on type 'Invoice'.")
        r.call("update_plan", {"plan": [{"step": f"Port endpoint {k}", "status": "completed" if k < 3 else "pending"}
                                        for k in range(6)]}, "Plan updated")
        r.say(f"Invoice case {t} done: compute_total_{m} now rounds half-even; next I check the remaining endpoints.")
    return r.text()


def test_at_a_small_target_the_request_and_the_latest_turn_stay_whole(cli, memory_dir, tmp_path):
    """--target-tokens 3000 on a 150-turn Codex session: the asks are clipped to make room, but
    the first (the request) and the newest stay whole, and the newest turn keeps its line in full
    — what it ran and its answer, the next step — where it used to be cut to its ask."""
    src = tmp_path / "rollout.jsonl"
    src.write_text(_codex_session(150))
    assert cli("ingest", "a", src, "--from", "codex").exit_code == 0
    result = cli("compact", "a", "--target-tokens", "3000")
    assert result.exit_code == 0, result.stderr
    summary = _summary(memory_dir)
    lines = summary.split("\n")
    moved = int(lines[0].split(" ", 1)[0])
    assert lines[1] == f'- turn_0001 · user: "{REQUEST}"'
    newest = next(line for line in lines if line.startswith(f"- turn_{moved:04d} ·"))
    assert newest.startswith(f'- turn_{moved:04d} · user: "Now handle invoice case {moved}: InvoiceLine_{moved} rounding in '
                             f'app/billing/invoice_{moved % 17}.py" · tools: ')
    assert newest.endswith(f' · assistant: "Invoice case {moved} done: compute_total_{moved % 17} now rounds half-even; '
                           'next I check the remaining endpoints."')
    assert '- turn_0002 · user: "Now handle invoice case 2: InvoiceLine_2 …"' in lines   # a middle ask, clipped
    failed = next(line for line in lines if line.startswith("Failed: "))
    assert failed.startswith(
        "Failed: `npm run build` ×1 (exit code 1 src/client.ts(12,5): error TS2339: Property 'totalCents' does not "
        "exist on type 'Invoice'.) — still failing; ")
    # each failure whole — its informative lines, the earlier ones and its state — and the count
    # says how many failures were left out (the line was cut inside an entry's "(…; before: …)", and
    # its "+N more" counted the pieces)
    entries = failed[len("Failed: "):].split("; `")
    more = re.fullmatch(r"(.*) — passed later; \+(\d+) more", entries[-1])
    assert more, entries[-1]
    entries[-1] = more[1] + " — passed later"
    assert all(e.count("(") == e.count(")") and e.endswith((" — still failing", " — passed later")) for e in entries)
    commands = {"npm run build", *(f"pytest -q tests/test_invoice_{t % 17}.py" for t in range(7, moved + 1, 7))}
    assert len(entries) + int(more[2]) == len(commands) and 3 <= len(entries) < len(commands)


def test_a_last_middle_ask_that_fits_from_neither_end_is_counted_not_looped_on():
    """The one line left between the ends, too long for the room, ranked on the newest end's
    side: it is counted (the squeeze looped on it for ever: the Codex handoff of the fidelity
    benchmark hung ``memcli compact``)."""
    from memcli.compaction.offline import _squeeze

    def line(n: int, ask: str) -> tuple:
        text = f'- turn_000{n} · user: "{ask}"'
        return text, text, (f"turn_000{n}", f"turn_000{n}", 1)

    body = [line(1, "Start the port."), line(2, "word " * 400), line(3, "Ship it.")]
    assert _squeeze("3 turns (turn_0001–turn_0003)", body, [], 1000).split("\n") == [
        "3 turns (turn_0001–turn_0003)",
        '- turn_0001 · user: "Start the port."',
        "… 1 turn (turn_0002) left out",   # (a summary this small does not spend a line on `memcli show`)
        '- turn_0003 · user: "Ship it."']
    assert "\n… 1 turn (turn_0002) left out (`memcli show AGENT --archive --turn ID`)\n" in _squeeze(
        "3 turns (turn_0001–turn_0003)", [line(1, "Start the port."), line(2, "word " * 700), line(3, "Ship it.")],
        [], 2000)


def test_many_subagents_keep_the_newest_and_count_the_earlier(cli, memory_dir, tmp_path):
    """One long Claude Code turn that starts 60 subagents, at --target-tokens 3000: the
    subagents listed are the newest (the ones the work goes on from), the earlier ones counted —
    the oldest used to stay and the newest go, and past 50 the rest went uncounted."""
    from tests.harness_fixtures import ClaudeSession

    s = ClaudeSession()
    s.ask("Migrate every module under src/pkg_* to load_config_N and make the suite pass.")
    for k in range(60):
        s.work(k, steps=4)
        s.subagent(f"a{k:02d}", f"Find every caller of helper_{k} in src/ and list them.", steps=1)
    src = tmp_path / "session.jsonl"
    src.write_bytes(s.jsonl())
    assert cli("ingest", "a", src, "--from", "claude-code").exit_code == 0
    result = cli("compact", "a", "--target-tokens", "3000")
    assert result.exit_code == 0, result.stderr
    lines = _summary(memory_dir).split("\n")
    at = lines.index("Subagents:")
    earlier = int(re.fullmatch(r"\(\+(\d+) earlier\)", lines[at + 1])[1])
    listed = [re.match(r"- agent (a\d\d) \(turn_0001\) · task ", line)[1] for line in lines[at + 2:]
              if line.startswith("- agent ")]
    moved = int(listed[-1][1:]) + 1   # the newest moved (the last steps stay in the active file)
    assert moved >= 55 and listed == [f"a{k:02d}" for k in range(moved - len(listed), moved)]
    assert earlier + len(listed) == moved and 3 <= len(listed) < 50


def test_a_rollup_drops_whole_failures_and_counts_them_with_those_already_counted():
    """condense (rollups) cuts the Failed: line between failures, not inside one's
    ``(latest; before: earlier)``, and its count adds the ``+N more`` the line had."""
    from memcli.compaction.offline import condense

    fails = "; ".join(f"`pytest -q tests/test_{k}.py` ×2 (FAILED tests/test_{k}.py::test_a - KeyError: k{k}; before: "
                      f"FAILED tests/test_{k}.py::test_b - KeyError: j{k}) — passed later" for k in range(6))
    summary = f'6 turns (turn_0001–turn_0006): 12 traces.\n- turn_0001 · user: "Fix the tests."\nFailed: {fails}; +4 more'
    assert condense(summary, 400).split("\n")[2] == (
        "Failed: `pytest -q tests/test_0.py` ×2 (FAILED tests/test_0.py::test_a - KeyError: k0; before: FAILED "
        "tests/test_0.py::test_b - KeyError: j0) — passed later; `pytest -q tests/test_1.py` ×2 (FAILED "
        "tests/test_1.py::test_a - KeyError: k1; before: FAILED tests/test_1.py::test_b - KeyError: j1) — passed later; "
        "+8 more")
