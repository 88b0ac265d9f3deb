"""Compaction fidelity against a harness's own compaction (tests/bench/fidelity.py): on the real
Claude Code session that Claude Code compacted, memcli's working snapshot after compacting the
part before the boundary to the harness summary's token count keeps at least as many of the
identifiers used again after the boundary as Claude Code's own summary, and the last ask verbatim."""

from __future__ import annotations

from memcli.compaction.offline import command_family
from tests.bench.fidelity import measure, split_session
from tests.helpers import CORPORA, needs_corpora

SPOTTER = "claude-code/spotter_258c7280_compacted_by_claude-code.jsonl"


@needs_corpora
def test_memcli_keeps_at_least_what_the_harness_keeps_at_its_token_count(tmp_path):
    session = split_session(CORPORA / SPOTTER)
    assert session is not None and session.fmt == "claude-code" and len(session.before) == 1255
    r = measure(session, tmp_path)
    assert r.needed > 100
    assert r.memcli_tokens <= r.target_tokens
    assert r.memcli_recall >= r.harness_recall, r
    assert r.memcli_last_ask


def test_a_failure_fixed_by_the_same_family_of_command_counts_as_fixed():
    assert command_family("git add src/x.py") == command_family("git add -f src/x.py") == "git add"
    assert command_family("cd app && npm run build") == "npm run build"
    assert command_family("FOO=1 uv run pytest -q tests") == "uv run pytest"
    assert command_family("git commit -m x") != command_family("git add x")


def test_the_summary_says_a_failure_was_fixed_by_a_later_command_of_its_family(tmp_path):
    from memcli.api import Memory

    def call(n, command, code, out):
        return [{"trace_type": "tool_call", "tool_name": "Bash", "tool_call_id": f"c{n}", "tool_args": {"command": command}},
                {"trace_type": "tool_result", "tool_name": "Bash", "tool_call_id": f"c{n}",
                 "tool_result": {"exit_code": code, "stdout": out}}]
    events = [{"trace_type": "user", "content": "Commit the generated file build/out.js please."},
              *call(1, "git add build/out.js", 1, "The following paths are ignored by one of your .gitignore files"),
              *call(2, "git add -f build/out.js", 0, ""),
              {"trace_type": "assistant", "content": "Added with -f; committing next."},
              {"trace_type": "user", "content": "Thanks. Now run the tests."},
              {"trace_type": "assistant", "content": "Running them."}]
    agent = Memory(tmp_path).agent("a")
    agent.ingest(events, "native")
    result = agent.compact(tail_turns=1, keep_steps=0)
    assert result.summary is not None   # too small to be worth writing (never worse), but summarized
    assert "`git add build/out.js` ×1 (exit code 1 The following paths are ignored by one of your .gitignore files)" \
           " — fixed later (a later `git add` passed)" in result.summary
