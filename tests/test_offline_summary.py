"""The offline summary's fidelity rules (docs/compaction.md, "What the offline summary keeps"):
each thing once in the snapshot, ranked by what is needed next within the budget, a vocabulary
weighted by use and recency, rollups that keep whole entries, and each subagent on its own line."""

from __future__ import annotations

import dataclasses
import re

import orjson
import pytest

from memcli.compaction.offline import FOLDED_TURNS, OfflineSummarizer, condense, vocabulary
from memcli.compaction.summarizer import MemoryContext, Turn
from memcli.models import RawTrace


def _traces(turn_id: str, events: list[dict]) -> list[RawTrace]:
    out = []
    for n, e in enumerate(events, 1):
        out.append(RawTrace(f"{turn_id}-{n}", 1772442000.0 + n, turn_id, n, e.pop("trace_type"), e.pop("content", ""),
                            "x", **e))
    return out


def _call(n: int, command: str, result=None, error=None, tool="Bash", args=None) -> list[dict]:
    return [{"trace_type": "tool_call", "tool_name": tool, "tool_call_id": f"c{n}",
             "tool_args": args if args is not None else {"command": command}},
            {"trace_type": "tool_result", "tool_name": tool, "tool_call_id": f"c{n}", "tool_result": result,
             "tool_error": error}]


def _session() -> list[dict]:
    return [
        {"trace_type": "user", "content": "Fix the failing total in tests/test_orders.py and keep the API stable."},
        {"trace_type": "assistant", "content": "I start with the failing test."},
        *_call(1, "pytest -q tests/test_orders.py",
               error="exit status 1\nFAILED tests/test_orders.py::test_total - assert 100.0 == 90.0"),
        {"trace_type": "assistant", "content": "OrderTotal.apply_discount never runs; I fix app/orders.py next."},
        *_call(2, "", tool="Edit", result="ok", args={
            "file_path": "app/orders.py", "old_string": "def total(self):\n    return self.sum",
            "new_string": "def total(self):\n    return apply_discount(self.sum, DISCOUNT_RATE)"}),
        *_call(3, "git add app/orders.py", error="exit status 1\nfatal: pathspec did not match"),
        *_call(4, "git add -f app/orders.py", result={"exit_code": 0, "stdout": ""}),
        *_call(5, "make lint", error="E501 line too long (app/orders.py:12)"),
        {"trace_type": "assistant", "content": "The total is fixed; lint still fails on E501."},
    ]


def test_the_snapshot_carries_each_file_and_failure_once(tmp_path):
    """Files and failures are in the summary only: no `Files modified` / `Command failed` fact
    repeats them in the same snapshot (design §4: the summary keeps every file and failure)."""
    from memcli.api import Memory

    agent = Memory(tmp_path).agent("a")
    agent.ingest(_session() + [{"trace_type": "user", "content": "Thanks, now the docs."}], "native")
    result = agent.compact(tail_turns=1, keep_steps=0)
    assert result.compacted and result.facts == []
    text = orjson.dumps(agent.snapshot(full=True).payload).decode()
    assert text.count("Files modified: app/orders.py") == 1
    assert text.count("FAILED tests/test_orders.py::test_total") == 1
    assert text.count("E501 line too long") == 1


def test_failures_latest_first_unresolved_before_resolved_and_a_fact_only_to_update_one():
    turns = [Turn("turn_0001", _traces("turn_0001", _session()))]
    summary = OfflineSummarizer().summarize(turns)
    failed = next(line for line in summary.episodic_summary.split("\n") if line.startswith("Failed: "))
    assert failed == ("Failed: `make lint` ×1 (E501 line too long (app/orders.py:12)) — still failing; "
                      "`pytest -q tests/test_orders.py` ×1 (exit status 1 FAILED tests/test_orders.py::test_total - "
                      "assert 100.0 == 90.0) — still failing; `git add app/orders.py` ×1 (exit status 1 fatal: "
                      "pathspec did not match) — fixed later (a later `git add` passed)")
    assert summary.semantic_facts == []
    # an older fact that a command failed is superseded once its family passes
    from memcli.models import SemanticItem

    old = SemanticItem("sem_1", 1.0, "Command failed: `git add app/orders.py` — fatal: pathspec did not match")
    facts = OfflineSummarizer().summarize(turns, MemoryContext(facts=[old])).semantic_facts
    assert [(f.fact, f.supersedes) for f in facts] == [
        ("Command passed: `git add app/orders.py` (it had failed before, a later `git add` passed)", ["sem_1"])]


def test_files_carry_the_names_an_edit_defines_and_brings_in_each_once():
    events = [{"trace_type": "user", "content": "Read the rate from the environment."},
              *_call(1, "", tool="Edit", result="ok", args={
                  "file_path": "app/rates.py", "old_string": "RATE = 0.1",
                  "new_string": "RATE = float(os.environ['SHOP_RATE'])"}),
              *_call(2, "", tool="Edit", result="ok", args={
                  "file_path": "app/orders.py", "old_string": "def total(self):\n    return self.sum",
                  "new_string": "def total(self):\n    return rates.apply(self.sum, os.environ['SHOP_RATE'])"})]
    text = OfflineSummarizer().summarize([Turn("turn_0001", _traces("turn_0001", events))]).episodic_summary
    files = next(line for line in text.split("\n") if line.startswith("Files modified: "))
    assert files == "Files modified: app/orders.py (total, rates.apply, os.environ, SHOP_RATE), app/rates.py"



def test_a_file_written_by_a_shell_and_edited_by_a_tool_is_listed_once():
    """Claude Code's shell wrote ``types/todo.ts`` from the project's directory, its Edit tool the
    same file as ``/repo/types/todo.ts``: the files line listed both (a real session's summary
    named 7 of its files twice). Transcripts keep no working directory per call, so a path that
    is the end of one other path modified is that file; one that ends two is left alone."""
    events = [{"trace_type": "user", "content": "Add the todo types."},
              *_call(1, "cat > types/todo.ts << 'EOF'\nexport interface Todo { id: string }\nEOF", result=""),
              *_call(2, "cat > types/index.ts << 'EOF'\nexport * from './todo';\nEOF", result=""),
              *_call(3, "", tool="Edit", result="ok", args={
                  "file_path": "/repo/types/todo.ts", "old_string": "id: string",
                  "new_string": "id: string; done: boolean"}),
              *_call(4, "", tool="Write", result="ok", args={"file_path": "/repo/types/index.ts", "content": "x"}),
              *_call(5, "", tool="Write", result="ok", args={"file_path": "/repo/app/types/index.ts", "content": "y"})]
    text = OfflineSummarizer().summarize([Turn("turn_0001", _traces("turn_0001", events))]).episodic_summary
    files = next(line for line in text.split("\n") if line.startswith("Files modified: "))
    assert files == ("Files modified: /repo/app/types/index.ts, /repo/types/index.ts, /repo/types/todo.ts (Todo), "
                     "types/index.ts")



def test_a_failed_write_fixed_by_a_shell_writing_the_file_by_its_relative_path_is_fixed():
    """The Write tool refused ``/repo/types/state.ts`` twice (not read yet); the agent then wrote
    it with ``cat > types/state.ts`` from the project's directory: the failure stayed "still
    failing" (a real session's summary said so of two files it had written)."""
    events = [{"trace_type": "user", "content": "Add the state types."},
              *_call(1, "", tool="Write", error="File has not been read yet. Read it first before writing to it.",
                     args={"file_path": "/repo/types/state.ts", "content": "export type S = {}"}),
              *_call(2, "cat > types/state.ts << 'EOF'\nexport type S = {}\nEOF", result="")]
    text = OfflineSummarizer().summarize([Turn("turn_0001", _traces("turn_0001", events))]).episodic_summary
    failed = next(line for line in text.split("\n") if line.startswith("Failed: "))
    assert failed == ("Failed: Write /repo/types/state.ts ×1 (File has not been read yet. Read it first before "
                      "writing to it.) — fixed later (a later write of types/state.ts passed)")
    from memcli.compaction.offline import written_pending

    # a bare file name written may be another directory's: no fix
    assert written_pending({"Write /repo/web/package.json": ("/repo/web/package.json",)}, ["package.json"]) == []
    assert written_pending({"Edit types/a.ts": ("types/a.ts",)}, ["/repo/types/a.ts"]) == \
        [("Edit types/a.ts", "/repo/types/a.ts")]

def test_one_spelling_folds_a_path_into_the_one_file_it_ends():
    from memcli.compaction.offline import one_spelling

    assert one_spelling(["src/a.py", "pkg/src/a.py", "/repo/pkg/src/a.py", "b.py"],
                        {"src/a.py": ["f"], "/repo/pkg/src/a.py": ["g"]}) \
        == (["/repo/pkg/src/a.py", "b.py"], {"/repo/pkg/src/a.py": ["g", "f"]})
    # a bare file name may be another directory's (package.json at the root, /repo/web/package.json)
    assert one_spelling(["package.json", "/repo/web/package.json"], {}) == (["package.json", "/repo/web/package.json"], {})
    ambiguous = ["x/index.ts", "/repo/x/index.ts", "/repo/app/x/index.ts"]
    assert one_spelling(ambiguous, {}) == (ambiguous, {})
    assert one_spelling(["/repo/a.py", "/other/a.py"], {}) == (["/repo/a.py", "/other/a.py"], {})   # two files
    assert one_spelling(["src/a.py"], {"src/a.py": ["f"]}) == (["src/a.py"], {"src/a.py": ["f"]})

def test_the_latest_notes_keep_the_agents_status_lines_each_once():
    events = [{"trace_type": "user", "content": "Port the importer."},
              {"trace_type": "assistant", "content": "Plan: parse, then map fields."},
              *_call(1, "ls", result="rows.csv\n" * 200),
              {"trace_type": "assistant", "content": "Parsing works; next I map ParsedRow to Trace."},
              *_call(2, "ls", result="rows.csv\n" * 200),
              {"trace_type": "assistant", "content": "Parsing works; next I map ParsedRow to Trace."},
              *_call(3, "ls", result="rows.csv\n" * 200),
              {"trace_type": "assistant", "content": "Done: rows map to traces."}]
    text = OfflineSummarizer().summarize([Turn("turn_0001", _traces("turn_0001", events))]).episodic_summary
    notes = next(line for line in text.split("\n") if line.startswith("Latest notes: "))
    assert notes == ('Latest notes: "Plan: parse, then map fields." → '
                     '"Parsing works; next I map ParsedRow to Trace."')
    assert 'assistant: "Done: rows map to traces."' in text   # the final message stays on its turn's line


def test_the_vocabulary_ranks_the_working_set_at_the_end_of_the_window_first():
    # [weight decayed to its last use, the trace of its last use, weight]: used 40 times at the
    # start of a 2,000-trace window, 3 times at its very end, 10 times up to its middle
    vocab = {"old_helper": [40.0, 0, 40.0], "new_helper": [3.0, 1990, 3.0], "mid_helper": [2.0, 1000, 10.0]}
    line = vocabulary(vocab, 2000, "", 200)
    assert line == "Vocabulary: new_helper, old_helper, mid_helper"


def test_a_small_budget_keeps_the_asks_files_and_latest_failures_before_tool_details():
    events = [{"trace_type": "user", "content": "Make every module read its endpoint from the environment and "
                                                "keep the tests green."}]
    for i in range(60):
        events += _call(2 * i + 1, "", tool="Edit", result="ok", args={
            "file_path": f"pkg/mod_{i}.py", "old_string": f"def handle_{i}(self):\n    pass",
            "new_string": f"def handle_{i}(self):\n    return os.environ['MOD_{i}_URL']"})
        events += _call(2 * i + 2, f"pytest -q tests/test_mod_{i}.py",
                        error=f"FAILED tests/test_mod_{i}.py::test_case - AssertionError: Mod{i}Manager returned None"
                        if i % 10 == 9 else None, result=None if i % 10 == 9 else "3 passed")
        events.append({"trace_type": "assistant", "content": f"Next I look at Mod{i + 1}Manager."})
    turns = [Turn("turn_0001", _traces("turn_0001", events))]
    text = OfflineSummarizer().summarize(turns, MemoryContext(summary_tokens=700)).episodic_summary
    lines = text.split("\n")
    # (the window's newest turn: its last message too — what the agent does next)
    assert lines[1] == ('- turn_0001 · user: "Make every module read its endpoint from the environment and keep '
                        'the tests green." · assistant: "Next I look at Mod60Manager."')
    files = next(line for line in lines if line.startswith("Files modified: "))
    assert all(f"pkg/mod_{i}.py" in files for i in range(60))    # every file, always (design §4)
    assert files.startswith("Files modified: pkg/mod_59.py (handle_59, os.environ, MOD_59_URL), pkg/mod_58.py")
    failed = next(line for line in lines if line.startswith("Failed: "))
    # squeezed, a failure whose line names what its command ran is that line alone
    assert failed.startswith("Failed: FAILED tests/test_mod_59.py::test_case - AssertionError: Mod59Manager returned "
                             "None ×1 — still failing; ")
    assert lines[-1].startswith("Vocabulary: ")
    assert len(text) <= 700 * 3.9


@pytest.mark.parametrize("head", ["Vocabulary: ", "Vocabulary (most used lately first): "])   # now, and before
def test_a_rollup_keeps_whole_entries_and_every_file(head):
    budget = 650 - len("Vocabulary (most used lately first): ") + len(head)
    summary = "\n".join([
        "3 turns (turn_0001–turn_0003), 2026-03-02 08:41 → 09:30 UTC: 40 traces, 12 tool calls, 2 failed.",
        '- turn_0001 · user: "Fix src/billing/invoice_total.py so that InvoiceTotal.apply_discount rounds half up '
        'and the ledger tests pass again." · tools: Bash ×3 · assistant: "Done."',
        '- turn_0002 · user: "Now the refund path." · assistant: "RefundPolicy.apply is fixed."',
        "Files modified: src/billing/invoice_total.py (InvoiceTotal, apply_discount), src/billing/refund.py "
        "(RefundPolicy)",
        "Failed: `pytest -q tests/test_ledger.py` ×2 (FAILED tests/test_ledger.py::test_round - assert 1 == 2) "
        "— passed later; `make lint` ×1 (E501 line too long) — still failing",
        f"{head}ledger_entries, LEDGER_URL, RoundingMode.HALF_UP, 9f8e7d6c, "
        "tests/test_refund.py, docs/billing.md"])
    out = condense(summary, budget)
    assert out == "\n".join([
        "3 turns (turn_0001–turn_0003), 2026-03-02 08:41 → 09:30 UTC: 40 traces, 12 tool calls, 2 failed.",
        '- turn_0001 · user: "Fix src/billing/invoice_total.py so that InvoiceTotal.apply_discount rounds half up '
        'and the ledger tests pass again."',
        '- turn_0002 · user: "Now the refund path."',
        "Files modified: src/billing/invoice_total.py (InvoiceTotal, apply_discount), src/billing/refund.py "
        "(RefundPolicy)",
        "Failed: `pytest -q tests/test_ledger.py` ×2 (FAILED tests/test_ledger.py::test_round - assert 1 == 2) "
        "— passed later; `make lint` ×1 (E501 line too long) — still failing",
        f"{head}ledger_entries, LEDGER_URL, +4 more"])
    assert len(out) <= budget
    smaller = condense(summary, 350)
    assert smaller.split("\n")[1:] == [   # every file stays (their names go first), the failure still open too
        "… 2 turn lines left out (`memcli show AGENT --archive`)",   # (the one that passed later goes first)
        "Files modified: src/billing/invoice_total.py, src/billing/refund.py",
        "Failed: `make lint` ×1 (E501 line too long) — still failing; +1 more"]


def test_a_rollup_keeps_the_request_the_newest_commit_and_the_steps_still_to_do():
    """A helper's hunt over rollups: a condensed summary dropped the request (the first ask) with
    the other turn lines, the whole Commits line, and the plan's open steps before its done ones
    (``Plan: [completed] …; +3 more``); an emptied list left an empty line. The request is the
    last turn line to go, the newest commit and the next step stay, the done steps go first."""
    lines = ["4 turns (turn_0001–turn_0004), 2026-03-02 08:41 → 09:30 UTC: 60 traces, 20 tool calls, 0 failed.",
             '- turn_0001 · user: "Port every module to settings."',
             *[f'- turn_000{k} · user: "Step {k}: port module_{k} and run its tests now."' for k in (2, 3, 4)],
             "Files modified: src/module_2.py, src/module_3.py",
             "Plan: [completed] Port module_1; [completed] Port module_2; [in_progress] Port module_3; "
             "[pending] Port module_4",
             "Commits: [main 3c3c3c3] port module_3 · [main 2b2b2b2] port module_2 · [main 1a1a1a1] port module_1",
             "URLs: https://docs.example.com/settings"]
    out = condense("\n".join(lines), 420)
    assert out.split("\n") == [
        lines[0], lines[1], "… 2 turn lines left out (`memcli show AGENT --archive`)", lines[4], lines[5],
        "Plan: [in_progress] Port module_3; +3 more",
        "Commits: [main 3c3c3c3] port module_3 · +2 more"], out
    assert "" not in condense("\n".join(lines), 700).split("\n")
    # a Subagents head whose agents all went goes with them (it stood with "(+4 earlier)" alone)
    agents = [lines[0], lines[1], "Subagents:", "(+4 earlier)",
              *[f'- agent a{k} (turn_0001) · task "Review module_{k} and report what is left." · 3 tool calls'
                for k in range(3)], lines[5]]
    out = condense("\n".join(agents), 260).split("\n")
    assert not any(line.startswith(("Subagents:", "(+", "- agent")) for line in out), out
    # a summary of work without a Files line is one too (its turn lines' tools told it)
    work = [lines[0], lines[1] + " · tools: Bash ×3", *lines[2:5], *lines[6:]]
    out = condense("\n".join(work), 300).split("\n")
    assert out[1] == lines[1] and out[2].endswith("turn lines left out (`memcli show AGENT --archive`)"), out


@pytest.mark.parametrize("head", ["Plan: ", "Plan (latest): "])   # now, and before
def test_a_rollup_keeps_the_plan_s_first_step_whichever_head_wrote_it(head):
    summary = "\n".join([
        "2 turns (turn_0001–turn_0002), 2026-03-02 08:41 → 09:30 UTC: 20 traces, 6 tool calls, 0 failed.",
        '- turn_0001 · user: "Port the billing modules to settings."',
        f"{head}[in_progress] Port BillingCache (src/billing/cache.py); [pending] Port BillingRouter "
        "(src/billing/router.py); [pending] Port BillingStore (src/billing/store.py)"])
    budget = 250 + len(head)
    out = condense(summary, budget)
    assert out.split("\n")[1:] == ['- turn_0001 · user: "Port the billing modules to settings."',
                                   f"{head}[in_progress] Port BillingCache (src/billing/cache.py); +2 more"]
    assert len(out) <= budget
    assert condense(summary, 60).split("\n")[-1] == out.split("\n")[-1]   # the first step stays, always


def test_parallel_subagents_get_a_line_each(tmp_path):
    """Two Claude Code subagents run at once (interleaved sidechain lines, no agentId: told
    apart by their parentUuid chains): the summary has one line for each, with its own task,
    files, failure and conclusion."""
    from memcli.api import Memory

    lines = []

    def line(uuid, parent, kind, content, side=False):
        value = {"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": "s1", "isSidechain": side,
                 "timestamp": f"2026-02-01T10:00:{len(lines):02d}Z", "message": {"role": kind, "content": content}}
        if kind == "assistant":
            value["message"]["id"] = f"msg_{uuid}"
        lines.append(orjson.dumps(value))

    line("u1", None, "user", "Review billing and shipping in parallel.")
    line("a1", "u1", "assistant", [{"type": "tool_use", "id": "t1", "name": "Task", "input": {"prompt": "Review billing"}},
                                   {"type": "tool_use", "id": "t2", "name": "Task", "input": {"prompt": "Review shipping"}}])
    line("b1", None, "user", "Review billing and fix src/billing.py.", side=True)
    line("s1", None, "user", "Review shipping and fix src/shipping.py.", side=True)
    line("b2", "b1", "assistant", [{"type": "tool_use", "id": "e1", "name": "Edit", "input": {
        "file_path": "src/billing.py", "old_string": "x = 1", "new_string": "x = 2"}}], side=True)
    line("s2", "s1", "assistant", [{"type": "tool_use", "id": "e2", "name": "Bash", "input": {
        "command": "pytest -q tests/test_shipping.py"}}], side=True)
    line("b3", "b2", "user", [{"type": "tool_result", "tool_use_id": "e1", "content": "ok"}], side=True)
    line("s3", "s2", "user", [{"type": "tool_result", "tool_use_id": "e2", "is_error": True,
                               "content": "FAILED tests/test_shipping.py::test_rate - KeyError: 'zone'"}], side=True)
    line("b4", "b3", "assistant", [{"type": "text", "text": "Billing fixed."}], side=True)
    line("s4", "s3", "assistant", [{"type": "text", "text": "Shipping still fails on zone."}], side=True)
    line("r1", "a1", "user", [{"type": "tool_result", "tool_use_id": "t1", "content": "Billing fixed."},
                              {"type": "tool_result", "tool_use_id": "t2", "content": "Shipping fails."}])
    line("a2", "r1", "assistant", [{"type": "text", "text": "Billing is done; shipping needs a zone."}])
    line("u2", "a2", "user", "Add the zone then.")
    src = tmp_path / "session.jsonl"
    src.write_bytes(b"\n".join(lines) + b"\n")
    agent = Memory(tmp_path / "m").agent("a")
    agent.ingest(src, "claude-code")
    result = agent.compact(tail_turns=1, keep_steps=0)
    block = result.summary.split("Subagents:\n", 1)[1].split("\nFiles modified", 1)[0].split("\n")
    assert block == [
        '- agent b1 (turn_0001) · task "Review billing and fix src/billing.py." · changed: src/billing.py · '
        '1 tool call · concluded: "Billing fixed."',
        '- agent s1 (turn_0001) · task "Review shipping and fix src/shipping.py." · 1 failed (last: '
        "`pytest -q tests/test_shipping.py`: FAILED tests/test_shipping.py::test_rate - KeyError: 'zone') · "
        'concluded: "Shipping still fails on zone."']


def test_a_summary_of_token_dense_text_still_fits_its_budget():
    """Hashes and redacted ids take more tokens than CHARS_PER_TOKEN guesses: the summary is made
    again at the ratio it turned out to have, so it fits (it used to stay 25% over, and an explicit
    --target-tokens was refused)."""
    from memcli.compaction.offline import _counter

    turns = []
    for t in range(1, 30):
        tid = f"turn_{t:04d}"
        turns.append(Turn(tid, _traces(tid, [
            {"trace_type": "user", "content": f"[REDACTED_TEXT len={t * 7} sha={t * 7919:08x}]"},
            {"trace_type": "assistant", "content": " ".join(f"{(t * k * 104729) % 2**32:08x}" for k in range(40))}])))
    for budget in (300, 900):
        text = OfflineSummarizer().summarize(turns, MemoryContext(summary_tokens=budget)).episodic_summary
        assert budget * 0.8 <= _counter().count(text) <= budget, budget


def test_commands_that_matter_keep_their_latest_outcome():
    """Test counts, commit hashes, pushes and PR URLs from successful commands, newest first, one
    per command family; a family whose latest run failed is in `Failed:` instead."""
    events = [{"trace_type": "user", "content": "Ship it."},
              *_call(1, "pytest -q", result="..\n===== 41 passed, 1 skipped in 3.2s ====="),
              *_call(2, "pytest -q tests/test_api.py", result="===== 42 passed in 3.3s ====="),
              *_call(3, 'git commit -am "Fix totals"', result="[main 9f8e7d6] Fix totals\n 2 files changed"),
              *_call(4, "git push", result="To github.com:acme/shop.git\n   1a2b3c4..9f8e7d6  main -> main"),
              *_call(5, "gh pr create --fill", result="https://github.com/acme/shop/pull/77\n"),
              *_call(6, "ls -la", result="total 0"),
              *_call(7, "make lint", result="ruff: All checks passed! 3 files"),
              *_call(8, "make lint", error="E501 line too long")]
    text = OfflineSummarizer().summarize([Turn("turn_0001", _traces("turn_0001", events))]).episodic_summary
    line = next(line for line in text.split("\n") if line.startswith("Commands"))
    assert line == ("Commands (latest outcome): `gh pr create --fill`: https://github.com/acme/shop/pull/77; "
                    "`git push`: 1a2b3c4..9f8e7d6 main -> main; `pytest -q tests/test_api.py`: 42 passed in 3.3s")
    # (one pytest family: the latest; the commit in the commits line)
    assert "\nCommits: [main 9f8e7d6] Fix totals\n" in text


def test_each_commit_made_is_said_not_only_the_latest():
    """The spotter session made three commits; the summary said the latest (the commands line keeps
    one outcome a family) and the other two hashes only as vocabulary, if at all. Every commit
    made is in its own line, newest first: one a hook's test counts came before, one whose line
    failed after it (a rejected push), a subject with a ``;`` (said as written)."""
    def summary(*more):
        events = [{"trace_type": "user", "content": "Commit each step."},
                  *_call(1, 'git commit -m "feat: models"', result="[main 99b497c] feat: models\n 3 files changed"),
                  *_call(2, "pytest -q", result="12 passed in 0.4s"),
                  *_call(3, 'git commit -m "feat: lifecycle"', result="[main ceff8c3] feat: lifecycle\n 1 file"),
                  *_call(4, 'git commit -am "feat: review page"', result="[main bb53fb4] feat: review page\n 2 files"),
                  *more]
        return OfflineSummarizer().summarize([Turn("turn_0001", _traces("turn_0001", events))]).episodic_summary

    text = summary()
    assert _line_of(text, "Commits: ") == ("Commits: [main bb53fb4] feat: review page · [main ceff8c3] feat: lifecycle"
                                          " · [main 99b497c] feat: models")
    assert "Commands (latest outcome): `pytest -q`: 12 passed in 0.4s" in text   # (nothing twice)
    text = summary(*_call(5, "git commit -m 'fix: a; b'", result="12 passed in 0.2s\n[main 1111111] fix: a; b\n 1 file"),
                   *_call(6, "git commit -am wip && git push", error="[main 2222222] wip\n 1 file changed\n"
                                                                     "! [rejected] main -> main (fetch first)"))
    assert _line_of(text, "Commits: ").startswith("Commits: [main 2222222] wip · [main 1111111] fix: a; b · "
                                                  "[main bb53fb4] feat: review page")


def _line_of(text: str, head: str) -> str:
    return next(line for line in text.split("\n") if line.startswith(head))


RUNNER_OUTPUTS = [
    # ExUnit: a progress banner first, then the numbered failing test and its assertion
    ("Exit code 2\n==> fine\nCompiling 1 file (.ex)\nGenerated fine app\nRunning ExUnit with seed: 1\n\n"
     "  1) test mount renders the review page (SpotterWeb.ReviewLiveTest)\n     test/review_test.exs:35\n"
     "     Assertion with =~ failed\n     code:  assert html =~ \"Review\"",
     "1) test mount renders the review page (SpotterWeb.ReviewLiveTest) — Assertion with =~ failed"),
    ("  1) test mount (SpotterWeb.ReviewLiveTest)\n     test/review_test.exs:102\n"
     "     ** (RuntimeError) Phoenix LiveView requires lazy_html as a test dependency.",
     "1) test mount (SpotterWeb.ReviewLiveTest) — ** (RuntimeError) Phoenix LiveView requires lazy_html as a "
     "test dependency."),
    # a build banner before the exception (Next.js)
    ("> next build\n> Build error occurred\nTypeError: generate is not a function\n    at page (app/page.js:3)",
     "TypeError: generate is not a function"),
    ("--- FAIL: TestParse (0.00s)\n    parse_test.go:12: got 3 want 4\nFAIL\nexit status 1",
     "--- FAIL: TestParse (0.00s) — parse_test.go:12: got 3 want 4"),
    ("FAIL src/cart.test.ts\n  ● Cart › adds item\n\n    TypeError: cart.add is not a function",
     "● Cart › adds item — TypeError: cart.add is not a function"),
    ("test parse::tests::roundtrip ... FAILED\n\nfailures:\nthread 'main' panicked at src/lib.rs:3:5:\n"
     "assertion `left == right` failed", "test parse::tests::roundtrip ... FAILED — panicked at src/lib.rs:3:5: assertion "
     "`left == right` failed"),
    # colour codes around rustc's error (the code, not the "could not compile" summary after it)
    ("\x1b[1m\x1b[32m   Compiling\x1b[0m cfg v0.3.1\n\x1b[0m\x1b[1m\x1b[38;5;9merror[E0599]\x1b[0m\x1b[1m: no variant "
     "named `EmptyKey` found for enum `ConfigError`\x1b[0m\n  --> src/parser.rs:88:58\nwarning: unused import: `std::fmt`\n"
     "error: could not compile `cfg` (lib) due to 1 previous error",
     "error[E0599]: no variant named `EmptyKey` found for enum `ConfigError`"),
    # a failing test whose reason came before it: pytest's collection error, go's build error
    ("____ ERROR collecting tests/test_api.py ____\nE   ImportError: cannot import name 'OrderTotal' from 'app.api'\n"
     "===== short test summary info =====\nERROR tests/test_api.py\n!!!!! Interrupted: 1 error during collection !!!!!",
     "ERROR tests/test_api.py — E   ImportError: cannot import name 'OrderTotal' from 'app.api'"),
    ("# example.com/cfgcheck\n./check.go:21:9: undefined: ErrEmptyKey\nFAIL\texample.com/cfgcheck [build failed]\nFAIL",
     "FAIL\texample.com/cfgcheck [build failed] — ./check.go:21:9: undefined: ErrEmptyKey"),
    # Maven: its [ERROR] line that says where, not [INFO] BUILD FAILURE nor the goal that failed
    ("[INFO] BUILD FAILURE\n[ERROR] Failed to execute goal maven-compiler-plugin:3.11.0:compile on project shop: "
     "Compilation failure\n[ERROR] /repo/src/shop/Cart.java:[42,17] cannot find symbol\n[ERROR] -> [Help 1]",
     "/repo/src/shop/Cart.java:[42,17] cannot find symbol"),
    # Next.js / webpack: the type error or the missing module, not "Failed to compile."
    ("> next build\n   Creating an optimized production build ...\nFailed to compile.\n\n./app/page.tsx:12:24\n"
     "Type error: Property 'foo' does not exist on type 'Props'.\n> Build failed because of webpack errors",
     "Type error: Property 'foo' does not exist on type 'Props'."),
    ("Failed to compile.\n\nModule not found: Error: Can't resolve './utils/format' in '/repo/src/components'",
     "Module not found: Error: Can't resolve './utils/format' in '/repo/src/components'"),
    # a linter's located finding over its count
    ("app/orders.py:12:89: E501 Line too long (96 > 88)\nFound 1 error.", "app/orders.py:12:89: E501 Line too long (96 > 88)"),
    # the harness's own lines around the output (Gemini CLI, Codex): not the informative line
    ("Command: cargo build\nDirectory: (root)\nOutput: error[E0425]: cannot find value `cfg` in this scope\n"
     "Error: (none)\nExit Code: 101\nSignal: (none)\nBackground PIDs: (none)\nProcess Group PGID: 4242",
     "error[E0425]: cannot find value `cfg` in this scope"),
    ("src/app.ts:3:5 - error TS2322: Type 'string' is not assignable to type 'number'.",
     "src/app.ts:3:5 - error TS2322: Type 'string' is not assignable to type 'number'."),
    ("main.c:3:1: error: expected ';' before '}' token", "main.c:3:1: error: expected ';' before '}' token"),
    ("Exception in thread \"main\" java.lang.NullPointerException: cart is null\n\tat Cart.add(Cart.java:3)",
     "Exception in thread \"main\" java.lang.NullPointerException: cart is null"),
    ("Exit code 1\nbash: foo: command not found", "bash: foo: command not found"),
    ("npm warn deprecated glob@7\nnpm ERR! code ENOENT", "npm ERR! code ENOENT"),
    # pytest -q's collection error: the error printed before it, not the tally after it
    ("____ ERROR collecting tests/test_client.py ____\nE   ModuleNotFoundError: No module named 'httpx'\n"
     "=== short test summary info ===\nERROR tests/test_client.py\n!!!! Interrupted: 1 error during collection !!!!\n"
     "1 error in 0.21s", "ERROR tests/test_client.py — E   ModuleNotFoundError: No module named 'httpx'"),
    # a script runner's lines (npm, bun) around the tool's: the tool's finding, not ELIFECYCLE
    ("> docs@1.0.0 lint\n> markdownlint docs\n\ndocs/export.md:3 MD013/line-length Line length [Expected: 80; "
     "Actual: 112]\nnpm ERR! code ELIFECYCLE\nnpm ERR! errno 1\nnpm ERR! docs@1.0.0 lint: `markdownlint docs`",
     "docs/export.md:3 MD013/line-length Line length [Expected: 80; Actual: 112]"),
    ("$ tsc --noEmit\nsrc/ship.ts(2,50): error TS2339: Property 'weight' does not exist on type 'Item'.\n"
     "error: script \"typecheck\" exited with code 2",
     "src/ship.ts(2,50): error TS2339: Property 'weight' does not exist on type 'Item'."),
    # npm alone: its line that says most, not its code, errno or path
    ("npm ERR! code E404\nnpm ERR! 404 Not Found - GET https://registry.npmjs.org/lefpad - Not found\n"
     "npm ERR! A complete log of this run can be found in: /root/.npm/_logs/x.log",
     "npm ERR! 404 Not Found - GET https://registry.npmjs.org/lefpad - Not found"),
    ("npm error code 1\nnpm error path /repo\nnpm error command failed\nnpm error command sh -c node build.js\n"
     "npm error Error: Cannot find module 'esbuild'", "npm error Error: Cannot find module 'esbuild'"),
    # yarn alone: its failure line, not its banner
    ("yarn run v1.22.19\n$ node scripts/migrate.js\ninfo Visit https://yarnpkg.com/en/docs/cli/run\n"
     "error Command failed with exit code 1.", "error Command failed with exit code 1."),
    ("E   AssertionError: 33\nFAILED tests/test_0.py::test_x - AssertionError: 33",
     "FAILED tests/test_0.py::test_x - AssertionError: 33"),
]


def test_the_informative_line_of_each_runner_names_the_failing_test_and_why():
    """Not a progress banner (``==> dep``, ``Compiling``, ``> build``), a warning or the exit
    status: the failing test with the message under it, else the exception or the error line."""
    from memcli.compaction.offline import informative_line

    assert [informative_line(output) for output, _ in RUNNER_OUTPUTS] == [line for _, line in RUNNER_OUTPUTS]


def test_a_command_that_failed_for_several_reasons_keeps_each_reason():
    """``mix test`` failing first on a missing config, then on a missing dependency, then on an
    assertion: the latest reason leads, the earlier distinct ones follow (the fixes between runs
    are what the agent needs to know), each once; ExUnit's numbered failure after its exit line and a
    colon (it read "Exit code 2 1) test mount"); ExUnit's lone ``1)`` gets its opener, so the line's
    entries stay where they are (test_a_failure_line_with_a_lone_bracket_stays_one_entry)."""
    events = [{"trace_type": "user", "content": "Make the review page tests pass."}]
    for n, why in enumerate(["** (RuntimeError) no :secret_key_base configuration found in SpotterWeb.Endpoint.",
                             "** (RuntimeError) Phoenix LiveView requires lazy_html as a test dependency.",
                             "** (RuntimeError) Phoenix LiveView requires lazy_html as a test dependency.",
                             "Assertion with =~ failed"], 1):
        events += _call(n, "mix test test/review_test.exs",
                        error=f"Exit code 2\n==> fine\n  1) test mount (ReviewLiveTest)\n     test/review_test.exs:9\n"
                              f"     {why}")
    summary = OfflineSummarizer().summarize([Turn("turn_0001", _traces("turn_0001", events))])
    failed = next(line for line in summary.episodic_summary.split("\n") if line.startswith("Failed: "))
    assert failed == (
        "Failed: `mix test test/review_test.exs` ×4 (Exit code 2: (1) test mount (ReviewLiveTest) — Assertion with =~ "
        "failed; before: Exit code 2: (1) test mount (ReviewLiveTest) — ** (RuntimeError) Phoenix LiveView requires "
        "lazy_html as a test dependency.; Exit code 2: (1) test mount (ReviewLiveTest) — ** (RuntimeError) no "
        ":secret_key_base configuration found in SpotterWeb.Endpoint.) — still failing")


def test_a_harness_summary_that_moves_is_pointed_at_and_its_names_join_the_vocabulary():
    """The harness's own summary (a ``compact_summary`` trace) is not an ask: the turn line points
    at it by id with the harness's mark, and the names it holds (what the agent worked from) can
    be kept in the vocabulary."""
    events = [
        {"trace_type": "user", "content": "Summary: 1. Primary request: wire ReviewTokenStore.mint into "
                                          "lib/spotter/services/tmux.ex and set SPOTTER_REVIEW_TOKEN.",
         "tags": ["compact_summary"],
         "extra": {"harness_compaction": {"harness": "claude-code", "trigger": "auto", "pre_tokens": 167094}}},
        {"trace_type": "user", "content": "Go on."},
        {"trace_type": "assistant", "content": "Done."},
    ]
    traces = _traces("turn_0001", events)
    summary = OfflineSummarizer().summarize([Turn("turn_0001", traces)]).episodic_summary
    line = next(line for line in summary.split("\n") if line.startswith("- turn_0001"))
    assert line == ('- turn_0001 · user: "Go on." · earlier summary (claude-code, auto, 167,094 tokens before): '
                    'turn_0001-1 · assistant: "Done."')
    assert "Primary request" not in line
    vocabulary_line = next(line for line in summary.split("\n") if line.startswith("Vocabulary"))
    assert vocabulary_line.startswith("Vocabulary: ReviewTokenStore.mint")


def test_urls_end_before_a_shell_variable():
    events = [{"trace_type": "user", "content": "Start the server."},
              {"trace_type": "assistant", "content": "It listens on http://127.0.0.1:${PORT}/review; see https://example.com/a."}]
    summary = OfflineSummarizer().summarize([Turn("turn_0001", _traces("turn_0001", events))]).episodic_summary
    # (https://example.com/a ends the reply's sentence there: shown, it is not listed again)
    assert "URLs: http://127.0.0.1" in summary.split("\n")


def test_urls_are_listed_newest_first_and_one_seen_again_is_new():
    """The spotter session's URLs line began with credo's "report incorrect results" link, read at
    the start, and a small summary kept that one and dropped the pull request link pushed at the end."""
    # (in what the tools gave back: a URL a line of the summary shows is not listed again)
    events = [{"trace_type": "user", "content": "Set it up."},
              *_call(1, "", tool="Read", args={"file_path": "docs/SETUP.md"},
                     result="Per https://docs.example.com/setup and https://x.test/faq."),
              {"trace_type": "user", "content": "Open the PR."},
              *_call(2, "", tool="mcp__github__create_pull_request", args={"title": "Setup"},
                     result="Created https://github.com/acme/shop/pull/77 (setup: https://docs.example.com/setup)."),
              {"trace_type": "assistant", "content": "Done."}]
    summary = OfflineSummarizer().summarize([Turn("turn_0001", _traces("turn_0001", events))]).episodic_summary
    assert "URLs: https://docs.example.com/setup, https://github.com/acme/shop/pull/77, https://x.test/faq" in \
        summary.split("\n"), summary


def test_a_digest_sent_back_by_the_read_ahead_child_takes_more_traces_and_sums_up_the_same():
    """A digest starts with shared read-only mappings for what most turns never have (failures,
    files, URLs, subagents); pickled as the read-ahead child sends it, it comes back with copies of
    them, and still takes the failures and files that come next: the same summary as unpickled."""
    import io
    import pickle

    from memcli.compaction.compactor import _Pickler
    from memcli.compaction.offline import turn_digest
    from memcli.compaction.window import WindowTurn

    traces = _traces("turn_0001", _session())
    first = 2   # the ask and a note: no failure, file, URL or subagent yet

    def fed(digest, part):
        for trace in part:
            digest.add(trace)
        return digest

    whole = fed(turn_digest(WindowTurn("turn_0001", whole=False)), traces)
    out = io.BytesIO()
    _Pickler(out, protocol=pickle.HIGHEST_PROTOCOL).dump(fed(turn_digest(WindowTurn("turn_0001", whole=False)),
                                                             traces[:first]))
    resumed = fed(pickle.loads(out.getvalue()), traces[first:])
    texts = [OfflineSummarizer().summarize_digests([d]).episodic_summary for d in (whole, resumed)]
    assert texts[0] == texts[1]
    assert "Files modified: app/orders.py" in texts[1] and "E501 line too long" in texts[1]


def _porting_modules() -> list[dict]:
    """One turn: 40 edits of 9 modules, each tested, then a plan of 9 items (7 done, 1 in progress)."""
    events = [{"trace_type": "user", "content": "Port every module to the new settings and keep the tests green."}]
    plan = [{"content": f"Port module_{k} to settings (src/pkg/module_{k}.py)",
             "status": "completed" if k < 7 else "in_progress" if k == 7 else "pending"} for k in range(9)]
    for i in range(40):
        events += _call(2 * i + 1, "", tool="Edit", result="ok", args={
            "file_path": f"src/pkg/module_{i % 9}.py", "old_string": f"TIMEOUT_{i} = 3",
            "new_string": f"TIMEOUT_{i} = settings['timeout_{i}']"})
        events += _call(2 * i + 2, f"pytest -q tests/test_module_{i % 9}.py", result="3 passed")
    return events + _call(99, "", tool="TodoWrite", result="ok", args={"todos": plan})


def test_a_squeezed_plan_keeps_what_is_left_to_do():
    """A long plan at a small budget keeps its items not done yet (in_progress, pending), in the
    plan's order, and counts the done ones it leaves out: what the agent does next, not what it did."""
    turns = [Turn("turn_0001", _traces("turn_0001", _porting_modules()))]
    text = OfflineSummarizer().summarize(turns, MemoryContext(summary_tokens=260)).episodic_summary
    line = next(line for line in text.split("\n") if line.startswith("Plan: "))
    assert line.endswith("[in_progress] Port module_7 to settings (src/pkg/module_7.py); "
                         "[pending] Port module_8 to settings (src/pkg/module_8.py); "
                         f"+{7 - line.count('[completed]')} more")
    assert line.count("[completed]") < 7


def test_a_squeezed_plan_shows_every_step_still_to_do_before_the_vocabulary_s_share():
    """A Codex-sized handoff (589 characters) of 40 steps: the plan's first share held its step
    in progress only (``+2 more``), and the pending step — the work right after it — lost its
    place to the vocabulary's guesses. The steps still to do now take their room first (at most
    the aggregate lines' room), the one done is counted."""
    from memcli.compaction.offline import _squeeze

    ask = ("- turn_0001 · user: \"Move every module's timeout from env vars to settings, starting with "
           "src/billing/store_0.py.\"")
    steps = "- turn_0002 · steps 1–20 of 20 (its ask stays in the active file)"
    body = [(ask + " · tools: shell ×10, update_plan ×5, apply_patch ×5 [shell `rg -n router_orders_1 src`; shell "
             "`pytest -q tests/shipping/test_store_2.py`; apply_patch src/auth/policy_3.py] (2 failed; last: `pytest "
             "-q tests/audit/test_cache_9.py`) · assistant: \"AuditCache now reads its timeout from settings.\"",
             ask, ("turn_0001", "turn_0001", 1)),
            (steps + " · tools: shell ×16, update_plan ×3, apply_patch ×1 [shell `rg -n index_billing_10 src`; shell "
             "`rg -n cache_audit_9 src`; shell `pytest -q tests/orders/test_cache_11.py`] (2 failed; last: `pytest -q "
             "tests/notify/test_schema_17.py`) · last note: \"AuthRouter now reads its timeout from settings.\"",
             steps + " · last note: \"AuthRouter now reads its timeout from settings.\"", ("turn_0002", "turn_0002", 1))]
    modules = [("orders", "cache", 11), ("audit", "cache", 9), ("ledger", "store", 8), ("auth", "policy", 3)]
    files = [f"src/{m}/{kind}_{n}.py" for m, kind, n in modules]
    changes = [f" ({m.title()}{kind.title()}, {m}.{kind}_{n}.timeout)" for m, kind, n in modules]
    failing = [f"FAILED tests/{m}/test_{kind}_{n}.py::test_{kind}_{n}_roundtrip - {m.title()}{kind.title()}{n}Error"
               for m, kind, n in modules]
    plan = ("Plan: [completed] Port ReportsClient (src/reports/client_15.py); [in_progress] Port CatalogIndex "
            "(src/catalog/index_16.py); [pending] Port NotifySchema (src/notify/schema_17.py)")
    footer = [("files", "Files modified: " + ", ".join(f + c for f, c in zip(files, changes))), ("plan", plan),
              ("failed", "Failed: " + "; ".join(f"`pytest -q {line.split()[1].split('::')[0]}` ×1 ({line}) — still "
                                                "failing" for line in failing))]
    briefer = {"failed": "Failed: " + "; ".join(f"{line} ×1 — still failing" for line in failing)}
    out = _squeeze("2 turns: 40 tool calls, 4 failed.", body, footer, 589,
                   lambda k: "Files modified: " + ", ".join(f + (c if i < k else "")
                                                            for i, (f, c) in enumerate(zip(files, changes))),
                   briefer, 1846)
    assert ("\nPlan: [in_progress] Port CatalogIndex (src/catalog/index_16.py); [pending] Port NotifySchema "
            "(src/notify/schema_17.py); +1 more\n") in out + "\n", out
    assert len(out) <= 589


def test_the_plan_s_next_steps_take_their_room_but_not_the_other_lines_or_the_vocabulary_s():
    """The plan's extra room is its next steps' (at most NEXT_STEPS, an explanation is none),
    within what the other lines' shares leave; the vocabulary keeps its share (a reviewer's
    case: 137 characters left for it against a share of 188, the failures cut to their brief)."""
    from memcli.compaction.offline import VOCAB_SHARE, _left_out, _open_plan_chars, _squeeze

    assert _open_plan_chars("Plan: Port the settings first.; [completed] Port a; [done] Port b") == 0
    three = _open_plan_chars("Plan: [completed] a; [in_progress] bb; [pending] ccc; [pending] dddd; [pending] e")
    assert three == len("Plan: ") + 16 + len("[in_progress] bb; [pending] ccc; [pending] dddd; ")
    body = [(f'- turn_{i:04d} · user: "Port module {i} to the settings object." · tools: Bash ×3',
             f'- turn_{i:04d} · user: "Port module {i} to the settings object."', (f"turn_{i:04d}", f"turn_{i:04d}", 1))
            for i in range(1, 5)]
    plan = "Plan: " + "; ".join(f"[pending] Port module_{k} timeout and retry settings to config/settings.py with "
                                "tests" for k in range(12))
    failed = "Failed: " + "; ".join(f"`pytest -q tests/test_s{k}.py` ×1 (FAILED tests/test_s{k}.py::test_rt - KeyError: "
                                    f"'timeout_{k}') — still failing" for k in range(6))
    notes = "Latest notes: " + " → ".join(f'"module_{k} reads TIMEOUT from env"' for k in range(6))
    header = "4 turns: 12 tool calls, 6 failed."
    for size in (1000, 1400, 1800):
        out = _squeeze(header, body, [("plan", plan), ("notes", notes), ("failed", failed)], size, None, {}, 5000)
        share = int((size - len(header) - 1 - max(len(_left_out("turn_0001", "turn_0004", 4)) + 1, 110)) * VOCAB_SHARE)
        assert size - len(out) >= share, (size, len(out), share)
        assert "\nFailed: `pytest -q tests/test_s0.py` ×1 (FAILED" in out, out


def test_the_header_says_the_date_once_for_a_window_of_one_day():
    """The header's end time carries no date when it is the start's day (the module docstring's
    form: fewer tokens at every budget); a window over midnight says both dates."""
    def header(seconds: float) -> str:
        traces = _traces("turn_0001", [{"trace_type": "user", "content": "Fix the totals."},
                                       {"trace_type": "assistant", "content": "Done."}])
        traces[1].ts = traces[0].ts + seconds
        return OfflineSummarizer().summarize([Turn("turn_0001", traces)]).episodic_summary.split("\n")[0]
    assert header(3000) == "1 turn (turn_0001), 2026-03-02 09:00 → 09:50 UTC: 2 traces, 0 tool calls, 0 failed."
    assert header(86400) == ("1 turn (turn_0001), 2026-03-02 09:00 → 2026-03-03 09:00 UTC: 2 traces, 0 tool calls, "
                             "0 failed.")


def _fill(monkeypatch, count, budget: int, text_of) -> tuple[str, list]:
    """``offline._fill`` of a summary ``text_of(ratio)`` makes, counted by ``count``: the text
    it keeps and the ratios it was made at (the first guess first)."""
    from memcli.compaction import offline

    monkeypatch.setattr(offline, "_counter", lambda: type("Counter", (), {"count": staticmethod(count)}))
    made = []

    def make(ratio: float) -> str:
        made.append(ratio)
        return text_of(ratio)

    return offline._fill(make(offline.CHARS_PER_TOKEN), budget, make), made


def test_a_summary_whose_larger_try_passes_its_budget_still_fills_it(monkeypatch):
    """The second try of a summary under its budget passed it by a little (a token-dense block
    joined at that size): the next try is made between the two, and the summary ends within 5%
    of its budget, not where the first, conservative guess left it (14% under)."""
    def count(text: str) -> int:   # 3.5 characters a token, and a dense block of 60 tokens beyond 3,400 characters
        return len(text) * 2 // 7 + (60 if len(text) > 3400 else 0)

    text, made = _fill(monkeypatch, count, 1000, lambda ratio: "x" * int(ratio * 1000))
    assert 950 <= count(text) <= 1000
    assert len(made) <= 4   # the first guess and three more found it


def test_a_summary_over_its_budget_and_shorter_than_its_limit_is_made_at_the_ratio_it_had(monkeypatch):
    """A redacted Codex session's summary: hashes at 2 characters a token, all its 12,938
    characters in at the first guess (3 a token: 16,206 allowed), 6,568 tokens for 5,402. The
    next try is made at the ratio the text had (1.9), not at the guess scaled down (2.4: a limit
    still over the text, the same text again — and `compact --target-tokens 6000` refused)."""
    text, _ = _fill(monkeypatch, lambda t: len(t) * 100 // 197, 5_402,
                    lambda ratio: "h" * min(int(ratio * 5_402), 12_938))
    assert len(text) * 100 // 197 <= 5_402


def test_a_summary_that_cannot_shrink_is_not_made_again_and_again(monkeypatch):
    """Every try passes a tiny budget and the text is as short as it gets (the header, every
    file): the second try, no smaller, ends it (the tries went on, the ratio sinking to 0)."""
    text, made = _fill(monkeypatch, lambda t: len(t) // 4, 30, lambda ratio: "z" * 228)
    assert text == "z" * 228
    assert len(made) == 2


def test_a_summary_whose_every_larger_try_passes_its_budget_still_fills_it(monkeypatch):
    """The shape of a real session's summary (Claude Code, 225 names needed later) at 4,846
    tokens: the first text is 24% under its budget, and what a larger one adds is token-dense
    (the vocabulary: 2.1–2.7 characters a token against 3.9 before, the densest first, as the
    tries measured there), so a straight line from the first text lands over the budget try
    after try. It used to give up and keep the first text (3,684 tokens); the tries scaled down
    from the one that passed find one within 5%."""
    from memcli.compaction import offline

    def count(text: str) -> int:
        n = len(text)
        return int(n / 3.945) if n <= 14_534 else 3_684 + int(13.4 * (n - 14_534) ** 0.57)

    text, made = _fill(monkeypatch, count, 4_846, lambda ratio: "x" * int(ratio * 4_846))
    assert 0.95 * 4_846 <= count(text) <= 4_846
    assert len(made) <= 1 + offline.FILL_TRIES


_DIRS = ("handlers", "jobs")


def _edits_under(root: str, relative_command: bool) -> str:
    events = [{"trace_type": "user", "content": "Make the handlers read their timeouts from settings."}]
    for i in range(4):
        events += _call(2 * i + 1, "", tool="Edit", result="ok", args={
            "file_path": f"{root}src/{_DIRS[i % 2]}/h_{i}.py", "old_string": "TIMEOUT = 3",
            "new_string": f"TIMEOUT = settings['handler_{i}.timeout']"})
        events += _call(2 * i + 2, f"pytest -q tests/test_h_{i}.py" if not relative_command else
                        f"pytest -q tests/test_h_{i}.py && ruff check src/{_DIRS[i % 2]}/h_{i}.py", result="3 passed")
    events.append({"trace_type": "assistant", "content": f"All four handlers done; {root}src/jobs/h_3.py last."})
    return OfflineSummarizer().summarize([Turn("turn_0001", _traces("turn_0001", events))]).episodic_summary


def test_files_keep_the_absolute_paths_the_tools_wrote():
    """Claude Code's edits name absolute paths and its next Read or Edit names them again: the
    files line keeps them whole, as the tools spelled them, even when the session also names the
    files relatively (``ruff check src/jobs/h_1.py``). Said once under their directory, the paths
    the agent needs next would no longer be in the summary (the worked Claude Code sessions of the
    fidelity benchmark lost up to 9 points of recall at the harness's own budget that way)."""
    for relative in (True, False):
        text = _edits_under("/home/me/proj/", relative_command=relative)
        files = next(line for line in text.split("\n") if line.startswith("Files modified"))
        assert files == ("Files modified: /home/me/proj/src/jobs/h_3.py (handler_3.timeout), "
                         "/home/me/proj/src/handlers/h_2.py (handler_2.timeout), "
                         "/home/me/proj/src/jobs/h_1.py (handler_1.timeout), "
                         "/home/me/proj/src/handlers/h_0.py (handler_0.timeout)")


def test_a_squeeze_whose_last_turn_line_does_not_fit_after_the_first_ends():
    """The asks are taken from both ends inward: the first line fits, the last (the only one
    left, so both ends point at it) does not — the squeeze stops there and counts it (it looped
    for ever: a Codex handoff of ~300 tokens hung ``compact``)."""
    from memcli.compaction.offline import _squeeze

    first = '- turn_0001 · user: "Move the timeouts to settings."'
    last = "- turn_0002 · user: \"" + "Keep the public names unchanged. " * 12 + '"'
    body = [(first, first, ("turn_0001", "turn_0001", 1)), (last, last, ("turn_0002", "turn_0002", 1))]
    text = _squeeze("2 turns (turn_0001–turn_0002).", body, [], 320)
    assert text.split("\n")[:2] == ["2 turns (turn_0001–turn_0002).", first]
    assert "turn_0002" in text.split("\n")[2] and "left out" in text.split("\n")[2]


def test_a_tiny_squeezed_summary_has_a_header_of_counts_only():
    """At a harness handoff's size (~200 tokens) the header says how much the window holds, not
    when nor which turns (the lines under it name them): the ~25 tokens of dates, trace count and
    turn range go to the plan's next item. A larger budget keeps the full header."""
    def header(budget: int) -> str:
        turns = [Turn("turn_0001", _traces("turn_0001", _porting_modules()))]
        return OfflineSummarizer().summarize(turns, MemoryContext(summary_tokens=budget)).episodic_summary.split("\n")[0]

    assert header(200) == "1 turn: 81 tool calls, 0 failed."
    assert header(700) == "1 turn (turn_0001), 2026-03-02 09:00 → 09:02 UTC: 163 traces, 81 tool calls, 0 failed."


def test_a_brief_failure_entry_is_its_line_when_that_names_what_the_command_ran():
    """Squeezed (``brief``), ``pytest -q tests/a.py`` failing with ``FAILED tests/a.py::t - E``
    is said by that line alone (the path twice cost a tiny summary its failures); a command whose
    line does not name what it ran (``npm run build`` → ``TypeError``) keeps its label."""
    from memcli.compaction.offline import _Fixes, failures_line

    failures = {"`pytest -q tests/a.py`": 3, "`npm run build`": 1}
    errors = {"`pytest -q tests/a.py`": ["FAILED tests/a.py::test_t - KeyError: 'id'"],
              "`npm run build`": ["TypeError: generate is not a function"]}
    commands = {"pytest -q tests/a.py": [False, True, "x", []], "npm run build": [False, True, "x", []]}
    assert failures_line(failures, errors, commands, _Fixes({}), brief=True) == (
        "Failed: `npm run build` ×1 (TypeError: generate is not a function) — still failing; "
        "FAILED tests/a.py::test_t - KeyError: 'id' ×3 — still failing")
    assert failures_line(failures, errors, commands, _Fixes({})) == (
        "Failed: `npm run build` ×1 (TypeError: generate is not a function) — still failing; `pytest -q tests/a.py` ×3 "
        "(FAILED tests/a.py::test_t - KeyError: 'id') — still failing")


def test_a_list_line_too_small_for_its_first_entry_says_nothing_rather_than_one_word():
    """``_fit_block`` clips a first entry that does not fit; a clip that kept only its first word
    (``Failed: FAILED …; +4 more``) is dropped: it cost a tiny summary its room and named nothing."""
    from memcli.compaction.offline import _fit_block

    line = "Failed: FAILED tests/audit/test_schema_39.py::test_schema_39_roundtrip - AuditSchema39Error ×4 — still failing"
    assert _fit_block("failed", line, 70) == ""
    assert _fit_block("failed", line, 95) == "Failed: FAILED tests/audit/test_schema_39.py::test_schema_39_roundtrip - …"


def test_a_list_line_too_small_for_its_first_entry_never_cuts_into_a_command():
    """A first entry clipped inside its backquoted command (``Failed: `pytest -q …``) named half a
    command: the clip stops before the command, and a clip left with nothing says nothing."""
    from memcli.compaction.offline import _fit_block

    failed = ("Failed: `pytest -q tests/notify/test_store_27.py` ×1 (FAILED tests/notify/test_store_27.py::"
              "test_store_27_roundtrip - NotifyStore27Error) — still failing; `make lint` ×1 — still failing")
    assert _fit_block("failed", failed, 66) == ""
    assert _fit_block("failed", failed, 70) == "Failed: `pytest -q tests/notify/test_store_27.py` ×1 …; +1 more"
    commands = "Commands (latest outcome): `pytest -q tests/notify/test_store_27.py tests/auth`: 12 passed; `make lint`: ok"
    assert _fit_block("commands", commands, 90) == ""
    said = "Failed: the build of `npm run build --workspace packages/api` ×1 — still failing; `make lint` ×1"
    assert _fit_block("failed", said, 66) == "Failed: the build of … — still failing; +1 more"


def test_a_clipped_failure_keeps_its_state_and_never_reads_as_still_failing():
    """A failure clipped to fit kept its command and lost its end: ``(… — Assertion with =~
    failed; +4 more`` read as still failing while the same summary said the suite passed. The
    informative line is cut instead, its bracket closed; an entry that passed later says so or
    is not shown (one still failing may lose its state for the room: it reads as what it is)."""
    from memcli.compaction.offline import _fit_block

    line = ("Failed: `pytest -q tests/notify/test_store_27.py` ×3 (FAILED tests/notify/test_store_27.py::"
            "test_store_27_roundtrip - NotifyStore27Error) — passed later; `make lint` ×1 — still failing")
    assert _fit_block("failed", line, 90) == "Failed: `pytest -q tests/notify/test_store_27.py` ×3 … — passed later; +1 more"
    assert _fit_block("failed", line, 120) == (
        "Failed: `pytest -q tests/notify/test_store_27.py` ×3 (FAILED …) — passed later; +1 more")
    assert _fit_block("failed", line, 70) == ""
    fixed = "Failed: `git push` ×1 (error: failed to push some refs to origin) — fixed later (a later `git push origin main` passed)"
    assert _fit_block("failed", fixed, 72) == "Failed: `git push` ×1 (error: failed to …) — fixed later"


def test_a_failure_line_with_a_lone_bracket_stays_one_entry():
    """ExUnit numbers its failures ``1) test …``: the lone ``)`` closed the entry's bracket, so a
    reader of the line (a squeeze, a rollup) split one failure into five and counted "+4 more".
    The failures line balances each informative line: ``(1) test …``; a line clipped inside
    ``foo(a, …`` gets its closer, a lone backtick its pair."""
    from memcli.compaction.offline import _balanced, _entries, _Fixes, failures_line

    label = "`mix test test/review_test.exs`"
    errors = ["Exit code 2: 1) test mount handles a bad id (ReviewTest) — ** (RuntimeError) no lazy_html.",
              "Exit code 2: 1) test mount renders annotations (ReviewTest) — Assertion with =~ failed"]
    line = failures_line({label: 2, "`git push`": 1}, {label: errors, "`git push`": ["fatal: no upstream"]},
                         {"mix test test/review_test.exs": [True, False, "x", []], "git push": [False, True, "x", []]},
                         _Fixes({}))
    entries, more = _entries(line[len("Failed: "):], "; ")
    assert (len(entries), more) == (2, 0)
    assert entries[1].startswith("`mix test test/review_test.exs` ×2 (Exit code 2: (1) test mount renders annotations")
    assert _balanced("TypeError: foo(a, …") == "TypeError: foo(a, …)"
    assert _balanced("looking for matching `") == "looking for matching ``"
    assert _balanced("a] b) c (d)") == "[a] (b) c (d)"


def test_a_clipped_note_keeps_its_closing_quote():
    from memcli.compaction.offline import _fit_block

    notes = ('Latest notes: "Tests pass." → "compute_tax now rounds with quantize_cents. Next: the discount cap in '
             'apply_discount, then the push."')
    assert _fit_block("notes", notes, 80) == 'Latest notes: "compute_tax now rounds with quantize_cents. …" → +1 more'


def test_a_clipped_subagent_line_keeps_its_conclusion_and_its_error():
    """A subagent's line too long for its room was cut at 200 characters from its start: its
    task and command stayed, what it found was lost. Each part is clipped to its share now."""
    from memcli.compaction.offline import _fit_block

    block = ("Subagents:\n- agent b22 (turn_0001) · task \"Investigate why tests/test_sync.py::test_retry_backoff is "
             "flaky. Do not change code, report the cause.\" · 1 failed (last: `cd /home/me/shop && pytest "
             "tests/test_sync.py -q -p no:randomly`: Exit code 1 FAILED tests/test_sync.py::test_retry_backoff - "
             "TimeoutError: retry took 0.31s > 0.25s) · concluded: \"test_retry_backoff is flaky because it sleeps "
             "0.1s and asserts wall-clock; the cause is time.sleep in RetryPolicy.wait. Not fixed.\"")
    fitted = _fit_block("subagents", block, 260)
    line = fitted.split("\n")[1]
    assert line.startswith("- agent b22 (turn_0001) · task \"Investigate")
    assert "· 1 failed (last: FAILED tests/test_sync.py::test_retry_backoff" in line
    assert '· concluded: "test_retry_backoff is flaky because it sleeps' in line and line.endswith('"')
    assert 200 < len(fitted) <= 260   # (the room it has: it was cut at 200 whatever the room)



def test_parallel_subagents_share_the_room_of_their_block_each_on_its_line():
    """Five subagents a main agent ran at once, their block squeezed: the newest kept its
    600-character task and its conclusion whole, the two before it were left their first word
    ("task \"Create …\""), the oldest two were only counted. Each gets an equal share now (a
    short line its own length); only when even MIN_SUBAGENT_CHARS each is too much are the
    oldest counted."""
    from memcli.compaction.offline import MIN_SUBAGENT_CHARS, _fit_block

    def agent(n: int, extra: str = "") -> str:
        return (f'- agent a{n} (turn_0001) · task "Create the part {n} of the TODO app: its components, its '
                f'hook and its tests{extra}" · changed: src/part_{n}.tsx, +3 more · 1 failed (last: `npm run build`: '
                f'TypeError: part{n} is not a function) · concluded: "Part {n} is done; the build still fails on '
                f'part{n}, which the next step fixes."')
    lines = [agent(1), agent(2), agent(3), agent(4), agent(5, ". " + "Keep the styles as they are. " * 15)]
    block = "\n".join(["Subagents:", *lines])
    fitted = _fit_block("subagents", block, 1500).split("\n")
    assert len("\n".join(fitted)) <= 1500 and fitted[0] == "Subagents:"
    assert [line.split(" · ")[0] for line in fitted[1:]] == [f"- agent a{n} (turn_0001)" for n in range(1, 6)]
    assert all("failed (last: `npm run build`: TypeError" in line for line in fitted[1:]), fitted
    assert all('task "Create the part' in line for line in fitted[1:])
    # a clipped line's files changed go first: the files line names them (they left the task a word)
    assert not any("changed:" in line for line in fitted[1:])
    assert max(map(len, fitted[1:])) - min(map(len, fitted[1:])) < 40   # (about equal shares)
    small = _fit_block("subagents", block, 3 * (MIN_SUBAGENT_CHARS + 1) + 42).split("\n")
    assert small[1] == "(+2 earlier)" and [line.split(" · ")[0] for line in small[2:]] == \
        [f"- agent a{n} (turn_0001)" for n in (3, 4, 5)]
    assert _fit_block("subagents", block, len(block) + 1) == block

def test_a_url_a_command_line_shows_before_a_semicolon_is_not_listed_again():
    from memcli.compaction.offline import _urls_once

    summary = ("Commands (latest outcome): `gh pr create --fill`: https://github.com/me/shop/pull/42; `pytest`: 3 passed\n"
               "URLs: https://github.com/me/shop/pull/42, https://github.com/me/shop/pull/4")
    assert _urls_once(summary).split("\n")[1] == "URLs: https://github.com/me/shop/pull/4"


REQUEST = ("Move every module's timeout from env vars to settings, starting with src/billing/router_0.py, and keep "
           "the public names as they are.")


def _ported_modules() -> list:
    events = [{"trace_type": "user", "content": REQUEST}]
    for i in range(20, 30):
        events += _call(2 * i + 1, "", tool="apply_patch", result="ok",
                        args={"input": f"*** Begin Patch\n*** Update File: src/mod_{i}.py\n@@\n-a\n+b\n*** End Patch"})
        events += _call(2 * i + 2, f"pytest -q tests/test_mod_{i}.py",
                        error=f"FAILED tests/test_mod_{i}.py::test_roundtrip - Mod{i}Error" if i == 27 else None,
                        result=None if i == 27 else "9 passed")
    events += _call(99, "", tool="update_plan", result="Plan updated", args={"plan": [
        {"step": "Port Mod28Client (src/mod_28.py)", "status": "completed"},
        {"step": "Port Mod29Client (src/mod_29.py)", "status": "in_progress"},
        {"step": "Port Mod30Client (src/mod_30.py)", "status": "pending"}]})
    return [Turn("turn_0001", _traces("turn_0001", events))]


def test_a_tiny_summary_keeps_the_request_the_plan_and_the_open_failure():
    """260 tokens for a window of ten ported modules: the request (the first ask), the plan's
    next items and the failure still open all stay (a version that set the work ahead aside
    before the asks lost the request)."""
    text = OfflineSummarizer().summarize(_ported_modules(), MemoryContext(summary_tokens=260)).episodic_summary
    assert f'- turn_0001 · user: "{REQUEST}"' in text, text
    assert "[in_progress] Port Mod29Client (src/mod_29.py); [pending] Port Mod30Client (src/mod_30.py)" in text, text
    assert "tests/test_mod_27.py::test_roundtrip - Mod27Error" in text, text


def _tickets(failing: bool = False) -> list:
    """120 turns of long asks with few names; the last one runs a filtered test twice, failing."""
    turns = []
    for t in range(1, 121):
        tid = f"turn_{t:04d}"
        events = [{"trace_type": "user", "content": f"Ticket T-{t}: "
                   + "please look at the billing export and explain the totals in detail " * 8}]
        if failing and t == 120:
            for n, error in ((1, "FAILED tests/test_api.py::test_export - KeyError: 'id'"),
                             (2, "FAILED tests/test_api.py::test_export - AssertionError: 3 != 4")):
                events += _call(n, "cd backend && pytest -q tests/test_api.py -k export", error=error)
        events.append({"trace_type": "assistant", "content": f"Done with T-{t}."})
        turns.append(Turn(tid, _traces(tid, events)))
    return turns


def test_a_failure_is_said_briefly_only_when_its_whole_entry_does_not_fit():
    """With room (3,000 tokens), the failure keeps its command (``cd backend``, ``-k export``) and
    its earlier reason; the brief form (the failing test's line alone) is for a line whose first
    entry does not fit whole."""
    text = OfflineSummarizer().summarize(_tickets(failing=True), MemoryContext(summary_tokens=3000)).episodic_summary
    failed = next(line for line in text.split("\n") if line.startswith("Failed: "))
    assert failed == ("Failed: `cd backend && pytest -q tests/test_api.py -k export` ×2 (FAILED tests/test_api.py::"
                      "test_export - AssertionError: 3 != 4; before: FAILED tests/test_api.py::test_export - KeyError: "
                      "'id') — still failing"), failed


def test_a_window_with_few_names_does_not_hold_room_for_a_long_vocabulary():
    """The vocabulary's share is at most its line's full length: 120 turns of long asks with few
    names fill their 3,000 tokens with asks (15% of the room used to stay empty)."""
    from memcli.compaction.offline import _counter

    text = OfflineSummarizer().summarize(_tickets(), MemoryContext(summary_tokens=3000)).episodic_summary
    assert _counter().count(text) >= 0.9 * 3000, (_counter().count(text), len(text))


def test_a_brief_failure_is_a_failing_test_s_line_that_names_the_command_s_argument_whole():
    from memcli.compaction.offline import _entries, _Fixes, failures_line

    def brief(command, error):
        label = f"`{command}`"
        return failures_line({label: 1}, {label: [error]}, {command: [False, True, "x", []]}, _Fixes({}), brief=True)

    assert brief("pytest -q tests/a.py", "FAILED tests/a.py::test_t - E") == "Failed: FAILED tests/a.py::test_t - E ×1 — still failing"
    assert brief("go test ./pkg/x", "--- FAIL: TestX (0.00s)").startswith("Failed: `go test ./pkg/x` ×1")   # (no path named)
    # another file whose name ends like the argument, and lines that are no failing test, keep the command
    assert brief("node build.js", "FAILED open 'dist/prebuild.js'").startswith("Failed: `node build.js` ×1")
    assert brief("git add src/x.py", "fatal: pathspec 'src/x.py' did not match any files").startswith("Failed: `git add")
    # a line with "; " said alone would read as two entries of the list
    line = brief("pytest -q tests/a.py", "FAILED tests/a.py::test_t - ValueError: bad header; expected utf-8")
    assert line.startswith("Failed: `pytest -q tests/a.py` ×1 (") and len(_entries(line[8:], "; ")[0]) == 1


def test_a_list_line_keeps_a_first_entry_clipped_to_a_path_or_url():
    from memcli.compaction.offline import _fit_block

    line = "URLs: https://github.com/acme/shop/pull/1234, https://help.acme.example/returns/policy-and-refunds-for-orders"
    assert _fit_block("urls", line, 80) == "URLs: https://github.com/acme/shop/pull/1234 …"


FULL_FAILURE = ("Failed: `cd backend && pytest -q tests/test_api.py -k export` ×2 (FAILED tests/test_api.py::test_export - "
                "AssertionError: 3 != 4; before: FAILED tests/test_api.py::test_export - KeyError: 'id') — still failing")


def test_a_failure_said_briefly_at_first_is_said_in_full_once_the_room_is_there():
    """The brief form is chosen against the failures' first share; when what is left afterwards
    holds the whole entry, it is said in full (it stayed brief, with 800 characters unused)."""
    from memcli.compaction.offline import _squeeze

    brief = "Failed: FAILED tests/test_api.py::test_export - AssertionError: 3 != 4 ×2 — still failing"
    body = [('- turn_0001 · user: "Fix the export."',) * 2 + (("turn_0001", "turn_0001", 1),)]
    out = _squeeze("1 turn: 3 tool calls, 2 failed.", body,
                   [("files", "Files modified: backend/api.py"), ("failed", FULL_FAILURE)], 1000, None,
                   {"failed": brief}, 300)
    assert len(out) <= 1000 and FULL_FAILURE in out, out


def test_the_vocabulary_s_share_is_what_its_line_can_still_say():
    """A window whose few names the summary shows already holds no room for the vocabulary line:
    the failure keeps its state (it was clipped off, ~240 characters left unused)."""
    first = [{"trace_type": "user", "content": "Ticket T-62-1: breaks in then export api export export please"}]
    first += _call(1, "", tool="update_plan", result="Plan updated", args={"plan": [
        {"step": f"Port Mod{i}Client (src/mod_{i}.py)", "status": status}
        for i, status in enumerate(["in_progress", "pending", "completed", "in_progress", "pending"])]})
    second = [{"trace_type": "user", "content": "Ticket T-62-2: and at detail stable breaks please fix in"}]
    second += _call(2, "python -m pytest tests/test_mod_0.py::test_case_0 -x", error="exit status 1\nFAILED "
                    "tests/test_mod_0.py::test_case_0 - ValueError: bad header; expected utf-8 in Header0Parser"
                    + " with a long explanation of why" * 4)
    turns = [Turn("turn_0001", _traces("turn_0001", first)), Turn("turn_0002", _traces("turn_0002", second))]
    text = OfflineSummarizer().summarize(turns, MemoryContext(summary_tokens=300)).episodic_summary
    failed = next(line for line in text.split("\n") if line.startswith("Failed: "))
    assert failed.endswith("— still failing"), text


@pytest.mark.parametrize("said", ["", "exit code 1\n", "Exit code 1\n", "Exit code: 1\n", "Process exited with code 1\n"])
def test_a_failing_test_after_its_exit_line_is_said_briefly_whatever_the_harness_s_spelling(said):
    """Claude Code's results begin ``Exit code 1``, Codex's ``exit code 1``, others ``Process exited
    with code 1``: each is read past, so a tiny summary can say the open failure by the test's line
    (with ``Exit code 1`` the failure did not fit at all)."""
    events = _ported_modules()[0].traces
    events = [t if t.tool_error is None else dataclasses.replace(t, tool_error=said + t.tool_error) for t in events]
    text = OfflineSummarizer().summarize([Turn("turn_0001", events)], MemoryContext(summary_tokens=250)).episodic_summary
    failed = next((line for line in text.split("\n") if line.startswith("Failed: ")), "")
    assert "tests/test_mod_27.py::test_roundtrip - Mod27Error" in failed and failed.endswith("— still failing"), text


def test_a_line_with_unbalanced_brackets_or_backticks_keeps_its_command():
    from memcli.compaction.offline import _Fixes, failures_line

    for error in ("FAILED tests/a.py::test_t - AssertionError: (3 != 4", "FAILED tests/a.py::test_t - `x is unset"):
        line = failures_line({"`pytest -q tests/a.py`": 1}, {"`pytest -q tests/a.py`": [error]},
                             {"pytest -q tests/a.py": [False, True, "x", []]}, _Fixes({}), brief=True)
        assert line.startswith("Failed: `pytest -q tests/a.py` ×1 ("), line


# --- long conversations: condensed to their most telling sentences, both sides of the talk ---

def test_sentences_split_at_sentence_ends_and_lines_but_never_inside_a_quoted_span():
    from memcli.compaction.offline import sentences
    assert sentences("Hi there! It broke.\nSee app/x.py. Then `a. b` ran.") == \
        ["Hi there!", "It broke.", "See app/x.py.", "Then `a. b` ran."]
    assert sentences('He said "stop. now" twice. Ok.') == ['He said "stop. now" twice.', "Ok."]
    assert sentences("  ") == []


def test_condense_message_keeps_the_rare_sentences_in_order_and_marks_the_gaps():
    from memcli.compaction.offline import Rarity, condense_message
    filler = ["That sounds great!", "Tell me more about it.", "How was your week?"]
    texts = [f"{a} {b}" for a in filler for b in filler] * 5 + ["We adopted a puppy named Pepper58!"]
    rarity = Rarity(texts)
    message = "That sounds great! We adopted a puppy named Pepper58! Tell me more about it."
    assert condense_message(message, 200, rarity) == message                # it fits: whole
    assert condense_message(message, 40, rarity) == "… We adopted a puppy named Pepper58! …"
    # a floor drops the least telling sentences even when the message fits; the most telling stays
    assert condense_message(message, 200, rarity, floor=1e9) == "… We adopted a puppy named Pepper58! …"
    # … unless the message need not stay (a chat reply): then nothing
    assert condense_message("That sounds great! How was your week?", 200, rarity, floor=1e9, keep=False) == ""
    # no rarity, or one sentence: the head, clipped at a word boundary
    assert condense_message(message, 40) == "That sounds great! We adopted a puppy named …"
    assert condense_message("word " * 30, 40, rarity) == ("word " * 9).strip() + " …"


def _race_talk():
    """40 messages: the same small talk in every one, sayings of several lengths (many ties), and
    one race time each; their :class:`Rarity`, and what a floor saves of them shown in 2,000
    characters each: (messages, rarity, saving)."""
    from memcli.compaction.offline import Rarity, condense_message
    talk = ["Haha yes, totally agree.", "Ok.", "Sounds good, thanks a lot for that!", "Right."]
    messages = [f"{talk[i % 4]} I ran the race in {1000 + i} seconds. {talk[(i + 1) % 4]}" for i in range(40)]
    rarity = Rarity(messages)
    whole = sum(len(m) for m in messages)

    def saving(floor):
        return whole - sum(len(condense_message(m, 2000, rarity, floor)) for m in messages)

    return messages, rarity, saving


def test_sentence_floor_saves_what_is_asked_from_the_least_telling_sentences_first():
    from memcli.compaction.offline import ALL_GO, condense_message, sentence_floor
    messages, rarity, saving = _race_talk()
    whole = sum(len(m) for m in messages)
    for excess in (30, 100, 400):
        floor = sentence_floor([(m, True, 2000, 0) for m in messages], rarity, excess)
        shown = [condense_message(m, 2000, rarity, floor) for m in messages]
        assert all(f"in {1000 + i} seconds." in s for i, s in enumerate(shown))   # the telling ones all stay
        assert excess <= saving(floor) < excess + 40   # enough, and no more than one sentence beyond it
        # the smallest such floor: the next lower one saves less (ties are broken, not dropped together)
        lower = max(d for m in messages for d in rarity.analysed(m)[1] if d < floor)
        assert saving(lower) < excess
    assert sentence_floor([(m, True, 2000, 0) for m in messages], rarity, whole) == ALL_GO   # cannot: said so
    # shown in at most 60 characters, a message saves only what it shows
    floor = sentence_floor([(m, True, 60, 0) for m in messages], rarity, 200)
    assert sum(len(condense_message(m, 60, rarity)) - len(condense_message(m, 60, rarity, floor))
               for m in messages) >= 200


def test_sentence_floor_lowers_its_estimate_to_the_lowest_floor_the_whole_summary_fits_at():
    """The estimate takes each message alone; the summary may save more (a folded run of turns):
    given ``fits``, the floor goes down to the lowest at which the summary still fits."""
    from memcli.compaction.offline import sentence_floor
    messages, rarity, saving = _race_talk()
    estimate = sentence_floor([(m, True, 2000, 0) for m in messages], rarity, 400)
    tried = []

    def fits(floor):   # the summary saves 150 characters more than the messages alone
        tried.append(floor)
        return saving(floor) + 150 >= 400

    floor = sentence_floor([(m, True, 2000, 0) for m in messages], rarity, 400, fits)
    assert floor < estimate and fits(floor) and saving(floor) + 150 < 400 + 40
    assert len(tried) <= 1 + 8 + 1


def test_sentences_of_chinese_and_a_stray_quote():
    from memcli.compaction.offline import QUOTED_SPAN_CHARS, sentences
    assert sentences("我们去了东京。然后吃了寿司！你呢？") == ["我们去了东京。", "然后吃了寿司！", "你呢？"]
    # a quote that closes stays one sentence, however many it holds (within QUOTED_SPAN_CHARS)
    quoted = 'Write it like this: "fix(api): short title. ' + "Explain why. " * 20 + 'Sign off." Then push.'
    assert sentences(quoted) == [quoted]
    # an inch mark opens no span that swallows the rest of a long message
    parts = sentences('The screen is 6" wide. ' + "Then it broke again. " * 100)
    assert len(parts[0]) <= QUOTED_SPAN_CHARS + 30 and len(parts) > 50


def test_replies_of_talk_never_cut_asks_that_fit():
    """A conversation turn's long reply is said only in the room the asks leave: the asks of the
    other turns, which fit, stay whole (a reviewer's case: replies had made the floor cut asks)."""
    turns = []
    for t in range(150):
        turn_id = f"turn_{t + 1:04d}"
        if t % 6 == 5:
            events = [{"trace_type": "user", "content": f"Why does module{t} use a queue here? Explain it."},
                      {"trace_type": "assistant", "content": " ".join(
                          f"The queue{t}_{k} decouples producer and consumer in stage {k}." for k in range(25))}]
        else:
            events = [{"trace_type": "user", "content": f"Please fix the bug in app/mod{t}.py. It crashes on empty "
                                                        f"input. Also keep the API of handler{t} stable."},
                      *_call(t, f"pytest -q tests/test_mod{t}.py", result="ok"),
                      {"trace_type": "assistant", "content": f"Fixed app/mod{t}.py."}]
        turns.append(Turn(turn_id, _traces(turn_id, events)))
    text = OfflineSummarizer().summarize(turns).episodic_summary
    for t in range(150):
        if t % 6 != 5:
            assert (f"Please fix the bug in app/mod{t}.py. It crashes on empty input. Also keep the API of "
                    f"handler{t} stable.") in text, t


def _chat_turns(turns: int = 240, seed: int = 7, per_day: int = 0):
    """A long talk of small talk, in which each side states facts once: (turns, {fact: speaker});
    ``per_day`` turns a day (0: all on one day)."""
    import random
    rnd = random.Random(seed)
    filler = ["That sounds great!", "Wow, I love that.", "How was your week?", "Tell me more about it.",
              "I've been pretty busy lately with work.", "Haha yes, totally agree.", "That must have been hard.",
              "I'm so happy for you!", "What are you up to this weekend?", "Take care, talk soon!"]
    facts: dict[str, str] = {}
    out = []
    for t in range(turns):
        turn_id = f"turn_{t + 1:04d}"
        events = []
        for speaker in ("user", "assistant"):
            text = " ".join(rnd.sample(filler, 2))
            if rnd.random() < 0.3:
                value = f"{rnd.choice(['Oslo', 'Lima', 'Kyoto', 'Denver'])}{len(facts)}"
                facts[value] = speaker
                text = f"{rnd.choice(filler)} Last week I finally visited {value} with my family. {rnd.choice(filler)}"
            events.append({"trace_type": speaker, "content": text})
        traces = _traces(turn_id, events)
        if per_day:
            traces = [dataclasses.replace(tr, ts=tr.ts + (t // per_day) * 86400 + t * 10) for tr in traces]
        out.append(Turn(turn_id, traces))
    return out, facts


def _turns_covered(text: str) -> list[int]:
    """The turn numbers a summary's turn lines stand for: a turn's line its own, a run of turns on
    one line (joined conversation, or folded small talk: ``- turn_0011–turn_0014 · …``) each of its
    turns; the turns a note says were left out are not in it."""
    out = []
    for first, last in re.findall(r"^- turn_(\d+)(?:–turn_(\d+))? ", text, re.M):
        out.extend(range(int(first), int(last or first) + 1))
    return out


def test_a_long_conversation_keeps_the_facts_of_both_sides_within_its_budget():
    """Before, each ask kept its head and the replies went: a fact said late in a message, or by
    the assistant, was lost. Now the small talk goes first, wherever it is."""
    turns, facts = _chat_turns()
    text = OfflineSummarizer().summarize(turns, MemoryContext(summary_tokens=6000)).episodic_summary
    from memcli.tokens import TokenCounter
    assert TokenCounter().count(text) <= 6000
    kept = {speaker: sum(value in text for value, s in facts.items() if s == speaker) for speaker in ("user", "assistant")}
    total = {speaker: sum(s == speaker for s in facts.values()) for speaker in ("user", "assistant")}
    assert total["user"] > 20 and total["assistant"] > 20
    assert kept["user"] == total["user"] and kept["assistant"] >= 0.7 * total["assistant"], (kept, total)
    # every turn still listed, by its ask, on its line or on the line of its run of turns
    assert sorted(_turns_covered(text)) == list(range(1, 241))


def _looked_up(turns: list) -> list:
    """``turns`` with every third one answered after a lookup (a web search call and its result):
    a conversation with an assistant that uses a tool now and then."""
    out = []
    for n, turn in enumerate(turns):
        traces = turn.traces
        if n % 3 == 2:
            call = _traces(turn.turn_id, _call(n, "", tool="web_search", result="3 results", args={"query": "weather"}))
            traces = [traces[0], *call, *traces[1:]]
            traces = [dataclasses.replace(tr, seq=k + 1, ts=traces[0].ts + k) for k, tr in enumerate(traces)]
        out.append(Turn(turn.turn_id, traces))
    return out


def test_a_window_mostly_of_conversation_keeps_the_replies_of_turns_that_looked_something_up():
    """A third of the turns of a talk call a tool before answering: their replies (the answers)
    were left off their asks-only lines, as a coding turn's report is. In a window at least half
    of conversation its every turn is conversation: they are ranked with the rest."""
    turns, facts = _chat_turns(turns=240, seed=5)
    turns = _looked_up(turns)
    text = OfflineSummarizer().summarize(turns, MemoryContext(summary_tokens=7000)).episodic_summary
    from memcli.tokens import TokenCounter
    assert TokenCounter().count(text) <= 7000
    tooled = {v for v, s in facts.items() if s == "assistant" and any(
        v in t.traces[-1].content for t in turns[2::3])}
    assert len(tooled) > 10
    assert sum(v in text for v in tooled) >= 0.9 * len(tooled), (sum(v in text for v in tooled), len(tooled))
    assert all(v in text for v, s in facts.items() if s == "user")


def test_thank_you_turns_do_not_make_a_coding_window_a_conversation():
    """Every turn of work followed by "Thanks!": half the turns call no tool, but they say
    nothing (asks under MIN_ASK_CHARS), so the window is no conversation — the reports stay off
    the asks-only lines and no ask of work is condensed (a reviewer's case: 7 reports listed,
    59 asks "…")."""
    turns = []
    for t in range(120):
        turn_id = f"turn_{t + 1:04d}"
        if t % 2 == 0:
            events = [{"trace_type": "user", "content": f"Fix the failing total in tests/test_orders_{t}.py and keep "
                                                        "the API stable."},
                      *_call(t, f"pytest -q tests/test_orders_{t}.py", result="ok"),
                      {"trace_type": "assistant", "content": f"Done: app/orders_{t}.py rounds after the discount. " * 30}]
        else:
            events = [{"trace_type": "user", "content": "Thanks!"}, {"trace_type": "assistant", "content": "You're welcome."}]
        turns.append(Turn(turn_id, _traces(turn_id, events)))
    text = OfflineSummarizer().summarize(turns, MemoryContext(summary_tokens=8000)).episodic_summary
    assert not [line for line in text.split("\n") if '· assistant: "Done' in line and "tools:" not in line]
    assert all(f"tests/test_orders_{t}.py and keep the API stable." in text for t in range(0, 120, 2))
    assert 'user: "…"' not in text


def test_a_window_over_several_days_says_each_lines_day_where_it_changes():
    """A conversation over weeks is asked "when": the day a turn was said is on its line when it
    is not the day of the line before — after turns left out too. One day: no date on any line."""
    import re

    from memcli.models import RawTrace

    def turns(days_apart: float) -> list:
        out = []
        for t in range(120):
            turn_id = f"turn_{t + 1:04d}"
            ts = 1772442000.0 + (t // 10) * 86400 * days_apart + t
            out.append(Turn(turn_id, [
                RawTrace(f"{turn_id}-u", ts, turn_id, 1, "user", f"I went to Oslo{t} with Ana and her brother Tom. It rained all day.", "x"),
                RawTrace(f"{turn_id}-a", ts + 1, turn_id, 2, "assistant", f"Nice, I saw Lima{t} today.", "x")]))
        return out

    text = OfflineSummarizer().summarize(turns(3), MemoryContext(summary_tokens=1500)).episodic_summary
    lines = [line for line in text.splitlines() if line.startswith("- turn_")]
    dated = {m[1]: m[2] for m in (re.match(r"- (turn_\d+)(?:–turn_\d+)? \((\d{4}-\d\d-\d\d)\) ·", line)
                                  for line in lines) if m}
    assert "turn_0001" in dated and len(dated) >= 5
    # each line's first and last turn (a run of turns on one line is said on one day, but for a
    # run that says nothing: it may span days, and says none)
    previous = None   # the day the lines above said last
    for line in lines:   # a day changes from the one said last: the line says its day
        first, last = re.match(r"- turn_(\d+)(?:–turn_(\d+))? ", line).groups()
        day, last_day = (int(first) - 1) // 10, (int(last or first) - 1) // 10
        if day != last_day:
            assert line.endswith(FOLDED_TURNS) and f"turn_{first}" not in dated, line
            continue
        if previous is None or previous != day:
            assert f"turn_{first}" in dated, first
        else:
            assert f"turn_{first}" not in dated, first
        previous = day
    one_day = OfflineSummarizer().summarize(turns(0), MemoryContext(summary_tokens=1500)).episodic_summary
    assert not re.search(r"^- turn_\d+ \(", one_day, re.M)


def test_a_rollup_keeps_a_conversation_turns_reply_while_it_fits():
    summary = "\n".join([
        "3 turns (turn_0001–turn_0003), 2026-03-02 08:41 → 09:30 UTC: 9 traces, 1 tool calls, 0 failed.",
        '- turn_0001 · user: "How was the trip?" · assistant: "We visited Kyoto7 and the Fushimi shrine."',
        '- turn_0002 · user: "Check the logs." · tools: Bash ×1 · assistant: "The logs are clean, nothing to fix."',
        "Vocabulary: Kyoto7, fushimi_shrine, trip_notes, travel_log, photo_album_2026, itinerary_v2"])
    roomy = condense(summary, len(summary) - 40)   # room for the reply of the conversation turn
    assert 'assistant: "We visited Kyoto7 and the Fushimi shrine."' in roomy
    assert "The logs are clean" not in roomy       # a turn with tools shrinks to its asks
    tight = condense(summary, 250)                 # no room: the conversation turn shrinks too
    assert "We visited" not in tight and '- turn_0001 · user: "How was the trip?"' in tight


def test_a_rollup_leaves_out_the_asks_condensed_away_on_a_run_of_turns():
    """A run of turns said on one line (a squeezed conversation), rolled up: an ask whose every
    sentence goes is left out of the run, as when the run was made — not ``user: "…"`` once
    for each (six rounds of a chat then kept 81 of its 185 facts, 97 now)."""
    summary = "\n".join([
        "9 turns (turn_0001–turn_0009), 2026-03-02 08:41 → 09:30 UTC: 18 traces, 0 tool calls, 0 failed.",
        '- turn_0001 · user: "How was your week? It was fine." · assistant: "Tell me more about it."',
        '- turn_0002–turn_0008 · user: "That sounds great! Wow, I love that." · assistant: "Last week I visited '
        'Kyoto7 with my family. That sounds great!" · user: "Wow, I love that. How was your week?" · user: "That '
        'sounds great! Tell me more about it." · assistant: "We adopted a puppy and named him Milo3. Wow, I love that."',
        '- turn_0009 · user: "Take care, talk soon!" · assistant: "Talk soon!"'])
    out = condense(summary, len(summary) - 120)
    assert len(out) <= len(summary) - 120
    run = next(line for line in out.split("\n") if line.startswith("- turn_0002–turn_0008"))
    assert "Kyoto7" in run and "Milo3" in run and 'user: "…"' not in run, run


def test_a_rollup_of_talk_drops_the_least_telling_sentences_of_asks_and_replies_first():
    """A rolled-up conversation summary over its share lost every reply (the other half of what
    was said) before any small talk went; now the least telling sentences go first, wherever they
    are, and the turns left saying nothing fold into counted runs."""
    import random
    import re

    rnd = random.Random(4)
    filler = ["That sounds great!", "Wow, I love that.", "How was your week?", "Tell me more about it.",
              "Haha yes, totally agree.", "Take care, talk soon!"]
    lines = ["60 turns (turn_0001–turn_0060), 2026-03-02 09:00 → 10:00 UTC: 120 traces, 0 tool calls, 0 failed."]
    towns, pups = [], []
    for t in range(1, 61):
        ask, reply = " ".join(rnd.sample(filler, 2)), " ".join(rnd.sample(filler, 2))
        if t % 3 == 0:
            towns.append(f"Town{t}")
            ask = f"{rnd.choice(filler)} Last week I visited Town{t} with my family. {rnd.choice(filler)}"
        if t % 4 == 0:
            pups.append(f"Pup{t}")
            reply = f"{rnd.choice(filler)} We named the puppy Pup{t}! {rnd.choice(filler)}"
        lines.append(f'- turn_{t:04d} · user: "{ask}" · assistant: "{reply}"')
    summary = "\n".join(lines)
    out = condense(summary, len(summary) // 2)
    assert len(out) <= len(summary) // 2
    assert all(town in out for town in towns), [t for t in towns if t not in out]
    assert sum(pup in out for pup in pups) >= 0.8 * len(pups), [p for p in pups if p not in out]
    counted = 0
    for line in out.split("\n")[1:]:
        run = re.match(r"^- (turn_\d+)–(turn_\d+) · (\d+) turns, their short asks condensed away$", line)
        counted += int(run[3]) if run else 1
    assert counted == 60


def test_a_rollup_of_talk_drops_no_more_than_it_must_and_leaves_work_turns_as_they_were():
    """A reviewer's two cases: a talk 5 characters over its budget lost a sentence of every
    message (each was given exactly its own length, which whole sentences never fit); a coding
    summary with no reply had its asks condensed before its vocabulary lost an entry. Now one
    sentence goes, and a summary with no reply kept goes the old way: the lists first."""
    lines = ["6 turns (turn_0001–turn_0006), 2026-03-02 09:00 → 10:00 UTC: 12 traces, 0 tool calls, 0 failed."]
    for t in range(1, 7):
        lines.append(f'- turn_{t:04d} · user: "My cat Tom{t} is sick. The vet at Elm{t} Street said it is the flu." '
                     f'· assistant: "Sorry to hear that. Flu{t} in cats usually clears in a week."')
    summary = "\n".join(lines)
    out = condense(summary, len(summary) - 5)
    assert len(summary) - 60 <= len(out) <= len(summary) - 5
    assert all(f"Elm{t} Street" in out and f"Flu{t}" in out for t in range(1, 7))
    lines = ["5 turns (turn_0001–turn_0005), 2026-03-02 09:00 → 10:00 UTC: 40 traces, 30 tool calls, 0 failed."]
    asks = [f"Please fix the parser in src/mod{t}.py. It crashes on empty input. Thanks a lot for that!"
            for t in range(1, 6)]
    lines += [f'- turn_{t:04d} · user: "{ask}" · tools: Edit ×3, Bash ×2' for t, ask in enumerate(asks, 1)]
    lines.append("Vocabulary: " + ", ".join(f"name_{i}_identifier" for i in range(20)))
    summary = "\n".join(lines)
    out = condense(summary, len(summary) - 200)
    assert all(ask in out for ask in asks) and "+" in out.split("Vocabulary: ")[1], out


def test_turns_of_small_talk_only_fold_into_one_line_that_counts_them():
    """Under a tight budget a run of turns whose asks were all small talk (condensed away) takes
    one line, not one each; every turn is still listed or counted."""
    import re

    turns, facts = _chat_turns(turns=240, seed=3)
    text = OfflineSummarizer().summarize(turns, MemoryContext(summary_tokens=2000)).episodic_summary
    folds = re.findall(r"^- (turn_\d+)–(turn_\d+) · (\d+) turns, their short asks condensed away$", text, re.M)
    assert all(int(n) == int(b[5:]) - int(a[5:]) + 1 >= 2 for a, b, n in folds)
    # no turn of small talk on a line of its own: folded, or joined with the turns of conversation around it
    assert not re.search(r'^- turn_\d+ (?:\([\d-]+\) )?· user: "…"$', text, re.M)
    assert re.search(r"^- turn_\d+–turn_\d+ ", text, re.M)
    left = re.search(r"^… (\d+) turns \((turn_\d+)–(turn_\d+)\)", text, re.M)
    covered = _turns_covered(text)
    assert len(covered) == len(set(covered))
    assert len(covered) + (int(left[1]) if left else 0) == 240
    assert sum(value in text for value in facts) > len(facts) // 3


def test_a_squeezed_conversation_says_runs_of_turns_on_one_line():
    """A conversation squeezed into its budget spent a line a turn — its id, the labels, a turn of
    small talk's ``user: "…"`` — and left a run of middle turns out: 84 of 146 facts in 3,000
    tokens. Runs of its turns now share a line (same day, at most JOINED_LINE_CHARS), each saying
    what was said: 141 of them, both sides, every turn on a line."""
    from memcli.tokens import TokenCounter

    turns, facts = _chat_turns(turns=240, seed=3)
    text = OfflineSummarizer().summarize(turns, MemoryContext(summary_tokens=3000)).episodic_summary
    assert TokenCounter().count(text) <= 3000
    kept = [value for value in facts if value in text]
    assert len(kept) >= 0.9 * len(facts), (len(kept), len(facts))
    assert {facts[v] for v in kept} == {"user", "assistant"}
    assert sorted(_turns_covered(text)) == list(range(1, 241))
    from memcli.compaction.offline import JOINED_LINE_CHARS

    runs = [line for line in text.splitlines() if re.match(r"- turn_\d+–turn_\d+ ", line)]
    assert runs and all(len(line) <= JOINED_LINE_CHARS + 200 for line in runs)
    lines = text.splitlines()
    assert re.match(r"- turn_0001 ·", lines[1]) and re.match(r"- turn_0240 ·", [ln for ln in lines if ln.startswith("- ")][-1])


_LONG_SMALL_TALK = ["It's amazing how much joy something so simple can bring to a day.",
                    "Honestly it means a lot to me to have people around who really listen.",
                    "Sometimes it's the little things that make the biggest difference, you know.",
                    "I feel like I'm learning so much about myself these days, it's wild.",
                    "My family has been so supportive through all of this, I'm grateful.",
                    "The whole thing really made me think about what matters most to me."]


def _long_small_talk_chat(turns: int = 200, seed: int = 5, replies: int = 1, names: dict | None = None):
    """A chat whose small talk is long (sentences of 60 characters and more, as people write
    them): (turns, {fact: speaker}); each side states a fact in about a third of its messages;
    the assistant answers in ``replies`` messages a turn (a speaker's messages in a row); with
    ``names`` (side -> name) each message says who speaks (``Caroline: …``)."""
    import random
    rnd = random.Random(seed)
    facts: dict[str, str] = {}
    out = []
    for t in range(turns):
        turn_id = f"turn_{t + 1:04d}"
        events = []
        for speaker in ["user"] + ["assistant"] * replies:
            said = rnd.sample(_LONG_SMALL_TALK, 2)
            if rnd.random() < 0.35:
                value = f"{rnd.choice(['Pepper', 'Milo', 'Luna', 'Bailey'])}{len(facts)}"
                facts[value] = speaker
                said.insert(1, f"We adopted a puppy and named him {value}.")
            head = f"{names[speaker]}: " if names else ""
            events.append({"trace_type": speaker, "content": head + " ".join(said)})
        out.append(Turn(turn_id, _traces(turn_id, events)))
    return out, facts


def test_a_squeezed_chat_keeps_both_sides_when_small_talk_is_long():
    """An ask of a conversation turn kept its most telling sentence whatever the floor when that
    sentence was 40 characters or more: long small talk (as people write it) was then kept in
    every ask, and the other side's facts went — 5 of the assistant's 74 kept in 3,000 tokens.
    Both sides now go by how telling each sentence is (an ask that names a path or an id still
    keeps its sentence)."""
    turns, facts = _long_small_talk_chat()
    text = OfflineSummarizer().summarize(turns, MemoryContext(summary_tokens=3000)).episodic_summary
    kept = {side: sum(v in text for v, s in facts.items() if s == side) for side in ("user", "assistant")}
    total = {side: sum(s == side for s in facts.values()) for side in ("user", "assistant")}
    assert kept["user"] >= 0.8 * total["user"] and kept["assistant"] >= 0.8 * total["assistant"], (kept, total)


def test_a_squeezed_chat_still_says_who_speaks():
    """A chat whose messages say who speaks (``Caroline: …``, as a two-person conversation is
    often imported): the name began the first sentence and went with it when that sentence did;
    then each message said began with it, a tenth of the summary (a dated chat of two named
    speakers kept 505 of 876 facts at 3,000 tokens, 639 unnamed). The summary says once which
    role each speaker is, and each quote's role says who said it."""
    names = {"user": "Caroline", "assistant": "Melanie"}
    turns, facts = _long_small_talk_chat(names=names)
    text = OfflineSummarizer().summarize(turns, MemoryContext(summary_tokens=3000)).episodic_summary
    assert text.split("\n")[1] == "Speakers: user Caroline, assistant Melanie."
    quotes = re.findall(r'(user|assistant): "([^"]*)"', text)
    said = [(role, q) for role, q in quotes if q != "…"]
    assert len(said) > 100 and not any(q.startswith(("Caroline:", "Melanie:")) for _, q in said)
    kept = [v for v in facts if v in text]
    assert len(kept) >= 0.8 * len(facts)
    assert all(any(v in q and role == facts[v] for role, q in said) for v in kept)


def test_speakers_are_said_once_only_for_two_people_each_role_one_name():
    """Who speaks is said once (and taken off the quotes) only when each role's messages nearly
    all begin with one name, the two names different: not for a label every ask begins with
    (``Task: …``), nor one role alone, nor a role whose messages are several people's."""
    from memcli.compaction.offline import speakers

    def said(label, n=10, other=None):
        return [f"{label if other is None or k % 2 else other}: we went hiking on day {k}." for k in range(n)]

    assert speakers(said("Maya"), said("Theo")) == {"user": "Maya", "assistant": "Theo"}
    assert speakers(said("Łukasz Nowak"), said("Дмитрий")) == {"user": "Łukasz Nowak", "assistant": "Дмитрий"}
    assert speakers(said("Maya")[:9] + ["we went hiking."], said("Theo")) == {"user": "Maya", "assistant": "Theo"}
    assert speakers(said("Task"), said("Theo")) == {}          # a label, not a name
    assert speakers(said("Maya"), ["Sure, on it."] * 10) == {}  # one role alone
    assert speakers(said("Maya", other="Ana"), said("Theo")) == {}   # two people in one role
    assert speakers(said("Maya"), said("Maya")) == {}
    assert speakers(said("Maya", 3), said("Theo", 3)) == {}   # too few to tell


def test_a_speakers_messages_in_a_row_are_the_turns_reply_together():
    """Two assistant messages in a row in a turn of conversation: the first was taken for a note
    (and went with the notes line), its facts lost even where everything fits. Both are the
    reply now; a turn with tool calls keeps the agent's earlier messages as notes."""
    turns, facts = _long_small_talk_chat(turns=60, replies=2)
    text = OfflineSummarizer().summarize(turns).episodic_summary
    assert [v for v in facts if v not in text] == []
    assert "Latest notes" not in text


def test_a_squeezed_chat_of_long_messages_does_not_end_saying_nothing(tmp_path):
    """1,000 turns of 12-sentence messages compacted to 3,000 tokens: about 24,000 sentence floors,
    and the floor's search (8 tries) ended before any floor that fitted, so all that may go went —
    one line said '994 turns, their short asks condensed away', no fact kept, 1,711 of 3,000
    tokens. The search now goes on while no floor below the last resort was seen to fit."""
    import random

    from memcli.api import Memory

    rnd = random.Random(3)
    words = "the a we went to park and then my sister said it was nice because weather sunny dog cat lunch".split()
    events, facts = [], []
    for t in range(1000):
        for speaker in ("user", "assistant"):
            said = [" ".join(rnd.choice(words) for _ in range(12)).capitalize() + "." for _ in range(12)]
            if rnd.random() < 0.3:
                facts.append(f"Oslo{t}")
                said.insert(5, f"We visited Oslo{t} with Ana.")
            events.append({"trace_type": speaker, "content": " ".join(said)})
    agent = Memory(tmp_path).agent("chat")
    agent.ingest(events, "native")
    result = agent.compact(target_tokens=3000)
    assert 2000 < result.tokens_after <= 3000
    kept = sum(f"{v} " in result.summary for v in facts)
    assert kept >= 30, kept


def test_an_agents_messages_before_its_first_call_stay_two_notes():
    """A turn with tool calls whose agent wrote two messages before its first call: they were
    joined (as the reply of a conversation turn is) and then kept as one note, clipped — the plan
    the second one said was lost. Each is a note of its own; only a turn with no call joins them."""
    ev = [{"trace_type": "user", "content": "Fix the failing total in tests/test_orders.py."},
          {"trace_type": "assistant", "content": "I'll start by reading the repository layout to see where orders are "
           "computed, since the total is derived in several places and I want to be sure which one the test "
           "exercises before touching anything at all in this codebase, which is large and has several modules "
           "that compute totals."},
          {"trace_type": "assistant", "content": "Plan: run pytest tests/test_orders.py first, then patch "
                                                 "OrderTotal.apply_discount in app/orders.py."},
          *_call(1, "cat app/orders.py", result="x = 1\n" * 3000),
          *_call(2, "pytest -q tests/test_orders.py", result="1 passed"),
          {"trace_type": "assistant", "content": "Done: test_orders passes."}]
    text = OfflineSummarizer().summarize([Turn("turn_0001", _traces("turn_0001", ev))],
                                         MemoryContext(summary_tokens=4000)).episodic_summary
    notes = next(line for line in text.split("\n") if line.startswith("Latest notes: "))
    assert notes.count(" → ") == 1 and notes.endswith('"Plan: run pytest tests/test_orders.py first, then patch '
                                                       'OrderTotal.apply_discount in app/orders.py."'), notes


def test_a_rollup_folds_the_runs_of_turns_that_say_nothing_any_more():
    """Rolled up, a run of turns on one line (_joined_talk) whose every quote went was left as a
    bare ``- turn_0026–turn_0029`` line, 22 of them in a row; such runs fold into one counted line."""
    turns, _ = _chat_turns(turns=240, seed=3)
    text = OfflineSummarizer().summarize(turns, MemoryContext(summary_tokens=3000)).episodic_summary
    out = condense(text, len(text) * 15 // 100)
    bare = [line for line in out.split("\n") if re.fullmatch(r"- turn_\d+–turn_\d+", line)]
    assert len(bare) <= 2, bare
    for first, last, n in re.findall(rf"^- turn_(\d+)–turn_(\d+) · (\d+) {FOLDED_TURNS}$", out, re.M):
        assert int(n) == int(last) - int(first) + 1


def test_the_line_after_turns_left_out_says_its_day_in_a_window_of_talk_and_work():
    """Chat turns with a coding turn every fifth, over days, squeezed into 400 tokens: the line
    after '… N turns left out' said no day (the day map was built from lines joined into runs,
    the squeezed summary's whole lines have other heads) and read as the day before the note."""
    from datetime import datetime, timezone

    turns, _ = _chat_turns(200, seed=1, per_day=25)
    for i, t in enumerate(turns):
        if i % 5 == 3:
            ev = [{"trace_type": "user", "content": f"Please fix app/mod{i}.py; it crashes on empty input. "
                                                    f"Keep handler{i} stable."},
                  *_call(i, f"pytest -q tests/test_mod{i}.py", error=f"exit status 1\nFAILED tests/test_mod{i}.py::t"),
                  {"trace_type": "assistant", "content": f"Fixed app/mod{i}.py."}]
            turns[i] = Turn(t.turn_id, [dataclasses.replace(x, ts=t.traces[0].ts + k)
                                        for k, x in enumerate(_traces(t.turn_id, ev))])
    day = {t.turn_id: datetime.fromtimestamp(t.traces[0].ts, timezone.utc).strftime("%Y-%m-%d") for t in turns}
    text = OfflineSummarizer().summarize(turns, MemoryContext(summary_tokens=400)).episodic_summary
    after = re.findall(r"^… [^\n]*\n- (turn_\d+)(?:–turn_\d+)? (\(\d{4}-\d\d-\d\d\) )?", text, re.M)
    assert after and all(mark == f"({day[turn]}) " for turn, mark in after), after


@pytest.mark.parametrize("text,label", [
    ("Caroline: It is a long story, really. We adopted a puppy and named him Milo8.", "Caroline: "),
    ("Error: something broke badly here. The crash is in app/orders.py line 12.", ""),
    ("Note: this is how it goes, always. We adopted a puppy and named him Milo9.", ""),
    ("TODO: remember this later on please. Deploy uses terraform module vpc_core_77.", ""),
    ("Łukasz Nowak: It is a long story, really. We adopted a puppy and named him Milo10.", "Łukasz Nowak: "),
    ("Дмитрий: It is a long story, really. We adopted a puppy and named him Milo11.", "Дмитрий: "),
    ("O'Brien: It is a long story, really. We adopted a puppy and named him Milo12.", "O'Brien: "),
    ("Élodie: It is a long story, really. We adopted a puppy and named him Milo13.", "Élodie: "),
])
def test_a_message_keeps_who_speaks_but_no_other_label(text, label):
    """A message condensed without its first sentence says its speaker (``Caroline: …``, in any
    alphabet) — a label several messages start with, not a word that heads a note or an error
    (``Note:``, ``Error:``, ``TODO:``), put before a sentence it never headed. A label one message
    alone starts with (``Build: …``) is no speaker either."""
    from memcli.compaction.offline import Rarity, condense_message

    filler = ["It is a long story, really.", "this is how it goes, always."] * 20
    rarity = Rarity([text] * 3 + filler)
    parts, density = rarity.analysed(text)
    said = condense_message(text, 2000, rarity, max(density) * 0.999, keep=False)
    assert said.startswith(f"{label}… ") and said.endswith(parts[-1]), said
    once = "Build: It is a long story, really. Deploy uses terraform module vpc_core_77."
    rarity = Rarity([once] + filler)
    assert condense_message(once, 2000, rarity, max(rarity.analysed(once)[1]) * 0.999, keep=False).startswith("… ")


@pytest.mark.parametrize("limit", [40, 60, 80])
def test_a_session_message_cut_to_its_most_telling_line_keeps_that_lines_speaker_alone(limit):
    """A chat's session as one message, squeezed to its most telling sentence, clipped: the
    sentence shows its own speaker (``Melanie: …``); the message's first speaker was put before it
    too (``Caroline: … Melanie: I painted …``), crediting Melanie's line to Caroline."""
    from memcli.compaction.offline import Rarity, condense_message

    text = ("Caroline: Hi there. Melanie: Hello. Caroline: How was the weekend? "
            "Melanie: I painted the Zyxwvut sunset over Lake Qorvath with my new brushes yesterday.")
    rarity = Rarity([text] + ["Caroline: Hi there. Melanie: Hello. Caroline: How was the weekend?"] * 5)
    said = condense_message(text, limit, rarity)
    assert said.startswith("… Melanie: I painted the Zyxwvut sunset over "), said


@pytest.mark.parametrize("per_day,tokens", [(10, 2000), (10, 800), (3, 1500)])
def test_day_marks_stay_right_with_folds_and_turns_left_out(per_day, tokens):
    """Each day mark is the day of its line's first turn — after folded runs and after turns left
    out too — and the first line after a note of turns left out says its day (a reviewer's case:
    marks after folds were shifted by the folded lines)."""
    import re
    from datetime import datetime, timezone

    turns, _ = _chat_turns(turns=240, seed=3, per_day=per_day)
    day_of = {t.turn_id: datetime.fromtimestamp(t.traces[0].ts, timezone.utc).strftime("%Y-%m-%d") for t in turns}
    text = OfflineSummarizer().summarize(turns, MemoryContext(summary_tokens=tokens)).episodic_summary
    marks = re.findall(r"^- (turn_\d+)(?:–turn_\d+)? \((\d{4}-\d\d-\d\d)\) ·", text, re.M)
    assert len(marks) >= 3 and all(day_of[turn] == day for turn, day in marks), marks
    after = re.findall(r"^… [^\n]*\n([^\n]*)", text, re.M)
    assert all(re.match(r"- turn_\d+(?:–turn_\d+)? \(\d{4}-", line) for line in after), after
    left = re.search(r"^… (\d+) turns \(", text, re.M)
    assert len(_turns_covered(text)) + (int(left[1]) if left else 0) == 240
    if tokens == 800:   # runs of turns on one line (what they said joined) each of one day; a
        # folded run (it says nothing) may span days, and says no day
        runs = re.findall(r"^- turn_(\d+)–turn_(\d+) (.*)", text, re.M)
        assert runs and all(day_of[f"turn_{a}"] == day_of[f"turn_{b}"] or rest.endswith(FOLDED_TURNS)
                            and not rest.startswith("(") for a, b, rest in runs)


def test_a_rollup_keeps_the_count_of_a_folded_run():
    line = f"- turn_0002–turn_0008 (2026-03-03) · 7 {FOLDED_TURNS}"
    summary = "\n".join(["9 turns (turn_0001–turn_0009), 2026-03-02 08:41 → 2026-03-04 09:30 UTC: 18 traces.",
                         '- turn_0001 (2026-03-02) · user: "Where did you go?" · assistant: "To Oslo7, by train."',
                         line, '- turn_0009 · user: "Nice."', "Vocabulary: " + ", ".join(f"name_{i}" for i in range(40))])
    assert line in condense(summary, 300).split("\n")


def test_a_preference_naming_a_file_is_kept_whole():
    """A preference is a whole sentence: a path's dot does not end it (it was cut to "Always run
    tests/test_api." by a second sentence rule; now the one `sentences` splits everywhere)."""
    from memcli.models import RawTrace
    turn = Turn("turn_0001", [RawTrace("u", 1.0, "turn_0001", 1, "user",
                                       "Always run tests/test_api.py before you commit. Thanks!", "x")])
    facts = [f.fact for f in OfflineSummarizer().summarize([turn]).semantic_facts]
    assert facts == ['User preference: "Always run tests/test_api.py before you commit."']


def test_a_summary_that_fits_only_once_runs_are_folded_does_not_collapse():
    """The estimate said no floor saved enough (it cannot see folded runs), and every sentence
    that may go went: a 240-turn talk's summary fell to ~220 characters (a reviewer's case).
    Now the floor is the lowest at which the whole summary fits."""
    from memcli.models import RawTrace
    filler = ["That sounds great!", "Wow, I love that.", "How was your week?", "Tell me more about it.",
              "Haha yes, totally agree.", "That must have been hard.", "Take care, talk soon!"]
    turns = []
    for t in range(240):
        turn_id = f"turn_{t + 1:04d}"
        reply = " ".join(filler[(t + k) % 7] for k in range(3)) + f" I visited Kyoto{t} last spring. {filler[t % 7]}"
        turns.append(Turn(turn_id, [RawTrace(f"{turn_id}-u", 1772442000.0 + t * 10, turn_id, 1, "user", f"Hi {t}.", "x"),
                                    RawTrace(f"{turn_id}-a", 1772442001.0 + t * 10, turn_id, 2, "assistant", reply, "x")]))
    text = OfflineSummarizer().summarize(turns, MemoryContext(summary_tokens=2000)).episodic_summary
    assert len(text) > 3000


def test_more_room_never_keeps_fewer_facts_of_a_conversation():
    """With a budget the asks alone fit in, the replies had only the room the asks left: a larger
    budget kept fewer of their facts than a smaller one (84 against 156). The small talk of the
    asks now goes for them too."""
    turns, facts = _chat_turns(turns=240)
    kept = []
    for tokens in (4000, 6000, 10000, 20000):
        text = OfflineSummarizer().summarize(
            turns, MemoryContext(summary_tokens=tokens, target_given=True)).episodic_summary
        kept.append(sum(value in text for value in facts))
    assert kept == sorted(kept) and kept[-1] == len(facts), kept


def test_a_stray_quote_does_not_hide_a_preference():
    from memcli.models import RawTrace
    ask = 'My monitor is 27" wide. ' + "We looked at the layout together. " * 14 + \
        "Always run the linter before you commit."
    turn = Turn("turn_0001", [RawTrace("u", 1.0, "turn_0001", 1, "user", ask, "x")])
    facts = [f.fact for f in OfflineSummarizer().summarize([turn]).semantic_facts]
    assert any("Always run the linter before you commit." in f for f in facts), facts


def _chat_facts(asks: list[str], reply: str) -> list[str]:
    """The facts the offline summary makes of a chat: each ask a turn, answered by ``reply``."""
    from memcli.models import RawTrace
    turns = []
    for t, ask in enumerate(asks):
        turn_id = f"turn_{t + 1:04d}"
        turns.append(Turn(turn_id, [
            RawTrace(f"{turn_id}-u", 1772442000.0 + t * 10, turn_id, 1, "user", ask, "x"),
            RawTrace(f"{turn_id}-a", 1772442001.0 + t * 10, turn_id, 2, "assistant", reply, "x")]))
    return [f.fact for f in OfflineSummarizer().summarize(turns).semantic_facts]


def test_small_talk_with_always_in_it_is_no_preference_of_a_conversation():
    """A conversation between two people (LoCoMo-style: "it always amazes me how …") made a
    `User preference` fact of every sentence with "always" or "never" in it: 20 of them in one
    chat, about 400 tokens of a 1,500-token snapshot, the summary's facts pushed out for them. In a
    window of conversation only a sentence said as an instruction is one now; a coding window's
    asks are read as before."""
    talk = ["Honestly, it always amazes me how quickly the weeks slip by when things get busy.",
            "Aw, I am so glad that you always find the bright side.",
            "You know, I never thought pottery could be this relaxing.",
            "From now on, please answer me in French.",
            "Always run the linter before you commit."]
    facts = _chat_facts([f"{talk[t % len(talk)]} We adopted a puppy and named him Milo{t}." for t in range(30)],
                        "That is lovely to hear!")
    assert facts == ['User preference: "From now on, please answer me in French."',
                     'User preference: "Always run the linter before you commit."'], facts
    # a window with tool calls: its asks' preferences as before
    work = [Turn("turn_0001", _traces("turn_0001", [
        {"trace_type": "user", "content": "Fix the build. I never want a force push on main."},
        *_call(1, "make"), {"trace_type": "assistant", "content": "Built."}]))]
    assert [f.fact for f in OfflineSummarizer().summarize(work).semantic_facts] == \
        ['User preference: "I never want a force push on main."']


@pytest.mark.parametrize("rule, instruction", [
    ("- Never book anything without asking me first.", True),     # a list of rules
    ("1. Always include the train times.", "Always include the train times."),   # ("1." ends a sentence)
    ("You must always ask before booking anything.", True),
    ("I want you to never share my address.", True),
    ("Also, never suggest peanuts, I am allergic.", True),         # a lead-in
    ("Note: always quote prices in euros.", True),
    ("I’d prefer short answers from here on.", True),              # a typographic apostrophe
    ("I'd rather you wrote in French.", True),                     # ("i 'd" was what the rule read)
    ("Don’t ever call me before nine.", True),
    ("It always amazes me how fast the kids grow.", False),
    ("You never know what the weather will do.", False),
    ("We will always remember that trip.", False),
    ("Never mind, it works now.", False),                          # an idiom that opens with the word
    ("Never again, that trip was awful.", False),
    ("Always a pleasure to see you!", False),
    ("Oh never, I hate flying.", False),
    ("Never ever book a red-eye for me.", True),
])
def test_a_rule_of_a_conversation_is_a_preference_however_it_is_written(rule, instruction):
    """A review of the conversation rule above: a rule written as a list item, after a lead-in,
    as "you must always" or "I want you to never", or with a typographic apostrophe was dropped
    with the small talk (and "I'd prefer" was read by neither rule, in any window)."""
    facts = _chat_facts([f"{rule if t == 3 else 'We had a lovely walk by the lake today.'} The dog is called Milo{t}."
                         for t in range(12)], "How lovely!")
    said = rule if instruction is True else instruction
    assert facts == ([f'User preference: "{said}"'] if instruction else []), facts


def test_turns_that_say_nothing_take_one_line_whatever_their_days():
    """A conversation over weeks squeezed so far that most of its days said nothing: each day's
    run of such turns took a line of its own (`- turn_0007–turn_0012 (2026-03-03) · 6 turns, their
    short asks condensed away`), 29 lines saying nothing in 1,000 tokens, and one fact of 156 was
    kept. A run that says nothing needs no day: one line, and the line after it says its own."""
    import re

    turns, facts = _chat_turns(turns=240, per_day=6)
    text = OfflineSummarizer().summarize(turns, MemoryContext(summary_tokens=1000)).episodic_summary
    lines = text.split("\n")
    assert not any(a.endswith(FOLDED_TURNS) and b.endswith(FOLDED_TURNS) for a, b in zip(lines, lines[1:]))
    assert sum(value in text for value in facts) >= 15
    # a run that spans days says none, and the line after it says its own
    for before, line in zip(lines, lines[1:]):
        if before.endswith(FOLDED_TURNS) and not re.match(r"- \S+ \(", before) and line.startswith("- "):
            assert re.match(r"- \S+ \(\d{4}-\d\d-\d\d\) · ", line), (before, line)


def test_a_reply_said_on_a_later_day_than_its_ask_says_its_day():
    """A chat imported speaker by speaker (one `user`, the other `assistant`) whose session opens
    with the assistant's speaker: that message joins the turn of the last session's ask, and the
    turn's line is dated by its ask — "I went to the jazz concert yesterday", said on 19 March,
    read as said on 2 March. The reply says its own day when it is not its ask's, on a turn's line
    in full and on a line of its asks only."""
    from datetime import datetime, timezone

    from memcli.models import RawTrace

    day = 86400.0
    turns = []
    for t in range(60):
        turn_id = f"turn_{t + 1:04d}"
        session = t // 5   # five turns a session, sessions 17 days apart
        ts = 1772442000.0 + session * 17 * day + t * 60
        reply_ts = ts + 30
        reply = f"That is lovely, tell me more about Oslo{t} next time."
        if t % 5 == 4 and t in (4, 19):   # the next session opens with the assistant's speaker
            reply_ts = ts + 17 * day
            reply = f"Hey! I went to the jazz concert{t} yesterday and it was really moving."
        turns.append(Turn(turn_id, [
            RawTrace(f"{turn_id}-u", ts, turn_id, 1, "user", f"I visited Lima{t} with my sister last week.", "x"),
            RawTrace(f"{turn_id}-a", reply_ts, turn_id, 2, "assistant", reply, "x")]))
    text = OfflineSummarizer().summarize(turns).episodic_summary
    for t in (4, 19):
        said = datetime.fromtimestamp(1772442000.0 + (t // 5 + 1) * 17 * day, timezone.utc).strftime("%Y-%m-%d")
        assert f'assistant ({said}): "Hey! I went to the jazz concert{t} yesterday' in text, text
    assert text.count("assistant (") == 2


def test_a_chat_of_a_few_long_turns_keeps_what_each_said_not_its_first_turns_small_talk():
    """A conversation imported a session a turn (one message of some thirty lines, `Caroline: …`
    `Melanie: …`): its first and newest turns, taken for the request and the latest intent, kept
    their asks whole within an eighth of the summary each, small talk and all (25 sentences of it
    on the first line), while the turns between had only the rest: 9 of 60 facts in 1,000 tokens.
    In a window of conversation those two are condensed like the others (their most telling
    sentence kept)."""
    import random

    rnd = random.Random(3)
    facts, turns = [], []
    for s in range(20):
        said = []
        for k in range(30):
            text = " ".join(rnd.sample(_LONG_SMALL_TALK, 2))
            if k % 10 == 5:
                facts.append(f"Biscuit{len(facts)}")
                text += f" We adopted a puppy and named him {facts[-1]}."
            said.append(f"{'Caroline' if k % 2 == 0 else 'Melanie'}: {text}")
        turn_id = f"turn_{s + 1:04d}"
        turns.append(Turn(turn_id, _traces(turn_id, [{"trace_type": "user", "content": "\n".join(said)}])))
    text = OfflineSummarizer().summarize(turns, MemoryContext(summary_tokens=1000)).episodic_summary
    assert sum(value in text for value in facts) >= 45, text
    first, last = text.split("\n")[1], [line for line in text.split("\n") if line.startswith("- turn_0020")][0]
    for line in (first, last):
        assert sum(line.count(talk) for talk in _LONG_SMALL_TALK) <= 2, line


def test_a_session_of_many_lines_says_who_said_each_sentence_kept():
    """A conversation imported a session a turn (`Caroline: …` `Melanie: …` line after line, each
    fact in the middle of its line): a condensed session kept the label of the message's start
    only, so a sentence kept from a later line did not say who said it (the speaker readable for
    61 of 140 facts kept in 3,000 tokens). A sentence whose speaker is not the last one shown now
    has its label before it."""
    import random
    import re

    rnd = random.Random(5)
    facts, turns = {}, []
    for s in range(20):
        said = [f"Session {s + 1} — 1:56 pm on {s + 1} May, 2023"]
        for k in range(30):
            who = "Caroline" if k % 2 == 0 else "Melanie"
            text = " ".join(rnd.sample(_LONG_SMALL_TALK, 2))
            if k % 10 in (3, 6):
                facts[f"Biscuit{len(facts)}"] = who
                text += f" We adopted a puppy and named him Biscuit{len(facts) - 1}."
            said.append(f"{who}: {text}")
        turn_id = f"turn_{s + 1:04d}"
        turns.append(Turn(turn_id, _traces(turn_id, [{"trace_type": "user", "content": "\n".join(said)}])))
    text = OfflineSummarizer().summarize(turns, MemoryContext(summary_tokens=1500)).episodic_summary
    kept = [value for value in facts if re.search(rf"\b{value}\b", text)]
    assert len(kept) >= 30, text
    wrong = []
    for value in kept:
        at = re.search(rf"\b{value}\b", text).start()
        before = text[text.rfind("\n", 0, at) + 1:at]
        labels = re.findall(r"\b(Caroline|Melanie): ", before)
        if not labels or labels[-1] != facts[value]:
            wrong.append((value, facts[value], before[-160:]))
    assert not wrong, wrong


def test_an_ask_with_a_pasted_log_keeps_its_request_and_its_question():
    """An ask of work over its room (2,000 characters: a stack trace pasted between the request
    and the question) keeps its first and last sentences, then the rarest: the frames of the
    trace, each rare, outranked "please find the root cause" and the question after them."""
    frames = "\n".join(f"    at com.example.svc.Handler{i}.handle(Handler{i}.java:{100 + i})" for i in range(120))
    ask = (f"Here is the full stack trace from prod, please find the root cause:\n{frames}\n"
           "Caused by: java.lang.IllegalStateException: pool exhausted (POOL_MAX=32)\nWhy does the pool run dry?")
    events = [{"trace_type": "user", "content": ask}, *_call(1, "grep -rn POOL_MAX src/", result="src/Pool.java:3"),
              {"trace_type": "assistant", "content": "The pool is never released on timeout."}]
    text = OfflineSummarizer().summarize([Turn("turn_0001", _traces("turn_0001", events))]).episodic_summary
    line = next(line for line in text.split("\n") if line.startswith("- turn_0001"))
    assert line.startswith('- turn_0001 · user: "Here is the full stack trace from prod, please find the root cause: '), line
    assert 'pool exhausted (POOL_MAX=32) Why does the pool run dry?"' in line, line


def test_a_slash_command_ask_is_quoted_as_typed():
    """Claude Code writes a slash command as markup (``<command-name>/review</command-name>
    <command-args>PR 12</command-args>``): the summary quoted the markup, ``turns`` showed ``/review PR 12``."""
    slash = ("<command-message>review is running…</command-message>\n<command-name>/review</command-name>\n"
             "<command-args>PR 12</command-args>")
    events = [{"trace_type": "user", "content": slash}, *_call(1, "gh pr diff 12", result="diff"),
              {"trace_type": "assistant", "content": "No bugs found in PR 12."}]
    text = OfflineSummarizer().summarize([Turn("turn_0001", _traces("turn_0001", events))]).episodic_summary
    assert '- turn_0001 · user: "/review PR 12"' in text and "<command-" not in text, text


# --------------------------------------------------------------------------- a rollup's merge

_OLDER = """2 turns (turn_0001–turn_0002), 2026-02-01 10:00 → 10:20 UTC: 40 traces, 12 tool calls, 2 failed.
- turn_0001 · user: "Move the timeouts to settings, starting with src/billing/store_0.py." · tools: Edit ×3
- turn_0002 · steps 1–6 of 9 (its ask stays in the active file) · last note: "store_0 done"
… 1 turn (turn_0003) left out
Subagents:
- agent a1 (turn_0002) · task "List the callers of BillingStore" · 1 tool call
Files modified: src/billing/store_0.py (BillingStore, billing.store_0.timeout), src/app.py (main)
Plan: [in_progress] Port BillingStore; [pending] Port OrdersQueue
Commands (latest outcome): `ruff check src`: All checks passed!
Failed: `pytest -q tests/test_store_0.py` ×2 (FAILED tests/test_store_0.py::test_timeout - BillingStore0Error) — still failing; `npm run build` ×1 (error TS2339: Property 'x') — still failing
Never answered: 1 call (Bash `sleep 999` in turn_0002)
URLs: https://example.com/a
Vocabulary: BillingStore, store_billing_0, OrdersQueue"""

_NEWER = """1 turn (turn_0002), 2026-02-01 10:21 → 10:30 UTC: 20 traces, 8 tool calls, 0 failed.
- turn_0002 · steps 1–3 of 3 (its ask stays in the active file) · tools: Bash ×2 · last note: "tests green"
- turn_0003 · user: "Now the orders queue."
Subagents:
- agent a2 (turn_0003) · task "List the callers of OrdersQueue" · 1 tool call
Files modified: src/orders/queue_1.py (OrdersQueue), src/app.py (settings, main)
Plan: [completed] Port BillingStore; [in_progress] Port OrdersQueue
Commands (latest outcome): `pytest -q tests/test_store_0.py`: 3 passed in 0.2s
Never answered: 2 calls (Read a.py in turn_0003; Bash `sleep 999` in turn_0002)
URLs: https://example.com/b, https://example.com/a
Vocabulary: OrdersQueue, queue_orders_1"""



def test_a_rollup_lists_a_file_two_summaries_spelled_two_ways_once():
    """One summary's files line has the path a shell wrote (``src/app.py``), the next the whole
    path an edit tool gave (``/repo/src/app.py``): the rollup names that file once, whole, with
    the names touched in both."""
    from memcli.compaction.offline import merge_summary_texts

    older = _OLDER.replace("src/billing/store_0.py (", "/repo/src/billing/store_0.py (")
    newer = _NEWER.replace("src/app.py (settings, main)", "src/app.py (settings, main), src/billing/store_0.py (retry)")
    files = next(line for line in merge_summary_texts([older, newer], "turn_0001–turn_0003", 3).split("\n")
                 if line.startswith("Files modified"))
    assert files == ("Files modified: src/orders/queue_1.py (OrdersQueue), src/app.py (settings, main), "
                     "/repo/src/billing/store_0.py (BillingStore, billing.store_0.timeout, retry)")

def test_summaries_merge_into_one_that_says_each_thing_once_in_its_latest_state():
    """What a rollup makes of the offline summaries of a session compacted again and again: one
    summary in the same form (each list line once, a file with every name touched in it, a
    failure a later summary shows passing no longer "still failing", the latest plan), not a stack
    of them repeating the files line and the same turn's steps."""
    from memcli.compaction.offline import merge_summary_texts, summary_turns

    merged = merge_summary_texts([_OLDER, _NEWER], "turn_0001–turn_0003", 3)
    assert merged.split("\n") == [
        "3 turns (turn_0001–turn_0003), 2026-02-01 10:00 → 10:30 UTC: 60 traces, 20 tool calls, 2 failed.",
        '- turn_0001 · user: "Move the timeouts to settings, starting with src/billing/store_0.py." · tools: Edit ×3',
        # the two compactions' steps of turn_0002, on one line; the turn line "left out" shows it
        '- turn_0002 · 9 steps, moved in 2 compactions (its ask stays in the active file) · tools: Bash ×2 · '
        'last note: "tests green"',
        '- turn_0003 · user: "Now the orders queue."',
        "Subagents:",
        '- agent a1 (turn_0002) · task "List the callers of BillingStore" · 1 tool call',
        '- agent a2 (turn_0003) · task "List the callers of OrdersQueue" · 1 tool call',
        "Files modified: src/orders/queue_1.py (OrdersQueue), src/app.py (settings, main), "
        "src/billing/store_0.py (BillingStore, billing.store_0.timeout)",
        "Plan: [completed] Port BillingStore; [in_progress] Port OrdersQueue",
        "Commands (latest outcome): `pytest -q tests/test_store_0.py`: 3 passed in 0.2s; `ruff check src`: All checks passed!",
        "Failed: `pytest -q tests/test_store_0.py` ×2 (FAILED tests/test_store_0.py::test_timeout - BillingStore0Error)"
        " — passed later; `npm run build` ×1 (error TS2339: Property 'x') — still failing",
        "Never answered: 2 calls (Read a.py in turn_0003; Bash `sleep 999` in turn_0002)",
        "URLs: https://example.com/b, https://example.com/a",
        "Vocabulary: OrdersQueue, queue_orders_1, BillingStore, store_billing_0",
    ]
    assert summary_turns(merged) == 3 and summary_turns(_OLDER) == 2
    # merged again with a newer one (a rollup of rollups): the same form, the steps added up
    # (a tiny summary's header: no time, no traces — the sum of the traces is not said then)
    newest = "1 turn: 4 tool calls, 0 failed.\n- turn_0003 · steps 1–2 of 2 (its ask stays in the active file)"
    again = merge_summary_texts([merged, newest], "turn_0001–turn_0003", 3)
    assert again.startswith("3 turns (turn_0001–turn_0003), 2026-02-01 10:00 → 10:30 UTC: 24 tool calls, 2 failed.\n")
    assert '- turn_0003 · user: "Now the orders queue."\n- turn_0003 · 2 steps, moved in 1 compaction\n' in again
    assert summary_turns(again) == 3 and merge_summary_texts([again, _NEWER], "turn_0001–turn_0003", 3)
    # a failure two summaries show: its newest entry (how it ended), with every time it failed
    # (a rollup said ×1 of a test that had failed 4 times: the newer summary's count alone)
    later = _NEWER + ("\nFailed: `pytest -q tests/test_store_0.py` ×1 (FAILED tests/test_store_0.py::test_timeout - "
                      "KeyError: 'ms') — passed later; FAILED tests/test_a.py::test_x - E ×2 — still failing")
    failed = next(line for line in merge_summary_texts([_OLDER, later], "turn_0001–turn_0003", 3).split("\n")
                  if line.startswith("Failed: "))
    assert failed == ("Failed: `pytest -q tests/test_store_0.py` ×3 (FAILED tests/test_store_0.py::test_timeout - "
                      "KeyError: 'ms') — passed later; FAILED tests/test_a.py::test_x - E ×2 — still failing; "
                      "`npm run build` ×1 (error TS2339: Property 'x') — still failing")
    # a text in another form (a model's summary) merges with nothing: the rollup keeps it as it is
    assert merge_summary_texts([_OLDER, "## Progress\n- Updated src/app.py"], "turn_0001–turn_0003", 3) is None
    assert summary_turns("## Progress") is None


def test_a_condensed_files_line_loses_the_oldest_files_names_first():
    """The files line is newest first: over its room it loses the names touched in its last
    (oldest) files first, not every name at once (a merged rollup has one files line for all its
    summaries: it lost the names of the newest files with the oldest)."""
    summary = "\n".join(["1 turn (turn_0001), 2026-02-01 10:00 → 10:20 UTC: 9 traces, 3 tool calls, 0 failed.",
                         "Files modified: src/new.py (NewName, new_fn), src/mid.py (MidName), src/old.py (OldName, old_fn)"])
    out = condense(summary, len(summary) - 10)
    assert out.split("\n")[1] == "Files modified: src/new.py (NewName, new_fn), src/mid.py (MidName), src/old.py"
    out = condense(summary, len(summary) - 25)
    assert out.split("\n")[1] == "Files modified: src/new.py (NewName, new_fn), src/mid.py, src/old.py"


def test_a_condensed_rollup_says_the_project_directory_once_before_its_vocabulary_goes():
    """A tight rollup kept every file's whole path and lost its vocabulary (worked-terse compacted
    in eight rounds: a third of the rollup was ``/home/me/proj/`` again and again). Condensed, a
    files line says the directory once — the one the summary names a modified file from
    (``src/cart.py``), so each path reads as the agent's next call names it — before the
    vocabulary loses an entry; the merge reads the paths whole again."""
    from memcli.compaction.offline import files_under_directory, merge_summary_texts

    files = ("Files modified: /home/me/shop/src/cart.py (Cart, add_item), /home/me/shop/src/api/routes.py, "
             "/home/me/shop/tests/test_cart.py")
    summary = "\n".join([
        "2 turns (turn_0001–turn_0002), 2026-02-01 10:00 → 10:20 UTC: 40 traces, 12 tool calls, 0 failed.",
        '- turn_0001 · user: "Make the cart keep its items." · tools: Edit ×3',
        files,
        "Plan: [in_progress] Port Cart to the new store (src/cart.py)",
        "Vocabulary: CART_STORE_URL, CartItem, ItemStore, cart_total, OrderQueue"])
    out = condense(summary, len(summary) - 40)   # (17 of them: the turn line's tools)
    assert out.split("\n")[2:] == [
        "Files modified in /home/me/shop/: src/cart.py (Cart, add_item), src/api/routes.py, tests/test_cart.py",
        "Plan: [in_progress] Port Cart to the new store (src/cart.py)",
        "Vocabulary: CART_STORE_URL, CartItem, ItemStore, cart_total, OrderQueue"]
    # merged with a newer summary, each path is whole again and listed once
    newer = ("1 turn (turn_0003), 2026-02-01 10:21 → 10:30 UTC: 8 traces, 2 tool calls, 0 failed.\n"
             "Files modified: /home/me/shop/src/cart.py (checkout)")
    merged = merge_summary_texts([out, newer], "turn_0001–turn_0003", 3)
    assert [line for line in merged.split("\n") if line.startswith("Files modified")] == [
        "Files modified: /home/me/shop/src/cart.py (checkout, Cart, add_item), /home/me/shop/src/api/routes.py, "
        "/home/me/shop/tests/test_cart.py"]
    # no relative name of a modified file in the summary: the paths stay whole (the deepest directory
    # they share, /home/me/shop/src/, is no path the agent would name them from)
    only_src = "Files modified: /home/me/shop/src/a.py, /home/me/shop/src/b.py"
    assert files_under_directory(only_src, "Plan: [in_progress] Port Cart") == only_src
    assert files_under_directory(only_src, "Failed: `pytest -q src/a.py`") == \
        "Files modified in /home/me/shop/: src/a.py, src/b.py"
    # a relative path, or one outside the directory: the line as it was
    assert files_under_directory("Files modified: /home/me/shop/src/a.py, src/b.py", "src/a.py") == \
        "Files modified: /home/me/shop/src/a.py, src/b.py"
    assert files_under_directory("Files modified: /home/me/shop/src/a.py, /etc/hosts", "src/a.py") == \
        "Files modified: /home/me/shop/src/a.py, /etc/hosts"


def test_a_condensed_rollup_drops_a_turn_s_count_of_moved_steps_before_its_vocabulary():
    """A rollup of a hook's rounds says of each turn whose steps moved in several compactions
    ``- turn_0001 · 34 steps, moved in 2 compactions`` under the line quoting its ask: bookkeeping
    (the header counts the calls), gone before the vocabulary loses a name. A turn whose ask stays
    in the active file keeps its line: it says where the ask is."""
    summary = "\n".join([
        "3 turns (turn_0001–turn_0003), 2026-02-01 10:00 → 10:20 UTC: 90 traces, 40 tool calls, 0 failed.",
        '- turn_0001 · user: "Port OrderQueue to settings."',
        "- turn_0001 · 34 steps, moved in 2 compactions",
        '- turn_0002 · user: "Now RefundPolicy."',
        "- turn_0002 · 12 steps, moved in 3 compactions",
        "- turn_0003 · 46 steps, moved in 3 compactions (its ask stays in the active file)",
        "Vocabulary: CART_STORE_URL, CartItem, ItemStore, cart_total, OrderQueue"])
    out = condense(summary, len(summary) - 50)
    assert out.split("\n")[1:] == [
        '- turn_0001 · user: "Port OrderQueue to settings."',
        '- turn_0002 · user: "Now RefundPolicy."',
        "- turn_0003 · 46 steps, moved in 3 compactions (its ask stays in the active file)",
        "Vocabulary: CART_STORE_URL, CartItem, ItemStore, cart_total, OrderQueue"]
    # only as many as it must: the newest turn's count goes last
    assert condense(summary, len(summary) - 30).split("\n")[2:4] == [
        '- turn_0002 · user: "Now RefundPolicy."', "- turn_0002 · 12 steps, moved in 3 compactions"]


def test_a_merge_says_the_turns_its_summaries_left_out_once():
    """A hook's summaries, squeezed round after round, each counted the turns they left out; their
    merge stacked the notes (four in a row in a rollup of seven, turn_0002 in three of them). A
    run of them is now one note over all their turns, each turn once; a condensed summary's count
    of its turn lines (turns not named) stays beside it."""
    from memcli.compaction.offline import merge_summary_texts

    def squeezed(note: str, path: str) -> str:
        return "\n".join(["1 turn: 20 tool calls, 1 failed.", note, f"Files modified: {path}"])

    merged = merge_summary_texts([
        squeezed("… 1 turn (turn_0001) left out", "src/a.py"),
        squeezed("… 2 turns (turn_0001–turn_0002) left out", "src/b.py"),
        squeezed("… 1 turn (turn_0002) left out (`memcli show AGENT --archive --turn ID`)", "src/c.py"),
        "\n".join(["1 turn: 3 tool calls, 0 failed.", "… 1 turn line left out (`memcli show AGENT --archive`)",
                   "Files modified: src/d.py"])], "turn_0001–turn_0002", 2)
    assert merged.split("\n")[1:] == [
        "… 2 turns (turn_0001–turn_0002) left out",
        "… 1 turn line left out (`memcli show AGENT --archive`)",
        "Files modified: src/d.py, src/c.py, src/b.py, src/a.py"]


def test_summaries_of_conversation_only_stay_sections_of_a_rollup():
    """A chat's summaries are not merged (rolled up as one text, their quotes condensed together,
    a chat compacted in six rounds kept 94 of its 185 facts against 105): each stays a section."""
    from memcli.compaction.compactor import _rollup_text
    from memcli.models import EpisodicItem

    def item(n):
        text = (f"2 turns (turn_{2 * n + 1:04d}–turn_{2 * n + 2:04d}), 2026-02-01 10:00 → 10:20 UTC: 4 traces, "
                f"0 tool calls, 0 failed.\n- turn_{2 * n + 1:04d} · user: \"We adopted a puppy named Milo{n}!\"")
        return EpisodicItem(f"ep_{n}", 1.0, [f"turn_{2 * n + 1:04d}", f"turn_{2 * n + 2:04d}"], text, ["compaction"])

    text = _rollup_text([item(n) for n in range(4)])
    assert re.findall(r"^\[(turn_\d+–turn_\d+)\]$", text, re.M) == [
        "turn_0001–turn_0002", "turn_0003–turn_0004", "turn_0005–turn_0006", "turn_0007–turn_0008"]
    assert all(f"Milo{n}!" in text for n in range(4))


def test_merging_any_lines_of_summaries_never_fails_and_stays_mergeable():
    """The merge reads summaries as text: any mix of their lines (torn lists, a stray head,
    another form's line) merges, its result merges again and condenses to any size."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from memcli.compaction.offline import merge_summary_texts, summary_turns

    lines = [*_OLDER.split("\n")[1:], *_NEWER.split("\n")[1:], "Files modified: a (b", "Failed: `x` ×",
             "Files modified in /r/: a (b", "Files modified in /r", "Files modified: /r/p/a.py (f), /r/p/b.py",
             "Never answered: 3 calls (", "Plan: ", "Vocabulary: ", "URLs: ,", "(+2 earlier)", "## Progress",
             "Commands (latest outcome): `a`: b; `c", "- turn_0001 · 3 steps, moved in 2 compactions"]
    headers = [_OLDER.split("\n")[0], _NEWER.split("\n")[0], "1 turn: 4 tool calls, 0 failed."]
    summary = st.builds(lambda h, body: "\n".join([h, *body]), st.sampled_from(headers),
                        st.lists(st.sampled_from(lines), max_size=8))

    @settings(max_examples=300, deadline=None)
    @given(st.lists(summary, min_size=2, max_size=4), st.integers(40, 600))
    def check(texts, size):
        merged = merge_summary_texts(texts, "turn_0001–turn_0003", 3)
        assert summary_turns(merged) == 3
        assert summary_turns(merge_summary_texts([merged, texts[-1]], "turn_0001–turn_0003", 3)) == 3
        assert len(condense(merged, size)) <= len(merged)   # (what must stay, the files, may pass size)

    check()


def test_condense_never_swaps_a_short_turn_line_for_the_longer_note_that_counts_it():
    """Found by the merge's fuzz test: a summary too large for a tiny budget had its one short
    turn line replaced by "… 1 turn line left out (`memcli show AGENT --archive`)", longer."""
    summary = ("3 turns (turn_0001–turn_0003), 2026-02-01 10:00 → 10:20 UTC: 80 traces, 24 tool calls, 4 failed.\n"
               '- turn_0003 · user: "Now the orders queue."')
    assert condense(summary, 40) == summary


def test_condensing_a_merged_summary_keeps_the_request_and_each_turns_count_of_steps():
    """A merged rollup squeezed hard: the line that quotes the first ask (the request) goes last —
    the first turn line had been a bare ``- turn_0001`` of its steps, and the request went instead
    —, lines that say nothing but their turn go first, and a turn's merged count of steps is kept
    with its asks (it was dropped, leaving bare ``- turn_0003`` lines)."""
    summary = "\n".join([
        "3 turns (turn_0001–turn_0003), 2026-02-01 10:00 → 10:05 UTC: 300 traces, 150 tool calls, 2 failed.",
        '- turn_0001 · user: "Move the timeouts to settings, starting with src/billing/store_0.py." · tools: Edit ×30',
        "- turn_0001 · 39 steps, moved in 2 compactions · tools: Bash ×8, Read ×5 [Read /home/me/proj/src/a.py]",
        '- turn_0002 · user: "Keep the public names unchanged." · tools: Edit ×9 [Edit /home/me/proj/src/b.py]',
        "- turn_0003 · 30 steps, moved in 2 compactions (its ask stays in the active file) · tools: Bash ×7",
        "Files modified: /home/me/proj/src/a.py, /home/me/proj/src/b.py"])
    shrunk = condense(summary, len(summary) - 100).split("\n")
    assert shrunk[2:5] == ["- turn_0001 · 39 steps, moved in 2 compactions",
                           '- turn_0002 · user: "Keep the public names unchanged."',
                           "- turn_0003 · 30 steps, moved in 2 compactions (its ask stays in the active file)"]
    tight = condense(summary, 330).split("\n")
    assert tight[1] == '- turn_0001 · user: "Move the timeouts to settings, starting with src/billing/store_0.py."'
    assert tight[-1].startswith("Files modified: ") and not any(line.startswith("- turn_0003") for line in tight)


def test_a_condensed_summary_keeps_its_vocabulary_longer_than_its_notes_and_commands():
    """Over its room a rolled-up summary loses the notes, URLs and commands' outcomes before the
    vocabulary (the identifiers the work names next): a hook's rounds kept 1–1.4 points more of
    them on two worked shapes, the vocabulary having been the first to go."""
    summary = "\n".join([
        "1 turn (turn_0001), 2026-02-01 10:00 → 10:20 UTC: 9 traces, 3 tool calls, 0 failed.",
        '- turn_0001 · user: "Port the cache."',
        'Latest notes: "Reading the cache module first." → "The cache reads its timeout from settings now."',
        "Commands (latest outcome): `pytest -q tests/test_cache.py`: 12 passed in 0.4s",
        "Vocabulary: CacheStore, cache_timeout_s, CACHE_URL"])
    out = condense(summary, len(summary) - 60)
    assert "Vocabulary: CacheStore, cache_timeout_s, CACHE_URL" in out and "Latest notes: " not in out, out


def test_a_merge_keeps_the_subagents_in_the_order_they_ran_one_line_each_with_their_count():
    """Each summary lists its subagents oldest first: the merge kept them newest summary first,
    reversed (a rollup of rollups listed a1100, a1060, a1020, then a1020, a1060, a1100 the next
    round), and dropped what their ``(+N earlier)`` counted. An agent two summaries name keeps
    its newest line, where that line was."""
    from memcli.compaction.offline import merge_summary_texts

    head = "1 turn (turn_0001), 2026-02-01 10:00 → 10:05 UTC: 9 traces, 3 tool calls, 0 failed."
    older = "\n".join([head, "Subagents:", "(+2 earlier)", '- agent a1 (turn_0001) · task "Find A" · 1 tool call',
                       '- agent a2 (turn_0001) · task "Find B" · 1 tool call'])
    newer = "\n".join([head, "Subagents:", '- agent a2 (turn_0001) · task "Find B" · 3 tool calls · concluded: "B is in b.py"',
                       '- agent a3 (turn_0001) · task "Find C" · 1 tool call'])
    merged = merge_summary_texts([older, newer], "turn_0001", 1).split("\n")
    assert merged[1:] == ["Subagents:", "(+2 earlier)", '- agent a1 (turn_0001) · task "Find A" · 1 tool call',
                          '- agent a2 (turn_0001) · task "Find B" · 3 tool calls · concluded: "B is in b.py"',
                          '- agent a3 (turn_0001) · task "Find C" · 1 tool call']


def test_a_condensed_summary_loses_its_oldest_subagents_lines_counted_before_its_vocabulary_and_asks():
    """Over its room a summary's subagents block loses its oldest agents' lines, counted in its
    ``(+N earlier)``, after the notes and commands and before the vocabulary and the asks. They
    were dropped with the turn lines, as turn lines: in a hook's rounds a rollup kept three
    subagents' lines (one task twice) under no ``Subagents:`` head — the "turn lines left out"
    note in its place — while its vocabulary and every ask but the first were gone."""
    summary = "\n".join([
        "2 turns (turn_0001–turn_0002), 2026-02-01 10:00 → 10:20 UTC: 90 traces, 30 tool calls, 0 failed.",
        '- turn_0001 · user: "Port the cache to settings."',
        '- turn_0002 · user: "Keep the public names."',
        "Subagents:",
        '- agent a1 (turn_0001) · task "List every caller of CacheStore.get under src/" · 1 tool call',
        '- agent a2 (turn_0002) · task "List every caller of CacheStore.put under src/" · 1 tool call',
        '- agent a3 (turn_0002) · task "List every caller of CacheStore.drop under src/" · 1 tool call',
        "Files modified: src/cache.py (CacheStore)",
        "Commands (latest outcome): `pytest -q tests/test_cache.py`: 12 passed in 0.4s",
        "Vocabulary: CacheStore, cache_timeout_s, CACHE_URL"])
    lines = condense(summary, len(summary) - 150).split("\n")
    assert lines[1:5] == ['- turn_0001 · user: "Port the cache to settings."', '- turn_0002 · user: "Keep the public names."',
                          "Subagents:", "(+2 earlier)"]
    assert lines[5:] == ['- agent a3 (turn_0002) · task "List every caller of CacheStore.drop under src/" · 1 tool call',
                         "Files modified: src/cache.py (CacheStore)", "Vocabulary: CacheStore, cache_timeout_s, CACHE_URL"]
    # squeezed further: every agent's line goes (the block with them), the asks and vocabulary stay
    lines = condense(summary, len(summary) - 360).split("\n")
    assert lines[1:] == ['- turn_0001 · user: "Port the cache to settings."', '- turn_0002 · user: "Keep the public names."',
                         "Files modified: src/cache.py (CacheStore)", "Vocabulary: CacheStore, cache_timeout_s, CACHE_URL"]


@pytest.mark.parametrize("per_day,tokens", [(10, 1500), (20, 800), (10, 2500)])
def test_a_days_turns_that_say_nothing_join_that_days_line_of_talk(per_day, tokens):
    """Turns that say nothing were folded across days first, so a run of them spanning two days
    stood between the two days' lines of talk, on a line of its own saying nothing (9 such lines
    in a dated chat's 3,000 tokens), and kept the days' lines from joining. Now a day's silent
    turns join that day's line; only whole days saying nothing fold on a line of their own."""
    import re
    from datetime import datetime, timezone

    turns, facts = _chat_turns(turns=240, per_day=per_day)
    day_of = {int(t.turn_id[5:]): datetime.fromtimestamp(t.traces[0].ts, timezone.utc).date() for t in turns}
    text = OfflineSummarizer().summarize(turns, MemoryContext(summary_tokens=tokens)).episodic_summary
    lines = [line for line in text.split("\n") if line.startswith("- turn")]
    for k, line in enumerate(lines):
        folded = re.match(rf"- turn_(\d+)–turn_(\d+)(?: \(\S+\))? · \d+ {FOLDED_TURNS}$", line)
        if folded:   # (beside the first and last lines, which join no run, it may stop anywhere)
            first, last = int(folded[1]), int(folded[2])
            assert k <= 1 or day_of.get(first - 1) != day_of[first], line
            assert k >= len(lines) - 2 or day_of.get(last + 1) != day_of[last], line
    assert len(_turns_covered(text)) == 240 - sum(int(n) for n in re.findall(r"^… (\d+) turns \(", text, re.M))


def test_the_commands_line_says_a_familys_latest_passing_run_unless_that_command_failed_since():
    """Each family's latest passing run, its latest run failing or not (a rollup reads it to tell
    an older summary's failure passed since) — not a command that failed in the window after it
    passed: the Failed line says that one is failing."""
    from memcli.compaction.offline import commands_line

    outcomes = {"pytest": ("pytest -q tests/a.py", "3 passed in 0.1s"), "ruff check": ("ruff check src", "All checks passed!")}
    families = {"pytest": True, "ruff check": False}   # pytest's latest run failed
    assert commands_line(outcomes, families) == \
        "Commands (latest outcome): `ruff check src`: All checks passed!; `pytest -q tests/a.py`: 3 passed in 0.1s"
    assert commands_line(outcomes, families, ["`pytest -q tests/b.py`"]).endswith("`pytest -q tests/a.py`: 3 passed in 0.1s")
    assert commands_line(outcomes, families, ["`pytest -q tests/a.py`"]) == \
        "Commands (latest outcome): `ruff check src`: All checks passed!"


def _failing_then(command_line: str) -> str:
    """The merge of a summary where `pytest -q tests/test_gamma.py` is still failing and a newer one
    whose Commands line shows ``command_line`` passing: the older failure's state."""
    from memcli.compaction.offline import merge_summary_texts

    head = "1 turn (turn_0001), 2026-02-01 10:00 → 10:05 UTC: 9 traces, 3 tool calls, 1 failed."
    older = "\n".join([head, "Failed: `pytest -q tests/test_gamma.py` ×1 (FAILED tests/test_gamma.py::test_g - "
                             "GammaError; before: ImportError) — still failing"])
    newer = "\n".join([head.replace("1 failed", "0 failed"), f"Commands (latest outcome): `{command_line}`: 42 passed"])
    merged = merge_summary_texts([older, newer], "turn_0001", 1)
    return next(line for line in merged.split("\n") if line.startswith("Failed: ")).split(" — ", 1)[1]


@pytest.mark.parametrize("command_line,state", [
    ("pytest -q tests/test_gamma.py", "passed later"),
    ("pytest -q", "fixed later (a later `pytest -q` passed)"),
    ("pytest -q && git commit -m x", "fixed later (a later `pytest -q && git commit -m x` passed)"),
    # a pass the window's own rule does not count: its status is not the tests' (a pipe, ||), or no test ran
    ("pytest -q | tail -3", "still failing"),
    ("pytest -q || true", "still failing"),
    ("pytest --collect-only -q", "still failing"),
    ("pytest -q tests/test_alpha.py", "still failing"),   # another file
    # clipped in its label: what it deselected may be cut off
    ("pytest -q tests/ --maxfail=1 --tb=short -p no:cacheprovider --durations=5 --color=yes --deselect "
     "tests/test_gamma.py", "still failing"),
])
def test_a_rollup_reads_a_later_pass_as_a_window_reads_its_own(command_line, state):
    """A newer summary's passing run fixes an older summary's failure in the merge by the rule a
    window fixes its own: the same command, or a run whose status is its tests' and that covers
    the failing one (a reviewer's cases: a piped run, one that only collected tests, a label
    clipped before its --deselect were taken for fixes, and a chain ending in a commit was not)."""
    from memcli.compaction.offline import _command_label

    assert _failing_then(_command_label(command_line)[1:-1]) == state


def test_a_reply_said_on_another_day_goes_without_its_speakers_name_too():
    """A dated chat whose replies come the day after their asks (``assistant (2026-03-03): "…"``):
    the summary said who each role is and the replies still began with the name."""
    from memcli.models import RawTrace

    turns = []
    for t in range(8):
        turn_id = f"turn_{t + 1:04d}"
        ask = RawTrace(f"{turn_id}-u", 1772442000.0 + t * 86400, turn_id, 1, "user", f"Maya: How was day {t}?", "x")
        reply = RawTrace(f"{turn_id}-a", 1772442000.0 + t * 86400 + 86000 + 600, turn_id, 2, "assistant",
                         f"Theo: Day {t} was fine, I visited Kyoto{t}.", "x")
        turns.append(Turn(turn_id, [ask, reply]))
    text = OfflineSummarizer().summarize(turns).episodic_summary
    assert text.split("\n")[1] == "Speakers: user Maya, assistant Theo."
    assert re.search(r'assistant \(\d{4}-\d\d-\d\d\): "Day', text), text
    assert "Maya:" not in text.split("\n", 2)[2] and "Theo:" not in text.split("\n", 2)[2], text


def test_a_merge_says_its_summaries_speakers_once_under_its_header():
    from memcli.compaction.offline import merge_summary_texts

    def summary(turn: int, said: str, speakers: bool = True) -> str:
        return "\n".join([f"1 turn (turn_000{turn}), 2026-02-01 10:00 → 10:05 UTC: 4 traces, 1 tool call, 0 failed.",
                          *(["Speakers: user Maya, assistant Theo."] if speakers else []),
                          f'- turn_000{turn} · user: "{said}" · tools: lookup ×1'])

    # (the older one said too few messages to tell: its line came between the turn lines)
    for older in (summary(1, "Hi."), summary(1, "Hi.", speakers=False)):
        merged = merge_summary_texts([older, summary(2, "Bye."), summary(3, "Later.")], "turn_0001–turn_0003", 3)
        assert merged.split("\n")[1:] == [
            "Speakers: user Maya, assistant Theo.", '- turn_0001 · user: "Hi." · tools: lookup ×1',
            '- turn_0002 · user: "Bye." · tools: lookup ×1', '- turn_0003 · user: "Later." · tools: lookup ×1']


def test_a_chat_of_two_people_in_one_role_quotes_each_message_under_its_speaker():
    """A conversation of two people piped in as ``user`` alone, each message ``Maya: …`` or
    ``Theo: …``: every quote said ``user: "Maya: …"``. The role says nothing the name does not:
    each quote is under its speaker's name (``Maya: "…"``), a rollup reads it as an ask, and a
    label each message has its own (``Ticket T-7: …``) is no speaker."""
    from memcli.compaction.offline import condense, speaking_roles

    turns, facts = _chat_turns(turns=120, per_day=10)
    relabelled = []   # (each message its own turn, both as user: as a two-person chat is often piped in)
    for trace in (trace for turn in turns for trace in turn.traces):
        turn_id = f"turn_{len(relabelled) + 1:04d}"
        speaker = "Maya" if trace.trace_type == "user" else "Theo"
        relabelled.append(Turn(turn_id, [dataclasses.replace(trace, turn_id=turn_id, seq=1, trace_type="user",
                                                             content=f"{speaker}: {trace.content}")]))
    said_by = {v: ("Maya" if who == "user" else "Theo") for v, who in facts.items()}
    text = OfflineSummarizer().summarize(relabelled, MemoryContext(summary_tokens=1500)).episodic_summary
    quotes = re.findall(r'(?:^|· )(Maya|Theo|user)(?: \([\d-]+\))?: "([^"]*)"', text, re.M)
    assert quotes and all(who != "user" for who, _ in quotes), text[:600]
    kept = [v for v in facts if re.search(rf"\b{v}\b", text)]
    assert kept and all(any(re.search(rf"\b{v}\b", q) and who == said_by[v] for who, q in quotes) for v in kept)
    # a rollup condensing it keeps the speakers' quotes as asks
    shrunk = condense(text, len(text) * 2 // 3)
    assert re.search(r'· (?:Maya|Theo): "', shrunk), shrunk[:600]
    assert speaking_roles([f"Ticket T-{n}: look at the export" for n in range(20)], []) == {}
    assert speaking_roles([f"{'Maya' if n % 2 else 'Theo'}: hi {n}" for n in range(20)], ["ok"] * 20) == \
        {"user": frozenset({"Maya", "Theo"})}


def test_a_window_counted_in_tokens_gives_its_summary_a_quarter_of_them():
    """The summary aims at a quarter of the window it replaces: of its text's characters, or,
    when the compaction counted the window (``MemoryContext.window_room``, a quarter of its tokens:
    its messages' call ids and JSON count too), of those when they say more; the budget decides."""
    from memcli.compaction.offline import _counter
    from memcli.models import RawTrace

    turns = []
    for t in range(12):
        turn_id = f"turn_{t + 1:04d}"
        traces = [RawTrace(f"{turn_id}-u", 1772442000.0 + t * 60, turn_id, 1, "user", f"Port module {t}.", "x")]
        for k in range(6):
            n = t * 6 + k
            traces += [RawTrace(f"{turn_id}-c{k}", 1772442001.0 + t * 60 + k, turn_id, 2 + 2 * k, "tool_call", "", "x",
                                tool_name="read_file", tool_call_id=f"call_{n}",
                                tool_args={"absolute_path": f"/home/me/proj/src/pkg_{n}/mod_{n}.py"}),
                       RawTrace(f"{turn_id}-r{k}", 1772442001.5 + t * 60 + k, turn_id, 3 + 2 * k, "tool_result", "",
                                "x", tool_name="read_file", tool_call_id=f"call_{n}",
                                tool_result=f"class Module{n}Store: uses MODULE_{n}_URL")]
        turns.append(Turn(turn_id, traces))
    count = _counter().count

    def summary(window_tokens, budget=3_000):
        memory = MemoryContext(summary_tokens=budget, target_given=True,
                               window_room=window_tokens // 4 if window_tokens else None)
        return OfflineSummarizer().summarize(turns, memory).episodic_summary

    by_chars = summary(None)
    assert summary(2_000) == by_chars   # its tokens say less than its characters: the characters decide
    sizes = [count(summary(window)) for window in (4_000, 6_000)]
    assert count(by_chars) < 700 < 1_000 < sizes[0] < sizes[1], (count(by_chars), sizes)
    assert 900 <= count(summary(6_000, budget=1_000)) <= 1_000   # never past the budget


def test_a_failure_an_earlier_summary_left_open_that_this_window_fixed_is_a_fact():
    """Compacted after each turn (a hook's rhythm), a summary said ``ruff check app`` was still
    failing; the next window ran ``ruff check --fix app`` and it passed, but nothing linked the
    two, and the snapshot held "still failing" until a rollup read them together. The newer
    summary's facts say it passed now, once; a command run again in the window is left to its
    own lines, and one a fact already tells of is not told again."""
    from memcli.models import EpisodicItem, SemanticItem

    first = OfflineSummarizer().summarize([Turn("turn_0001", _traces("turn_0001", [
        {"trace_type": "user", "content": "Lint the app and fix the tests."},
        *_call(1, "ruff check app", error="exit code 1\napp/reports.py:1:8: F401 `os` imported but unused"),
        *_call(2, "pytest -q tests/test_a.py", error="exit status 1\nFAILED tests/test_a.py::test_t - KeyError: 'id'"),
        {"trace_type": "assistant", "content": "Both fail; I fix them next."}]))])
    assert "`ruff check app` ×1 (exit code 1 app/reports.py:1:8: F401 `os` imported but unused) — still failing" \
        in first.episodic_summary
    earlier = EpisodicItem("ep_1", 1772442000.0, ["turn_0001"], first.episodic_summary, ["compaction"])
    def go_on(*more):
        return [Turn("turn_0002", _traces("turn_0002", [
            {"trace_type": "user", "content": "Go on."},
            *_call(3, "ruff check --fix app && git commit -am 'lint'", result="Found 1 error (1 fixed, 0 remaining)."),
            *_call(4, "pytest -q tests/test_a.py", result="3 passed in 0.1s"), *more,
            {"trace_type": "assistant", "content": "Lint is clean and the tests pass."}]))]

    window = go_on()
    facts = [f.fact for f in OfflineSummarizer().summarize(window, MemoryContext(episodic=[earlier])).semantic_facts]
    assert facts == ["Command passed: `ruff check app` (it had failed before, a later `ruff check` passed)"]
    told = SemanticItem("sem_1", 1772442000.0, facts[0], ["command"], 0.8)
    again = OfflineSummarizer().summarize(window, MemoryContext(episodic=[earlier], facts=[told])).semantic_facts
    assert [f.fact for f in again] == []
    # run again and passed, but the Commands line tells its family's latest run, another command
    # (the spotter session: ``mix test … 2>&1`` passed, then ``mix test 2>&1 | tail -5``): the
    # summary said nothing of it, and the earlier one's "still failing" stood three compactions
    window = go_on(*_call(5, "pytest -q 2>&1 | tail -5", result="9 passed in 0.4s"))
    summary = OfflineSummarizer().summarize(window, MemoryContext(episodic=[earlier], facts=[told]))
    assert "Commands (latest outcome): `pytest -q 2>&1 | tail -5`: 9 passed" in summary.episodic_summary
    assert "`pytest -q tests/test_a.py`:" not in summary.episodic_summary
    assert [f.fact for f in summary.semantic_facts] == ["Command passed: `pytest -q tests/test_a.py` (it had failed before)"]
    # a command of over 80 characters the Commands line names (clipped, as every label is): no fact
    long = "pytest -q tests/test_a.py --maxfail=1 -p no:cacheprovider --durations=0 -k 'not slow and not integration'"
    earlier = EpisodicItem("ep_2", 1772442000.0, ["turn_0001"], OfflineSummarizer().summarize([Turn(
        "turn_0001", _traces("turn_0001", [{"trace_type": "user", "content": "Fix the tests."},
                                           *_call(1, long, error="exit status 1\nFAILED tests/test_a.py::test_t")]))]
    ).episodic_summary, ["compaction"])
    again = OfflineSummarizer().summarize([Turn("turn_0002", _traces("turn_0002", [
        {"trace_type": "user", "content": "Go on."}, *_call(2, long, result="3 passed in 0.1s")]))],
        MemoryContext(episodic=[earlier]))
    assert f"Commands (latest outcome): `{long[:79]}" in again.episodic_summary and again.semantic_facts == []


def test_the_newest_turn_keeps_its_last_message_where_the_agent_says_what_comes_next():
    """Compacted after each turn (a hook's rhythm), a window is one turn whose summary is over the
    quarter it aims at: its line shrank to its ask and "I will add the import next turn" was lost
    from every summary. The newest turn's line keeps its last message while the summary stays
    within two thirds of the window's text; past that (a few-line window, whose summary would
    not leave the snapshot smaller) it goes."""
    events = [{"trace_type": "user", "content": "Add CSV export to reports: implement export_csv in app/reports.py."},
              *_call(1, "", tool="TodoWrite", result="ok", args={"todos": [
                  {"content": "Implement export_csv", "status": "in_progress"}, {"content": "Add test", "status": "pending"}]}),
              *_call(4, "", tool="Read", args={"file_path": "app/reports.py"},
                     result="\n".join(f"{n:>5}\tdef report_{n}(rows):\n        return [r for r in rows if r]"
                                      for n in range(1, 30))),
              *_call(2, "", tool="Edit", result="ok", args={
                  "file_path": "app/reports.py", "old_string": "def build_report(rows):\n    return rows",
                  "new_string": "def export_csv(rows, path):\n    csv.writer(open(path, 'w')).writerows(rows)"}),
              *_call(3, "pytest tests/test_reports.py -q",
                     error="exit code 1\nFAILED tests/test_reports.py::test_export_csv - NameError: name 'csv' is not defined"),
              {"trace_type": "assistant", "content": "export_csv fails: csv is not imported. I will add the import next."}]
    summary = OfflineSummarizer().summarize([Turn("turn_0001", _traces("turn_0001", events))]).episodic_summary
    assert summary.split("\n")[1] == ('- turn_0001 · user: "Add CSV export to reports: implement export_csv in '
                                      'app/reports.py." · assistant: "export_csv fails: csv is not imported. I will '
                                      'add the import next."')
    tiny = [{"trace_type": "user", "content": "Add a /healthz endpoint in internal/http and make CI green."},
            {"trace_type": "assistant", "content": "I'll add the handler in internal/http/routes.go, then run go test."},
            *_call(1, "go test ./...", error="Exit code: 1\n--- FAIL: TestRoutes (0.00s)\n    routes_test.go:22: "
                                              "expected 4 routes, got 5\nFAIL"),
            {"trace_type": "assistant", "content": "TestRoutes still fails. Next I will update the route count in "
                                                   "routes_test.go, then open the PR against issue #311."}]
    summary = OfflineSummarizer().summarize([Turn("turn_0001", _traces("turn_0001", tiny))]).episodic_summary
    assert summary.split("\n")[1] == '- turn_0001 · user: "Add a /healthz endpoint in internal/http and make CI green."'


def test_a_failed_call_of_another_tool_passed_later_only_when_its_own_label_passed_last():
    """A tool that is no command and writes nothing (an API's ``update_reservation_flights``, a
    ``Read``) had no state: its failures read the same whether a later call of it passed or not.
    Its label's latest call passing says "passed later" — across turns, not for another file's
    Read, not when it failed again after passing."""
    def read(n, path, result=None, error=None):
        return _call(n, "", result, error, tool="Read", args={"file_path": path})

    turns = [
        Turn("turn_0001", _traces("turn_0001", [
            {"trace_type": "user", "content": "Move the flight."},
            *_call(1, "", "Error: not enough seats on flight HAT229", tool="update_reservation_flights",
                   args={"reservation_id": "OBUT9V", "cabin": "economy"}),
            *read(2, "app/a.py", error="File does not exist."),
            *read(3, "app/b.py", "x = 1"),
            *read(4, "app/c.py", error="File does not exist."),
            *read(5, "app/c.py", "y = 2"),
            *read(6, "app/c.py", error="Permission denied."),
        ])),
        Turn("turn_0002", _traces("turn_0002", [
            {"trace_type": "user", "content": "Business then."},
            *_call(7, "", orjson.dumps({"reservation_id": "OBUT9V", "cabin": "business",   # (room for whole lines)
                                        "flights": [{"flight_number": f"HAT{n:03}"} for n in range(200)]}).decode(),
                   tool="update_reservation_flights", args={"reservation_id": "OBUT9V", "cabin": "business"}),
        ])),
        Turn("turn_0003", _traces("turn_0003", [
            {"trace_type": "user", "content": "Any direct flight back?"},
            *_call(8, "", "Error: no flight from DEN on 2024-05-27", tool="search_direct_flight",
                   args={"origin": "DEN", "destination": "IAH"}),
        ])),
    ]
    text = OfflineSummarizer().summarize(turns).episodic_summary
    # a turn's one tool failing is not named twice ("×1 (1 failed; last: search_direct_flight)")
    assert "tools: search_direct_flight ×1 [search_direct_flight IAH] (1 failed)\n" in text + "\n"
    assert "(4 failed; last: Read app/c.py)" in text   # (two tools: which one it was)
    failed = next(line for line in text.splitlines() if line.startswith("Failed: "))
    assert "update_reservation_flights ×1 (Error: not enough seats on flight HAT229) — passed later" in failed
    entries = {entry.split(" ×")[0]: entry for entry in failed[len("Failed: "):].split("; ")}
    assert not entries["Read app/a.py"].endswith("passed later")      # b.py's Read is another label
    assert not entries["Read app/c.py"].endswith("passed later")      # it failed again after passing


def test_a_swe_agent_edit_writes_the_file_its_answer_says_is_open():
    """SWE-agent's ``edit`` names no file: it edits the one ``open`` opened, which the end of
    every answer states. The summary had no Files modified line for a trajectory that fixed one."""
    state = "\n(Open file: /repo/tests/missing_colon.py)\n(Current directory: /repo)\nbash-$"
    events = [
        {"trace_type": "user", "content": "Fix the SyntaxError in tests/missing_colon.py."},
        *_call(1, "", "Found 1 matches\n/repo/tests/missing_colon.py\n(Open file: n/a)\n(Current directory: /repo)\nbash-$",
               tool="find_file", args={"file_name": "missing_colon.py"}),
        *_call(2, "", "[File: tests/missing_colon.py (10 lines total)]\n4:def division(a, b)" + state, tool="open",
               args={"path": "tests/missing_colon.py"}),
        *_call(3, "", "Text replaced. Please review the changes." + state, tool="edit",
               args={"search": "def division(a, b)", "replace": "def division(a, b):"}),
        *_call(4, "python tests/missing_colon.py", "8.2" + state, tool="bash"),
        {"trace_type": "assistant", "content": "The colon is back and the script prints 8.2."},
    ]
    text = OfflineSummarizer().summarize([Turn("turn_0001", _traces("turn_0001", events))]).episodic_summary
    files = next(line for line in text.splitlines() if line.startswith("Files modified: "))
    assert files == "Files modified: /repo/tests/missing_colon.py (division)"   # (not the opened, not n/a)
