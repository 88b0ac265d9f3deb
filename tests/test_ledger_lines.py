"""A line of the compaction ledger (``.compactions.jsonl``, memcli/store/ledger.py) that is not a
ledger record: the writers that append there (``compact``, ``summarize-results`` with a model,
``ingest`` of an export with memory) refuse before anything is written, naming file:line;
``doctor`` reports it and ``--repair`` moves it aside as for every JSONL file — after which
compaction and undo work again."""

from __future__ import annotations

import pytest

from tests.compact_fixtures import conversation
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

LEDGER = ".compactions.jsonl"
BAD_LINES, REFUSED = bad_first_lines(b'{"kind": "compaction", "ts": 1.0}\n',
                                     "ledger record without a valid 'id' and 'kind'")


def _assert_refused(result, ledger, reason: str, command: str, written: str = "nothing was written") -> None:
    """``command`` refused (exit 1) to append to agent a's ledger while its first line is bad."""
    refused_for_a_bad_first_line(result, ledger, "a", reason, command,
                                 "a ledger record (uncompact could not read past it)", written)


def _compacted_with_a_bad_first_ledger_line(cli, memory_dir, bad: bytes):
    """An agent compacted once, its ledger's first line then replaced by ``bad`` before the
    original record, and ten more turns ingested (a second compaction has work to do)."""
    ok(cli("ingest", "a", input=conversation(10)))
    ok(cli("compact", "a"))
    ledger = agent_dir(memory_dir, "a") / LEDGER
    ledger.write_bytes(bad + ledger.read_bytes())
    ok(cli("ingest", "a", input=conversation(10, prefix="u", system=False)))
    return ledger


@pytest.mark.parametrize("bad,code,_message", BAD_LINES, ids=[c[1] for c in BAD_LINES])
def test_compact_refuses_a_bad_ledger_line_and_writes_nothing(cli, memory_dir, bad, code, _message):
    ledger = _compacted_with_a_bad_first_ledger_line(cli, memory_dir, bad)
    before = tree_digest(memory_dir)
    for args in ((), ("--dry-run",)):
        _assert_refused(cli("compact", "a", *args), ledger, REFUSED[code], "compact")
        assert tree_digest(memory_dir) == before


@pytest.mark.parametrize("bad,code,message", BAD_LINES, ids=[c[1] for c in BAD_LINES])
def test_doctor_reports_a_bad_ledger_line_and_repair_moves_it_aside(cli, memory_dir, bad, code, message):
    ledger = _compacted_with_a_bad_first_ledger_line(cli, memory_dir, bad)
    doctor_moves_a_bad_first_line_aside(cli, memory_dir, "a", ledger, bad, code, message)
    # compaction and its undo work again, the first compaction's record intact
    ok(cli("compact", "a"))
    assert [r["kind"] for r in read_jsonl(ledger)] == ["compaction", "compaction"]
    assert "undid" in ok(cli("uncompact", "a")).stderr


def test_a_torn_last_ledger_line_is_reported_and_cut_off_with_a_copy_kept(cli, memory_dir):
    ok(cli("ingest", "a", input=conversation(10)))
    ok(cli("compact", "a"))
    doctor_cuts_a_torn_tail(cli, "a", agent_dir(memory_dir, "a") / LEDGER, b'{"kind": "comp', 2)


def test_summarize_results_with_a_model_refuses_a_bad_ledger_line_before_any_request(cli, memory_dir, server):
    ledger = _compacted_with_a_bad_first_ledger_line(cli, memory_dir, b"{oops\n")
    srv = server(lambda body, i: (200, "never", 0))
    before = tree_digest(memory_dir)
    for args in ((), ("--dry-run",)):
        result = cli("summarize-results", "a", "--min-chars", "10", "--older-than", "0", "--model",
                     "openai/test-model", "--api-base", srv.api_base, *args)
        assert result.exit_code == 1, result.stderr
        assert result.stderr.startswith(f"memcli: error: {ledger}:1: not valid JSON (")
        assert "then summarize-results again" in result.stderr
    assert srv.requests == []
    assert tree_digest(memory_dir) == before


def test_ingest_of_an_export_refuses_a_bad_ledger_line_and_writes_nothing(cli, memory_dir):
    """An export with memory restores ledger records into the agent it is ingested into: a bad
    line of that agent's ledger refused only after the export's traces were written (half an
    ingest, exit 1); it refuses before anything, as compact does, and ingests after the repair."""
    ok(cli("ingest", "x", input=conversation(12, prefix="x")))
    ok(cli("compact", "x"))
    export = ok(cli("export", "x", "--with-memory")).stdout
    ledger = _compacted_with_a_bad_first_ledger_line(cli, memory_dir, b"{oops\n")
    before = tree_digest(memory_dir)
    _assert_refused(cli("ingest", "a", input=export), ledger, "not valid JSON (", "ingest")
    assert tree_digest(memory_dir) == before
    ok(cli("doctor", "a", "--repair"))
    ok(cli("ingest", "a", input=export))
    assert sum(r["kind"] == "compaction" for r in read_jsonl(ledger)) == 2


def test_a_streamed_export_says_its_traces_were_written_when_a_bad_ledger_line_refuses_its_memory(cli, memory_dir,
                                                                                                  tmp_path):
    """``ingest --stream`` writes traces as they come, so a bad ledger line is met only when the
    export's memory records are restored: it said "nothing was written" though its traces were.
    It says what was written, and that the memory records were not."""
    ok(cli("ingest", "x", input=conversation(12, prefix="x")))
    ok(cli("compact", "x"))
    export = tmp_path / "export.jsonl"
    export.write_text(ok(cli("export", "x", "--with-memory")).stdout)
    ledger = _compacted_with_a_bad_first_ledger_line(cli, memory_dir, b"{oops\n")
    active = agent_dir(memory_dir, "a") / "raw_traces.jsonl"
    lines = len(read_jsonl(active))
    result = cli("ingest", "a", "--stream", str(export))
    added = len(read_jsonl(active)) - lines
    assert added > 0
    _assert_refused(result, ledger, "not valid JSON (", "ingest",
                    f"its {added} new traces were written as they came, its memory records were not")
    assert ledger.read_bytes().startswith(b"{oops\n")   # (left as it was)
