"""A line of the tool-result summaries (``result_summaries.jsonl``, memcli/store/result_summaries.py)
that is not a summary: ``summarize-results``, which appends there, refuses before anything is
selected or written, naming file:line; the readers (``snapshot --expire …:summary``, ``stats``)
name file:line; ``doctor`` reports it and ``--repair`` moves it aside as for every JSONL file —
after which summarizing works again. Before, doctor said 'no problems', a record without its
fields was silently skipped by every reader, and summarize-results appended after it."""

from __future__ import annotations

import pytest

from tests.helpers import (
    agent_dir,
    bad_first_lines,
    doctor_cuts_a_torn_tail,
    doctor_moves_a_bad_first_line_aside,
    ok,
    read_jsonl,
    refused_for_a_bad_first_line,
    tree_digest,
)
from tests.test_summarize_results import _session

SUMMARIES = "result_summaries.jsonl"
BAD_LINES, REFUSED = bad_first_lines(b'{"id": "rsum_x", "trace_id": "r1"}\n',
                                     "result summary without a valid 'id', 'trace_id', 'summary' and 'chars'")


def _summarized_with_a_bad_first_line(cli, memory_dir, bad: bytes):
    """An agent whose three long results were summarized, the summaries' first line then replaced
    by ``bad`` before the original records, and the first summary's line dropped (r1 has work to do)."""
    ok(cli("ingest", "s", input=_session()))
    ok(cli("summarize-results", "s", "--min-chars", "1000"))
    path = agent_dir(memory_dir, "s") / SUMMARIES
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(bad + b"".join(lines[1:]))
    return path


@pytest.mark.parametrize("bad,code,_message", BAD_LINES, ids=[c[1] for c in BAD_LINES])
def test_summarize_results_refuses_a_bad_line_and_writes_nothing(cli, memory_dir, bad, code, _message):
    path = _summarized_with_a_bad_first_line(cli, memory_dir, bad)
    before = tree_digest(memory_dir)
    for args in ((), ("--dry-run",)):
        refused_for_a_bad_first_line(cli("summarize-results", "s", "--min-chars", "1000", *args), path, "s",
                                     REFUSED[code], "summarize-results",
                                     "a result summary (which results are summarized would be unknown)")
        assert tree_digest(memory_dir) == before


@pytest.mark.parametrize("bad,code,_message", BAD_LINES, ids=[c[1] for c in BAD_LINES])
def test_readers_name_the_bad_line(cli, memory_dir, bad, code, _message):
    path = _summarized_with_a_bad_first_line(cli, memory_dir, bad)
    before = tree_digest(memory_dir)
    for args in (("snapshot", "s", "-p", "openai", "--expire", "*=0:summary"), ("stats", "s")):
        result = cli(*args)
        assert result.exit_code == 1, result.stderr
        assert result.stderr.startswith(f"memcli: error: {path}:1: {REFUSED[code]}"), result.stderr
        assert "memcli doctor s`" in result.stderr   # (the agent named: the hint is a command to run)
    assert tree_digest(memory_dir) == before


@pytest.mark.parametrize("bad,code,message", BAD_LINES, ids=[c[1] for c in BAD_LINES])
def test_doctor_reports_a_bad_line_and_repair_moves_it_aside(cli, memory_dir, bad, code, message):
    path = _summarized_with_a_bad_first_line(cli, memory_dir, bad)
    doctor_moves_a_bad_first_line_aside(cli, memory_dir, "s", path, bad, code, message)
    # summarizing works again: the result whose summary was dropped is summarized, the others kept
    ok(cli("summarize-results", "s", "--min-chars", "1000"))
    assert [r["trace_id"] for r in read_jsonl(path)] == ["r2", "r3", "r1"]


def test_a_torn_last_line_is_reported_and_cut_off_with_a_copy_kept(cli, memory_dir):
    ok(cli("ingest", "s", input=_session()))
    ok(cli("summarize-results", "s", "--min-chars", "1000"))
    doctor_cuts_a_torn_tail(cli, "s", agent_dir(memory_dir, "s") / SUMMARIES, b'{"id": "rsum', 4)
